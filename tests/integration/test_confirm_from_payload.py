"""Confirming from the signed payload against moto: the payment, its outbox record and its verification item in one
transaction; the verification item dispatched in the payment's FIFO group and processed by a refetch; the sweeper
verifying what stays unverified."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from shared.definitions import CONFIRM_ALWAYS, CONFIRM_WHEN_BEHIND, VERIFY_EVENT_TYPE
from shared.gateway.ratelimit import RateLimited
from shared.inbox.model import StoredBody, build_item, event_key
from shared.inbox.store import InboxStore, from_attributes
from shared.payments.events import check_published
from shared.payments.outbox import published_event, transition_id
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process import service
from shared.process.confirm import PayloadConfirmation, SourceConfirmation
from shared.process.handlers import RefetchPaymentHandler, default_router
from shared.process.service import EventProcessor, Outcome
from shared.providers.base import NormalizedEvent, WebhookRequest
from shared.providers.stripe.client import payload_status
from tests.integration.operations_support import (
    a_payment,
    drain,
    handle_message,
    later,
    lookup,
    mapping_for,
    pipe_for,
    put_payment,
    receive_all,
    sweeper_for,
)
from tests.integration.processing_support import BASE_TIME, FakeGateway, RecordingQueue, run

S = PaymentStatus
VERIFY_PK = "stripe#verify:pi_1:1"
WAITED = 60  # seconds after BASE_TIME: an event received at BASE_TIME + 1 s has waited past 30 s


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    counted: list[str] = []
    monkeypatch.setattr(service, "count_for_provider", lambda name, provider, value=1: counted.append(name))
    return counted


def processor_for(world, gateway: FakeGateway, *, mode: str = CONFIRM_WHEN_BEHIND, clock: float = later(WAITED)):
    setting = SourceConfirmation(mode, 30, payload_status)
    return EventProcessor(
        ProcessingStore(world.names.inbox_table, world.names.payments_table),
        default_router(lookup(gateway)),
        RecordingQueue(),
        max_attempts=3,
        retry_base_seconds=1,
        clock=lambda: clock,
        reconciler=RefetchPaymentHandler(lookup(gateway)),
        confirmation=PayloadConfirmation(lambda source: setting if source == "stripe" else None),
    )


def stripe_event(
    world,
    *,
    event_id: str,
    event_type: str = "payment_intent.succeeded",
    status: str = "succeeded",
    occurred_second: int = 0,
) -> str:
    """A Stripe snapshot event as the ingest stores it (received at BASE_TIME + 1 s)."""
    event = NormalizedEvent(
        event_id, event_type, "pi_1", BASE_TIME + timedelta(seconds=occurred_second), status, 1000, "BRL"
    )
    item = build_item(
        provider="stripe",
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=b"{}", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0", size=2, inline=b"{}"),
        received_at=BASE_TIME + timedelta(seconds=1),
        retention_days=30,
    )
    InboxStore(world.names.inbox_table).put_new(item)
    return event_key("stripe", event_id)


def inbox_item(world, pk: str) -> dict[str, Any]:
    """The stored item ({} when there is none)."""
    return InboxStore(world.names.inbox_table).get(pk) or {}


def payment_of(world):
    return ProcessingStore(world.names.inbox_table, world.names.payments_table).load_payment("stripe#pi_1")


def outbox_records(world, partition: str = "stripe#pi_1") -> list[dict[str, Any]]:
    """The published records of the payment's partition (its status changes), or another partition's."""
    items = world.session.client("dynamodb").scan(TableName=world.names.outbox_table)["Items"]
    stored = [from_attributes(item) for item in items]
    records = [published_event(record) for record in stored if record["pk"] == partition]
    return sorted(records, key=lambda record: record["sequence"])


def verified_records(world) -> list[dict[str, Any]]:
    return outbox_records(world, "verified#stripe#pi_1")


def test_a_behind_event_is_confirmed_from_its_payload_with_its_verification_item_in_one_transaction(aws_world, gateway):
    # Given a payment_intent.succeeded that has waited 59 s for its refetch
    pk = stripe_event(aws_world, event_id="evt_paid")
    # When the processor takes it
    assert run(processor_for(aws_world, gateway), pk) is Outcome.PROCESSED
    # Then it is paid at once, from the signed payload, without asking the gateway, and unverified
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, gateway.fetches) == (S.PAID, False, 0)
    assert inbox_item(aws_world, pk)["note"] == "from the signed payload: first seen"
    # ... the status change is published saying so
    [record] = outbox_records(aws_world)
    assert (record["new_status"], record["verified"]) == ("paid", False)
    # ... and its verification item waits in the payment's FIFO group, dispatched like a received event
    verify = inbox_item(aws_world, VERIFY_PK)
    assert (verify["status"], verify["event_type"], verify["dispatch_reason"]) == (
        "pending",
        VERIFY_EVENT_TYPE,
        "received",
    )
    assert verify["group_id"] == inbox_item(aws_world, pk)["group_id"] == "stripe#pi_1"


def test_a_verification_that_agrees_marks_the_payment_verified_with_one_refetch(aws_world, gateway, metrics):
    processor = processor_for(aws_world, gateway)
    run(processor, stripe_event(aws_world, event_id="evt_paid"))
    gateway.set("pi_1", S.PAID)
    # When the verification item is processed
    assert run(processor, VERIFY_PK) is Outcome.PROCESSED
    # Then one refetch confirmed it: verified, no transition, nothing counted
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, payment.transitions, gateway.fetches) == (S.PAID, True, 1, 1)
    assert len(outbox_records(aws_world)) == 1
    # ... and a payment.verified event says so, naming the transition it confirms, within the contract
    [confirmed] = verified_records(aws_world)
    assert (confirmed["type"], confirmed["status"], confirmed["verified"], confirmed["sequence"]) == (
        "payment.verified",
        "paid",
        True,
        1,
    )
    assert confirmed["transition_id"] == transition_id("stripe#pi_1", 1)
    check_published(confirmed)
    assert inbox_item(aws_world, VERIFY_PK)["status"] == "processed"
    assert metrics == []
    # ... and a redelivery of either message applies nothing twice
    assert run(processor, VERIFY_PK) is Outcome.SKIPPED
    assert run(processor, event_key("stripe", "evt_paid")) is Outcome.SKIPPED
    assert (payment_of(aws_world).version, gateway.fetches) == (payment.version, 1)


def test_a_verification_that_disagrees_applies_the_gateways_status_as_a_published_transition(
    aws_world, gateway, metrics
):
    processor = processor_for(aws_world, gateway)
    run(processor, stripe_event(aws_world, event_id="evt_paid"))
    gateway.set("pi_1", S.REFUNDED)  # refunded at once, before the verification
    assert run(processor, VERIFY_PK) is Outcome.PROCESSED
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, payment.transitions) == (S.REFUNDED, True, 2)
    assert [(r["previous_status"], r["new_status"], r["verified"]) for r in outbox_records(aws_world)] == [
        (None, "paid", False),
        ("paid", "refunded", True),
    ]
    assert metrics.count("PaymentsCorrected") == 1
    assert verified_records(aws_world) == []  # the correction itself is the verified event


def test_a_verification_the_state_machine_refuses_flags_the_payment_and_publishes_nothing(aws_world, gateway, metrics):
    processor = processor_for(aws_world, gateway)
    run(processor, stripe_event(aws_world, event_id="evt_paid"))
    gateway.set("pi_1", S.PENDING)  # the API says what paid can never go back to
    assert run(processor, VERIFY_PK) is Outcome.IGNORED
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, payment.verification_refused) == (S.PAID, False, S.PENDING)
    assert len(outbox_records(aws_world)) == 1
    assert verified_records(aws_world) == []
    assert metrics.count("VerificationsRefused") == 1


def test_a_second_payload_of_the_same_unverified_period_puts_no_second_verification(aws_world, gateway):
    processor = processor_for(aws_world, gateway)
    run(
        processor,
        stripe_event(
            aws_world, event_id="evt_created", event_type="payment_intent.created", status="requires_payment_method"
        ),
    )
    assert run(processor, stripe_event(aws_world, event_id="evt_paid", occurred_second=2)) is Outcome.PROCESSED
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, payment.transitions) == (S.PAID, False, 2)
    assert inbox_item(aws_world, VERIFY_PK)
    assert inbox_item(aws_world, "stripe#verify:pi_1:2") == {}


def test_the_payment_is_never_applied_without_its_verification_item(aws_world, gateway):
    # Given the verification item's write will fail (its key is taken): the transaction must fail whole
    InboxStore(aws_world.names.inbox_table).put_new({"pk": VERIFY_PK, "provider": "stripe", "status": "processed"})
    pk = stripe_event(aws_world, event_id="evt_paid")
    with pytest.raises(service.RetryLater):
        run(processor_for(aws_world, gateway), pk)
    # Then nothing was applied: no payment, nothing published, the event still pending for its retry
    assert payment_of(aws_world) is None
    assert outbox_records(aws_world) == []
    assert inbox_item(aws_world, pk)["status"] == "pending"


def test_a_fresh_event_of_a_source_that_is_not_behind_is_refetched_as_before(aws_world, gateway):
    gateway.set("pi_1", S.PAID)
    pk = stripe_event(aws_world, event_id="evt_paid")
    assert run(processor_for(aws_world, gateway, clock=later(3)), pk) is Outcome.PROCESSED
    payment = payment_of(aws_world)
    assert (payment.verified, gateway.fetches) == (True, 1)
    assert inbox_item(aws_world, VERIFY_PK) == {}


def test_an_event_of_the_same_second_whose_order_matters_waits_for_the_refetch(aws_world, gateway):
    # Given a payment failed (from the API) by an event of second 0, and a payload of the same second saying pending
    put_payment(aws_world, a_payment(status=S.FAILED, last_event_at="2026-11-29T10:00:00Z", last_event_id="evt_f"))
    gateway.set("pi_1", S.PENDING)
    pk = stripe_event(aws_world, event_id="evt_processing", event_type="payment_intent.processing", status="processing")
    # When it is processed with the source `always` confirming from payloads
    assert run(processor_for(aws_world, gateway, mode=CONFIRM_ALWAYS), pk) is Outcome.PROCESSED
    # Then the gateway decided, not the payload: one refetch, the payment verified
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, gateway.fetches) == (S.PENDING, True, 1)


def test_the_verification_item_is_dispatched_in_the_payments_group_and_verifies_it(aws_world, gateway):
    # Given the local Pipe and queue mapping, and a payment the gateway says was refunded after its webhook
    pipe = pipe_for(aws_world)
    processor = processor_for(aws_world, gateway)
    mapping = mapping_for(aws_world, processor)
    gateway.set("pi_1", S.REFUNDED)
    stripe_event(aws_world, event_id="evt_paid")
    # When the event is dispatched and processed, then whatever it dispatched in turn
    for _ in range(3):
        pipe.poll_once()
        drain(mapping)
    # Then the payment went paid (unverified) then refunded (verified) with one refetch
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, gateway.fetches) == (S.REFUNDED, True, 1)
    assert [r["verified"] for r in outbox_records(aws_world)] == [False, True]
    assert inbox_item(aws_world, VERIFY_PK)["status"] == "processed"


def test_the_sweeper_verifies_a_payment_that_stays_unverified(aws_world, gateway):
    # Given a payment confirmed from a payload whose verification item never ran (failed, expired)
    put_payment(aws_world, a_payment(status=S.PAID, verified=False))
    gateway.set("pi_1", S.PAID)
    # When the sweeper runs past the reconcile interval
    summary = sweeper_for(aws_world, clock=later(3601)).run()
    [message] = receive_all(aws_world)
    # Then it asks for the payment in its own group, and the reconciliation verifies it
    assert summary.reconciled == 1
    assert json.loads(message["Body"])["resource_id"] == "pi_1"
    assert message["Attributes"]["MessageGroupId"] == "stripe#pi_1"
    processor = processor_for(aws_world, gateway)
    assert handle_message(aws_world, message, processor) == Outcome.PROCESSED.value
    assert payment_of(aws_world).verified is True
    assert [record["status"] for record in verified_records(aws_world)] == ["paid"]
    # ... and out of the unverified partition, it is not asked again
    assert sweeper_for(aws_world, clock=later(3 * 3601)).run().reconciled == 0


def test_a_rate_limit_that_books_the_source_further_than_its_threshold_confirms_instead_of_waiting(aws_world, gateway):
    # Given a fresh event, and the source's rate limit (a gateway 429's Retry-After) saying its next slot is 120 s away
    gateway.failure = RateLimited("stripe is blocked by the gateway for another 120 s", retry_after=120.0)
    pk = stripe_event(aws_world, event_id="evt_paid")
    # When it is processed
    assert run(processor_for(aws_world, gateway, clock=later(3)), pk) is Outcome.PROCESSED
    # Then it was confirmed from its payload rather than sent back to the queue for two minutes
    assert (payment_of(aws_world).status, payment_of(aws_world).verified) == (S.PAID, False)
    assert inbox_item(aws_world, VERIFY_PK)["status"] == "pending"


def test_a_rate_limit_with_a_slot_near_makes_the_event_wait_as_before(aws_world, gateway):
    gateway.failure = RateLimited("refetch rate of stripe (25/s) is booked for 1.2 s", retry_after=1.2)
    pk = stripe_event(aws_world, event_id="evt_paid")
    processor = processor_for(aws_world, gateway, clock=later(3))
    with pytest.raises(service.RetryLater):
        run(processor, pk)
    assert payment_of(aws_world) is None
    assert inbox_item(aws_world, pk)["status"] == "pending"
    assert processor.queue.delays  # its message hidden for the wait, no attempt counted
    assert int(inbox_item(aws_world, pk)["attempts"]) == 0


def test_a_webhook_whose_refetch_finds_a_newer_status_verifies_without_counting_a_correction(
    aws_world, gateway, metrics
):
    # Given a payment paid from its payload, then refunded: the refund's webhook (a charge event, always refetched)
    processor = processor_for(aws_world, gateway)
    run(processor, stripe_event(aws_world, event_id="evt_paid"))
    gateway.set("pi_1", S.REFUNDED)
    refund = stripe_event(aws_world, event_id="evt_refund", event_type="charge.refunded", status="refunded")
    # When the refund's webhook is processed before the verification
    assert run(processor, refund) is Outcome.PROCESSED
    # Then the refetch applied the refund and verified the payment: a change its webhook announced, not a correction
    payment = payment_of(aws_world)
    assert (payment.status, payment.verified, gateway.fetches) == (S.REFUNDED, True, 1)
    assert metrics == []
    # ... and the verification then has nothing to do, and asks the gateway nothing
    assert run(processor, VERIFY_PK) is Outcome.IGNORED
    assert gateway.fetches == 1
