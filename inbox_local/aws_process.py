"""Starting and stopping the embedded AWS (inbox_local/embedded_aws.py) from the stack process.

Apart from embedded_aws.py so that the stack process never imports moto's server, DynamoDB models or Step
Functions interpreter, which only the embedded AWS's own process runs: importing them cost the stack process about
3 of its 5 CPU seconds of start-up (measured with `/usr/bin/time` on the imports), paid again by every `make run`
and every local stack the tests start.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time


class EmbeddedAws:
    """The embedded AWS in a process of its own: moto's request handling is CPU-heavy Python, and sharing one
    interpreter (one GIL) with the functions halved the local stack's throughput."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> None:
        # Generous: importing moto takes ~2 CPU s, but 30 s of wall time was not enough on a machine running a
        # test suite and other stacks (load 15 on 2 cores): the stack failed to start and its tests errored.
        self._process = subprocess.Popen(  # noqa: S603 - our own module, with the running interpreter
            [sys.executable, "-m", "inbox_local.embedded_aws", self.host, str(self.port)],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the embedded AWS exited with code {self._process.returncode}")
            with socket.socket() as probe:
                if probe.connect_ex((self.host, self.port)) == 0:
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the embedded AWS did not listen on {self.host}:{self.port} within {timeout} s")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process = None
