"""The lifecycle's requests against moto's DynamoDB: each write is accepted from exactly the statuses its row lists
and refused from every other, and two workers settling the same event apply it once."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.inbox import lifecycle
from shared.inbox.lifecycle import LIFECYCLE, EventStatus, Write, text_value
from shared.inbox.store import InboxStore, PutOutcome, to_attributes
from shared.payments.status import PaymentStatus
from shared.process.service import Outcome
from tests.integration.processing_support import FakeGateway, RecordingQueue, make_processor, run, store_event

PK = "stripe#evt_lifecycle"


def an_item(status: EventStatus) -> dict[str, Any]:
    item: dict[str, Any] = {
        "pk": PK,
        "provider": "stripe",
        "event_id": "evt_lifecycle",
        "status": status.value,
        "received_at": "2026-01-01T00:00:00.000000Z",
        "attempts": 1,
        "dispatch_id": "d0",
        "dispatch_reason": "received",
        "group_id": "stripe#pi_1",
    }
    if status in lifecycle.OPEN_STATUSES:
        item["open_status"] = lifecycle.open_status_value(status, PK)
    return item


def request_of(write: Write, source: EventStatus) -> dict[str, Any]:
    """The write's request as its caller sends it to an item read in `source`."""
    match write:
        case Write.ATTEMPT:
            return lifecycle.attempt_update(error="GatewayUnavailable", now="t1")
        case Write.SETTLE:
            return lifecycle.settle_update(EventStatus.PROCESSED, note="paid", now="t1")
        case Write.FAIL | Write.GIVE_UP:
            return lifecycle.fail_update(PK, error="rejected", now="t1", counts_attempt=write is Write.FAIL)
        case Write.WAIT:
            return lifecycle.wait_update(until="t2", waiting_for=lifecycle.WaitingFor.CIRCUIT, now="t1")
        case Write.REDISPATCH:
            return lifecycle.redispatch_update(group_id="g", now="t1", seen_dispatch_id="d0", quiet_since="t0")
        case Write.REPLAY:  # the replay selects the status it read
            return lifecycle.replay_update(
                selected=text_value(source.value),
                open_status=text_value(lifecycle.open_status_value(EventStatus.PENDING, PK)),
                dispatch_id=text_value(lifecycle.new_dispatch_id()),
                now=text_value("t1"),
                replayed_by=text_value("arn:execution"),
            )
    raise AssertionError(write)


UPDATES = [write for write in Write if write is not Write.RECEIVE]


@pytest.mark.parametrize("source", list(EventStatus))
@pytest.mark.parametrize("write", UPDATES)
def test_each_write_is_accepted_from_exactly_the_statuses_its_row_lists(aws_world, write, source):
    # Given an item in `source`
    store = InboxStore(aws_world.names.inbox_table)
    client = aws_world.session.client("dynamodb")
    client.put_item(TableName=store.table_name, Item=to_attributes(an_item(source)))
    allowed = source in LIFECYCLE[write].sources
    # When the write's request is sent
    try:
        client.update_item(**store.update_request(PK, request_of(write, source)))
        accepted = True
    except ClientError as error:
        assert error.response["Error"]["Code"] == "ConditionalCheckFailedException"
        accepted = False
    except ValueError:  # a replay naming a status it may not select is refused before any request
        assert write is Write.REPLAY
        accepted = False
    # Then DynamoDB accepts it exactly when the lifecycle allows it, and a refused write changed nothing
    assert accepted is allowed
    after = store.get(PK)
    assert after is not None
    if accepted:
        assert EventStatus(after["status"]) in LIFECYCLE[write].targets
    else:
        assert after == an_item(source)


@pytest.mark.parametrize("source", list(EventStatus))
def test_a_receive_is_accepted_only_when_no_item_exists(aws_world, source):
    store = InboxStore(aws_world.names.inbox_table)
    # Given an item in any status
    store.dynamodb.put_item(TableName=store.table_name, Item=to_attributes(an_item(source)))
    # Then a redelivery of it is a duplicate, and the stored item is untouched
    received = {"pk": PK, **lifecycle.received_attributes(PK, EventStatus.PENDING, received_at="t9")}
    assert store.put_new(received) is PutOutcome.DUPLICATE
    assert store.get(PK) == an_item(source)
    # While a new key is stored
    assert store.put_new({**received, "pk": "stripe#evt_new"}) is PutOutcome.STORED


def test_two_workers_settling_the_same_event_apply_it_once(aws_world):
    # Given one event, delivered twice at once (a redelivery racing the first delivery), both workers reading
    # the item pending and the payment absent before either commits
    gateway = FakeGateway()
    gateway.set("pi_1", PaymentStatus.PAID)
    pk = store_event(aws_world.names)
    queue = RecordingQueue()
    workers = [make_processor(aws_world.names, gateway, queue) for _ in range(2)]
    both_read = threading.Barrier(2)
    for worker in workers:
        original = worker.store.load_payment

        def load_then_wait(key, _original=original, **read):
            current = _original(key, **read)
            with contextlib.suppress(threading.BrokenBarrierError):
                both_read.wait(timeout=2)
            return current

        worker.store.load_payment = load_then_wait  # type: ignore[method-assign]  # a seam for the race
    outcomes: list[Outcome] = []
    threads = [threading.Thread(target=lambda w=w: outcomes.append(run(w, pk))) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then one settled it; the other's transaction was refused by the item's condition and did nothing
    assert sorted(outcomes) == [Outcome.PROCESSED, Outcome.SKIPPED]
    item = InboxStore(aws_world.names.inbox_table).get(pk)
    assert item is not None
    assert item["status"] == "processed" and item["attempts"] == 1  # counted once
    stored = workers[0].store.load_payment("stripe#pi_1")
    assert stored is not None and stored.version == 1  # applied once
    assert queue.delays == [] and queue.dead_letters == []  # the loser was not retried either
    outbox = aws_world.session.client("dynamodb").scan(TableName=aws_world.names.outbox_table)["Items"]
    assert len(outbox) == 1  # published once
