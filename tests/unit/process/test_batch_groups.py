"""A processor batch by FIFO group (shared/process/app.py): each group in order, a failure holding up only the rest
of its own group, and different groups running at the same time."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from shared.process.app import message_groups, process_batch
from shared.process.coalesce import Refetches
from shared.process.messages import Delivery, DispatchMessage
from shared.process.service import Outcome, RetryLater

BARRIER_TIMEOUT_SECONDS = 10  # only a broken implementation waits this long; nothing asserts a time


def record(message_id: str, group: str | None) -> dict[str, Any]:
    attributes = {"ApproximateReceiveCount": "1"} | ({"MessageGroupId": group} if group else {})
    return {
        "messageId": message_id,
        "receiptHandle": f"receipt-{message_id}",
        "body": json.dumps({"pk": message_id}),
        "attributes": attributes,
    }


def batch(*groups: str) -> dict[str, Any]:
    """Records named "<group><position in the batch>", e.g. A1, A2, B3."""
    return {"Records": [record(f"{group}{index}", group) for index, group in enumerate(groups, start=1)]}


@dataclass
class FakeQueue:
    released: list[str] = field(default_factory=list)

    def release(self, receipt_handle: str) -> None:
        self.released.append(receipt_handle)

    def dead_letter(self, delivery: Delivery) -> None:
        raise AssertionError("nothing is malformed here")


class FakeStore:
    dynamodb = None


class FakeProcessor:
    """Records what it handled, in which thread and with which refetches; raises RetryLater for `retry` ids."""

    def __init__(self, retry: frozenset[str] = frozenset(), hook: Any = None) -> None:
        self.retry = retry
        self.hook = hook
        self.handled: list[str] = []
        self.refetches: dict[str, Refetches | None] = {}
        self.queue = FakeQueue()
        self.store = FakeStore()
        self._lock = threading.Lock()

    def handle(self, message: DispatchMessage, delivery: Delivery, refetches: Refetches | None = None) -> Outcome:
        with self._lock:
            self.handled.append(message.pk)
            self.refetches[message.pk] = refetches
        if self.hook is not None:
            self.hook(message.pk)
        if message.pk in self.retry:
            raise RetryLater("not yet")
        return Outcome.PROCESSED


def failures(response: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]


def test_a_failure_holds_up_the_rest_of_its_group_only():
    # Given a batch of groups A, A, B, C, A whose A2 must be retried
    processor = FakeProcessor(retry=frozenset({"A2"}))

    # When the batch is processed
    response = process_batch(batch("A", "A", "B", "C", "A"), None, processor)  # type: ignore[arg-type]

    # Then A2 (retried) and A5 (behind it in its group) are reported failed, A5 never attempted and released at once
    assert failures(response) == ["A2", "A5"]
    assert "A5" not in processor.handled
    assert processor.queue.released == ["receipt-A5"]
    # And A1, B3 and C4 were processed, A1 before A2
    assert set(processor.handled) == {"A1", "A2", "B3", "C4"}
    assert processor.handled.index("A1") < processor.handled.index("A2")


def test_an_unexpected_error_is_a_failure_of_its_group_too():
    # Given a processor that crashes outside its own crash accounting on B2
    def crash(pk: str) -> None:
        if pk == "B2":
            raise RuntimeError("boom")

    processor = FakeProcessor(hook=crash)
    # When a batch B, B, B, A runs
    response = process_batch(batch("B", "B", "B", "A"), None, processor)  # type: ignore[arg-type]
    # Then B2 and the B behind it are failed, A is not
    assert failures(response) == ["B2", "B3"]
    assert "A4" in processor.handled


def test_failures_are_reported_in_the_batch_order():
    processor = FakeProcessor(retry=frozenset({"B1", "A2"}))
    response = process_batch(batch("B", "A", "B", "A"), None, processor)  # type: ignore[arg-type]
    assert failures(response) == ["B1", "A2", "B3", "A4"]


def test_one_group_keeps_its_order_and_shares_one_refetches_others_have_their_own():
    processor = FakeProcessor()
    process_batch(batch("A", "B", "A", "A"), None, processor)  # type: ignore[arg-type]
    assert [pk for pk in processor.handled if pk.startswith("A")] == ["A1", "A3", "A4"]
    a1, a3, a4, b2 = (processor.refetches[pk] for pk in ("A1", "A3", "A4", "B2"))
    assert a1 is a3 is a4
    assert b2 is not a1


def test_records_without_a_group_are_groups_of_their_own():
    records = [record("m1", None), record("m2", None), record("m3", "G"), record("m4", "G")]
    assert [[r["messageId"] for r in group] for group in message_groups(records)] == [["m1"], ["m2"], ["m3", "m4"]]


def test_two_groups_really_run_at_the_same_time():
    # Given a gateway that holds each group's first call until the other group's first call has started
    both_started = threading.Barrier(2, timeout=BARRIER_TIMEOUT_SECONDS)

    def meet(pk: str) -> None:
        if pk in {"A1", "B2"}:
            both_started.wait()  # raises BrokenBarrierError if the other group never starts meanwhile

    processor = FakeProcessor(hook=meet)
    # When a batch of two groups runs
    response = process_batch(batch("A", "B", "A"), None, processor)  # type: ignore[arg-type]
    # Then both met at the barrier (neither failed), each group in its order
    assert failures(response) == []
    assert processor.handled.index("A1") < processor.handled.index("A3")


def test_with_one_worker_groups_run_one_after_the_other():
    # Given the same meeting, but one group at a time: the first group's call waits for nobody and fails
    both_started = threading.Barrier(2, timeout=0.2)

    def meet(pk: str) -> None:
        if pk in {"A1", "B2"}:
            both_started.wait()

    processor = FakeProcessor(hook=meet)
    response = process_batch(batch("A", "B"), None, processor, max_concurrent_groups=1)  # type: ignore[arg-type]
    assert failures(response) == ["A1", "B2"]


@pytest.mark.parametrize("groups", [4, 7])
def test_no_more_groups_run_at_once_than_the_bound(groups):
    # Given more groups than workers, each call noting how many are in flight
    in_flight, most = 0, 0
    lock = threading.Lock()
    gate = threading.Barrier(min(groups, 4), timeout=BARRIER_TIMEOUT_SECONDS)

    def count(pk: str) -> None:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        if int(pk[1:]) <= 4:
            gate.wait()  # the first four calls meet: four really run at once
        with lock:
            in_flight -= 1

    processor = FakeProcessor(hook=count)
    names = [chr(ord("A") + n) for n in range(groups)]
    assert failures(process_batch(batch(*names), None, processor)) == []  # type: ignore[arg-type]
    assert most == min(groups, 4)
