"""The forwarding log on the real local stack: an endpoint that answers 500 (with a header and a body) for a while,
then recovers. Each attempt's answer is listed by `inbox outbox attempts`, `inbox outbox list --undelivered` shows
the events during the outage and not after, and `inbox outbox resend --since` sends the period once."""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.forwarding import FORWARDER_ATTEMPTS
from shared.payments.outbox import transition_id
from tests.e2e.conftest import RunningStack, start_stack, stop_stack
from tests.outage_endpoint import OUTAGE_BODY, OUTAGE_STATUS, OutageEndpoint

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SECRET = "whsec_" + base64.b64encode(b"e2e-forwarding-log-secret-32-byt").decode()
# The local publisher's POSTs per round: the forwarder Lambda's, handed out by the same root.
ATTEMPTS_PER_ROUND = FORWARDER_ATTEMPTS


@pytest.fixture(scope="module")
def outage() -> Iterator[tuple[RunningStack, OutageEndpoint]]:
    """A local stack of its own forwarding to an endpoint that is down; the publisher gives a refused batch up
    after its first round (INBOX_FORWARD_MAX_RETRY_ATTEMPTS=0), as the forwarding Pipe does after its retries."""
    endpoint = OutageEndpoint(down=True).start()
    try:
        stack = start_stack(
            {
                "INBOX_FORWARD_URL": endpoint.url,
                "INBOX_FORWARD_SECRET": SECRET,
                "INBOX_FORWARD_MAX_RETRY_ATTEMPTS": "0",
            }
        )
        try:
            yield stack, endpoint
        finally:
            if stack.process.poll() is None:
                stop_stack(stack)
    finally:
        endpoint.stop()


def cli_json(stack: RunningStack, *args: str) -> Any:
    return json.loads(stack.cli(*args, "--json").stdout)


def wait_for(what: str, condition: Callable[[], bool], stack: RunningStack, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{stack.output()[-3000:]}")
        time.sleep(0.5)


def given_up(stack: RunningStack) -> int:
    return sum(int(n) for n in re.findall(r"outbox: gave up (\d+) event", stack.output()))


def test_an_outage_is_logged_listed_and_its_period_resent_once(outage: tuple[RunningStack, OutageEndpoint]) -> None:
    stack, endpoint = outage
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    # Given two payments whose events are published while the endpoint answers 500
    resource_ids = [f"pi_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    for resource_id in resource_ids:
        stack.cli("send", "stripe", "--resource-id", resource_id, "--status", "paid")
    ids = [transition_id(f"stripe#{resource_id}", 1) for resource_id in resource_ids]
    # When the local publisher has tried and given them up (the Pipe's dead-lettering)
    wait_for("both events given up", lambda: given_up(stack) >= 2, stack)
    # Then each attempt of the first event is listed, oldest first, with the endpoint's status, header and body
    attempts = cli_json(stack, "outbox", "attempts", ids[0])
    assert len(attempts) == ATTEMPTS_PER_ROUND
    assert [a["attempted_at"] for a in attempts] == sorted(a["attempted_at"] for a in attempts)
    for attempt in attempts:
        assert attempt["status"] == OUTAGE_STATUS
        assert attempt["response_body"] == OUTAGE_BODY.decode()
        assert attempt["response_headers"]["x-outage"] == "planned"
        assert attempt["endpoint"] == endpoint.logged_url and attempt["sender"] == "forwarder"
    text = stack.cli("outbox", "attempts", ids[0]).stdout
    assert text.count(" 500 ") == ATTEMPTS_PER_ROUND and "down for maintenance" in text
    # And both events are undelivered, during the outage and still after it ends (nothing retries them now)
    assert {row["id"] for row in cli_json(stack, "outbox", "list", "--undelivered")} >= set(ids)
    listed = stack.cli("outbox", "list", "--undelivered").stdout
    assert all(event_id in listed for event_id in ids), listed
    endpoint.down = False
    assert {row["id"] for row in cli_json(stack, "outbox", "list", "--undelivered")} >= set(ids)

    # When the operator resends the period
    first = stack.cli("outbox", "resend", "--since", since).stdout
    # Then both went once, and nothing is undelivered any more
    assert re.search(r"sent 2 of \d+ outbox records", first), first
    assert sorted(endpoint.accepted) == sorted(ids)
    assert not {row["id"] for row in cli_json(stack, "outbox", "list", "--undelivered")} & set(ids)
    assert "(none: every published event reached the endpoint)" in stack.cli("outbox", "list", "--undelivered").stdout
    # And the log shows the resend's 2xx after the outage's 500s
    last = cli_json(stack, "outbox", "attempts", ids[0])[-1]
    assert last["status"] == 204 and last["sender"] == "resend"

    # When the period is resent again, without --force
    second = stack.cli("outbox", "resend", "--since", since).stdout
    # Then nothing goes
    assert re.search(r"sent 0 of \d+ outbox records", second), second
    assert sorted(endpoint.accepted) == sorted(ids)
    # And with --force the period goes once more (same webhook-ids: the receiver dedups)
    forced = stack.cli("outbox", "resend", "--since", since, "--force").stdout
    assert re.search(r"sent 2 of \d+ outbox records", forced), forced
    assert sorted(endpoint.accepted) == sorted(ids * 2)
