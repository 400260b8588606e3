"""The pinned CDK CLI (package.json, `npx --no-install cdk`, what `make deploy` runs) reads the cloud assembly the
pinned aws-cdk-lib (uv.lock) writes.

The two are versioned apart: the library writes the assembly's schema version into manifest.json, and a CLI older
than that schema refuses it ("This CDK CLI is not compatible with the CDK library used by your application"). An
upgrade of one without the other fails here, not at deploy. Offline: the CLI is given the assembly the session
fixture synthesized (`--app <directory>`: no second synth), with telemetry and notices off.

The CLI is installed as a fresh clone installs it: by the Makefile's `node_modules/.installed` target (`npm ci`
against package-lock.json), which needs node and the npm registry once.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import Synthesized
from .test_readme_make_targets import ROOT, make

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

CLI_ENV = {"CDK_DISABLE_CLI_TELEMETRY": "true"}
# What `cdk synth` leaves out of the template it prints (the bootstrap-version check is the CLI's own business).
CLI_HIDDEN_RULES = {"CheckBootstrapVersion"}


@pytest.fixture(scope="module")
def cdk_cli() -> list[str]:
    make("node_modules/.installed", timeout=300)
    return ["npx", "--no-install", "cdk"]


def _synth(cdk_cli: list[str], assembly: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cdk_cli, "synth", "--no-notices", "--json", "--app", str(assembly)],
        cwd=ROOT,
        env={**os.environ, **CLI_ENV},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_pinned_cli_is_the_one_package_json_names(cdk_cli: list[str]) -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    installed = json.loads((ROOT / "node_modules" / "aws-cdk" / "package.json").read_text())["version"]
    assert installed == pinned
    version = subprocess.run(
        [*cdk_cli, "--version"], cwd=ROOT, env={**os.environ, **CLI_ENV}, capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith(f"{pinned} ")


def test_the_pinned_cli_reads_the_assembly_the_pinned_library_writes(
    cdk_cli: list[str], synthesized: Synthesized
) -> None:
    # Given the cloud assembly aws-cdk-lib wrote (the session synth, cdk-nag included)
    # When the pinned CLI synthesizes from it
    result = _synth(cdk_cli, synthesized.assembly_dir)
    # Then it reads it, and prints the template the library wrote
    assert result.returncode == 0, result.stderr
    printed: dict[str, Any] = json.loads(result.stdout)
    expected = dict(synthesized.template_json)
    expected["Rules"] = {k: v for k, v in expected["Rules"].items() if k not in CLI_HIDDEN_RULES}
    assert printed == expected


def test_an_assembly_newer_than_the_cli_is_refused(
    cdk_cli: list[str], synthesized: Synthesized, tmp_path: Path
) -> None:
    # Given the same assembly, its schema version one major above what the library wrote (a library upgraded
    # without the CLI)
    manifest = json.loads((synthesized.assembly_dir / "manifest.json").read_text())
    major = int(manifest["version"].split(".")[0])
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "version": f"{major + 1}.0.0"}))
    # Then the CLI refuses it, saying so: what this test file exists to catch before a deploy does
    result = _synth(cdk_cli, tmp_path)
    assert result.returncode != 0
    assert "This CDK CLI is not compatible with the CDK library used by your application" in result.stderr
