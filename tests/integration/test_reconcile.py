"""Reconciliation against moto: payments stuck in an intermediate status are refetched through the queue."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.gateway.base import GatewayUnavailable
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.service import Outcome
from shared.sweeper import SweepStore
from tests.integration.operations_support import (
    a_payment,
    handle_message,
    later,
    put_payment,
    real_processor,
    receive_all,
    store_event_at,
    sweeper_for,
)
from tests.integration.processing_support import FakeGateway, run

S = PaymentStatus
DUE = 3601  # seconds after the payment's last write (updated_at = BASE_TIME): beyond the default 3600 s


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


def stored(world, key: str = "stripe#pi_1"):
    return ProcessingStore(world.names.inbox_table, world.names.payments_table).load_payment(key)


def raw_payment(world, key: str = "stripe#pi_1") -> dict[str, Any]:
    response = world.session.client("dynamodb").get_item(TableName=world.names.payments_table, Key={"pk": {"S": key}})
    item: dict[str, Any] = response["Item"]
    return item


def test_a_change_at_the_gateway_with_no_webhook_is_applied(aws_world, gateway):
    # Given a payment pending since BASE_TIME, and the gateway now says it is paid, but no webhook came
    put_payment(aws_world, a_payment())
    gateway.set("pi_1", S.PAID)
    # When the sweeper runs an hour later
    summary = sweeper_for(aws_world, clock=later(DUE)).run()
    messages = receive_all(aws_world)
    # Then it sends one reconciliation, in the payment's own FIFO group
    assert summary.reconciled == 1
    assert [json.loads(m["Body"]) for m in messages] == [
        {"kind": "reconcile", "source": "stripe", "provider": "stripe", "resource_id": "pi_1"}
    ]
    assert messages[0]["Attributes"]["MessageGroupId"] == "stripe#pi_1"
    # ... and when the processor handles it, the gateway's change is applied through the state machine
    assert handle_message(aws_world, messages[0], real_processor(aws_world, gateway)) == Outcome.PROCESSED.value
    payment = stored(aws_world)
    assert (payment.status, payment.version, payment.transitions) == (S.PAID, 2, 2)
    assert payment.last_event_id == "evt_first"  # no event was involved
    assert "reconcile_key" not in raw_payment(aws_world)  # paid: out of the reconcile index


def test_a_reconciliation_after_the_webhook_already_applied_the_change_is_a_no_op(aws_world, gateway):
    # Given a pending payment the sweeper asked to reconcile
    put_payment(aws_world, a_payment())
    gateway.set("pi_1", S.PAID)
    sweeper_for(aws_world, clock=later(DUE)).run()
    [reconcile] = receive_all(aws_world)
    # ... and the webhook of the same change is processed first (it is ahead of it in the FIFO group)
    processor = real_processor(aws_world, gateway)
    webhook = store_event_at(aws_world.names, DUE, resource_id="pi_1")
    assert run(processor, webhook) is Outcome.PROCESSED
    applied = raw_payment(aws_world)
    # When the reconciliation is handled
    outcome = handle_message(aws_world, reconcile, processor)
    # Then nothing is written: the payment is exactly as the webhook left it
    assert outcome == Outcome.IGNORED.value
    assert raw_payment(aws_world) == applied
    assert stored(aws_world).version == 2


def test_an_unchanged_payment_is_not_rewritten_and_not_asked_again_before_its_next_interval(aws_world, gateway):
    # Given a payment that is still pending at the gateway (a boleto nobody paid yet)
    put_payment(aws_world, a_payment())
    gateway.set("pi_1", S.PENDING)
    processor = real_processor(aws_world, gateway)
    # When the sweeper reconciles it
    assert sweeper_for(aws_world, clock=later(DUE)).run().reconciled == 1
    [message] = receive_all(aws_world)
    assert handle_message(aws_world, message, processor) == Outcome.IGNORED.value
    # Then the payment is unchanged (no version bump, no updated_at change)
    payment = stored(aws_world)
    assert (payment.version, payment.updated_at) == (1, "2026-11-29T10:00:00.000000Z")
    # ... and the next sweeps leave it alone until another interval has passed since the claim
    assert sweeper_for(aws_world, clock=later(DUE + 300)).run().reconciled == 0
    assert sweeper_for(aws_world, clock=later(2 * DUE + 1)).run().reconciled == 1


def test_recent_payments_final_payments_and_payments_without_an_api_are_not_reconciled(aws_world, gateway):
    put_payment(aws_world, a_payment(resource_id="pi_recent", updated_at="2026-11-29T10:30:00.000000Z"))
    put_payment(aws_world, a_payment(resource_id="pi_paid", status=S.PAID))
    put_payment(aws_world, a_payment(provider="standard", resource_id="pay_std"))
    put_payment(aws_world, a_payment(provider="asaas", resource_id="pay_1", status=S.AUTHORIZED))
    summary = sweeper_for(aws_world, clock=later(DUE)).run()
    assert summary.reconciled == 1
    assert [json.loads(m["Body"])["resource_id"] for m in receive_all(aws_world)] == ["pay_1"]


def test_two_sweepers_claim_a_payment_once(aws_world):
    put_payment(aws_world, a_payment())
    store = SweepStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    [(pk, checked_at)] = list(store.due_for_reconcile("stripe#pending", "2026-11-29T11:00:00.000000Z"))
    # Both read the same checked_at; the first claim wins, the second finds it moved
    assert store.claim_reconcile(pk, "stripe#pending", checked_at, now="2026-11-29T11:00:01.000000Z")
    assert not store.claim_reconcile(pk, "stripe#pending", checked_at, now="2026-11-29T11:00:01.000000Z")


def test_a_gateway_outage_drops_the_reconciliation_without_holding_up_the_payments_group(aws_world, gateway):
    put_payment(aws_world, a_payment())
    gateway.failure = GatewayUnavailable("503")
    sweeper_for(aws_world, clock=later(DUE)).run()
    [message] = receive_all(aws_world)
    # The record handler does not raise (the message is acknowledged, not retried in the FIFO group)
    assert handle_message(aws_world, message, real_processor(aws_world, gateway)) == Outcome.FAILED.value
    assert stored(aws_world).version == 1
