"""README "Try it locally", run as written: `make run` (the real make target, in the repository root, on free ports,
stopped with Ctrl-C), then each `.venv/bin/inbox ...` line in order, its `evt_...`/`pi_...` filled with the ids the
commands before it printed; each test checks what the README says that line does."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import wait_until
from tests.e2e.readme_support import MakeRun, Shell, clean_environment, start_make_run
from tests.readme_commands import section_commands

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SECTION = "Try it locally"
MAKE_RUN = "make run"
SEND = ".venv/bin/inbox send stripe"
LIST = ".venv/bin/inbox events list"
SHOW = ".venv/bin/inbox events show stripe evt_... --json"
SIMULATE = ".venv/bin/inbox simulate --payments 20"
PAYMENT = ".venv/bin/inbox payments show stripe pi_... --json"
SETTLED = {"processed", "ignored"}


class Walkthrough:
    """The block's lines, run once each in README order: asking for a line's result runs the lines before it first."""

    def __init__(self, stack: MakeRun) -> None:
        self.stack = stack
        self.shell = Shell(stack.env)
        self.lines = [command.text for command in section_commands(SECTION)]
        self.results: dict[str, subprocess.CompletedProcess[str]] = {}

    def result(self, line: str) -> subprocess.CompletedProcess[str]:
        assert line in self.lines, f"README's {SECTION!r} block no longer shows `{line}`: {self.lines}"
        for earlier in self.lines[: self.lines.index(line) + 1]:
            if earlier == MAKE_RUN or earlier in self.results:
                continue
            self.results[earlier] = self.shell.run(earlier, timeout=120)
        return self.results[line]

    def event_id(self) -> str:
        self.result(LIST)
        return self.shell.fill("evt_...")

    def show_event(self) -> dict[str, Any]:
        shown = self.shell.run(self.shell.fill(SHOW))
        assert shown.returncode == 0, shown.stderr
        document: dict[str, Any] = json.loads(shown.stdout)
        return document


@pytest.fixture(scope="module")
def walkthrough() -> Iterator[Walkthrough]:
    lines = [command.text for command in section_commands(SECTION)]
    assert lines and lines[0] == MAKE_RUN, f"the block starts the stack with `make run`: {lines}"
    stack = start_make_run(MAKE_RUN, clean_environment())
    try:
        yield Walkthrough(stack)
    finally:
        stack.interrupt()


def test_the_block_is_the_one_these_tests_walk_through():
    # Given the README's "Try it locally" block, When it is read, Then it is exactly the lines checked below
    assert [command.text for command in section_commands(SECTION)] == [MAKE_RUN, SEND, LIST, SHOW, SIMULATE, PAYMENT]


def test_make_run_prints_the_url_the_development_signing_secrets_and_examples(walkthrough):
    # Given `make run`, as written, in the repository root (ports from INBOX_PORT & co., as the README's table says)
    # When it is up, Then its console shows the URL, the signing secrets in use and the commands to try (printed
    # once start() returns, which is a moment after /health first answers)
    deadline = time.monotonic() + 30
    while "Ctrl-C stops it." not in (output := walkthrough.stack.output()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"API:           {walkthrough.stack.url}" in output
    assert re.search(r"^  INBOX_SECRET_STRIPE=\S+$", output, re.MULTILINE), output
    assert ".venv/bin/inbox send stripe" in output
    assert ".venv/bin/inbox events list" in output


def test_inbox_send_stripe_posts_a_correctly_signed_sample_webhook(walkthrough):
    # When `.venv/bin/inbox send stripe` runs against the stack
    sent = walkthrough.result(SEND)
    # Then the stack accepted it: verified (a bad signature is 401) and stored as new
    assert sent.returncode == 0, sent.stdout + sent.stderr
    posted = f"POST {walkthrough.stack.url}/webhooks/stripe -> 200 "
    [answered] = [line.split(posted, 1)[1] for line in sent.stdout.splitlines() if line.startswith(posted)]
    answer = json.loads(answered)
    assert answer["received"] is True
    assert "duplicate" not in answer


def test_inbox_events_list_shows_it_in_the_inbox_and_it_is_processed_a_moment_later(walkthrough):
    # When `.venv/bin/inbox events list` runs after the send
    listed = walkthrough.result(LIST)
    # Then it lists that one Stripe event
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    columns = ["RECEIVED_AT", "SOURCE", "PROVIDER", "EVENT_ID", "EVENT_TYPE", "RESOURCE_ID", "STATUS", "ATTEMPTS"]
    assert header.split() == columns
    row = dict(zip(columns, rows[0].split(), strict=True)) if len(rows) == 1 else {}
    assert (row.get("SOURCE"), row.get("PROVIDER")) == ("stripe", "stripe"), listed.stdout
    event_id = walkthrough.event_id()
    assert row["EVENT_ID"] == event_id
    # And a moment later (bounded wait, reading the stack in this process) the processor has processed it, as
    # `inbox events show` then says
    wait_until(
        lambda: walkthrough.stack.stored_event("stripe", event_id),
        lambda item: item.get("status") in SETTLED,
        timeout=45,
    )
    shown = walkthrough.show_event()
    assert shown["status"] == "processed", {key: shown.get(key) for key in ("status", "attempts", "last_error")}


def test_inbox_events_show_prints_the_event_with_its_raw_body(walkthrough):
    # When `.venv/bin/inbox events show stripe evt_... --json` runs, evt_... the id `events list` printed
    shown = walkthrough.result(SHOW)
    # Then it prints that event as JSON, with the raw body exactly as it was sent
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    event_id = walkthrough.event_id()
    assert (document["provider"], document["event_id"]) == ("stripe", event_id)
    body = json.loads(document["body"])
    assert body["id"] == event_id and body["object"] == "event"


def test_inbox_simulate_drives_lifecycles_with_duplicates_and_prints_a_verdict_table(walkthrough):
    # When `.venv/bin/inbox simulate --payments 20` runs on the gateway simulator
    simulated = walkthrough.result(SIMULATE)
    # Then it prints a verdict table: duplicates were delivered, and every payment ends as the gateway says
    assert simulated.returncode == 0, simulated.stdout + simulated.stderr
    table = simulated.stdout
    assert table.startswith("Simulation verdict")
    assert re.search(r"payments matching truth\s+20/20", table), table
    sent = re.search(r"webhooks sent by gateway (\d+)\s+deliveries \(with duplicates\) (\d+)", table)
    assert sent and int(sent.group(2)) > int(sent.group(1)), table
    assert re.search(r"events failed\s+0\b", table) and re.search(r"events pending\s+0\b", table), table
    assert re.search(r"verdict\s+OK$", table, re.MULTILINE), table


def test_inbox_payments_show_prints_the_payment_the_send_made(walkthrough):
    # When `.venv/bin/inbox payments show stripe pi_... --json` runs, pi_... the payment `events list` printed
    shown = walkthrough.result(PAYMENT)
    # Then it prints that payment as the processor applied it: the sample webhook's `paid`
    assert shown.returncode == 0, shown.stdout + shown.stderr
    payment = json.loads(shown.stdout)
    resource_id = walkthrough.shell.fill("pi_...")
    assert payment["pk"] == f"stripe#{resource_id}"
    assert payment["status"] == "paid"


def test_ctrl_c_stops_make_run(walkthrough):
    # Given the walked-through stack (every line above run first)
    for line in walkthrough.lines[1:]:
        walkthrough.result(line)
    # When Ctrl-C reaches make's terminal group
    walkthrough.stack.interrupt()
    # Then the stack stops cleanly and says so (make itself then exits as an interrupted make does)
    output = walkthrough.stack.output()
    assert "stopping (signal 2)" in output and "stopped." in output, output[-2000:]
