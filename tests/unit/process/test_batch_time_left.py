"""The processor starts no message without the time it may need (shared/process/app.py `message_reserve_seconds`):
what it did not start goes back to the queue at once, reported failed and released, its attempts not spent."""

from __future__ import annotations

from typing import Any

from shared import definitions
from shared.gateway import http
from shared.process.app import message_reserve_seconds, process_batch
from tests.unit.process.test_batch_groups import FakeProcessor, batch, failures


class ClockContext:
    """A Lambda context whose remaining time the test moves."""

    def __init__(self, remaining_seconds: float) -> None:
        self.remaining_seconds = remaining_seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.remaining_seconds * 1000)


def run(context: ClockContext, processor: FakeProcessor, *groups: str, workers: int = 1) -> dict[str, Any]:
    return process_batch(
        batch(*groups),
        context,  # type: ignore[arg-type]
        processor,  # type: ignore[arg-type]
        max_concurrent_groups=workers,
        batch_slots=False,
    )


def test_one_message_fits_the_processor_timeout_and_a_second_wave_of_hung_refetches_does_not() -> None:
    # Given the longest a refetch can take against a gateway that hangs (its retries' budget, then one attempt)
    hung_refetch = http.BUDGET_SECONDS + http.CONNECT_TIMEOUT_SECONDS + http.READ_TIMEOUT_SECONDS
    # Then two such waves outlast the processor's timeout (what the guard is for) ...
    assert 2 * hung_refetch > definitions.PROCESSOR_TIMEOUT_SECONDS
    # ... the reserve covers one, and a batch fresh from the queue may start its messages ...
    assert hung_refetch < message_reserve_seconds() <= definitions.PROCESSOR_TIMEOUT_SECONDS
    # ... but after one full wave, none starts
    assert definitions.PROCESSOR_TIMEOUT_SECONDS - hung_refetch < message_reserve_seconds()


def test_a_batch_with_too_little_time_left_starts_nothing_and_releases_everything() -> None:
    # Given an invocation with less than the reserve left
    processor = FakeProcessor()
    context = ClockContext(message_reserve_seconds() - 0.001)
    # When its batch is processed
    response = run(context, processor, "A", "B", "A")
    # Then no message was started, all are reported failed in the batch's order and released at once
    assert processor.handled == []
    assert failures(response) == ["A1", "B2", "A3"]
    assert processor.queue.released == ["receipt-A1", "receipt-B2", "receipt-A3"]


def test_messages_stop_starting_when_the_time_left_falls_under_the_reserve() -> None:
    # Given an invocation with the whole processor timeout, each message taking 6 s of it
    context = ClockContext(definitions.PROCESSOR_TIMEOUT_SECONDS)

    def spend(pk: str) -> None:
        context.remaining_seconds -= 6

    processor = FakeProcessor(hook=spend)
    # When a batch of one group A, A, A, A and a group B runs, one group at a time
    response = run(context, processor, "A", "A", "A", "A", "B")
    # Then messages started while the reserve was left (30 s, then 24 s), and the rest went back unstarted
    started = int((definitions.PROCESSOR_TIMEOUT_SECONDS - message_reserve_seconds()) // 6) + 1
    assert processor.handled == ["A1", "A2", "A3", "A4", "B5"][:started]
    assert failures(response) == ["A1", "A2", "A3", "A4", "B5"][started:]
    assert processor.queue.released == [f"receipt-{pk}" for pk in ["A1", "A2", "A3", "A4", "B5"][started:]]


def test_without_a_context_nothing_is_held_back() -> None:
    processor = FakeProcessor()
    assert failures(process_batch(batch("A", "B"), None, processor)) == []  # type: ignore[arg-type]
    assert sorted(processor.handled) == ["A1", "B2"]
