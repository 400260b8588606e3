"""The processor's eventually consistent reads against moto: a stale copy of the inbox item or of the payment is
refused by the write's condition, or read again consistently, and the event is applied exactly once.

DynamoDB's eventually consistent GetItem "might not reflect the results of a recently completed write operation"
(developer guide, "DynamoDB read consistency"); moto always answers with the current item. `StaleReads` serves
what DynamoDB may serve: for the items a test holds, an eventually consistent read returns the copy taken when it
was held, a consistent read the item as it is."""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from typing import Any

import pytest

from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.handlers import default_router
from shared.process.service import EventProcessor, Outcome
from tests.integration.processing_support import FakeGateway, RecordingQueue, run, store_event

S = PaymentStatus
PAYMENT = "stripe#pi_1"


class StaleReads:
    """A DynamoDB client whose eventually consistent GetItems of held items return the copy taken when they were
    held (None: the item did not exist then); everything else goes to the real client. Counts the reads."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._copies: dict[tuple[str, str], dict[str, Any] | None] = {}
        self.reads: Counter[tuple[str, bool]] = Counter()  # (table, consistent) -> GetItems
        self.transactions = 0  # TransactWriteItems sent, committed or refused (a refused one is billed too)

    def hold(self, table: str, pk: str) -> None:
        """From now on, an eventually consistent read of `pk` returns the item as it is now."""
        response = self._client.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)
        self._copies[(table, pk)] = response.get("Item")

    def hide(self, table: str, pk: str) -> None:
        """From now on, an eventually consistent read of `pk` finds no item (as before it was written)."""
        self._copies[(table, pk)] = None

    def get_item(self, **request: Any) -> dict[str, Any]:
        table, pk, consistent = request["TableName"], request["Key"]["pk"]["S"], bool(request.get("ConsistentRead"))
        self.reads[(table, consistent)] += 1
        if not consistent and (table, pk) in self._copies:
            copy = self._copies[(table, pk)]
            return {"Item": copy} if copy is not None else {}
        response: dict[str, Any] = self._client.get_item(**request)
        return response

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        self.transactions += 1
        response: dict[str, Any] = self._client.transact_write_items(**request)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def queue() -> RecordingQueue:
    return RecordingQueue()


def stale_processor(aws_world, gateway: FakeGateway, queue: RecordingQueue) -> tuple[EventProcessor, StaleReads]:
    names = aws_world.names
    client = StaleReads(aws_world.session.client("dynamodb"))
    processor = EventProcessor(
        ProcessingStore(names.inbox_table, names.payments_table, dynamodb=client),  # type: ignore[arg-type]
        default_router(lambda provider: gateway if provider == "stripe" else None),
        queue,
        max_attempts=3,
        retry_base_seconds=1,
    )
    return processor, client


def payment(aws_world):
    return ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment(PAYMENT)


def item(aws_world, pk):
    return InboxStore(aws_world.names.inbox_table).get(pk)


def outbox_statuses(aws_world) -> list[str]:
    items = aws_world.session.client("dynamodb").scan(TableName=aws_world.names.outbox_table)["Items"]
    return sorted(str(record.get("new_status", {}).get("S")) for record in items)


def test_a_stale_payment_is_refused_by_the_version_and_the_consistent_reread_applies_once(aws_world, gateway, queue):
    # Given a processor whose eventually consistent reads still see no payment, while another instance made it
    # paid (version 1)
    processor, reads = stale_processor(aws_world, gateway, queue)
    reads.hide(aws_world.names.payments_table, PAYMENT)
    gateway.set("pi_1", S.PAID)
    other, _ = stale_processor(aws_world, gateway, queue)
    assert run(other, store_event(aws_world.names)) is Outcome.PROCESSED
    # When the refund's event is processed on that stale copy ("first seen: refunded")
    gateway.set("pi_1", S.REFUNDED)
    refund = store_event(aws_world.names, event_type="charge.refunded", status="refunded")
    assert run(processor, refund) is Outcome.PROCESSED
    # Then the put conditioned on "no payment yet" was refused, and the consistent read applied paid -> refunded
    stored = payment(aws_world)
    assert (stored.status, stored.version, stored.transitions, stored.previous_status) == (S.REFUNDED, 2, 2, S.PAID)
    assert outbox_statuses(aws_world) == ["paid", "refunded"]  # one record per transition, none twice
    # ... without an attempt counted or a retry: the stale read cost a round of its own
    assert item(aws_world, refund)["attempts"] == 1
    assert queue.delays == []
    assert reads.reads[(aws_world.names.payments_table, True)] >= 1
    assert reads.transactions == 2  # the refused one and the committed one


def test_a_copy_older_than_the_instances_own_write_is_read_again_before_any_transaction(aws_world, gateway, queue):
    # Given a processor whose eventually consistent reads still see no payment, and which made it paid itself
    processor, reads = stale_processor(aws_world, gateway, queue)
    reads.hide(aws_world.names.payments_table, PAYMENT)
    gateway.set("pi_1", S.PAID)
    assert run(processor, store_event(aws_world.names)) is Outcome.PROCESSED
    # When the payment's next event follows (the next message of its FIFO group, in the same batch)
    gateway.set("pi_1", S.REFUNDED)
    assert run(processor, store_event(aws_world.names, event_type="charge.refunded")) is Outcome.PROCESSED
    # Then the copy older than its own write was not decided on: no refused transaction, one per event
    assert reads.transactions == 2
    stored = payment(aws_world)
    assert (stored.status, stored.version, stored.previous_status) == (S.REFUNDED, 2, S.PAID)


def test_a_stale_payment_never_ignores_an_event_the_current_payment_takes(aws_world, gateway, queue):
    # Given a payment disputed (version 2), and a processor whose eventually consistent reads still see it paid
    processor, reads = stale_processor(aws_world, gateway, queue)
    gateway.set("pi_1", S.PAID)
    assert run(processor, store_event(aws_world.names)) is Outcome.PROCESSED
    reads.hold(aws_world.names.payments_table, PAYMENT)
    gateway.set("pi_1", S.DISPUTED)
    assert run(processor, store_event(aws_world.names, event_type="charge.dispute.created")) is Outcome.PROCESSED
    # When the dispute is won and its event processed: on the stale copy, "paid" is no change (an Ignore, a write
    # of the inbox item alone, on no condition of the payment)
    gateway.set("pi_1", S.PAID)
    won = store_event(aws_world.names, event_type="charge.dispute.closed")
    outcome = run(processor, won)
    # Then the Ignore was not taken from the stale copy: a consistent read applied disputed -> paid
    assert outcome is Outcome.PROCESSED
    stored = payment(aws_world)
    assert (stored.status, stored.version, stored.previous_status) == (S.PAID, 3, S.DISPUTED)
    assert item(aws_world, won)["status"] == "processed"


def test_a_stale_inbox_item_that_says_absent_is_read_again_before_the_message_is_skipped(aws_world, gateway, queue):
    # Given a processor whose eventually consistent reads do not see the event's item yet
    processor, reads = stale_processor(aws_world, gateway, queue)
    gateway.set("pi_1", S.PAID)
    pk = "stripe#evt_not_yet"
    reads.hold(aws_world.names.inbox_table, pk)
    store_event(aws_world.names, event_id="evt_not_yet")
    # When its message is processed, then it is processed (a consistent read found it), not skipped and lost
    assert run(processor, pk) is Outcome.PROCESSED
    assert payment(aws_world).status is S.PAID
    assert reads.reads[(aws_world.names.inbox_table, True)] == 1


def test_a_stale_pending_copy_of_a_settled_item_is_refused_and_applies_nothing(aws_world, gateway, queue):
    # Given an event processed, and a processor whose eventually consistent reads still see its item pending
    processor, reads = stale_processor(aws_world, gateway, queue)
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    reads.hold(aws_world.names.inbox_table, pk)
    assert run(processor, pk) is Outcome.PROCESSED
    settled = item(aws_world, pk)
    # When its message is delivered again (at least once), then the settle's condition (still pending) refuses it
    assert run(processor, pk) is Outcome.SKIPPED
    stored = payment(aws_world)
    assert (stored.version, stored.transitions) == (1, 1)
    assert item(aws_world, pk) == settled  # no attempt counted, nothing written
    assert outbox_statuses(aws_world) == ["paid"]
    assert queue.delays == []


def test_two_processors_racing_on_one_payment_with_stale_reads_apply_it_once(aws_world, gateway, queue):
    # Given a paid payment, and one refund event delivered twice at once to two processors whose eventually
    # consistent reads see neither the payment nor the settle of the other
    gateway.set("pi_1", S.PAID)
    first, _ = stale_processor(aws_world, gateway, queue)
    assert run(first, store_event(aws_world.names)) is Outcome.PROCESSED
    gateway.set("pi_1", S.REFUNDED)
    refund = store_event(aws_world.names, event_type="charge.refunded", status="refunded")
    racing = []
    both_decided = threading.Barrier(2)
    for _ in range(2):
        processor, reads = stale_processor(aws_world, gateway, queue)
        reads.hide(aws_world.names.payments_table, PAYMENT)  # the payment not seen yet
        reads.hold(aws_world.names.inbox_table, refund)  # pending, whatever the other does
        settle = processor.store.settle

        def settle_together(*args, _settle=settle, **kwargs):
            with contextlib.suppress(threading.BrokenBarrierError):  # both decide before either commits
                both_decided.wait(timeout=2)
            return _settle(*args, **kwargs)

        processor.store.settle = settle_together  # type: ignore[method-assign]  # a seam for the race
        racing.append(processor)
    outcomes: list[Outcome] = []
    threads = [threading.Thread(target=lambda p=p: outcomes.append(run(p, refund))) for p in racing]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then one processed it, the other found it settled: the refund applied once, published once
    assert sorted(outcomes) == [Outcome.PROCESSED, Outcome.SKIPPED]
    stored = payment(aws_world)
    assert (stored.status, stored.version, stored.transitions) == (S.REFUNDED, 2, 2)
    assert outbox_statuses(aws_world) == ["paid", "refunded"]
    assert item(aws_world, refund)["status"] == "processed"
    assert queue.delays == []
