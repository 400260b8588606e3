"""The stack process (`python -m inbox_local`, what `make run` and every e2e test start) does not import what only
the embedded AWS's own process runs: moto's server and its Step Functions interpreter (with moto's
EC2 and Batch, which that interpreter imports). They cost about 3 CPU seconds of the stack's start-up, paid by
every local stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONLY_IN_THE_EMBEDDED_AWS = ("moto.moto_server", "moto.stepfunctions", "moto.batch", "moto.ec2")

PROBE = """
import json, sys
import inbox_local.__main__, inbox_local.runtime
import functions.archiver.handler, functions.ingest.handler, functions.process.handler, functions.sweeper.handler
import inbox_local.faults, shared.forwarding
print(json.dumps(sorted(sys.modules)))
"""


def test_the_stack_process_imports_none_of_the_embedded_awss_modules():
    # Given the modules the stack process imports to start (its own, and the handlers it runs)
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
        ).stdout
    )
    # Then none of them is the embedded AWS's (its process imports those: inbox_local/embedded_aws.py)
    assert "inbox_local.runtime" in loaded
    assert [name for name in loaded if name.startswith(ONLY_IN_THE_EMBEDDED_AWS)] == []
