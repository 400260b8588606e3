"""The embedded AWS (a process of its own, inbox_local/embedded_aws.py) never outlives the stack that started it: a
stack killed outright (SIGKILL: a test's timeout, the OOM killer) cannot stop it, and an orphan would keep its
port, its memory and its CPU for ever (a suite that timed out once left a dozen of them behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.conftest import ROOT, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

# How the stack starts it (inbox_local/aws_process.py: `python -m inbox_local.embedded_aws HOST PORT`, then
# wait for the port), without importing moto in the parent too.
PARENT = """
import socket, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "inbox_local.embedded_aws", "127.0.0.1", sys.argv[1]])
def listening():
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0
while not listening():
    assert child.poll() is None, "the embedded AWS exited"
    time.sleep(0.1)
print(child.pid, flush=True)
sys.stdin.read()  # until killed
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited already: it only waits for init to reap it.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_embedded_aws_ends_when_its_parent_is_killed():
    # Given a process that started the embedded AWS, listening
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(free_port())],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        # When the parent is killed outright, with no chance to stop its child
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        # Then the embedded AWS ends by itself, within a few of its 0.2 s checks
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child)
    finally:
        if parent.poll() is None:
            parent.kill()
