"""`inbox` starts light: every call is an interpreter of its own (the e2e tier runs hundreds), so starting the CLI
imports no command's own machinery — boto3, the stores, the simulator, chaos, doctor, listen — only the command that
runs imports what it needs (inbox_cli/main.py: LAZY_COMMANDS, imports inside the commands)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from inbox_cli.main import LAZY_COMMANDS, cli

ROOT = Path(__file__).resolve().parents[2]

ONLY_WHEN_A_COMMAND_RUNS = (
    "boto3",
    "botocore",
    "inbox_cli.operations",
    "inbox_cli.chaos",
    "inbox_cli.doctor",
    "inbox_cli.listen",
    "inbox_cli.simulate.gateways",
    "inbox_local.gateway_simulator",
    "moto",
)

PROBE = "import json, sys; import inbox_cli.main; print(json.dumps(sorted(sys.modules)))"


def test_starting_the_cli_imports_no_commands_machinery():
    # Given a fresh interpreter, When it imports the CLI (what every `inbox ...` does first)
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
        ).stdout
    )
    # Then none of what only some commands need is loaded yet
    assert "inbox_cli.main" in loaded
    assert [name for name in loaded if name.startswith(ONLY_WHEN_A_COMMAND_RUNS)] == []


def test_every_lazy_command_is_listed_and_runs_under_its_name():
    # When the help is asked for, Then it lists the lazily imported commands with the others
    listing = CliRunner().invoke(cli, ["--help"])
    assert listing.exit_code == 0, listing.output
    for name in LAZY_COMMANDS:
        assert f"\n  {name} " in listing.output
        # And each one's own help comes from its module
        shown = CliRunner().invoke(cli, [name, "--help"])
        assert shown.exit_code == 0, shown.output
        assert f"Usage: cli {name}" in shown.output
