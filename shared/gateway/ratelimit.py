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
- One conditional UpdateItem per admitted request, no read. DynamoDB cannot compute `max(tat, now)`, so there
  are two writes to choose from: "idle" (`tat <= now`: SET tat = now + interval) and "busy" (`now - interval <=
  tat <= now + horizon`: SET tat = tat + interval; they overlap by one interval, so a source near its rate does
  not flip between them, at the price of at most one request early). The instance guesses from what it saw last;
  a wrong guess fails its condition, returns the item (ReturnValuesOnConditionCheckFailure=ALL_OLD) and the other
  write is tried: two writes only when the source switches between idle and busy. A refused request costs one
  (failed) write too.
- A 429 from the gateway (`block`) sets `blocked_until = now + Retry-After` (or a second when the gateway said
  nothing), only ever extending it: both writes above are conditioned on it being past, so every instance waits,
  not only the one that was answered 429.

Clocks: `tat` is written from each instance's clock. Two instances whose clocks differ by d seconds can admit about
`d * rate` requests more (or fewer) than the rate in the moment their roles switch; with clocks synchronised to a
few milliseconds that is a fraction of one request. A `tat` further ahead than any clock in agreement could have
written (more than `horizon + MAX_CLOCK_AHEAD_SECONDS` past now) is treated as written by a clock far ahead and
replaced (conditioned on the value seen), so one bad clock cannot stall a source.

The limiter is an optimisation, never a gate: if the control table cannot be read or written, the failure is
logged and the request proceeds (the gateway's own 429s remain the last word), as the circuit breaker does.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import aws
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
DEFAULT_BLOCK_SECONDS = 1.0  # a 429 with no (readable) Retry-After
MAX_BLOCK_SECONDS = 600.0  # a longer Retry-After is capped: the processor's longest backoff (MAX_BACKOFF_SECONDS)
MAX_CLOCK_AHEAD_SECONDS = 30.0
_NEGLIGIBLE_WAIT_SECONDS = 0.001
_WRITE_ROUNDS = 4  # idle or busy guess, the other, and twice more when other instances moved the schedule between


class RateLimited(GatewayUnavailable):
    """Not now: the source's schedule is full (or a 429 blocked it). No request was sent, so this is never one of
    the event's attempts; `retry_after` is when the schedule has room."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, retry_after=retry_after)

    @property
    def counts_as_attempt(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class LimiterState:
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


def _epoch(value: float) -> str:
    return f"{value:.4f}"


def burst_size(rate: float, burst_seconds: float = DEFAULT_BURST_SECONDS) -> int:
    """Requests a rested source may send at once: `burst_seconds` of its rate, at least one."""
    return max(1, math.floor(rate * burst_seconds))


class _ConditionFailed(Exception):
    def __init__(self, state: LimiterState) -> None:
        super().__init__("condition failed")
        self.state = state


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
        self.max_wait_seconds = max_wait_seconds
        self._clock = clock
        self._sleep = sleep
        self._dynamodb = dynamodb
        self._key: dict[str, Any] = {"pk": {"S": f"{KEY_PREFIX}{source}"}}
        self._lock = threading.Lock()
        self._seen_tat = 0.0  # the schedule as this instance saw it last

    @property
    def horizon(self) -> float:
        """How far ahead of now `tat` may be for a request still to be admitted (after its wait)."""
        return self.tolerance + self.max_wait_seconds

    # ------------------------------------------------------------------------------------------------ API

    def acquire(self) -> float:
        """Take a slot for one request, sleeping up to `max_wait_seconds` for it; returns the seconds slept.
        Raises RateLimited when the schedule is full further ahead than that, or the source is blocked."""
        with self._lock:  # which write to try first: what this instance saw last
            busy = self._seen_tat >= self._clock() - self.interval
        for _ in range(_WRITE_ROUNDS):
            # Read the clock for every write: a slow write must not make the next one judge by a stale time.
            now = self._clock()
            try:
                outcome = self._write(now, busy=busy)
            except RateLimited:
                raise
            except Exception as error:
                self._storage_failed("take a slot", error)
                return 0.0
            if isinstance(outcome, LimiterState):  # the other write applies to what is there: try it
                busy = outcome.tat >= self._clock() - self.interval
                continue
            with self._lock:
                self._seen_tat = outcome
            wait = outcome - self.interval - self.tolerance - self._clock()  # the slot, from after the write
            wait = 0.0 if wait < _NEGLIGIBLE_WAIT_SECONDS else wait  # times are stored to 0.1 ms: rounding
            if wait > 0:
                self._sleep(wait)
            return wait
        # The schedule kept moving under us (many instances at once): it is busy, come back after one interval.
        raise RateLimited(f"refetch rate of {self.source} is saturated", retry_after=self.interval)

    def _write(self, now: float, *, busy: bool) -> float | LimiterState:
        """One conditional write: the new `tat` when it took a slot, else the state that refused it (RateLimited
        when that state leaves no slot within the horizon)."""
        try:
            return self._take_busy(now) if busy else self._take_idle(now)
        except _ConditionFailed as failed:
            state = failed.state
        with self._lock:
            self._seen_tat = state.tat
        # Judge the state by the time it was read, not by when the write set out: with a slow control table, other
        # instances' writes are younger than our `now`, and the schedule would look booked further ahead than it is.
        now = max(now, self._clock())
        self._refuse_if_full(state, now)
        if state.tat > now + self.horizon + MAX_CLOCK_AHEAD_SECONDS:
            replaced = self._replace_skewed(state, now)
            return state if replaced is None else replaced
        return state

    def block(self, retry_after: float | None) -> None:
        """The gateway answered 429: no instance sends for this source before `retry_after` seconds from now."""
        seconds = DEFAULT_BLOCK_SECONDS if retry_after is None else retry_after
        seconds = min(MAX_BLOCK_SECONDS, max(0.0, seconds))
        now = self._clock()
        until = now + seconds
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
        if now + self.horizon < state.tat <= now + self.horizon + MAX_CLOCK_AHEAD_SECONDS:
            raise RateLimited(
                f"refetch rate of {self.source} ({self.rate:g}/s) is booked for {state.tat - now:.1f} s",
                retry_after=state.tat - self.horizon - now,
            )

    def _not_blocked(self) -> str:
        return "(attribute_not_exists(blocked_until) OR blocked_until <= :now)"

    def _take_idle(self, now: float) -> float:
        tat = now + self.interval
        self._update(
            "SET tat = :tat, updated_at = :now ADD admitted :one",
            f"(attribute_not_exists(tat) OR tat <= :now) AND {self._not_blocked()}",
            {":tat": {"N": _epoch(tat)}, ":now": {"N": _epoch(now)}, ":one": {"N": "1"}},
        )
        return tat

    def _take_busy(self, now: float) -> float:
        attributes = self._update(
            "SET tat = tat + :interval, updated_at = :now ADD admitted :one",
            # From one interval in the past: the two writes overlap there, so a source running near its rate
            # (tat close to now, either side) is not sent back and forth between them; at most one request more
            # than the exact schedule is admitted when it goes from idle to busy.
            f"tat >= :floor AND tat <= :limit AND {self._not_blocked()}",
            {
                ":interval": {"N": _epoch(self.interval)},
                ":now": {"N": _epoch(now)},
                ":floor": {"N": _epoch(now - self.interval)},
                ":limit": {"N": _epoch(now + self.horizon)},
                ":one": {"N": "1"},
            },
            return_new=True,
        )
        return LimiterState.from_item(attributes).tat

    def _replace_skewed(self, state: LimiterState, now: float) -> float | None:
        tat = now + self.interval
        try:
            self._update(
                "SET tat = :tat, updated_at = :now ADD admitted :one",
                f"tat = :seen AND {self._not_blocked()}",
                {
                    ":tat": {"N": _epoch(tat)},
                    ":now": {"N": _epoch(now)},
                    ":seen": {"N": _epoch(state.tat)},
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
