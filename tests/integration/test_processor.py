"""The processor against moto: prepare (refetch) outside, apply in one transaction, exactly once in effect."""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta

import pytest

from shared.gateway.base import GatewayRejected, GatewayUnavailable
from shared.gateway.ratelimit import RateLimited
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.service import Outcome, RetryLater
from tests.integration.processing_support import (
    BASE_TIME,
    FakeGateway,
    RecordingQueue,
    make_processor,
    run,
    store_event,
)

S = PaymentStatus


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def queue() -> RecordingQueue:
    return RecordingQueue()


@pytest.fixture
def processor(aws_world, gateway, queue):
    return make_processor(aws_world.names, gateway, queue)


def item(aws_world, pk):
    return InboxStore(aws_world.names.inbox_table).get(pk)


def payment(aws_world, key="stripe#pi_1"):
    return ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment(key)


def test_an_event_creates_the_payment_from_the_gateway_truth(aws_world, gateway, processor):
    # Given the gateway says the intent is paid, and its webhook is in the inbox
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    # When it is processed
    assert run(processor, pk) is Outcome.PROCESSED
    # Then the payment exists, paid, version 1, and the event is settled with no open-index entry
    stored = payment(aws_world)
    assert (stored.status, stored.version, stored.amount, stored.currency) == (S.PAID, 1, 1000, "BRL")
    settled = item(aws_world, pk)
    assert settled["status"] == "processed"
    assert "open_status" not in settled
    assert settled["attempts"] == 1


def test_a_redelivered_message_does_nothing(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    run(processor, pk)
    fetches = gateway.fetches
    # When the same message is delivered again (at-least-once queue)
    assert run(processor, pk) is Outcome.SKIPPED
    # Then nothing was fetched or applied again
    assert gateway.fetches == fetches
    assert payment(aws_world).version == 1


def test_a_late_event_changes_nothing_and_is_ignored(aws_world, gateway, processor):
    gateway.set("pi_1", S.REFUNDED)
    run(processor, store_event(aws_world.names, event_type="charge.refunded", status="refunded"))
    # When the old "processing" webhook arrives late, the refetch reads the truth: still refunded
    late = store_event(aws_world.names, event_type="payment_intent.processing", status="processing")
    assert run(processor, late) is Outcome.IGNORED
    assert payment(aws_world).status is S.REFUNDED
    assert payment(aws_world).version == 1


def test_without_an_api_an_older_event_cannot_regress_the_payment(aws_world, processor):
    # Given a Standard Webhooks sender (no API): the paid event arrived first
    paid = store_event(
        aws_world.names,
        provider="standard",
        event_type="payment.paid",
        status="paid",
        occurred_at=BASE_TIME + timedelta(minutes=5),
    )
    pending = store_event(
        aws_world.names, provider="standard", event_type="payment.pending", status="pending", occurred_at=BASE_TIME
    )
    assert run(processor, paid) is Outcome.PROCESSED
    # When the older pending event is processed, then it is ignored
    assert run(processor, pending) is Outcome.IGNORED
    assert payment(aws_world, "standard#pi_1").status is S.PAID
    assert "not newer" in item(aws_world, pending)["note"]


def test_an_amount_that_disagrees_with_the_gateway_is_failed_not_applied(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID, amount=1000)
    pk = store_event(aws_world.names, amount=999_999)
    assert run(processor, pk) is Outcome.FAILED
    assert payment(aws_world) is None
    failed = item(aws_world, pk)
    assert failed["status"] == "failed"
    assert "amount mismatch" in failed["last_error"]
    assert failed["open_status"].startswith("failed#")


def test_an_unhandled_event_type_is_kept_and_ignored(aws_world, processor):
    pk = store_event(aws_world.names, event_type="customer.created", status=None, amount=None)
    assert run(processor, pk) is Outcome.IGNORED
    assert item(aws_world, pk)["status"] == "ignored"


def test_a_resource_not_known_yet_is_retried_with_growing_backoff_then_failed_and_dead_lettered(
    aws_world, gateway, queue, processor
):
    # Given the webhook raced the API: the gateway does not know the intent
    pk = store_event(aws_world.names)
    # When the message is processed up to the attempt limit (3 here)
    for _ in range(2):
        with pytest.raises(RetryLater):
            run(processor, pk)
    # Then each retry hid the message longer, and counted an attempt on the item
    assert [seconds for _, seconds in queue.delays] == sorted(seconds for _, seconds in queue.delays)
    assert item(aws_world, pk)["attempts"] == 2
    assert item(aws_world, pk)["status"] == "pending"
    # And the last attempt fails the event and parks the message in the DLQ
    assert run(processor, pk) is Outcome.FAILED
    assert item(aws_world, pk)["status"] == "failed"
    assert "ResourceNotFound" in item(aws_world, pk)["last_error"]
    assert len(queue.dead_letters) == 1


def test_an_open_circuit_delays_without_spending_an_attempt(aws_world, gateway, queue, processor):
    gateway.failure = GatewayUnavailable("circuit open", retry_after=17, circuit_open=True)
    pk = store_event(aws_world.names)
    for _ in range(5):
        with pytest.raises(RetryLater):
            run(processor, pk)
    assert item(aws_world, pk)["attempts"] == 0
    assert 17 <= queue.delays[-1][1] <= 26  # the time left, spread by up to +50 % (wait_seconds)
    assert queue.dead_letters == []


@pytest.mark.parametrize(
    "wait",
    [
        RateLimited("refetch rate of stripe is booked", retry_after=3.2),
        GatewayUnavailable("stripe answered 429", retry_after=3.2, throttled=True),
    ],
    ids=["rate limit says not now", "gateway 429 under the rate limit"],
)
def test_waiting_for_the_rate_limit_is_never_an_attempt(aws_world, gateway, queue, processor, wait):
    # Given the source's rate limit (or the gateway's 429) keeps saying "not now", more often than max_attempts
    gateway.failure = wait
    pk = store_event(aws_world.names)
    for _ in range(12):
        with pytest.raises(RetryLater):
            run(processor, pk)
    # Then the message was delayed each time by at least the wait, no attempt was spent, nothing dead-lettered
    stored = item(aws_world, pk)
    assert (stored["status"], stored["attempts"]) == ("pending", 0)
    assert all(4 <= seconds <= 5 for _, seconds in queue.delays)
    assert queue.dead_letters == []
    # And once the limit lets it through, the event is processed
    gateway.failure = None
    gateway.set("pi_1", S.PAID)
    assert run(processor, pk) is Outcome.PROCESSED


def test_a_gateway_that_rejects_our_key_fails_the_event_for_an_operator(aws_world, gateway, processor):
    gateway.failure = GatewayRejected("401")
    pk = store_event(aws_world.names)
    assert run(processor, pk) is Outcome.FAILED


class CrashOnce:
    """Wraps a store method to raise once, the way a Lambda dies between two steps."""

    def __init__(self, target, name):
        self.target, self.name, self.original = target, name, getattr(target, name)
        self.crashed = False
        setattr(target, name, self)

    def __call__(self, *args, **kwargs):
        if not self.crashed:
            self.crashed = True
            raise RuntimeError(f"simulated crash in {self.name}")
        return self.original(*args, **kwargs)


def test_a_crash_after_refetch_before_the_transaction_loses_nothing_and_applies_once(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    # Given the processor dies after the refetch, before its transaction
    CrashOnce(processor.store, "settle")
    with pytest.raises(RetryLater):
        run(processor, pk)
    assert item(aws_world, pk)["status"] == "pending"
    assert payment(aws_world) is None
    # When the message comes back, then it is applied exactly once
    assert run(processor, pk) is Outcome.PROCESSED
    assert payment(aws_world).version == 1


def test_a_crash_after_the_transaction_before_the_ack_applies_nothing_twice(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    # Given the transaction committed but the Lambda died before the queue heard back
    assert run(processor, pk) is Outcome.PROCESSED
    # When SQS redelivers the message
    outcome = run(processor, pk)
    # Then nothing is applied a second time
    assert outcome is Outcome.SKIPPED
    assert payment(aws_world).version == 1


def test_two_events_of_one_payment_processed_concurrently_cannot_both_apply(aws_world, gateway, queue):
    # Given two events of one payment, bypassing the FIFO group (as if two consumers raced)
    gateway.set("pi_1", S.PAID)
    first, second = store_event(aws_world.names), store_event(aws_world.names)
    processors = [make_processor(aws_world.names, gateway, queue) for _ in range(2)]
    both_read = threading.Barrier(2)
    for each in processors:  # both read "no payment yet" before either commits
        original = each.store.load_payment

        def load_then_wait(key, _original=original, _barrier=both_read, **read):
            current = _original(key, **read)
            with contextlib.suppress(threading.BrokenBarrierError):  # the re-decision after a conflict
                _barrier.wait(timeout=2)
            return current

        each.store.load_payment = load_then_wait  # type: ignore[method-assign]  # a seam for the race
    outcomes = []
    threads = [
        threading.Thread(target=lambda p=p, pk=pk: outcomes.append(run(p, pk)))
        for p, pk in zip(processors, (first, second), strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one applied the change; the other re-decided on its result and found nothing to do
    assert sorted(outcomes) == [Outcome.IGNORED, Outcome.PROCESSED]
    assert payment(aws_world).version == 1
