"""Local end-to-end tier: the real local stack (`python -m inbox_local`, what `make run` starts) over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class RunningStack:
    url: str
    env: dict[str, str]
    process: subprocess.Popen[str]
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "inbox_cli.main", *args],
            check=False,
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"inbox {' '.join(args)} failed: {result.stdout}\n{result.stderr}")
        return result


def start_stack(extra_env: dict[str, str] | None = None) -> RunningStack:
    port, aws_port, gateway_port = free_port(), free_port(), free_port()
    env = (
        {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "INBOX_SECRET_"))}
        | {
            "INBOX_PORT": str(port),
            "INBOX_AWS_PORT": str(aws_port),
            "INBOX_GATEWAY_PORT": str(gateway_port),
            "PYTHONUNBUFFERED": "1",
        }
        | (extra_env or {})
    )
    # The stack's console goes to a file, never to an unread pipe: past 64 KB a full pipe blocks its writer, and
    # a stack that logs a line per request would freeze mid-test.
    log = tempfile.NamedTemporaryFile(prefix="inbox-local-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "inbox_local"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log.close()
    log_path = Path(log.name)
    url = f"http://127.0.0.1:{port}"
    # Longer than the stack's own wait for its embedded AWS (inbox_local/aws_process.py), so that its error shows.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"local stack exited early:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                if response.status == 200:
                    return RunningStack(url, env, process, log_path)
        except OSError:
            time.sleep(0.2)
    # Interrupted, not killed: a stack killed outright leaves its embedded AWS to notice alone, and under load an
    # orphan kept its CPU for minutes (inbox_local/embedded_aws.py watches its parent).
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
    raise AssertionError(f"local stack did not become healthy in 120 s:\n{log_path.read_text(errors='replace')}")


def stop_stack(stack: RunningStack) -> int:
    stack.process.send_signal(signal.SIGINT)
    try:
        return stack.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        stack.process.kill()
        raise


class _SharedStack:
    """One local stack per test process (per xdist worker), started when a test first asks for it and stopped as
    soon as the next test to run does not use it: an idle stack still polls its embedded AWS (the Pipe, the queue
    mappings, the sweeper: about a fifth of a core measured with /proc/PID/stat), so it must not outlive the run of
    tests that share it. Starting one costs two interpreters and the embedded AWS's imports and tables (several CPU
    seconds); one per module made the e2e tier pay that a dozen times."""

    stack: RunningStack | None = None

    @classmethod
    def get(cls) -> RunningStack:
        if cls.stack is None or cls.stack.process.poll() is not None:
            cls.stack = start_stack()
        return cls.stack

    @classmethod
    def stop(cls) -> None:
        stack, cls.stack = cls.stack, None
        if stack is not None and stack.process.poll() is None:
            stop_stack(stack)


def _uses_shared_stack(item: pytest.Item | None) -> bool:
    return (
        item is not None
        and "local_stack" in getattr(item, "fixturenames", ())
        and item.get_closest_marker("shared_stack") is not None
    )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if not _uses_shared_stack(nextitem):
        _SharedStack.stop()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _SharedStack.stop()


@pytest.fixture(scope="module")
def _own_stack() -> Iterator[RunningStack]:
    stack = start_stack()
    yield stack
    if stack.process.poll() is None:
        stop_stack(stack)


@pytest.fixture
def local_stack(request: pytest.FixtureRequest) -> RunningStack:
    """The stack a test drives: by default a stack of the module's own. A module marked `pytest.mark.shared_stack`
    gets the one shared by the worker's such modules (_SharedStack) instead: only for modules that ingest and list
    and never wait for processing, with ids of their own. Processing is not isolated by ids: each source's circuit
    breaker and refetch rate limit live in the stack, so what one module's refetches spend or trip, another
    module's events wait for (the likeliest reason CI once saw every event of a later module still pending after
    90 s). Tests that need a stack configured otherwise call start_stack(extra_env) in a fixture of their own
    (tests/README.md)."""
    if request.node.get_closest_marker("shared_stack") is None:
        stack: RunningStack = request.getfixturevalue("_own_stack")
        return stack
    return _SharedStack.get()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that share the stack first (each keeps its own order; the sort is stable): the xdist groups are
    handed out in this order, so each worker runs its shared-stack modules one after another on one stack, then
    the others. Every worker collects the same order, as xdist requires."""
    sharing = {item.module.__name__ for item in items if isinstance(item, pytest.Function) and _uses_shared_stack(item)}
    items.sort(key=lambda item: 0 if isinstance(item, pytest.Function) and item.module.__name__ in sharing else 1)
