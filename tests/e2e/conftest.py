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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
# How often a wait looks again. A look is a read in this process (milliseconds, RunningStack.stored_event), not an
# `inbox` call (an interpreter: ~0.5 CPU s each, and as long again on a loaded machine).
WAIT_INTERVAL_SECONDS = 0.1


class WaitTimedOut(AssertionError):
    """A wait whose condition never held: the test fails at the wait, with what it saw last."""


def wait_until(probe: Callable[[], T], done: Callable[[T], bool], *, timeout: float = 60) -> T:
    """What `probe` returns once `done` holds for it. A condition, never a fixed sleep: when `timeout` seconds pass
    first, the wait fails (WaitTimedOut, with the last answer) instead of handing the caller a value that does not
    hold, so a wait that never ends shows as a failure, not as slowness."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise WaitTimedOut(f"not done after {timeout:g} s; last seen: {value!r}"[:4000])
        time.sleep(WAIT_INTERVAL_SECONDS)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def embedded_aws_client(env: dict[str, str], service: str) -> Any:
    """A boto3 client of the embedded AWS of the stack started with `env` (its INBOX_AWS_PORT)."""
    import boto3

    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=f"http://127.0.0.1:{env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def read_stored_event(dynamodb: Any, source: str, event_id: str) -> dict[str, Any]:
    """The inbox item of `source`'s event (a consistent GetItem in this process), {} while there is none."""
    from inbox_local.config import LocalNames
    from shared.inbox.store import from_attributes

    answer = dynamodb.get_item(
        TableName=LocalNames().inbox_table, Key={"pk": {"S": f"{source}#{event_id}"}}, ConsistentRead=True
    )
    return from_attributes(answer["Item"]) if "Item" in answer else {}


@dataclass
class RunningStack:
    url: str
    env: dict[str, str]
    process: subprocess.Popen[str]
    log_path: Path
    _clients: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, service: str) -> Any:
        """A boto3 client of the stack's embedded AWS, made once: what a test reads while it waits."""
        if service not in self._clients:
            self._clients[service] = embedded_aws_client(self.env, service)
        return self._clients[service]

    def stored_event(self, source: str, event_id: str) -> dict[str, Any]:
        """The inbox item of `source`'s event (a consistent GetItem), {} while there is none."""
        return read_stored_event(self.client("dynamodb"), source, event_id)

    def stored_events(self, **attributes: str) -> list[dict[str, Any]]:
        """The inbox items whose attributes have these values (a scan: a test stack holds little)."""
        from inbox_local.config import LocalNames
        from shared.inbox.store import from_attributes

        pages = self.client("dynamodb").get_paginator("scan").paginate(TableName=LocalNames().inbox_table)
        items = (from_attributes(raw) for page in pages for raw in page["Items"])
        return [item for item in items if all(item.get(name) == value for name, value in attributes.items())]

    def settled_event(self, source: str, event_id: str, *, timeout: float = 60) -> dict[str, Any]:
        """The event's item once it is no longer pending (WaitTimedOut after `timeout`)."""
        return wait_until(
            lambda: self.stored_event(source, event_id),
            lambda item: item.get("status") not in (None, "pending"),
            timeout=timeout,
        )

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
    mappings, the sweeper: about a tenth of a core measured with /proc/PID/stat), so it must not outlive the run of
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
    and never wait for processing, with ids of their own, leaving no work behind. Processing is not isolated by ids:
    one embedded AWS, one queue and four processor threads serve every module, so the retries one module leaves
    behind are what the next one waits for (reproduced: a burst about 200 payments the simulator did not know kept
    the processor refetching 404s for minutes, and the next module's deliveries got 503s and its events stayed
    pending; tests/README.md). Tests that need a stack configured otherwise call start_stack(extra_env) in a
    fixture of their own."""
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
