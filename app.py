#!/usr/bin/env python3
"""CDK entry point: `cdk synth` / `cdk deploy` (cdk.json runs this with the project's venv).

Context values (`-c name=value`): stack_name, retention_days, signature_tolerance_seconds and the others listed in
infra/config.py. The first synth builds the functions' dependency layer from uv.lock into build/layers/ (it needs
the package index once); later synths reuse it and run offline (infra/dependency_layer.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# jsii warns on every run that Node 20 is past its end of life; the CDK runs fine on it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from inbox_cli.deploy_summary import summarize
from infra import sources_file
from infra.application import build_app  # the variable above must be set before jsii loads
from infra.config import FunctionObservability, SettingsError
from infra.stack import WebhookInboxStack


def main() -> None:
    # Under the CDK CLI, CDK_OUTDIR says where the assembly goes; run directly, it goes to ./cdk.out as well.
    outdir = os.environ.get("CDK_OUTDIR") or str(Path(__file__).resolve().parent / "cdk.out")
    try:
        app, stack = build_app(outdir=outdir)
    except SettingsError as error:
        sys.exit(f"error: {error}")
    assembly = app.synth()
    # What `make synth` and `make deploy` are about to deploy, on stderr: `cdk synth` prints the template on stdout.
    print(summary(stack, assembly.get_stack_by_name(stack.stack_name).template), file=sys.stderr)


def summary(stack: WebhookInboxStack, template: Mapping[str, Any]) -> str:
    """The deploy summary of the synthesized `stack` (inbox_cli/deploy_summary.py)."""
    declaration = sources_file.sources_file_path()
    return summarize(
        template,
        stack_name=stack.stack_name,
        sources=stack.sources,
        sources_file=str(declaration) if declaration.is_file() else None,
        forwarding=stack.settings.forward_url is not None,
        dashboard=stack.settings.dashboard,
        tracing=FunctionObservability.from_context(stack.node).tracing,
    ).render()


if __name__ == "__main__":
    main()
