"""A refetch rate limit per source, shared by every processor instance, kept in the DynamoDB control table.

Why shared: a burst fans out to many processor instances (and the sweeper's reconciliations go through the same
processor), and the gateway counts the requests of the whole account, not of one instance. One item per source,
`pk = "ratelimit#{source}"`, holds the schedule of a GCRA (generic cell rate algorithm: a token bucket kept as a
single time) and, after a 429, `blocked_until`.

The arithmetic (`rate` requests per second, `burst` requests at once):
- `tat`, the theoretical arrival time, is when the bucket would be full again. A request at `now` is admitted when
  `tat - now <= tolerance` (tolerance = (burst - 1) / rate: a source idle long enough may send `burst` requests at
  once), and moves `tat` to `max(tat, now) + 1 / rate`. Over any window of T seconds at most `burst + rate * T`
  requests are admitted: the rate holds on average, bursts stay short.
- Reservations: a request may also take a slot up to `max_wait` seconds ahead (`tat - now <= tolerance +
  max_wait`) and sleep until it. Instances then take turns instead of racing: with fewer requesters in flight than
  `rate * max_wait`, nobody is ever told "not now". Beyond that horizon the limiter raises RateLimited with the
  time until the schedule has room: the processor delays the message (visibility) without counting an attempt.
- Several slots in one write (`reserve(count)`): `tat` moves by `count / rate` at once, admitted when the last of
  them is within the horizon (`tat - now <= horizon - (count - 1) / rate`); when fewer fit, as many as fit are
  granted (a second write: the first one's refusal returned the schedule) and the rest are told when the schedule
  has room. The slots are those `count` single requests would have taken one after the other, so the window bound
  above is unchanged: slot i of a write that left `tat` at T is due at `T - (count - i) / rate` and may be used
  from `tolerance` before that time until that time (`Slot`), never after: a slot used later could coincide with
  slots the schedule has since handed to others. (A request goes out once its write has returned, so a write that
  takes L seconds may send its first slot's request L late, as one write per request always did: milliseconds in
  AWS, a fraction of one request's interval.) `not_after` is the rule, not a check: a request whose thread wakes
  after it (a process starved of CPU) still goes out, late, and can share a gateway's second with the requests of
  later slots (tests/integration/test_rate_limit.py saw 24 and 26 in a second against a bound of 22, on two cores
  shared by three busy processes); the gateway's 429 and `block` below remain the backstop.
- A processor batch takes its slots this way (`BatchSlots`): the requests its groups are about to make to one
  source are gathered, and one write takes a slot for each of them, used at once (after the same sleep for its
  turn a single request would have). Only requests that are being made take slots: nothing is reserved for a
  request that may never come, so nothing is left over to lose but the slots of a request that never went out
  (a crash between the write and the request).
- One conditional UpdateItem per write, no read. DynamoDB cannot compute `max(tat, now)`, so there are two
  writes to choose from: "idle" (`tat <= now`: SET tat = now + count x interval) and "busy" (`now - overlap <=
  tat <= now + horizon - (count - 1) x interval`: SET tat = tat + count x interval). For a source with a burst
  (two requests or more at once) they overlap by one interval, so a source near its rate does not flip between
  them, at the price of at most one request early (one more than the burst) when it goes from idle to busy. A
  source without one (`burst` 1: every source slower than 8 requests a second at the default burst window, and
  any slow one) gets no overlap (`overlap` = min(interval, tolerance) = 0): a busy write on a schedule already in
  the past hands out a slot due before now, and for a source of one request per 250 s that early request is two
  requests a second apart, not a fraction of a second's rate. The instance guesses from what it saw last; a
  wrong guess fails its condition, returns the item (ReturnValuesOnConditionCheckFailure=ALL_OLD) and the other
  write is tried: two writes only when the source switches between idle and busy (or when fewer slots fit than
  were asked). A refused write costs one write too.
- A 429 from the gateway (`block`) sets `blocked_until = now + Retry-After` (or a second when the gateway said
  nothing), only ever extending it: both writes above are conditioned on it being past, so every instance waits,
  not only the one that was answered 429.

Clocks: `tat` is written from each instance's clock. Two instances whose clocks differ by d seconds can admit about
`d * rate` requests more (or fewer) than the rate in the moment their roles switch; with clocks synchronised to a
few milliseconds that is a fraction of one request. No write leaves `tat` further past its writer's clock than the
horizon plus one interval (`furthest_ahead`: the last slot of a write taken at the horizon's edge); a `tat` more
than MAX_CLOCK_AHEAD_SECONDS beyond that is treated as written by a clock far ahead and replaced (conditioned on
the value seen), so one bad clock cannot stall a source. The bound is the source's own: a source limited to one
request per 250 s legitimately books 250 s ahead, and that is a schedule to keep, not a clock to distrust.

The limiter is an optimisation, never a gate: if the control table cannot be read or written, the failure is
logged and the request proceeds (the gateway's own 429s remain the last word), as the circuit breaker does.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from shared import aws
from shared.backoff import MAX_BACKOFF_SECONDS
from shared.gateway.base import GatewayUnavailable
from shared.gateway.breaker import is_conditional_failure, number_attribute
from shared.observability import logger

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEY_PREFIX = "ratelimit#"
# A source idle for a while may send this share of a second's worth of requests at once (at least one). A gateway
# counting per fixed second then sees at most rate * (1 + BURST) requests in its worst second.
DEFAULT_BURST_SECONDS = 0.25
# How far ahead a request may reserve its slot and sleep for it, rather than be sent back to the queue.
DEFAULT_MAX_WAIT_SECONDS = 1.0
# How long a refused request counts as waiting for a slot when nothing says it got one (`note_refused`): longer than
# the delays a refused message comes back after (seconds) and than a `when_behind` source's default threshold, so
# that a backlog stays visible while it lasts; a request confirmed from its payload instead never comes back for its
# slot and is forgotten after this.
REFUSAL_MEMORY_SECONDS = 60.0
# The most refused requests one instance remembers: past it the oldest go (a burst's size, not its memory).
MAX_REMEMBERED_REFUSALS = 1024
DEFAULT_BLOCK_SECONDS = 1.0  # a 429 with no (readable) Retry-After
MAX_BLOCK_SECONDS = float(MAX_BACKOFF_SECONDS)  # a longer Retry-After is capped: the processor's longest backoff
MAX_CLOCK_AHEAD_SECONDS = 30.0
_NEGLIGIBLE_WAIT_SECONDS = 0.001
_WRITE_ROUNDS = 4  # idle or busy guess, the other, and twice more when other instances moved the schedule between
_EPSILON = 1e-6  # slots are counted from times stored to 0.1 ms: a boundary must not lose a slot to rounding


class RateLimited(GatewayUnavailable):
    """Not now: the source's schedule is full (or a 429 blocked it). No request was sent, so this is never one of
    the event's attempts; `retry_after` is when the schedule has room."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, retry_after=retry_after)

    @property
    def counts_as_attempt(self) -> bool:
        return False


class LimiterState(NamedTuple):
    tat: float = 0.0  # epoch seconds; 0 when the source never sent
    blocked_until: float = 0.0

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> LimiterState:
        if not item:
            return cls()
        return cls(
            tat=float(number_attribute(item.get("tat"))),
            blocked_until=float(number_attribute(item.get("blocked_until"))),
        )


class Slot(NamedTuple):
    """When one taken slot may be used (epoch seconds): not before `not_before` (sleep until then), not after
    `not_after` (the schedule may have handed the slots after it to others). Not enforced: a request released late
    goes out late (see the module's docstring)."""

    not_before: float
    not_after: float


class Grant(NamedTuple):
    """What one write took: its slots in order, and, when fewer were granted than asked, when the schedule has room
    for one more (`rest_retry_at`, epoch seconds)."""

    slots: tuple[Slot, ...]
    rest_retry_at: float | None = None


class _Refused(NamedTuple):
    state: LimiterState  # what the refusing condition found
    fits: int  # slots that state has room for


def _epoch(value: float) -> str:
    return f"{value:.4f}"


def burst_size(rate: float, burst_seconds: float = DEFAULT_BURST_SECONDS) -> int:
    """Requests a rested source may send at once: `burst_seconds` of its rate, at least one."""
    return max(1, math.floor(rate * burst_seconds))


class _ConditionFailed(Exception):
    def __init__(self, state: LimiterState) -> None:
        super().__init__("condition failed")
        self.state = state


class BatchReservation(Protocol):
    """A processor batch's slots, taken together for its groups (shared/gateway/batch_slots.py `BatchSlots`)."""

    def take(self, limiter: RateLimiter, group: Hashable) -> float:
        """A slot of `limiter`'s source for one request of `group`; the seconds slept until it may be used."""
        ...


# The batch (and its group) the current thread refetches for (`taking_from`).
_BATCH: ContextVar[tuple[BatchReservation, Hashable] | None] = ContextVar("refetch_batch_slots", default=None)


@contextmanager
def taking_from(batch: BatchReservation, group: Hashable) -> Iterator[None]:
    """Within it, the current thread's `RateLimiter.acquire` takes its slot from `batch`, for `group`."""
    token = _BATCH.set((batch, group))
    try:
        yield
    finally:
        _BATCH.reset(token)


class RateLimiter:
    def __init__(
        self,
        table_name: str,
        source: str,
        rate: float,
        *,
        burst: int | None = None,
        max_wait_seconds: float = DEFAULT_MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        dynamodb: DynamoDBClient | None = None,
    ) -> None:
        if not rate > 0 or not math.isfinite(rate):
            raise ValueError("rate must be a positive number of requests per second")
        if burst is not None and burst < 1:
            raise ValueError("burst must be at least 1")
        if max_wait_seconds < 0:
            raise ValueError("max_wait_seconds cannot be negative")
        self.table_name = table_name
        self.source = source
        self.rate = rate
        self.burst = burst if burst is not None else burst_size(rate)
        self.interval = 1.0 / rate
        self.tolerance = (self.burst - 1) * self.interval
        # How far in the past the busy write still takes the schedule: one interval for a source with a burst (it
        # does not flip between the writes near its rate), none for one without (no slot is ever due before now).
        self.overlap = min(self.interval, self.tolerance)
        self.max_wait_seconds = max_wait_seconds
        self._clock = clock
        self._sleep = sleep
        self._dynamodb = dynamodb
        self._key: dict[str, Any] = {"pk": {"S": f"{KEY_PREFIX}{source}"}}
        self._lock = threading.Lock()
        self._seen_tat = 0.0  # the schedule as this instance saw it last
        self._seen_blocked_until = 0.0  # a gateway's 429 as this instance saw it last
        # The requests this instance was refused a slot for and has not had one for since (by the key its caller
        # names them with: a processor batch's FIFO group, shared/gateway/batch_slots.py), with when they were last
        # refused: the demand the schedule could not book. It only ever books `horizon` ahead, so a backlog longer
        # than that shows here, not in `tat` (`next_free_at`).
        self._refused: dict[Hashable, float] = {}

    @property
    def horizon(self) -> float:
        """How far ahead of now `tat` may be for a request still to be admitted (after its wait)."""
        return self.tolerance + self.max_wait_seconds

    @property
    def furthest_ahead(self) -> float:
        """How far past its writer's clock a write can leave `tat`: the horizon plus the interval of the last slot
        (an idle write of `max_slots`, or a busy write admitted at the horizon's edge). Further is a clock ahead."""
        return self.horizon + self.interval

    def _written_ahead(self, state: LimiterState, now: float) -> bool:
        """Whether `state`'s schedule is further ahead than a clock within MAX_CLOCK_AHEAD_SECONDS could write."""
        return state.tat > now + self.furthest_ahead + MAX_CLOCK_AHEAD_SECONDS

    @property
    def max_slots(self) -> int:
        """The most slots one write can take: a rested source's burst and the slots of `max_wait_seconds`."""
        return max(1, math.floor((self.horizon + self.interval) / self.interval + _EPSILON))

    # ------------------------------------------------------------------------------------------------ API

    def next_free_at(self) -> float | None:
        """When this source's next slot is free, by what this instance saw last (its last write, or the state a
        refusal returned, or a 429's block), and after the requests it was refused and still waits to send, one
        interval each (`note_refused`): epoch seconds, None before it saw anything. Memory only, no read: what the
        processor asks per event (shared/process/confirm.py) to tell whether the source's refetches are behind."""
        with self._lock:
            if not self._seen_tat and not self._seen_blocked_until:
                return None
            now = self._clock()
            self._forget_refusals(now)
            scheduled = max(self._seen_tat - self.tolerance, self._seen_blocked_until)  # used from `tolerance` early
            return max(scheduled, now) + len(self._refused) * self.interval if self._refused else scheduled

    def note_refused(self, keys: Iterable[Hashable]) -> None:
        """These requests were refused a slot (RateLimited) and will come back: until each gets one (`note_served`),
        or REFUSAL_MEMORY_SECONDS after its last refusal, each counts one interval of backlog in `next_free_at`."""
        with self._lock:
            now = self._clock()
            for key in keys:
                self._refused[key] = now
            self._forget_refusals(now)

    def note_served(self, keys: Iterable[Hashable]) -> None:
        """These requests got their slots: they are no longer waiting."""
        with self._lock:
            for key in keys:
                self._refused.pop(key, None)

    def _forget_refusals(self, now: float) -> None:
        """Drop the refusals older than REFUSAL_MEMORY_SECONDS (their request was served elsewhere, or gave up), and
        the oldest past MAX_REMEMBERED_REFUSALS: the memory stays bounded whatever a burst brings (the lock held)."""
        stale = [key for key, at in self._refused.items() if now - at > REFUSAL_MEMORY_SECONDS]
        for key in stale:
            del self._refused[key]
        while len(self._refused) > MAX_REMEMBERED_REFUSALS:
            del self._refused[next(iter(self._refused))]

    def acquire(self) -> float:
        """Take a slot for one request, sleeping up to `max_wait_seconds` for it; returns the seconds slept.
        Raises RateLimited when the schedule is full further ahead than that, or the source is blocked.

        Inside a processor batch (`BatchSlots.group`), the slot comes from the batch's reservation for this source
        (one write for the batch's groups), and a write is made only when that has none left in time."""
        batch = _BATCH.get()
        if batch is not None:
            return batch[0].take(self, batch[1])
        slot = self.reserve(1).slots[0]
        return self.wait_for(slot)

    def reserve(self, count: int = 1) -> Grant:
        """Take up to `count` slots in one conditional write (two when the guess between idle and busy was wrong,
        or when fewer slots fit than asked: the refusal returned the schedule). Never sleeps. Raises RateLimited
        when not even one fits within the horizon, or the source is blocked; a Grant with fewer slots than asked
        says when the schedule has room for the rest (`rest_retry_at`)."""
        if count < 1:
            raise ValueError("count must be at least 1")
        want = min(count, self.max_slots)
        with self._lock:  # which write to try first: what this instance saw last
            busy = self._seen_tat >= self._clock() - self.overlap
        for _ in range(_WRITE_ROUNDS):
            # Read the clock for every write: a slow write must not make the next one judge by a stale time.
            now = self._clock()
            try:
                outcome = self._write(now, want, busy=busy)
            except RateLimited:
                raise
            except Exception as error:
                self._storage_failed("take a slot", error)
                return Grant(tuple(Slot(now, math.inf) for _ in range(count)))
            if isinstance(outcome, _Refused):  # the other write, or fewer slots, apply to what is there: try it
                busy = outcome.state.tat >= self._clock() - self.overlap
                want = min(want, outcome.fits)
                continue
            with self._lock:
                self._seen_tat = outcome
            return self._grant(outcome, want, count, now)
        # The schedule kept moving under us (many instances at once): it is busy, come back after one interval.
        raise RateLimited(f"refetch rate of {self.source} is saturated", retry_after=self.interval)

    def wait_for(self, slot: Slot) -> float:
        """Sleep until the slot may be used; the seconds slept."""
        wait = slot.not_before - self._clock()
        wait = 0.0 if wait < _NEGLIGIBLE_WAIT_SECONDS else wait  # times are stored to 0.1 ms: rounding
        if wait > 0:
            self._sleep(wait)
        return wait

    def now(self) -> float:
        return self._clock()

    def _grant(self, tat: float, granted: int, asked: int, now: float) -> Grant:
        """The slots a write that left the schedule at `tat` took: those `granted` single requests would have
        taken one after the other. A slot may be used from `tolerance` before its due time until that time (or at
        once, when the write found the schedule up to `overlap` in the past: the busy write's overlap)."""
        slots = []
        for index in range(granted):
            due = tat - (granted - index) * self.interval
            slots.append(Slot(not_before=due - self.tolerance, not_after=max(due, now)))
        rest = tat - self.horizon if asked > granted else None  # when one more slot fits
        return Grant(tuple(slots), rest_retry_at=rest)

    def _write(self, now: float, count: int, *, busy: bool) -> float | _Refused:
        """One conditional write of `count` slots: the new `tat` when it took them, else the state that refused
        them and how many slots that state has room for (RateLimited when none)."""
        try:
            return self._take_busy(now, count) if busy else self._take_idle(now, count)
        except _ConditionFailed as failed:
            state = failed.state
        with self._lock:
            self._seen_tat = state.tat
            self._seen_blocked_until = state.blocked_until
        # Judge the state by the time it was read, not by when the write set out: with a slow control table, other
        # instances' writes are younger than our `now`, and the schedule would look booked further ahead than it is.
        now = max(now, self._clock())
        self._refuse_if_full(state, now)
        if self._written_ahead(state, now):
            replaced = self._replace_skewed(state, now, count)
            return _Refused(state, count) if replaced is None else replaced
        return _Refused(state, self._fits(state, now))

    def _fits(self, state: LimiterState, now: float) -> int:
        """How many slots `state` has room for at `now` (at least one: `_refuse_if_full` passed)."""
        if state.tat <= now:
            return self.max_slots
        room = math.floor((now + self.horizon + self.interval - state.tat) / self.interval + _EPSILON)
        return max(1, min(self.max_slots, room))

    def block(self, retry_after: float | None) -> None:
        """The gateway answered 429: no instance sends for this source before `retry_after` seconds from now."""
        seconds = DEFAULT_BLOCK_SECONDS if retry_after is None else retry_after
        seconds = min(MAX_BLOCK_SECONDS, max(0.0, seconds))
        now = self._clock()
        until = now + seconds
        with self._lock:
            self._seen_blocked_until = max(self._seen_blocked_until, until)
        try:
            self._client().update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression="SET blocked_until = :until, updated_at = :now ADD throttled :one",
                # Only ever extended: a shorter Retry-After answered to another instance does not shorten it.
                ConditionExpression="attribute_not_exists(blocked_until) OR blocked_until < :until",
                ExpressionAttributeValues={
                    ":until": {"N": _epoch(until)},
                    ":now": {"N": _epoch(now)},
                    ":one": {"N": "1"},
                },
            )
        except Exception as error:
            if not is_conditional_failure(error):
                self._storage_failed("block", error)
                return
        logger.warning(
            "gateway rate limit hit; source blocked",
            extra={"source": self.source, "blocked_seconds": round(seconds, 3)},
        )

    def state(self) -> LimiterState | None:
        """The stored state (a consistent read), None when it cannot be read. For operators and tests."""
        try:
            item = self._client().get_item(TableName=self.table_name, Key=self._key, ConsistentRead=True).get("Item")
        except Exception as error:
            self._storage_failed("read", error)
            return None
        return LimiterState.from_item(item)

    # -------------------------------------------------------------------------------------------- internals

    def _refuse_if_full(self, state: LimiterState, now: float) -> None:
        if state.blocked_until > now:
            raise RateLimited(
                f"{self.source} is blocked by the gateway for another {state.blocked_until - now:.1f} s",
                retry_after=state.blocked_until - now,
            )
        if state.tat > now + self.horizon and not self._written_ahead(state, now):
            raise RateLimited(
                f"refetch rate of {self.source} ({self.rate:g}/s) is booked for {state.tat - now:.1f} s",
                retry_after=state.tat - self.horizon - now,
            )

    def _not_blocked(self) -> str:
        return "(attribute_not_exists(blocked_until) OR blocked_until <= :now)"

    def _take_idle(self, now: float, count: int) -> float:
        tat = now + count * self.interval
        self._update(
            "SET tat = :tat, updated_at = :now ADD admitted :count, writes :one",
            f"(attribute_not_exists(tat) OR tat <= :now) AND {self._not_blocked()}",
            {":tat": {"N": _epoch(tat)}, ":now": {"N": _epoch(now)}, ":count": {"N": str(count)}, ":one": {"N": "1"}},
        )
        return tat

    def _take_busy(self, now: float, count: int) -> float:
        attributes = self._update(
            "SET tat = tat + :slots, updated_at = :now ADD admitted :count, writes :one",
            # From `overlap` in the past (none for a source without a burst: see the module's docstring) up to the
            # horizon less the slots after the first: the last slot taken must be within the horizon.
            f"tat >= :floor AND tat <= :limit AND {self._not_blocked()}",
            {
                ":slots": {"N": _epoch(count * self.interval)},
                ":now": {"N": _epoch(now)},
                ":floor": {"N": _epoch(now - self.overlap)},
                ":limit": {"N": _epoch(now + self.horizon - (count - 1) * self.interval)},
                ":count": {"N": str(count)},
                ":one": {"N": "1"},
            },
            return_new=True,
        )
        return LimiterState.from_item(attributes).tat

    def _replace_skewed(self, state: LimiterState, now: float, count: int) -> float | None:
        tat = now + count * self.interval
        try:
            self._update(
                "SET tat = :tat, updated_at = :now ADD admitted :count, writes :one",
                f"tat = :seen AND {self._not_blocked()}",
                {
                    ":tat": {"N": _epoch(tat)},
                    ":now": {"N": _epoch(now)},
                    ":seen": {"N": _epoch(state.tat)},
                    ":count": {"N": str(count)},
                    ":one": {"N": "1"},
                },
            )
        except _ConditionFailed:
            return None  # someone else replaced it (or it moved): decide again on what is there now
        logger.warning(
            "rate limit schedule far in the future replaced (a clock ahead?)",
            extra={"source": self.source, "ahead_seconds": round(state.tat - now, 1)},
        )
        return tat

    def _update(
        self, expression: str, condition: str, values: dict[str, Any], *, return_new: bool = False
    ) -> dict[str, Any]:
        try:
            response = self._client().update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW" if return_new else "NONE",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as error:
            if is_conditional_failure(error):
                item = getattr(error, "response", {}).get("Item")
                raise _ConditionFailed(LimiterState.from_item(item)) from None
            raise
        attributes: dict[str, Any] = response.get("Attributes", {})
        return attributes

    def _client(self) -> DynamoDBClient:
        return self._dynamodb if self._dynamodb is not None else aws.dynamodb()

    def _storage_failed(self, action: str, error: Exception) -> None:
        logger.warning(
            "rate limiter storage failed; proceeding unlimited",
            extra={"source": self.source, "action": action, "error": type(error).__name__},
        )
