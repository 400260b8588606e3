"""A circuit breaker shared by every function instance, kept in the DynamoDB control table.

Why shared: during a gateway outage, hundreds of concurrent processor instances would each need their own
five failures (and five timeouts) to learn what the first one already knows. One item per source (one gateway
account: docs/sources.md), `pk = "breaker#{source}"`, holds `consecutive_failures` (number) and, while open,
`open_until` (epoch seconds).

- closed: calls go through. Every failure is an atomic `ADD consecutive_failures 1`; the one that reaches the
  threshold sets `open_until = now + cooldown`, conditionally (`open_until` absent or past), so concurrent
  instances failing at once open it once instead of pushing `open_until` forward again and again.
- open (`open_until` in the future): `before_call` raises GatewayUnavailable(circuit_open=True, retry_after=the
  time left). No call is made, so the caller must not count it as one of the event's attempts.
- half-open (`open_until` passed, failures still at or above the threshold): calls go through. The first failure
  re-opens the circuit for another cooldown (the count is already at the threshold); the first success closes it.
- a success resets the count, but only when there is something to reset: the state read by `before_call` is
  cached per instance for `cache_seconds`, so a healthy gateway costs at most one GetItem per second per
  instance and no writes.
- that GetItem is eventually consistent (half a read unit): the state is already up to `cache_seconds` old by
  design, and a copy that misses a write of the last moment errs the way the cache does. A stale "closed" lets one
  more request through to a failing gateway (its failure is counted by an atomic ADD, and only a write that finds
  the circuit closed opens it: nothing is opened twice or extended); a stale "open" makes an event wait without
  an attempt; a stale "clean" skips one reset, which the next success after the cache makes. No write is taken
  from the copy: every write here is an ADD or conditioned on the item itself.

What counts as a failure is decided by `guarded_call`: GatewayUnavailable (5xx, 429, timeouts after the HTTP
client's own retries), except waits: a 429 under the source's rate limit blocks the source in the limiter
(shared/gateway/ratelimit.py) instead, and the limiter's own "not now" made no call. A 404 (ResourceNotFound) or
a 4xx (GatewayRejected) is the gateway answering, so it is a success as far as availability goes.

The breaker is an optimisation, never a gate: if the control table cannot be read or written, the failure is
logged and the call proceeds as if the circuit were closed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from shared import aws
from shared.gateway.base import GatewayClient, GatewayRejected, GatewayUnavailable, PaymentSnapshot, ResourceNotFound
from shared.observability import logger
from shared.sub_account import SubAccount

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

T = TypeVar("T")

KEY_PREFIX = "breaker#"
DEFAULT_FAILURE_THRESHOLD = 5
DEFAULT_COOLDOWN_SECONDS = 30.0
DEFAULT_CACHE_SECONDS = 1.0


class BreakerState(NamedTuple):
    consecutive_failures: int = 0
    open_until: float = 0.0  # epoch seconds; 0 when it was never opened or has been closed

    def is_open(self, now: float) -> bool:
        return self.open_until > now

    @property
    def is_clean(self) -> bool:
        """Nothing for a success to reset."""
        return self.consecutive_failures <= 0 and self.open_until <= 0

    @classmethod
    def from_item(cls, item: dict[str, Any] | None) -> BreakerState:
        if not item:
            return cls()
        return cls(
            consecutive_failures=int(number_attribute(item.get("consecutive_failures"))),
            open_until=float(number_attribute(item.get("open_until"))),
        )


def number_attribute(attribute: Any) -> Decimal:
    """A DynamoDB number attribute (`{"N": ...}`) as a Decimal; 0 when absent or unreadable."""
    if not isinstance(attribute, dict) or "N" not in attribute:
        return Decimal(0)
    try:
        return Decimal(attribute["N"])
    except (InvalidOperation, TypeError):
        return Decimal(0)


def is_conditional_failure(error: Exception) -> bool:
    """Whether `error` is DynamoDB's ConditionalCheckFailedException (the write's condition did not hold)."""
    response = getattr(error, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class CircuitBreaker:
    def __init__(
        self,
        table_name: str,
        source: str,
        *,
        failure_threshold: int = DEFAULT_FAILURE_THRESHOLD,
        cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS,
        clock: Callable[[], float] = time.time,
        dynamodb: DynamoDBClient | None = None,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        self.table_name = table_name
        self.source = source
        self.failure_threshold = failure_threshold
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._dynamodb = dynamodb
        self._cache_seconds = cache_seconds
        self._key: dict[str, Any] = {"pk": {"S": f"{KEY_PREFIX}{source}"}}
        self._lock = threading.Lock()
        self._cached: BreakerState | None = None
        self._cached_at = float("-inf")

    # ------------------------------------------------------------------------------------------------ API

    def before_call(self) -> None:
        """Raise GatewayUnavailable(circuit_open=True) while the circuit is open; otherwise return."""
        state = self._read()
        if state is None:
            return  # storage unavailable: proceed as closed
        now = self._clock()
        if state.is_open(now):
            remaining = state.open_until - now
            raise GatewayUnavailable(
                f"circuit for {self.source} is open for another {remaining:.1f} s",
                retry_after=remaining,
                circuit_open=True,
            )

    def record_success(self) -> None:
        state = self._read()
        if state is None or state.is_clean:
            return  # nothing to reset (or storage unavailable: do not add load to it)
        now = self._clock()
        try:
            self._client().update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression="SET consecutive_failures = :zero, updated_at = :now REMOVE open_until",
                ConditionExpression="consecutive_failures > :zero OR attribute_exists(open_until)",
                ExpressionAttributeValues={":zero": {"N": "0"}, ":now": {"N": _epoch(now)}},
            )
        except Exception as error:
            if not is_conditional_failure(error):  # a conditional failure: another instance reset it first
                self._storage_failed("reset", error)
                return
        else:
            if state.open_until > 0:
                logger.info("gateway circuit closed", extra={"source": self.source})
        self._remember(BreakerState(), now)

    def record_failure(self) -> None:
        now = self._clock()
        try:
            response = self._client().update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression="ADD consecutive_failures :one SET updated_at = :now",
                ExpressionAttributeValues={":one": {"N": "1"}, ":now": {"N": _epoch(now)}},
                ReturnValues="ALL_NEW",
            )
        except Exception as error:
            self._storage_failed("count a failure", error)
            return
        state = BreakerState.from_item(response.get("Attributes"))
        if state.consecutive_failures >= self.failure_threshold and not state.is_open(now):
            state = self._open(state, now)
        self._remember(state, now)

    def state(self) -> BreakerState | None:
        """The current state (cached up to `cache_seconds`); None when the control table cannot be read."""
        return self._read()

    # -------------------------------------------------------------------------------------------- internals

    def _open(self, state: BreakerState, now: float) -> BreakerState:
        open_until = now + self.cooldown_seconds
        try:
            self._client().update_item(
                TableName=self.table_name,
                Key=self._key,
                UpdateExpression="SET open_until = :until, opened_at = :now",
                # Only the instance that finds it closed (or its previous window over) opens it: concurrent
                # failures do not keep extending the window.
                ConditionExpression="attribute_not_exists(open_until) OR open_until <= :now",
                ExpressionAttributeValues={":until": {"N": _epoch(open_until)}, ":now": {"N": _epoch(now)}},
            )
        except Exception as error:
            if is_conditional_failure(error):
                # Someone else opened it just now; the next read picks up their window.
                with self._lock:
                    self._cached = None
                return state
            self._storage_failed("open", error)
            return state
        logger.warning(
            "gateway circuit opened",
            extra={
                "source": self.source,
                "consecutive_failures": state.consecutive_failures,
                "cooldown_seconds": self.cooldown_seconds,
            },
        )
        return BreakerState(consecutive_failures=state.consecutive_failures, open_until=open_until)

    def _read(self) -> BreakerState | None:
        now = self._clock()
        with self._lock:
            if self._cached is not None and now - self._cached_at < self._cache_seconds:
                return self._cached
        try:
            # Eventually consistent: the module's docstring says why a copy as old as the cache is safe.
            item = self._client().get_item(TableName=self.table_name, Key=self._key, ConsistentRead=False).get("Item")
        except Exception as error:
            self._storage_failed("read", error)
            return None
        state = BreakerState.from_item(item)
        self._remember(state, now)
        return state

    def _remember(self, state: BreakerState, now: float) -> None:
        with self._lock:
            self._cached = state
            self._cached_at = now

    def _client(self) -> DynamoDBClient:
        return self._dynamodb if self._dynamodb is not None else aws.dynamodb()

    def _storage_failed(self, action: str, error: Exception) -> None:
        logger.warning(
            "circuit breaker storage failed; proceeding as closed",
            extra={"source": self.source, "action": action, "error": type(error).__name__},
        )


def _epoch(value: float) -> str:
    return f"{value:.3f}"


def guarded_call(breaker: CircuitBreaker | None, fn: Callable[[], T]) -> T:
    """Run `fn` under `breaker` (None: no breaker). Only GatewayUnavailable counts as a failure."""
    if breaker is None:
        return fn()
    breaker.before_call()
    try:
        result = fn()
    except GatewayUnavailable as error:
        if error.counts_as_attempt:  # waits (an open circuit, the rate limit, its 429s) say nothing of an outage
            breaker.record_failure()
        raise
    except (ResourceNotFound, GatewayRejected):
        breaker.record_success()  # the gateway answered: it is up
        raise
    breaker.record_success()
    return result


class GuardedClient:
    """A GatewayClient whose calls go through a circuit breaker."""

    def __init__(self, client: GatewayClient, breaker: CircuitBreaker | None, rate_limiter: Any = None) -> None:
        self.provider = client.provider
        self.client = client
        self.breaker = breaker
        # The source's refetch rate limiter (shared/gateway/ratelimit.py), when it has one: its calls take their
        # slots through the HTTP client; the processor reads its schedule (shared/process/confirm.py).
        self.rate_limiter = rate_limiter

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        return guarded_call(self.breaker, lambda: self.client.fetch_payment(resource_id, account=account))
