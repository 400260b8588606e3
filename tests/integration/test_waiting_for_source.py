"""Waiting is not being lost: an event sent back to the queue by an open circuit or its source's rate limit records
that it waits, and the sweeper neither re-dispatches it (a duplicate queue message) nor counts it as stuck, however
long the wait; once the wait is over plus the stale threshold, a lost one is re-dispatched as before. Against moto,
with the local Pipe and an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from shared.gateway.base import GatewayUnavailable
from shared.gateway.breaker import CircuitBreaker, GuardedClient
from shared.gateway.ratelimit import RateLimited
from shared.inbox.lifecycle import WaitingFor
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.handlers import default_router
from shared.process.service import EventProcessor, Outcome, RetryLater
from shared.sweeper import SweepStore
from tests.integration.operations_support import later, pipe_for, sweeper_for
from tests.integration.processing_support import FakeGateway, RecordingQueue, message_for, store_event

SWEEP_EVERY = 300  # the sweeper's schedule in AWS (SWEEP_SCHEDULE_MINUTES)
OUTAGE = 7200  # two hours, eight stale periods of 900 s


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def item_of(world: Any, pk: str) -> dict[str, Any]:
    found = InboxStore(world.names.inbox_table).get(pk)
    assert found is not None, pk
    return found


def processor_for(world: Any, client: Any, queue: RecordingQueue, clock: Clock) -> EventProcessor:
    return EventProcessor(
        ProcessingStore(world.names.inbox_table, world.names.payments_table),
        default_router(lambda provider: client if provider == "stripe" else None),
        queue,
        max_attempts=3,
        retry_base_seconds=1,
        clock=clock,
    )


def test_a_two_hour_outage_behind_an_open_circuit_gives_no_duplicate_message_and_no_stuck_count(aws_world):
    # Given three pending events of two payments (two of them in one FIFO group), dispatched once by the Pipe
    first = store_event(aws_world.names, resource_id="pi_a")
    behind = store_event(aws_world.names, resource_id="pi_a")
    other = store_event(aws_world.names, resource_id="pi_b")
    pipe = pipe_for(aws_world)
    assert pipe.poll_once() == 3
    dispatch_ids = {pk: item_of(aws_world, pk)["dispatch_id"] for pk in (first, behind, other)}
    # ... and the gateway down, its circuit open for the whole outage (opened by other instances' failures)
    clock = Clock(later(10))
    breaker = CircuitBreaker(
        aws_world.names.control_table, "stripe", cooldown_seconds=OUTAGE, clock=clock, cache_seconds=0
    )
    for _ in range(breaker.failure_threshold):
        breaker.record_failure()
    gateway = FakeGateway()
    gateway.failure = GatewayUnavailable("503 Service Unavailable")
    queue = RecordingQueue()
    processor = processor_for(aws_world, GuardedClient(gateway, breaker), queue, clock)

    # When, for two hours, each group's head message comes back whenever its visibility ends (FIFO: the event
    # behind waits unseen) and the sweeper runs every five minutes
    visible_at = {first: clock.now, other: clock.now}
    sweeps = []
    while clock.now < later(10 + OUTAGE - SWEEP_EVERY):
        for pk, when in visible_at.items():
            if when <= clock.now:
                with pytest.raises(RetryLater):
                    processor.handle(*message_for(pk))
                visible_at[pk] = clock.now + queue.delays[-1][1]
        sweeps.append(sweeper_for(aws_world, clock=clock.now).run())
        assert pipe.poll_once() == 0  # no write of the whole outage made the Pipe enqueue anything
        clock.now += SWEEP_EVERY

    # Then no sweep re-dispatched anything or counted anything stuck; once quiet, all three wait for their source
    assert len(sweeps) == OUTAGE // SWEEP_EVERY - 1
    assert all(sweep.redispatched == 0 and sweep.stuck == 0 and sweep.waiting == 0 for sweep in sweeps)
    assert [sweep.waiting_for_source for sweep in sweeps if sweep.oldest_age_s > 900] != []
    assert all(sweep.waiting_for_source == 3 for sweep in sweeps if sweep.oldest_age_s > 900)
    # And the gateway was never called, no attempt counted, each head's item says what it waits for and until when
    assert gateway.fetches == 0
    for pk in (first, other):
        item = item_of(aws_world, pk)
        assert (item["attempts"], item["dispatch_reason"], item["waiting_for"]) == (0, "wait", "circuit")
        assert item["wait_until"] > item["received_at"] and item["dispatch_id"] == dispatch_ids[pk]
    assert item_of(aws_world, behind)["dispatch_id"] == dispatch_ids[behind]

    # When the outage ends and the messages come back
    clock.now = later(10 + OUTAGE + 1)
    gateway.failure = None
    gateway.set("pi_a", PaymentStatus.PAID)
    gateway.set("pi_b", PaymentStatus.PAID)
    outcomes = [processor.handle(*message_for(pk)) for pk in (first, behind, other)]
    # Then they are processed, their wait forgotten, and a sweep finds nothing to do
    assert outcomes == [Outcome.PROCESSED, Outcome.IGNORED, Outcome.PROCESSED]
    assert all("wait_until" not in item_of(aws_world, pk) for pk in (first, behind, other))
    assert sweeper_for(aws_world, clock=clock.now).run().stuck == 0


def test_an_event_waiting_for_its_rate_limit_records_it_and_a_lost_one_is_redispatched_after_the_wait(aws_world):
    # Given an event whose source's rate limit is booked for four minutes (a slow source)
    pk = store_event(aws_world.names, resource_id="pi_slow")
    clock = Clock(later(10))

    class Booked:
        provider = "stripe"

        def fetch_payment(self, resource_id: str, **_: Any) -> Any:
            raise RateLimited("refetch rate of stripe (0.004/s) is booked for 249.0 s", retry_after=249.0)

    queue = RecordingQueue()
    processor = processor_for(aws_world, Booked(), queue, clock)
    # When it is processed
    with pytest.raises(RetryLater):
        processor.handle(*message_for(pk))
    # Then its message is delayed for the wait, and the item says so, no attempt counted
    delay = queue.delays[-1][1]
    assert 249 <= delay <= 600
    item = item_of(aws_world, pk)
    assert (item["attempts"], item["waiting_for"], item["dispatch_reason"]) == (0, "rate_limit", "wait")
    # And while the wait plus the stale threshold has not passed, the sweeper leaves it alone
    quiet_until = clock.now + delay + 900
    summary = sweeper_for(aws_world, clock=quiet_until - 1).run()
    assert (summary.redispatched, summary.stuck, summary.waiting_for_source) == (0, 0, 1)
    # But if its message was lost meanwhile, it is re-dispatched once that has passed, as any stale event
    summary = sweeper_for(aws_world, clock=quiet_until + 1).run()
    assert (summary.redispatched, summary.stuck, summary.waiting_for_source) == (1, 1, 0)
    assert item_of(aws_world, pk)["dispatch_reason"] == "redispatch"


class _MarksUnreadable(SweepStore):
    def wait_marks(self, pks: list[str]) -> dict[str, str]:
        raise RuntimeError("throttled")


def test_when_the_wait_marks_cannot_be_read_the_redispatch_condition_still_holds_a_waiting_event(aws_world):
    # Given an old event that waits for its source until after the sweep
    pk = store_event(aws_world.names, resource_id="pi_wait")
    before = item_of(aws_world, pk)["dispatch_id"]
    store = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    store.record_wait(pk, until="2026-11-29T10:20:00.000000Z", waiting_for=WaitingFor.CIRCUIT, now="t")
    # When a sweep at 10:25 cannot read the wait marks (so it takes the event for stale)
    sweeper = sweeper_for(
        aws_world,
        clock=later(25 * 60),
        store=_MarksUnreadable(aws_world.names.inbox_table, aws_world.names.payments_table),
    )
    summary = sweeper.run()
    # Then its re-dispatch is refused by the write's condition: the event keeps its dispatch, the error is reported
    assert summary.redispatched == 0 and summary.errors == ["wait marks: RuntimeError"]
    assert item_of(aws_world, pk)["dispatch_id"] == before


def test_the_wait_marks_of_many_events_are_read_100_keys_a_request(aws_world):
    # Given 150 pending events, every other one waiting for its source (more than one BatchGetItem holds)
    store = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    pks = [store_event(aws_world.names, resource_id=f"pi_many_{n}") for n in range(150)]
    for pk in pks[::2]:
        store.record_wait(pk, until="2026-11-29T10:20:00.000000Z", waiting_for=WaitingFor.RATE_LIMIT, now="t")
    # When the sweeper reads their marks
    marks = SweepStore(aws_world.names.inbox_table, aws_world.names.payments_table).wait_marks(pks)
    # Then it has the mark of each waiting one and of no other
    assert marks == dict.fromkeys(pks[::2], "2026-11-29T10:20:00.000000Z")
    # (DynamoDB refuses more than 100 keys in one request: so does the emulation)
    client = aws_world.session.client("dynamodb")
    with pytest.raises(client.exceptions.ClientError, match=r"less than or equal to 100|Too many items"):
        client.batch_get_item(
            RequestItems={aws_world.names.inbox_table: {"Keys": [{"pk": {"S": pk}} for pk in pks[:101]]}}
        )


class _Partial:
    """A DynamoDB client that leaves all but the first key of each request unprocessed (throttling)."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.requests = 0

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:  # boto3 names it so
        self.requests += 1
        keys = RequestItems[self.table]["Keys"]
        first, rest = keys[0], keys[1:]
        answer = {"pk": first["pk"], "wait_until": {"S": "2026-11-29T10:20:00.000000Z"}}
        unprocessed = {self.table: {**RequestItems[self.table], "Keys": rest}} if rest else {}
        return {"Responses": {self.table: [answer]}, "UnprocessedKeys": unprocessed}


def test_unprocessed_keys_are_asked_again_a_few_times_then_taken_as_not_waiting():
    # Given a table that answers one key per request
    client = _Partial("inbox")
    store = SweepStore("inbox", "payments", dynamodb=client)  # type: ignore[arg-type]
    # When six marks are read
    marks = store.wait_marks([f"stripe#evt_{n}" for n in range(6)])
    # Then four rounds were asked and four marks read; the two never processed count as not waiting (the
    # re-dispatch's condition still guards them)
    assert client.requests == 4 and sorted(marks) == [f"stripe#evt_{n}" for n in range(4)]
