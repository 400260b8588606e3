"""README's make targets that cannot run in full inside the suite, run in the form that can:

- `make test` is the whole suite (this test among it) and `make bench`/`make chaos` take minutes: `make -n` proves
  each target exists and shows what it runs; the modules they run are exercised on small inputs elsewhere (the
  registry, tests/readme_registry.py, names those tests).
- `make deploy` (and `cdk deploy`) is AWS-only: `make -n deploy` shows the pinned CDK CLI call with CDK_ARGS passed
  through, and `make synth` is run for real (into a temporary directory) to produce the template the deploy would
  use: the outputs the CLI's `--stack` reads are in it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from shared import definitions

pytestmark = [pytest.mark.infra]

ROOT = Path(__file__).resolve().parents[2]


def make(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
    return run_make(*args, env=env, timeout=timeout).stdout


def run_make(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # Run as a user would from a shell, not as a sub-make of the `make test` that runs this suite: without the
    # parent's MAKEFLAGS/MAKELEVEL, and without make's "Entering directory" lines.
    # And the Makefile's own defaults: a PYTEST_WORKERS of the caller's would change the recipes asserted here.
    ignored = {"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "PYTEST_WORKERS"}
    base = {key: value for key, value in (env or os.environ).items() if key not in ignored}
    result = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"make {' '.join(args)}: {result.stdout}\n{result.stderr}"
    return result


def recipe(target: str, *assignments: str) -> list[str]:
    """What `make -n TARGET` would run, without the virtualenv set-up lines (`uv sync`, `touch .venv/.synced`)."""
    lines = make("-n", target, *assignments).splitlines()
    return [line for line in lines if "uv sync" not in line and ".synced" not in line and "pip install" not in line]


LINT = ".venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy ."


def make_test_recipe() -> str:
    """`make test`'s own recipe (after its prerequisites': the set-up and the browser), as bash would run it."""
    lines = recipe("test")
    start = next(index for index, line in enumerate(lines) if line.startswith("set -o pipefail;"))
    return "\n".join(lines[start:])


def test_make_test_is_lint_beside_every_tier():
    # When `make test` is dry-run
    script = make_test_recipe()
    # Then it lints (ruff check, format check, mypy) in the background while pytest runs every tier: no path, and no
    # marker filter but the soak runs' (minutes at scale, which `make chaos` runs)
    assert f"({LINT}) > .test.log.lint 2>&1 & lint=$!;" in script, script
    [pytest_line] = [line for line in script.splitlines() if "/pytest" in line]
    assert pytest_line.startswith('.venv/bin/pytest -n 2 --dist loadgroup -m "not soak"'), pytest_line
    assert pytest_line.count(" -m ") == 1 and " tests/" not in pytest_line, pytest_line
    # And either failing fails it: the lint's exit status is waited for and decides when the tests passed
    assert "wait $lint; linted=$?;" in script and "exit $(( tests != 0 ? tests : linted ))" in script, script
    assert script.startswith("set -o pipefail;"), script  # pytest's status, not tee's


PYTEST_COMMAND = '.venv/bin/pytest -n 2 --dist loadgroup -m "not soak" --durations=15 --durations-min=2'
CLOSING_LINE = "=== 5 passed in 1.00s ==="
MAKE_STARTED = re.compile(r"\$\(date \+%s\) - (\d+) \)\)")  # the recipe's elapsed time: now - make's start


def run_make_test_recipe(
    cwd: Path, *, lint: str = "true", tests_status: int = 0, elapsed: int = 0
) -> subprocess.CompletedProcess[str]:
    """`make test`'s own recipe run by bash as make would, with stand-ins for lint and pytest (which prints a line,
    then pytest's closing line, and exits `tests_status`), as if make had started `elapsed` seconds ago."""
    recipe_text = make_test_recipe()
    assert PYTEST_COMMAND in recipe_text, recipe_text
    started = MAKE_STARTED.search(recipe_text)
    assert started, recipe_text  # counted from make's start: the set-up of a fresh clone is in the budget
    tests = f"{{ printf 'tests ran\\n{CLOSING_LINE}\\n'; exit {tests_status}; }}"
    script = (
        recipe_text.replace(LINT, lint)
        .replace(PYTEST_COMMAND, tests)
        .replace(started.group(0), f"$(date +%s) - {int(time.time()) - elapsed} ))")
    )
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, check=False)


def test_make_test_fails_when_lint_fails_and_ends_on_pytests_closing_line(tmp_path):
    # Given `make test`'s recipe with a lint that fails and a pytest that passes
    # When it runs
    result = run_make_test_recipe(tmp_path, lint="echo lint-output; false")
    # Then it fails, shows the lint's output, and its last line is pytest's closing line
    assert result.returncode == 1, result.stdout + result.stderr
    assert "lint-output" in result.stdout and "lint failed" in result.stdout
    assert result.stdout.splitlines()[-1] == CLOSING_LINE, result.stdout
    # And when the tests fail, their status is the target's (lint passing)
    assert run_make_test_recipe(tmp_path, tests_status=2).returncode == 2


def test_make_test_says_where_it_stands_against_its_12_minute_budget(tmp_path):
    # Given `make test`'s recipe with passing stand-ins for lint and pytest
    # When it ran for 300 s, Then it says so against the 720 s budget, and pytest's closing line stays the last
    within = run_make_test_recipe(tmp_path, elapsed=300)
    assert within.returncode == 0, within.stdout + within.stderr
    lines = within.stdout.splitlines()
    assert any(re.fullmatch(r"make test took 30[0-9] s of its 720 s budget", line) for line in lines), lines
    assert "OVER ITS BUDGET" not in within.stdout and lines[-1] == CLOSING_LINE
    # When it ran for 800 s, Then it says it is over its budget (said, not failed: the machine may be the slow one)
    over = run_make_test_recipe(tmp_path, elapsed=800)
    assert over.returncode == 0, over.stdout + over.stderr
    lines = over.stdout.splitlines()
    assert any(line.startswith("make test is OVER ITS BUDGET") for line in lines) and lines[-1] == CLOSING_LINE


def test_make_check_is_lint_then_unit_and_integration_without_slow_tests():
    # When `make check` is dry-run
    lines = recipe("check")
    # Then it lints like `make test`, then runs only the unit and integration tiers, leaving slow tests out
    assert lines[0] == LINT, lines
    [pytest_line] = [line for line in lines if "/pytest" in line]
    assert pytest_line.startswith(".venv/bin/pytest -n 2 "), pytest_line
    assert '-m "not e2e and not infra and not slow"' in pytest_line, pytest_line
    assert pytest_line.endswith("tests/unit tests/integration"), pytest_line


def test_make_deploy_is_the_pinned_cdk_cli_on_this_app_with_cdk_args():
    # When `make deploy` is dry-run, with a context value as the README shows (CDK_ARGS="-c retention_days=60")
    lines = recipe("deploy", "CDK_ARGS=-c retention_days=60")
    # Then it is `cdk deploy` of the npm-installed CLI (no download: --no-install) on app.py, the context passed on
    assert lines[-1] == 'npx --no-install cdk deploy --app ".venv/bin/python app.py" -c retention_days=60', lines
    # And that CLI is pinned: an exact version in package.json, the same one in the lockfile
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert pinned[0].isdigit(), f"aws-cdk {pinned!r} is a range, not a pin"
    locked = json.loads((ROOT / "package-lock.json").read_text())["packages"]["node_modules/aws-cdk"]["version"]
    assert locked == pinned


def test_make_deploy_with_an_alarm_address_passes_it_to_cdk():
    # When README's first deploy is dry-run: `make deploy CDK_ARGS="-c alarm_email=oncall@example.com"`
    lines = recipe("deploy", "CDK_ARGS=-c alarm_email=oncall@example.com")
    # Then the pinned CDK CLI deploys app.py with the address as a context value (infra/config.py: alarm_email)
    assert lines[-1] == 'npx --no-install cdk deploy --app ".venv/bin/python app.py" -c alarm_email=oncall@example.com'


def test_make_bootstrap_is_the_pinned_cdk_cli_bootstrapping_for_this_app():
    # When `make bootstrap` is dry-run (AWS-only: it creates the CDK's staging resources in the account)
    lines = recipe("bootstrap")
    # Then it is `cdk bootstrap` of the npm-installed, pinned CLI (see the deploy test) on app.py
    assert lines[-1].rstrip() == 'npx --no-install cdk bootstrap --app ".venv/bin/python app.py"', lines


def test_make_bench_runs_every_section():
    # When `make bench` is dry-run, Then it runs the bench package with no section: all of them
    assert recipe("bench")[-1] == ".venv/bin/python -m bench"


def test_make_chaos_runs_a_seeded_300_payment_chaos_run_then_the_ingest_fuzzing():
    # When `make chaos` is dry-run
    lines = recipe("chaos")
    # Then it runs `inbox chaos`'s module with its seed and size, the fuzzing tests with more examples, then the soak
    # runs `make test` leaves out
    assert lines[-3] == ".venv/bin/python -m inbox_cli.chaos --seed 1 --payments 300", lines
    assert lines[-2] == "INBOX_FUZZ_EXAMPLES=50 .venv/bin/pytest -q -n 2 tests/integration/test_ingest_fuzz.py", lines
    assert lines[-1] == ".venv/bin/pytest -q -m soak tests/e2e", lines


def test_make_synth_writes_the_template_a_deploy_would_deploy(tmp_path):
    # When `make synth` runs (its assembly into a temporary directory: CDK_OUTDIR, as the CDK CLI sets it)
    done = run_make("synth", env={**os.environ, "CDK_OUTDIR": str(tmp_path)}, timeout=300)
    # Then the stack's template is there, with the outputs `inbox --stack NAME` reads
    template: dict[str, Any] = json.loads((tmp_path / "WebhookInbox.template.json").read_text())
    outputs = set(template["Outputs"])
    assert {
        definitions.OUTPUT_API_URL,
        definitions.OUTPUT_INBOX_TABLE,
        definitions.OUTPUT_PAYMENTS_TABLE,
        definitions.OUTPUT_BODY_BUCKET,
    } <= outputs, outputs
    # And it is the product's stack (synth itself fails on an unacknowledged cdk-nag finding)
    types = {resource["Type"] for resource in template["Resources"].values()}
    assert {"AWS::DynamoDB::Table", "AWS::Pipes::Pipe", "AWS::SQS::Queue", "AWS::Lambda::Function"} <= types
    # And it printed what would be deployed (its sources, secrets, alarms and who hears them, the fixed cost), and
    # the warning that no one would hear an alarm (no alarm address given)
    secrets = sum(1 for resource in template["Resources"].values() if resource["Type"] == "AWS::SecretsManager::Secret")
    assert "Stack WebhookInbox as synthesized:" in done.stderr, done.stderr
    assert f"  secrets: {secrets} " in done.stderr
    assert re.search(r"^  alarms: \d+, subscribed: nobody$", done.stderr, re.M), done.stderr
    assert re.search(r"^  fixed cost: \$\d+\.\d\d a month", done.stderr, re.M), done.stderr
    assert "warning: no one would hear an alarm" in done.stderr
    assert done.stdout.count("Stack WebhookInbox as synthesized:") == 0  # stdout is `cdk synth`'s template
