"""A test run sees none of the developer's own set-up: their sources.json at the repository root and the INBOX_*
variables of their shell change nothing (tests/conftest.py strips them and names a default declaration of its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra import sources_file
from shared import definitions
from tests.conftest import DEFAULT_SOURCES_FILE, TEST_CONTROLS

ROOT = Path(__file__).resolve().parents[2]
INBOX = ROOT / ".venv" / "bin" / "inbox"
# What a merchant's shell may hold while they run `make test`: their own declaration and secrets, another port.
DEVELOPERS_SHELL = {
    "INBOX_SECRET_STRIPE": "whsec_the-developers-own",
    "INBOX_SECRET_STRIPE_BR": "whsec_the-developers-brazilian-account",
    "INBOX_PORT": "9999",
    "INBOX_SOURCES": json.dumps([{"name": "stripe-br", "provider": "stripe"}]),
    "INBOX_FORWARD_URL": "https://developer.example/hooks",
}


def test_the_run_reads_the_default_declaration_of_its_own_and_no_inbox_variable_of_the_shell():
    # Given the environment every test of this run inherits (and the stacks and commands they start)
    leaked = sorted(
        name
        for name in os.environ
        if name.startswith("INBOX_") and name not in TEST_CONTROLS and name != definitions.ENV_SOURCES_FILE
    )
    # Then no INBOX_* variable came from the shell, and the declaration is the run's file, never the checkout's
    assert leaked == []
    assert sources_file.sources_file_path() == DEFAULT_SOURCES_FILE
    assert sources_file.sources_file_path() != ROOT / definitions.SOURCES_FILE_NAME
    assert sources_file.load_sources() == definitions.default_sources()
    # And an environment of a test's own, without the variable, reads the run's file too (not the checkout's)
    assert sources_file.sources_file_path({}) == DEFAULT_SOURCES_FILE
    assert sources_file.load_sources({}) == definitions.default_sources()


def test_an_inbox_command_a_test_starts_sees_the_default_declaration():
    # When a test runs the CLI as a user would, in the inherited environment
    done = subprocess.run(
        [str(INBOX), "sources", "list", "--json"], capture_output=True, text=True, timeout=60, check=True
    )
    # Then it lists one source per provider, whatever sources.json the checkout holds
    assert [row["name"] for row in json.loads(done.stdout)] == list(definitions.PROVIDERS)


@pytest.mark.slow
def test_a_developers_sources_file_and_inbox_variables_change_nothing_about_the_run(tmp_path):
    # Given a shell with the merchant's own declaration (stripe-br and stripe-us only) and secrets exported
    declaration = tmp_path / "sources.json"
    declaration.write_text(
        json.dumps([{"name": "stripe-br", "provider": "stripe"}, {"name": "stripe-us", "provider": "stripe"}])
    )
    shell = {**os.environ, **DEVELOPERS_SHELL, definitions.ENV_SOURCES_FILE: str(declaration)}
    # When the two tests above run in it, as `make test` would run them
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0",
         f"{__file__}::test_the_run_reads_the_default_declaration_of_its_own_and_no_inbox_variable_of_the_shell",
         f"{__file__}::test_an_inbox_command_a_test_starts_sees_the_default_declaration"],
        cwd=ROOT, env=shell, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    # Then they pass: neither the file nor the variables reached them
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
