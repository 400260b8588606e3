"""Forwarding on the real local stack: `inbox simulate` -> one verified, in-order event per real transition at a
Standard Webhooks receiver (`inbox receiver`'s core, in-process), also when the receiver fails for a while."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import boto3
import pytest

from inbox_cli.receiver import ReceiverCore, ReceiverServer
from inbox_local.config import LocalNames
from shared.inbox.store import from_attributes
from shared.payments.outbox import transition_id
from tests.e2e.conftest import RunningStack, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SECRET = "whsec_" + base64.b64encode(b"e2e-forwarding-secret-of-32-byte").decode()
# A few payments of two refetched providers (`inbox simulate` mixes every provider by default; this is about the
# forwarding), lifecycles of several steps, webhooks duplicated and up to one step late; each round processed
# before the gateway's next step, so intermediate states are applied too (without --settle-rounds the refetch
# mostly sees the final state: one transition per payment).
SIMULATION = (
    *("--payments", "8", "--seed", "11", "--duplicates", "0.5", "--max-delay", "1", "--settle-rounds"),
    *("--provider", "stripe", "--provider", "asaas"),
    *("--lifecycle", "dispute won", "--lifecycle", "dispute lost", "--lifecycle", "refunded"),
    *("--lifecycle", "partially refunded twice, then fully", "--timeout", "90"),
)


@contextmanager
def forwarding_stack(*, fail_first: int = 0) -> Iterator[tuple[RunningStack, ReceiverServer]]:
    """A local stack of its own forwarding to an in-process receiver on a free port; both stopped afterwards."""
    receiver = ReceiverServer(ReceiverCore([SECRET]), fail_first=fail_first).start()
    try:
        stack = start_stack({"INBOX_FORWARD_URL": receiver.url, "INBOX_FORWARD_SECRET": SECRET})
        try:
            yield stack, receiver
        finally:
            if stack.process.poll() is None:
                stop_stack(stack)
    finally:
        receiver.stop()


def simulate(stack: RunningStack) -> dict[str, Any]:
    result = stack.cli("simulate", "--json", *SIMULATION, check=False, timeout=180)
    assert result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["ok"], report
    return report


def embedded(stack: RunningStack, service: Literal["dynamodb", "secretsmanager"]) -> Any:
    """A client of the stack's embedded AWS."""
    return boto3.client(
        service,
        endpoint_url=f"http://127.0.0.1:{stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def payments(stack: RunningStack) -> dict[str, dict[str, Any]]:
    """The payments table, by payment key (`provider#resource_id`)."""
    dynamodb = embedded(stack, "dynamodb")
    items = dynamodb.get_paginator("scan").paginate(TableName=LocalNames().payments_table)
    return {str(item["pk"]): item for item in (from_attributes(raw) for page in items for raw in page["Items"])}


def transitions_by_payment(stack: RunningStack) -> dict[str, int]:
    """The payments table's own count of applied transitions, per payment."""
    return {pk: int(payment["transitions"]) for pk, payment in payments(stack).items()}


def wait_until_drained(receiver: ReceiverServer, expected_ids: set[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not expected_ids <= set(receiver.core.by_id) and time.monotonic() < deadline:
        time.sleep(0.2)


def check_every_transition_arrived_once_in_order(stack: RunningStack, receiver: ReceiverServer) -> dict[str, Any]:
    """The assertions both scenarios share. Returns the receiver's summary for scenario-specific checks."""
    table = payments(stack)
    transitions = {pk: int(payment["transitions"]) for pk, payment in table.items()}
    outbox = json.loads(stack.cli("outbox", "list", "--json").stdout)
    # The outbox holds exactly the payments table's transitions: sequences 1..transitions per payment
    assert {record["type"] for record in outbox} == {"payment.status_changed"}  # simulate fails nothing
    outbox_sequences: dict[str, list[int]] = {}
    for record in outbox:
        outbox_sequences.setdefault(record["pk"], []).append(record["sequence"])
    assert outbox_sequences == {pk: list(range(1, count + 1)) for pk, count in transitions.items()}
    expected_ids = {transition_id(pk, n) for pk, count in transitions.items() for n in range(1, count + 1)}
    assert expected_ids == {record["id"] for record in outbox}

    # When the publisher has handed everything over (then stopped: nothing can arrive after the assertions)
    wait_until_drained(receiver, expected_ids)
    stop_stack(stack)
    received = list(receiver.core.events)

    # Then every transition arrived, each once by id, nothing else did, and each verified (the receiver stores an
    # event only after `standardwebhooks` verified its signature)
    assert sorted(event["id"] for event in received) == sorted(expected_ids)
    assert len(received) == sum(transitions.values())
    assert receiver.core.rejected == 0
    # ... in sequence order per payment, with no gap, as the receiver saw them arrive
    arrival: dict[str, list[int]] = {}
    for event in received:
        arrival.setdefault(f"{event['provider']}#{event['resource_id']}", []).append(event["sequence"])
    assert arrival == {pk: list(range(1, count + 1)) for pk, count in transitions.items()}
    summary = receiver.core.summary()
    assert summary["in_order"] and summary["gaps"] == [] and summary["regressions"] == []
    assert summary["mismatched_ids"] == []
    # ... and each payment's last event leaves it where the payments table has it
    statuses = {pk: payment["status"] for pk, payment in table.items()}
    last = {f"{e['provider']}#{e['resource_id']}": e["new_status"] for e in received}
    assert last == statuses
    return summary


def test_simulate_delivers_one_verified_in_order_event_per_transition():
    with forwarding_stack() as (stack, receiver):
        # Given a stack forwarding to a Standard Webhooks receiver, its INBOX_FORWARD_SECRET loaded into its embedded
        # Secrets Manager as the deployed stack holds its forwarding secret (the forwarder's root signs with that)
        stored = embedded(stack, "secretsmanager").get_secret_value(SecretId=LocalNames().forward_secret_name)
        assert json.loads(stored["SecretString"]) == {"current": SECRET, "previous": ""}
        # When payments of both providers walk their lifecycles, their webhooks duplicated and reordered
        report = simulate(stack)
        transitions = transitions_by_payment(stack)
        assert {pk.split("#")[0] for pk in transitions} == {"stripe", "asaas"}
        assert report["payments"] == len(transitions) == 8
        assert sum(transitions.values()) >= 2 * len(transitions)  # multi-step lifecycles, not only first sightings
        # Then (when drained) one verified, in-order event per real transition
        summary = check_every_transition_arrived_once_in_order(stack, receiver)
        # ... and with a healthy receiver, nothing was even sent twice
        assert summary["duplicates"] == 0
        assert receiver.requests == summary["accepted"] == sum(transitions.values())
        print(f"\nforwarding: {summary['accepted']} events over {summary['streams']} payments, in order")


def test_a_receiver_failing_for_a_while_still_gets_every_event_once_in_order():
    # Given a receiver that answers 500 to its first 7 requests: more than two rounds of the forwarder's 3 attempts
    # (FORWARDER_ATTEMPTS), so the publisher fails a round (DeliveryFailed), re-reads the stream chunk, and tries again
    failures = 7
    with forwarding_stack(fail_first=failures) as (stack, receiver):
        # When payments walk their lifecycles meanwhile
        simulate(stack)
        transitions = transitions_by_payment(stack)
        # Then every event still arrives once by id, in order, once the receiver recovers
        summary = check_every_transition_arrived_once_in_order(stack, receiver)
        assert receiver.failed_on_purpose == failures
        assert receiver.requests == failures + summary["accepted"] + summary["duplicates"]
        assert summary["accepted"] == sum(transitions.values())
        assert "outbox: delivery failed, retrying in" in stack.output()
