"""Several refetch slots in one write (`RateLimiter.reserve(count)`) and a processor batch's requests gathered into
one write (`BatchSlots`), against moto's DynamoDB: the slots are those single requests would have taken, a partial
grant tells the rest when to come back without another write, a gathering waits only for groups that are running
and have not asked, and two processors taking slots at once never exceed the bucket."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest
from moto.dynamodb.models import DynamoDBBackend

from shared.gateway import batch_slots
from shared.gateway.batch_slots import BatchSlots
from shared.gateway.ratelimit import (
    MAX_REMEMBERED_REFUSALS,
    REFUSAL_MEMORY_SECONDS,
    RateLimited,
    RateLimiter,
    Slot,
)
from tests.unit.gateway.fakes import CONTROL_TABLE as TABLE
from tests.unit.gateway.fakes import Clock, Spy, limiter
from tests.unit.gateway.fakes import stored_limiter_state as stored


def waits_of(limit: RateLimiter, clock: Clock, count: int) -> list[float]:
    """How long each of `count` slots taken in one write would sleep from now."""
    return [round(max(0.0, slot.not_before - clock.now), 4) for slot in limit.reserve(count).slots]


# ------------------------------------------------------------------------------------- several slots, one write


def test_slots_taken_in_one_write_are_those_single_requests_would_take(dynamodb, clock, sleeps):
    # Given two sources alike (10/s, burst 3, a second of waiting), rested
    single = RateLimiter(TABLE, "one", 10.0, burst=3, clock=clock, sleep=sleeps, dynamodb=dynamodb)
    batched = RateLimiter(TABLE, "many", 10.0, burst=3, clock=clock, sleep=sleeps, dynamodb=dynamodb)
    # When one takes 6 slots one request at a time and the other 6 in one write, at the same instant
    one_by_one = [single.acquire() for _ in range(6)]
    slots = batched.reserve(6).slots
    # Then the waits are the same: the burst at once, then one per interval
    assert one_by_one == pytest.approx([0, 0, 0, 0.1, 0.2, 0.3], abs=1e-3)
    assert [round(max(0.0, s.not_before - clock.now), 3) for s in slots] == pytest.approx(one_by_one, abs=1e-3)
    # And each slot may be used from its turn less the tolerance until its turn, never later
    assert [round(s.not_before - clock.now, 3) for s in slots] == [-0.2, -0.1, 0.0, 0.1, 0.2, 0.3]
    assert [round(s.not_after - clock.now, 3) for s in slots] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    # And both schedules end at the same time; the counter says 6 slots in 1 write
    assert float(stored(dynamodb, "many")["tat"]["N"]) == pytest.approx(float(stored(dynamodb, "one")["tat"]["N"]))
    assert (stored(dynamodb, "many")["admitted"], stored(dynamodb, "many")["writes"]) == ({"N": "6"}, {"N": "1"})


def test_a_busy_schedule_grants_what_fits_and_says_when_the_rest_may_come_back(dynamodb, clock, sleeps):
    # Given a 10/s source (burst 1, a second of waiting) whose next half second another instance booked
    other = limiter(dynamodb, clock, sleeps, burst=1)
    other.reserve(5)
    spy = Spy(dynamodb)
    mine = limiter(spy, clock, sleeps, burst=1)

    # When this instance asks for 10 slots (it guesses idle: it never saw the schedule)
    grant = mine.reserve(10)

    # Then the refused guess returned the schedule and the second write took the 6 slots left within the second
    assert spy.calls == ["update_item", "update_item"]
    assert len(grant.slots) == 6
    assert [round(s.not_before - clock.now, 3) for s in grant.slots] == pytest.approx([0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    # And the rest are told to come back when the schedule has room for one more (one interval from now)
    assert grant.rest_retry_at == pytest.approx(clock.now + 0.1, abs=1e-3)
    # And a full schedule refuses the next request as before: a wait, not an attempt
    with pytest.raises(RateLimited) as refused:
        mine.reserve(1)
    assert not refused.value.counts_as_attempt


def test_one_write_takes_at_most_the_burst_and_the_wait_of_the_rate(dynamodb, clock, sleeps):
    limit = limiter(dynamodb, clock, sleeps, burst=1, max_wait_seconds=1.0)
    assert limit.max_slots == 11
    grant = limit.reserve(50)
    assert len(grant.slots) == 11
    assert grant.rest_retry_at == pytest.approx(clock.now + 0.1, abs=1e-3)
    with pytest.raises(ValueError, match="count"):
        limit.reserve(0)


def test_a_busy_schedule_hands_out_slots_one_after_the_other(dynamodb, clock, sleeps):
    # Given a 10/s source with a burst of 3 whose schedule another request booked a little ahead
    limit = limiter(dynamodb, clock, sleeps, burst=3)
    limit.reserve(1)
    # When 4 slots are taken in one write
    slots = limit.reserve(4).slots
    # Then they follow the booked one, one interval apart, each usable the tolerance before its turn until its turn
    assert [round(s.not_before - clock.now, 3) for s in slots] == [-0.1, 0.0, 0.1, 0.2]
    assert [round(s.not_after - clock.now, 3) for s in slots] == [0.1, 0.2, 0.3, 0.4]


# ------------------------------------------------------------------------------------------------- a batch


def run_groups(batch: BatchSlots, work: dict[str, Any]) -> dict[str, Any]:
    """Each group's `work()` in a thread of its own inside the group (as the processor runs a batch's groups), all
    started before any works; what each returned or raised."""
    started = threading.Barrier(len(work))
    results: dict[str, Any] = {}

    def run(group: str) -> None:
        with batch.group(group):
            started.wait(timeout=10)
            try:
                results[group] = work[group]()
            except Exception as error:
                results[group] = error

    threads = [threading.Thread(target=run, args=(group,)) for group in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def test_a_batch_takes_the_slots_of_its_groups_of_one_source_in_one_write(dynamodb, clock, sleeps):
    # Given a batch of three Stripe payments and one Asaas payment, each source with its limiter
    spy = Spy(dynamodb)
    stripe = limiter(spy, clock, sleeps, burst=5)
    asaas = RateLimiter(TABLE, "asaas", 10.0, burst=5, clock=clock, sleep=sleeps, dynamodb=spy)  # type: ignore[arg-type]
    batch = BatchSlots({"g1": "stripe", "g2": "stripe", "g3": "stripe", "g4": "asaas"})

    # When each group refetches once, all at the same time
    results = run_groups(batch, {"g1": stripe.acquire, "g2": stripe.acquire, "g3": stripe.acquire, "g4": asaas.acquire})

    # Then every request went at once, Stripe's three slots took one write, Asaas's one
    assert results == dict.fromkeys(("g1", "g2", "g3", "g4"), 0.0)
    assert spy.calls == ["update_item", "update_item"]
    assert (stored(dynamodb)["admitted"], stored(dynamodb)["writes"]) == ({"N": "3"}, {"N": "1"})
    assert (batch.writes, batch.reserved, batch.used, batch.lost) == (2, 4, 4, 0)


def test_a_request_after_the_gathering_takes_a_write_of_its_own(dynamodb, clock, sleeps):
    # Given a batch of two Stripe payments, one group after the other, the first making two requests (a charge, then
    # its intent)
    spy = Spy(dynamodb)
    stripe = limiter(spy, clock, sleeps, burst=5)
    batch = BatchSlots({"g1": "stripe", "g2": "stripe"})
    with batch.group("g1"):
        stripe.acquire()
        stripe.acquire()
    with batch.group("g2"):
        stripe.acquire()
    # Then each request wrote (nothing is reserved for a request that is not being made), as without a batch
    assert spy.calls == ["update_item"] * 3
    assert (batch.reserved, batch.used, batch.lost) == (3, 3, 0)


def test_a_group_that_finishes_without_asking_is_not_waited_for(dynamodb, clock, sleeps):
    # Given a batch of three Stripe payments whose first group needs no refetch (its event was already settled)
    stripe = limiter(dynamodb, clock, sleeps, burst=5)
    batch = BatchSlots({"g1": "stripe", "g2": "stripe", "g3": "stripe"})
    # When the other two refetch
    results = run_groups(batch, {"g1": lambda: None, "g2": stripe.acquire, "g3": stripe.acquire})
    # Then one write took their two slots, none for the first
    assert results == {"g1": None, "g2": 0.0, "g3": 0.0}
    assert (stored(dynamodb)["admitted"], stored(dynamodb)["writes"]) == ({"N": "2"}, {"N": "1"})


def test_a_group_slow_to_ask_is_waited_for_a_bounded_time(dynamodb, clock, sleeps, monkeypatch):
    # Given a batch of two Stripe payments, the second busy elsewhere for longer than the gathering waits
    monkeypatch.setattr(batch_slots, "GATHER_MAX_SECONDS", 0.05)
    stripe = limiter(dynamodb, clock, sleeps, burst=5)
    batch = BatchSlots({"g1": "stripe", "g2": "stripe"})
    first_done = threading.Event()

    def slow() -> float:
        first_done.wait(timeout=10)
        return stripe.acquire()

    def first() -> float:
        try:
            return stripe.acquire()
        finally:
            first_done.set()

    # When both refetch
    results = run_groups(batch, {"g1": first, "g2": slow})
    # Then the first did not wait for the second: each took a write
    assert results == {"g1": 0.0, "g2": 0.0}
    assert stored(dynamodb)["writes"] == {"N": "2"}


def test_the_requests_left_over_by_a_partial_grant_wait_without_another_write(dynamodb, clock, sleeps):
    # Given a 10/s source that allows one request at once and no waiting, and a batch of three of its payments
    spy = Spy(dynamodb)
    stripe = limiter(spy, clock, sleeps, burst=1, max_wait_seconds=0)
    batch = BatchSlots({"g1": "stripe", "g2": "stripe", "g3": "stripe"})

    # When the three refetch at the same time
    results = run_groups(batch, {"g1": stripe.acquire, "g2": stripe.acquire, "g3": stripe.acquire})

    # Then one write granted one slot, and the two others are told when to come back: a wait, not an attempt
    assert spy.calls == ["update_item"]
    refused = [r for r in results.values() if isinstance(r, RateLimited)]
    assert sorted(results.values(), key=lambda r: isinstance(r, RateLimited))[0] == 0.0
    assert len(refused) == 2
    assert [r.retry_after for r in refused] == pytest.approx([0.1, 0.1], abs=1e-3)
    assert not any(r.counts_as_attempt for r in refused)
    # And a later request of the batch is told the same without writing, until that time has come
    with batch.group("g2"), pytest.raises(RateLimited):
        stripe.acquire()
    assert spy.calls == ["update_item"]
    clock.advance(0.1)
    with batch.group("g2"):
        assert stripe.acquire() == 0.0
    assert spy.calls == ["update_item"] * 2


def test_the_requests_refused_show_as_a_backlog_until_they_are_served(dynamodb, clock, sleeps):
    # Given a 1/s source that allows one request at once and no waiting, and a batch of four of its payments
    slow = limiter(dynamodb, clock, sleeps, rate=1.0, burst=1, max_wait_seconds=0)
    batch = BatchSlots({f"g{n}": "stripe" for n in range(4)})

    # When the four refetch at the same time: one slot, three refused
    run_groups(batch, {f"g{n}": slow.acquire for n in range(4)})

    # Then the next free slot is after the three refused requests, one interval each, though the schedule itself
    # (booked one second ahead at most) shows none of them
    free = slow.next_free_at()
    assert free is not None and free - clock.now == pytest.approx(3.0 + 1.0, abs=1e-3)
    # And a refused group that gets its slot later no longer counts
    clock.advance(1.0)
    again = BatchSlots({"g1": "stripe"})
    with again.group("g1"):
        slow.acquire()
    free = slow.next_free_at()
    assert free is not None and free - clock.now == pytest.approx(2.0 + 1.0, abs=1e-3)
    # And a refusal nothing served is forgotten after REFUSAL_MEMORY_SECONDS
    clock.advance(REFUSAL_MEMORY_SECONDS + 1.0)
    free = slow.next_free_at()
    assert free is not None and free <= clock.now  # the schedule alone: long past


def test_the_backlog_remembered_is_bounded_whatever_a_burst_brings(dynamodb, clock, sleeps):
    # Given a source that refused more distinct requests than an instance remembers
    slow = limiter(dynamodb, clock, sleeps, rate=1.0, burst=1, max_wait_seconds=0)
    slow.reserve(1)
    slow.note_refused(range(MAX_REMEMBERED_REFUSALS + 500))
    # When its backlog is asked for  Then it counts at most MAX_REMEMBERED_REFUSALS of them
    free = slow.next_free_at()
    assert free is not None and free - clock.now == pytest.approx(MAX_REMEMBERED_REFUSALS, abs=1.0)


def test_a_blocked_source_refuses_the_whole_batch_with_one_write(dynamodb, clock, sleeps):
    spy = Spy(dynamodb)
    stripe = limiter(spy, clock, sleeps)
    stripe.block(5.0)
    spy.calls.clear()
    batch = BatchSlots({"g1": "stripe", "g2": "stripe"})
    results = run_groups(batch, {"g1": stripe.acquire, "g2": stripe.acquire})
    assert all(isinstance(r, RateLimited) and r.retry_after == pytest.approx(5.0) for r in results.values())
    assert spy.calls == ["update_item"]  # one write learnt the block for both


# ------------------------------------------------------------------------------------------------ concurrency

_WRITES = threading.Lock()
_moto_update_item = DynamoDBBackend.update_item


def _atomic_update_item(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
    """DynamoDB applies a conditional write atomically; moto checks and writes without a lock (as in
    tests/integration/test_rate_limit.py, and as the local stack's embedded AWS serializes its requests)."""
    with _WRITES:
        return _moto_update_item(self, *args, **kwargs)


class RecordingLimiter(RateLimiter):
    """A limiter that records each slot a request uses and when (real clock)."""

    def __init__(self, *args: Any, used: list[tuple[Slot, float]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.used = used

    def wait_for(self, slot: Slot) -> float:
        self.used.append((slot, time.time()))
        return super().wait_for(slot)


def test_two_processors_reserving_at_once_never_exceed_the_bucket(dynamodb, monkeypatch):
    # Given two processors, each its own limiter of one 5/s source (burst 2, half a second of waiting), real clocks
    monkeypatch.setattr(DynamoDBBackend, "update_item", _atomic_update_item)
    rate, burst, seconds = 5.0, 2, 3.0
    used: list[tuple[Slot, float]] = []
    refused: list[RateLimited] = []

    def processor(seed: int) -> None:
        rng = random.Random(seed)
        limit = RecordingLimiter(TABLE, "stripe", rate, burst=burst, max_wait_seconds=0.5, dynamodb=dynamodb, used=used)
        end = time.time() + seconds
        while time.time() < end:
            # When each processes batches of 1 to 6 payments, each payment refetched once, two groups at a time
            groups = [f"{seed}-{n}" for n in range(rng.randint(1, 6))]
            batch = BatchSlots(dict.fromkeys(groups, "stripe"))

            def group_run(group: str, together: threading.Barrier, batch: BatchSlots = batch) -> None:
                with batch.group(group):
                    together.wait(timeout=10)  # both running (each read its event) before they refetch
                    try:
                        limit.acquire()
                    except RateLimited as error:
                        refused.append(error)  # this group's message waits

            for start in range(0, len(groups), 2):
                pair = groups[start : start + 2]
                together = threading.Barrier(len(pair))
                threads = [threading.Thread(target=group_run, args=(g, together)) for g in pair]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()

    workers = [threading.Thread(target=processor, args=(seed,)) for seed in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)

    # Then the limit was in force (requests were refused or slept for their slot)
    assert refused or any(slot.not_before > at for slot, at in used)
    # And the slots' times, across both processors, are one interval apart: over any window of T seconds at most
    # rate x T of them fall due (+1: the overlap of the idle and busy writes), so requests sent within their slots'
    # times (each from `tolerance` before its time: the burst) stay within burst + rate x T
    due = sorted(slot.not_after for slot, _ in used)
    for start in due:
        assert sum(1 for t in due if start <= t < start + 1.0) <= rate + 1
    # And the schedule counted every slot, in fewer writes than slots
    item = stored(dynamodb)
    assert int(item["admitted"]["N"]) >= len(used)
    assert int(item["writes"]["N"]) < int(item["admitted"]["N"])
