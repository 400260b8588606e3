"""The shared refetch rate limit (GCRA in the control table) against moto's DynamoDB, with an injected clock:
its arithmetic, reservations, blocks after a 429, clock skew, storage failures, and how the HTTP client, the
breaker and the processor treat its waits."""

from __future__ import annotations

import random
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from shared.backoff import MAX_BACKOFF_SECONDS
from shared.gateway.base import GatewayUnavailable
from shared.gateway.breaker import CircuitBreaker, guarded_call
from shared.gateway.http import JsonHttpClient
from shared.gateway.ratelimit import MAX_BLOCK_SECONDS, RateLimited, RateLimiter, burst_size
from shared.process.messages import wait_seconds
from tests.unit.gateway.fakes import CONTROL_TABLE as TABLE
from tests.unit.gateway.fakes import Clock, FakePool, FakeResponse, Sleeps, Spy, limiter
from tests.unit.gateway.fakes import stored_limiter_state as stored


def admitted_within(limit: RateLimiter, clock: Clock, sleeps: Sleeps, seconds: float, step: float) -> list[float]:
    """Requests offered every `step` seconds for `seconds`: the times they were sent (after any sleep)."""
    sent: list[float] = []
    end = clock.now + seconds
    while clock.now < end:
        try:
            slept = limit.acquire()
        except RateLimited:
            clock.advance(step)
            continue
        sent.append(clock.now + slept)
        clock.advance(step)
    return sent


# ------------------------------------------------------------------------------------------------ arithmetic


def test_burst_is_a_quarter_second_of_the_rate_and_at_least_one():
    assert burst_size(20) == 5
    assert burst_size(100) == 25
    assert burst_size(3) == 1
    assert burst_size(0.5) == 1


def test_a_rested_source_sends_its_burst_at_once_then_one_per_interval(dynamodb, clock, sleeps):
    # Given a source of 10/s with a burst of 3 and no waiting allowed
    limit = limiter(dynamodb, clock, sleeps, burst=3, max_wait_seconds=0)

    # When 5 requests arrive at the same instant
    waits: list[float] = []
    refused: list[RateLimited] = []
    for _ in range(5):
        try:
            waits.append(limit.acquire())
        except RateLimited as error:
            refused.append(error)

    # Then the burst goes through without sleeping, and the rest is told when the next slot opens
    assert waits == [0.0, 0.0, 0.0]
    assert len(refused) == 2
    assert refused[0].retry_after == pytest.approx(0.1, abs=1e-3)
    assert not refused[0].counts_as_attempt
    assert sleeps == []
    # And after one interval exactly one more is admitted
    clock.advance(0.1)
    assert limit.acquire() == 0.0
    with pytest.raises(RateLimited):
        limit.acquire()


def test_reservations_sleep_until_the_slot_and_never_exceed_the_rate(dynamodb, clock, sleeps):
    # Given a source of 10/s, burst 1, that may wait up to a second for its slot
    limit = limiter(dynamodb, clock, sleeps, burst=1, max_wait_seconds=1.0)

    # When 15 requests arrive at once
    waits, refused = [], []
    for _ in range(15):
        try:
            waits.append(limit.acquire())
        except RateLimited as error:
            refused.append(error)

    # Then the first 11 take the slots of the next second (0, 0.1 ... 1.0 s) and sleep for them
    assert waits == pytest.approx([i * 0.1 for i in range(11)], abs=1e-3)
    assert sleeps == pytest.approx([i * 0.1 for i in range(1, 11)], abs=1e-3)
    # And the others are sent back with the time until the schedule has room again
    assert len(refused) == 4
    assert refused[0].retry_after == pytest.approx(0.1, abs=1e-3)


def test_over_any_window_at_most_burst_plus_rate_times_window_are_sent(dynamodb, clock, sleeps):
    # Given a source of 20/s (burst 5) offered 100 requests per second for 10 seconds
    limit = limiter(dynamodb, clock, sleeps, rate=20.0)
    sent = admitted_within(limit, clock, sleeps, seconds=10, step=0.01)

    # Then in every one-second window the sends stay within burst + rate
    for start in sent:
        in_window = sum(1 for t in sent if start <= t < start + 1.0)
        assert in_window <= 5 + 20
    # And over the whole run the average rate holds
    assert len(sent) <= 5 + 20 * 11  # the last reservations may sit up to max_wait after the run


def test_an_idle_source_costs_one_write_per_request_and_no_read(dynamodb, clock, sleeps):
    spy = Spy(dynamodb)
    limit = limiter(spy, clock, sleeps)

    for _ in range(3):
        limit.acquire()
        clock.advance(1.0)  # idle between requests

    assert spy.calls == ["update_item"] * 3
    assert stored(dynamodb)["admitted"] == {"N": "3"}


def test_a_busy_source_costs_one_write_per_request_once_the_guess_is_right(dynamodb, clock, sleeps):
    spy = Spy(dynamodb)
    limit = limiter(spy, clock, sleeps, rate=100.0)

    for _ in range(10):
        limit.acquire()
        clock.advance(0.001)  # faster than the rate: the schedule stays ahead of now

    # the first is idle, the second guesses busy from what the first wrote: one write each
    assert spy.calls == ["update_item"] * 10


def test_a_wrong_guess_costs_a_second_write_only(dynamodb, clock, sleeps):
    # Given another instance keeps the schedule busy while this one last saw it idle
    spy = Spy(dynamodb)
    mine = limiter(spy, clock, sleeps, rate=10.0)
    other = limiter(dynamodb, clock, sleeps, rate=10.0)
    mine.acquire()
    clock.advance(5.0)
    other.acquire()
    other.acquire()
    spy.calls.clear()

    # When this instance asks (it guesses idle: it saw the schedule 5 s ago)
    mine.acquire()

    # Then the idle write fails, returns the item, and the busy write takes the slot
    assert spy.calls == ["update_item", "update_item"]


# -------------------------------------------------------------------------------------------------- blocking


def test_a_429_blocks_the_source_for_every_instance_until_retry_after(dynamodb, clock, sleeps):
    # Given two instances of one source
    first = limiter(dynamodb, clock, sleeps)
    second = limiter(dynamodb, clock, sleeps)

    # When the gateway answers 429 with Retry-After: 7 to the first
    first.block(7.0)

    # Then the second waits too, for the time left, without counting an attempt
    with pytest.raises(RateLimited) as refused:
        second.acquire()
    assert refused.value.retry_after == pytest.approx(7.0)
    assert not refused.value.counts_as_attempt
    assert float(stored(dynamodb)["blocked_until"]["N"]) == pytest.approx(clock.now + 7.0)
    clock.advance(7.0)
    assert second.acquire() == 0.0


def test_a_block_is_only_ever_extended(dynamodb, clock, sleeps):
    limit = limiter(dynamodb, clock, sleeps)
    limit.block(30.0)
    limit.block(2.0)  # a shorter Retry-After answered elsewhere
    assert float(stored(dynamodb)["blocked_until"]["N"]) == pytest.approx(clock.now + 30.0)
    assert stored(dynamodb)["throttled"] == {"N": "1"}  # blocks that moved `blocked_until`


def test_a_429_without_retry_after_blocks_a_second_and_a_huge_one_is_capped(dynamodb, clock, sleeps):
    limit = limiter(dynamodb, clock, sleeps)
    limit.block(None)
    assert float(stored(dynamodb)["blocked_until"]["N"]) == pytest.approx(clock.now + 1.0)
    limit.block(86_400.0)
    assert float(stored(dynamodb)["blocked_until"]["N"]) == pytest.approx(clock.now + MAX_BLOCK_SECONDS)


def test_sources_are_limited_apart(dynamodb, clock, sleeps):
    stripe = RateLimiter(TABLE, "stripe", 1.0, clock=clock, sleep=sleeps, dynamodb=dynamodb, max_wait_seconds=0)
    stripe_br = RateLimiter(TABLE, "stripe-br", 1.0, clock=clock, sleep=sleeps, dynamodb=dynamodb, max_wait_seconds=0)
    stripe.acquire()
    stripe.block(60)
    assert stripe_br.acquire() == 0.0  # the other account's bucket and block are its own


# ------------------------------------------------------------------------------------------- slow sources
SLOW_RATE = 1 / 250  # one request per 250 s: its schedule is booked far beyond any clock-skew allowance


def at_most_one_per_interval(sent: list[float], interval: float) -> bool:
    return all(sum(1 for t in sent if start <= t < start + interval) <= 1 for start in sent)


def test_a_source_slower_than_one_request_per_30_s_is_still_limited(dynamodb, clock, sleeps):
    # Given a source limited to one request per 250 s, offered a request every 5 s for 1,000 s
    limit = limiter(dynamodb, clock, sleeps, rate=SLOW_RATE)
    sent = admitted_within(limit, clock, sleeps, seconds=1000, step=5)

    # Then it makes at most one in any 250 s window, and still makes them: one per interval, not none
    assert at_most_one_per_interval(sent, 250)
    assert len(sent) == 4
    # And its schedule was kept, never mistaken for one written by a clock far ahead
    assert float(stored(dynamodb)["admitted"]["N"]) == 4


def test_a_slow_source_shared_by_instances_stays_within_its_rate(dynamodb, clock, sleeps):
    # Given three processor instances limiting one source of one request per 250 s
    instances = [limiter(dynamodb, clock, sleeps, rate=SLOW_RATE) for _ in range(3)]
    sent: list[float] = []
    # When they take turns offering a request every 3 s for 2,000 s
    for step in range(2000 // 3):
        try:
            sent.append(clock.now + instances[step % 3].acquire())
        except RateLimited as refused:
            # Then a refusal says when the schedule has room, no later than the source's own interval
            assert refused.retry_after is not None and 0 < refused.retry_after <= 250
        clock.advance(3)
    # And the source made at most one request in any 250 s window, eight in the 2,000 s
    assert at_most_one_per_interval(sent, 250)
    assert len(sent) == 8


def test_a_slow_sources_refusal_says_when_its_next_slot_opens(dynamodb, clock, sleeps):
    # Given a source of one request per 250 s whose slot was taken 100 s ago
    limit = limiter(dynamodb, clock, sleeps, rate=SLOW_RATE)
    assert limit.acquire() == 0.0
    clock.advance(100)
    # When another request comes, then it is told to come back when the next slot is within the wait allowed
    with pytest.raises(RateLimited) as refused:
        limit.acquire()
    assert refused.value.retry_after == pytest.approx(150 - limit.max_wait_seconds, abs=1e-3)


# ------------------------------------------------------------------------------------------------ clock skew


def test_a_schedule_written_by_a_clock_far_ahead_is_replaced(dynamodb, clock, sleeps):
    # Given an instance whose clock is an hour ahead wrote the schedule
    ahead = Clock(clock.now + 3600)
    limiter(dynamodb, ahead, sleeps).acquire()

    # When an instance with the right time asks
    admitted = limiter(dynamodb, clock, sleeps).acquire()

    # Then it is not stalled for an hour: the schedule is replaced from its own clock
    assert admitted == 0.0
    assert float(stored(dynamodb)["tat"]["N"]) == pytest.approx(clock.now + 0.1)


def test_a_slow_sources_schedule_written_by_a_clock_far_ahead_is_replaced_too(dynamodb, clock, sleeps):
    # Given an instance whose clock is an hour ahead took the slot of a source of one request per 250 s
    limiter(dynamodb, Clock(clock.now + 3600), sleeps, rate=SLOW_RATE).acquire()
    # When an instance with the right time asks, then the schedule is replaced from its own clock
    assert limiter(dynamodb, clock, sleeps, rate=SLOW_RATE).acquire() == 0.0
    assert float(stored(dynamodb)["tat"]["N"]) == pytest.approx(clock.now + 250)


def test_a_slow_sources_schedule_a_little_ahead_is_kept(dynamodb, clock, sleeps):
    # Given an instance 20 s ahead (within MAX_CLOCK_AHEAD_SECONDS) took the slot of a source of one per 250 s
    limiter(dynamodb, Clock(clock.now + 20), sleeps, rate=SLOW_RATE).acquire()
    # When an instance with the right time asks, then it waits for the slot after it, the skew included
    with pytest.raises(RateLimited) as refused:
        limiter(dynamodb, clock, sleeps, rate=SLOW_RATE).acquire()
    assert refused.value.retry_after == pytest.approx(270 - 1.0, abs=1e-3)
    assert float(stored(dynamodb)["tat"]["N"]) == pytest.approx(clock.now + 270)


def test_a_small_skew_only_shifts_a_slot(dynamodb, clock, sleeps):
    # Given an instance 50 ms ahead took the last slot of a 10/s source (burst 1, no waiting)
    limiter(dynamodb, Clock(clock.now + 0.05), sleeps, burst=1, max_wait_seconds=0).acquire()

    # Then an instance on time is told to come back in the interval plus the skew, not more
    with pytest.raises(RateLimited) as refused:
        limiter(dynamodb, clock, sleeps, burst=1, max_wait_seconds=0).acquire()
    assert refused.value.retry_after == pytest.approx(0.15, abs=1e-3)


# ----------------------------------------------------------------------------------------- storage failures


class Broken:
    def update_item(self, **_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="http://dynamodb")

    def get_item(self, **_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="http://dynamodb")


def test_the_limiter_never_gates_when_its_table_is_unreachable(clock, sleeps):
    limit = RateLimiter(TABLE, "stripe", 1.0, clock=clock, sleep=sleeps, dynamodb=Broken())  # type: ignore[arg-type]
    assert [limit.acquire() for _ in range(5)] == [0.0] * 5
    limit.block(5.0)  # logged, not raised
    assert limit.state() is None


def test_rate_and_burst_are_validated():
    with pytest.raises(ValueError, match="rate"):
        RateLimiter(TABLE, "stripe", 0)
    with pytest.raises(ValueError, match="burst"):
        RateLimiter(TABLE, "stripe", 1.0, burst=0)


# ------------------------------------------------------------------------------- the HTTP client and the breaker


def http(pool: FakePool, limit: RateLimiter, sleeps: Sleeps, clock: Clock) -> JsonHttpClient:
    return JsonHttpClient(
        "https://api.example", provider="stripe", pool=pool, sleep=sleeps, clock=clock, throttle=limit
    )


def test_a_429_under_the_limit_blocks_the_source_and_ends_the_call_as_a_wait(dynamodb, clock, sleeps):
    # Given a gateway answering 429 with Retry-After: 4
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "4"})])
    limit = limiter(dynamodb, clock, sleeps)

    # When a refetch is made
    with pytest.raises(GatewayUnavailable) as error:
        http(pool, limit, sleeps, clock).get_json("/v1/x", headers={})

    # Then one request went out (no retry in process), the source is blocked for 4 s, and it is a wait
    assert len(pool.calls) == 1
    assert error.value.throttled and not error.value.counts_as_attempt
    assert error.value.retry_after == pytest.approx(4.0)
    assert float(stored(dynamodb)["blocked_until"]["N"]) == pytest.approx(clock.now + 4.0)
    assert sleeps == []


def test_every_request_takes_a_slot_retries_included(dynamodb, clock, sleeps):
    pool = FakePool([FakeResponse(503), FakeResponse(200, {"ok": True})])
    limit = limiter(dynamodb, clock, sleeps)

    assert http(pool, limit, sleeps, clock).get_json("/v1/x", headers={}) == {"ok": True}
    assert stored(dynamodb)["admitted"] == {"N": "2"}


def test_refused_before_the_first_request_nothing_is_sent(dynamodb, clock, sleeps):
    pool = FakePool([])
    limit = limiter(dynamodb, clock, sleeps)
    limit.block(3.0)
    with pytest.raises(RateLimited):
        http(pool, limit, sleeps, clock).get_json("/v1/x", headers={})
    assert pool.calls == []


def test_refused_before_a_retry_the_call_ends_as_the_failure_it_was(dynamodb, clock, sleeps):
    # Given the first request failed with 503 and the source is blocked before the retry
    limit = limiter(dynamodb, clock, sleeps)

    def fail_and_block(_: str) -> FakeResponse:
        limiter(dynamodb, clock, sleeps).block(9.0)  # another instance was answered 429 meanwhile
        return FakeResponse(503)

    pool = FakePool([fail_and_block])
    with pytest.raises(GatewayUnavailable) as error:
        http(pool, limit, sleeps, clock).get_json("/v1/x", headers={})

    # Then that call counts (a request failed) and waits at least as long as the block
    assert error.value.counts_as_attempt
    assert error.value.retry_after == pytest.approx(9.0)


def test_waits_are_not_breaker_failures(dynamodb, clock):
    breaker = CircuitBreaker(TABLE, "stripe", failure_threshold=1, clock=clock, dynamodb=dynamodb)

    def throttled() -> None:
        raise GatewayUnavailable("429", throttled=True)

    for _ in range(3):
        with pytest.raises(GatewayUnavailable):
            guarded_call(breaker, throttled)
    assert breaker.state() is not None and not breaker.state().is_open(clock())  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------- the wait's delay


def test_a_wait_is_delayed_by_what_was_asked_rounded_up_and_spread():
    rng = random.Random(1)
    delays = [wait_seconds(0.1, 5, rng=rng) for _ in range(200)]
    assert set(delays) == {1}  # SQS counts whole seconds
    spread = [wait_seconds(10.0, 5, rng=rng) for _ in range(200)]
    assert min(spread) >= 10 and max(spread) <= 15 and len(set(spread)) > 3
    assert wait_seconds(None, 5, rng=rng) >= 5
    assert wait_seconds(10_000.0, 5, rng=rng) == MAX_BACKOFF_SECONDS
