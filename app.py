#!/usr/bin/env python3
"""CDK entry point: `cdk synth` / `cdk deploy` (cdk.json runs this with the project's venv).

Context values (`-c name=value`): stack_name, retention_days, signature_tolerance_seconds and the others listed in
infra/config.py. The first synth builds the functions' dependency layer from uv.lock into build/layers/ (it needs
the package index once); later synths reuse it and run offline (infra/dependency_layer.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# jsii warns on every run that Node 20 is past its end of life; the CDK runs fine on it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from infra.application import build_app  # the variable above must be set before jsii loads
from infra.config import SettingsError


def main() -> None:
    # Under the CDK CLI, CDK_OUTDIR says where the assembly goes; run directly, it goes to ./cdk.out as well.
    outdir = os.environ.get("CDK_OUTDIR") or str(Path(__file__).resolve().parent / "cdk.out")
    try:
        app, _stack = build_app(outdir=outdir)
    except SettingsError as error:
        sys.exit(f"error: {error}")
    app.synth()


if __name__ == "__main__":
    main()
