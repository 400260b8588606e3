"""Confirming from the signed payload through the local stack (what `make run` starts): a Stripe source that confirms
every payment from its payload (`confirm_from_payload: always`), and a gateway whose payment changed after the
webhook was sent. The payment is paid at once from the signed payload, unverified; its verification then refetches
it, finds it refunded, and applies that as a published, verified transition."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from inbox_local.config import LocalNames
from inbox_local.senders import sender_for
from tests.e2e.conftest import RunningStack, start_stack, stop_stack
from tests.e2e.test_sources_local import gateway, request, secrets_printed, stored_payment

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SOURCE = "stripe-fast"
SOURCES: list[dict[str, Any]] = [{"name": SOURCE, "provider": "stripe", "confirm_from_payload": "always"}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    path: Path = tmp_path_factory.mktemp("sources") / "sources.json"
    path.write_text(json.dumps(SOURCES), encoding="utf-8")
    running = start_stack({"INBOX_SOURCES_FILE": str(path), "INBOX_SWEEP_INTERVAL_SECONDS": "3600"})
    yield running
    if running.process.poll() is None:
        stop_stack(running)


def deliver(stack: RunningStack, body: str, secret: str) -> int:
    signed = sender_for("stripe").sign(body.encode(), secret, now=int(time.time()))
    headers = {"content-type": "application/json", **signed.headers}
    status, _ = request(f"{stack.url}/webhooks/{SOURCE}", body.encode(), headers)
    return status


def published(stack: RunningStack, partition: str) -> list[dict[str, Any]]:
    """The outbox records of one partition, by sequence (what the stack publishes downstream)."""
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    items = dynamodb.query(
        TableName=LocalNames().outbox_table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": partition}},
        ConsistentRead=True,
    )["Items"]
    return [{name: next(iter(value.values())) for name, value in item.items()} for item in items]


def test_a_payment_is_paid_from_its_payload_then_corrected_and_verified_from_the_api(stack):
    # Given a paid Stripe payment the gateway refunds right after sending its payment_intent.succeeded
    secret = secrets_printed(stack)["INBOX_SECRET_STRIPE_FAST"]
    created = gateway(stack, "payments", {"source": SOURCE, "amount": 4200, "currency": "BRL", "status": "paid"})
    succeeded = created["webhooks"][-1]
    assert succeeded["event_type"] == "payment_intent.succeeded"
    gateway(stack, f"payments/{SOURCE}/{created['id']}/transition", {"status": "refunded"})
    # When only the succeeded webhook arrives (the refund's is still on its way)
    assert deliver(stack, succeeded["body"], secret) == 200
    # Then the payment ends as the gateway has it, refunded, and verified
    key = f"{SOURCE}#{created['id']}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        payment = stored_payment(stack, key)
        if payment is not None and payment["status"] == "refunded":
            break
        time.sleep(0.3)
    assert payment is not None, stack.output()[-3000:]
    assert (payment["status"], payment["verified"]) == ("refunded", True), stack.output()[-3000:]
    # And downstream saw it paid first, from the signed payload and unverified, then the correction, verified
    changes = [(record["new_status"], record["verified"]) for record in published(stack, key)]
    assert changes == [("paid", False), ("refunded", True)]
    # And `inbox payments show` says it is verified
    shown = stack.cli("payments", "show", SOURCE, created["id"], "--json").stdout
    assert json.loads(shown)["verified"] is True


def test_a_payment_the_api_confirms_is_published_verified(stack):
    # Given a paid payment the gateway leaves as it is
    secret = secrets_printed(stack)["INBOX_SECRET_STRIPE_FAST"]
    created = gateway(stack, "payments", {"source": SOURCE, "amount": 1500, "currency": "BRL", "status": "paid"})
    # When its succeeded webhook arrives
    assert deliver(stack, created["webhooks"][-1]["body"], secret) == 200
    # Then a payment.verified follows its unverified paid, naming the transition it confirms
    key = f"{SOURCE}#{created['id']}"
    deadline = time.monotonic() + 60
    while not (confirmed := published(stack, f"verified#{key}")) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert [(record["type"], record["status"]) for record in confirmed] == [("payment.verified", "paid")]
    [change] = published(stack, key)
    assert (change["new_status"], change["verified"], change["transition_id"]) == (
        "paid",
        False,
        confirmed[0]["transition_id"],
    )
    payment = stored_payment(stack, key)
    assert payment is not None and payment["verified"] is True
