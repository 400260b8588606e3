"""`inbox listen` on the real local stack (what `make run` starts): one payment through, its published event forwarded
from the local outbox to a small Standard Webhooks receiver, verified with the secret the listener generated and
printed; SIGTERM stops it cleanly."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from inbox_cli.receiver import ReceiverCore, ReceiverServer
from tests.e2e.conftest import ROOT, RunningStack, free_port

# A stack of its own: the listener forwards whatever the stack publishes, and another test's event, published late
# on a shared stack, would be one more than this test sends.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

README_COMMAND = "inbox listen --forward-to URL [--secret whsec_...]"
SECRET_LINE = re.compile(r"Signing secret: (whsec_\S+)")


def wait_for(condition, *, timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:.0f} s; listener output:\n{log.read_text()}")
        time.sleep(0.1)


def test_listen_forwards_a_local_payments_event_signed_with_the_secret_it_printed(local_stack: RunningStack):
    # Given `inbox listen --forward-to URL` on the local stack (no --secret: it generates one and prints it)
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"
    words = README_COMMAND.replace("URL", url).replace("[--secret whsec_...]", "").split()
    log = Path(tempfile.NamedTemporaryFile(prefix="inbox-listen-", suffix=".log", delete=False).name)  # noqa: SIM115
    with log.open("w") as output:
        listener = subprocess.Popen(
            [sys.executable, "-m", "inbox_cli.main", *words[1:]],
            env=local_stack.env,
            cwd=ROOT,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
    receiver: ReceiverServer | None = None
    try:
        wait_for(lambda: "Ctrl-C to stop." in log.read_text(), timeout=60, what="listener ready", log=log)
        found = SECRET_LINE.search(log.read_text())
        assert found, log.read_text()
        # And a receiver at URL holding the printed secret
        receiver = ReceiverServer(ReceiverCore([found.group(1)]), port=port).start()
        # When one payment goes through the local stack
        sent = local_stack.cli("send", "stripe", "--status", "paid")
        resource_id = re.search(r"\bpi_\w+", sent.stdout)
        assert resource_id, sent.stdout
        core = receiver.core
        wait_for(lambda: bool(core.events), timeout=60, what="the event forwarded", log=log)
        # Then the receiver verified its payment.status_changed, signed with that secret
        assert core.rejected == 0 and core.mismatched_ids == []
        [event] = core.events
        assert (event["type"], event["resource_id"], event["new_status"]) == (
            "payment.status_changed",
            resource_id.group(0),
            "paid",
        )
        # And the listener printed one line for it, with the receiver's answer
        wait_for(lambda: "-> 200" in log.read_text(), timeout=10, what="the event's line", log=log)
        assert f"stripe#{resource_id.group(0)}" in log.read_text()
    finally:
        # When it is sent SIGTERM, Then it stops cleanly, saying how many it forwarded
        listener.send_signal(signal.SIGTERM)
        code = listener.wait(timeout=30)
        if receiver is not None:
            receiver.stop()
    assert code == 0, log.read_text()
    assert "Stopped: 1 event(s) forwarded." in log.read_text()
    log.unlink()
