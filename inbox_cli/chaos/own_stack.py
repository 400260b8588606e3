"""`python -m inbox_cli.chaos` (what `make chaos` runs): a local stack of its own on free ports, `inbox chaos`
against it, the stack stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACK_START_SECONDS = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:  # noqa: S310 - loopback
            return int(response.status) == 200
    except OSError:
        return False


def run_on_own_stack(chaos_args: list[str], *, log_path: Path, max_attempts: str = "3") -> int:
    """Start a local stack on free loopback ports (its output to `log_path`), run `inbox chaos` against it, stop
    it. Returns the chaos run's exit status."""
    ports = {"INBOX_PORT": _free_port(), "INBOX_AWS_PORT": _free_port(), "INBOX_GATEWAY_PORT": _free_port()}
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "INBOX_SECRET_"))}
    env.update({name: str(port) for name, port in ports.items()})
    env.setdefault("INBOX_MAX_ATTEMPTS", max_attempts)
    env["INBOX_HOST"] = "127.0.0.1"
    env["PYTHONUNBUFFERED"] = "1"
    url = f"http://127.0.0.1:{ports['INBOX_PORT']}"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        stack = subprocess.Popen(
            [sys.executable, "-m", "inbox_local"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + STACK_START_SECONDS
            while not _healthy(url):
                if stack.poll() is not None or time.monotonic() > deadline:
                    print(f"the local stack did not start; its output is in {log_path}", file=sys.stderr)
                    return 2
                time.sleep(0.2)
            print(
                f"local stack on {url} (INBOX_MAX_ATTEMPTS={env['INBOX_MAX_ATTEMPTS']}; output in {log_path})",
                file=sys.stderr,
                flush=True,
            )
            return subprocess.call(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "inbox_cli.main", "chaos", *chaos_args], env=env, cwd=ROOT
            )
        finally:
            stack.send_signal(signal.SIGINT)
            try:
                stack.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stack.kill()
                stack.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """`python -m inbox_cli.chaos [inbox chaos options]`: the same run, on a local stack of its own."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_on_own_stack(args, log_path=ROOT / "build" / "chaos" / "stack.log")
