"""Running README commands as written: `make run` as the README starts it, and a shell line with its placeholders
filled by what earlier commands printed."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.definitions import ENV_SOURCES_FILE
from tests.e2e.conftest import embedded_aws_client, free_port, read_stored_event

ROOT = Path(__file__).resolve().parents[2]

# `evt_...`, `pi_...`: an id of that prefix, as a previous command printed it.
_ID_PLACEHOLDER = re.compile(r"\b([a-z]+_)\.\.\.")
_PRINTED_ID = re.compile(r"\b((?:evt|pi|pay|msg)_[A-Za-z0-9]+)\b")


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without AWS credentials or signing secrets (the stack's dev values apply), on free
    ports, plus `extra`. It keeps INBOX_SOURCES_FILE: the run's default declaration (tests/conftest.py), never the
    checkout's sources.json."""
    return (
        {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AWS_", "INBOX_")) or key == ENV_SOURCES_FILE
        }
        | {
            "INBOX_PORT": str(free_port()),
            "INBOX_AWS_PORT": str(free_port()),
            "INBOX_GATEWAY_PORT": str(free_port()),
            "PYTHONUNBUFFERED": "1",
        }
        | extra
    )


def split_assignments(command: str) -> tuple[dict[str, str], list[str]]:
    """`A=1 B=2 make run` -> ({"A": "1", "B": "2"}, ["make", "run"])."""
    words = shlex.split(command)
    assignments: dict[str, str] = {}
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        assignments[name] = value
    return assignments, words


@dataclass
class MakeRun:
    """`make run` started as a terminal does: its own process group, interrupted by Ctrl-C (SIGINT to the group)."""

    command: str
    env: dict[str, str]
    process: subprocess.Popen[str]
    log_path: Path
    _dynamodb: Any = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['INBOX_PORT']}"

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.env['INBOX_GATEWAY_PORT']}"

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stored_event(self, source: str, event_id: str) -> dict[str, Any]:
        """The inbox item of `source`'s event, read in this process (what a test waits on instead of a loop of
        `inbox` calls, an interpreter each), {} while there is none."""
        if self._dynamodb is None:
            self._dynamodb = embedded_aws_client(self.env, "dynamodb")
        return read_stored_event(self._dynamodb, source, event_id)

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C: SIGINT to the whole foreground group (make and the stack it runs), then wait for make."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            raise


def start_make_run(command: str, env: dict[str, str], *, ready_timeout: float = 120) -> MakeRun:
    """Run `command` (a README line such as `make run` or `INBOX_FORWARD_URL=... make run`) in the repository root and
    wait until GET /health answers 200. The first run on a tree may sync the virtualenv first (make's setup)."""
    assignments, argv = split_assignments(command)
    env = env | assignments
    log = tempfile.NamedTemporaryFile(prefix="readme-make-run-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    log.close()
    stack = MakeRun(command, env, process, Path(log.name))
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"`{command}` exited early ({process.returncode}):\n{stack.output()}")
        try:
            with urllib.request.urlopen(f"{stack.url}/health", timeout=1) as response:
                if response.status == 200:
                    return stack
        except OSError:
            time.sleep(0.25)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError(f"`{command}` did not serve /health in {ready_timeout:.0f} s:\n{stack.output()}")


@dataclass
class Shell:
    """Runs README lines one after the other in the repository root, as a reader would in another terminal: each
    `xxx_...` placeholder becomes the first id of that prefix an earlier line printed."""

    env: dict[str, str]
    printed_ids: list[str] = field(default_factory=list)

    def fill(self, command: str) -> str:
        def replace(match: re.Match[str]) -> str:
            prefix = match.group(1)
            for printed in self.printed_ids:
                if printed.startswith(prefix):
                    return printed
            raise AssertionError(f"`{command}`: no {prefix}... id printed by an earlier command ({self.printed_ids})")

        return _ID_PLACEHOLDER.sub(replace, command)

    def run(self, command: str, *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        filled = self.fill(command)
        assignments, argv = split_assignments(filled)
        if "/" in argv[0] and not argv[0].startswith("/"):
            argv[0] = str(ROOT / argv[0])  # `.venv/bin/inbox`: relative to the repository root, where we stand
        result = subprocess.run(
            argv,
            env=self.env | assignments,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        for printed in _PRINTED_ID.findall(result.stdout):
            if printed not in self.printed_ids:
                self.printed_ids.append(printed)
        return result
