"""What the processor's queue carries and how a message comes back: the dispatch and reconcile messages, where a
delivery came from, and the visibility delays of a retry (an attempt) and of a wait (not one)."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from shared.backoff import MAX_BACKOFF_SECONDS, Backoff, Jitter
from shared.inbox.model import resource_key
from shared.payments.model import Payment
from shared.process.coalesce import Refetches
from shared.process.decide import Decision, Observation
from shared.sub_account import SubAccount


class DispatchMessage(NamedTuple):
    """The queue message the Pipe (or the sweeper) sends: just the item's key, the item is the truth."""

    pk: str
    dispatch_id: str | None = None
    dispatch_reason: str | None = None

    @classmethod
    def from_body(cls, body: str) -> DispatchMessage:
        data = json.loads(body)
        if not isinstance(data, dict) or not isinstance(data.get("pk"), str):
            raise ValueError("dispatch message without a 'pk'")
        return cls(pk=data["pk"], dispatch_id=data.get("dispatch_id"), dispatch_reason=data.get("dispatch_reason"))


RECONCILE_KIND = "reconcile"


@dataclass(frozen=True, slots=True)
class ReconcileMessage:
    """The sweeper's request to refetch a payment stuck in an intermediate status (no inbox item involved).

    Sent in the payment's own FIFO group, so it is applied in order with the payment's webhooks."""

    source: str
    resource_id: str
    provider: str = ""  # the source's provider (metrics); "" means the source is a provider's default one

    def __post_init__(self) -> None:
        if not self.provider:
            object.__setattr__(self, "provider", self.source)

    @property
    def key(self) -> str:
        return resource_key(self.source, self.resource_id)

    def to_body(self) -> str:
        return json.dumps(
            {"kind": RECONCILE_KIND, "source": self.source, "provider": self.provider, "resource_id": self.resource_id}
        )


def parse_message(body: str) -> DispatchMessage | ReconcileMessage:
    """A queue message: an event's dispatch (the Pipe's) or a reconciliation (the sweeper's). ValueError if neither."""
    data = json.loads(body)
    if isinstance(data, dict) and data.get("kind") == RECONCILE_KIND:
        # A message sent before sources existed names only its provider: the provider's default source.
        provider, resource_id = data.get("provider") or "", data.get("resource_id")
        source = data.get("source") or provider
        if not isinstance(source, str) or not isinstance(resource_id, str) or not isinstance(provider, str):
            raise ValueError("reconcile message without a 'source' and a 'resource_id'")
        if not source or not resource_id:
            raise ValueError("reconcile message without a 'source' and a 'resource_id'")
        return ReconcileMessage(source, resource_id, provider)
    return DispatchMessage.from_body(body)


class Reconciler(Protocol):
    """Reads a payment from its source with no event at hand, and decides what that does to the stored one."""

    def observe(
        self,
        source: str,
        resource_id: str,
        *,
        account: SubAccount | None = None,
        refetches: Refetches | None = None,
    ) -> Observation: ...

    def apply(self, current: Payment | None, seen: Observation, *, now: str) -> Decision: ...


class Delivery(NamedTuple):
    """Where the message came from, so a retry can be delayed and an exhausted one dead-lettered."""

    receipt_handle: str
    message_group_id: str
    receive_count: int
    body: str


class RetryQueue(Protocol):
    def delay(self, delivery: Delivery, seconds: int) -> None: ...

    def release(self, receipt_handle: str) -> None: ...

    def dead_letter(self, delivery: Delivery) -> None: ...


def retry_backoff(base: float, cap: int = MAX_BACKOFF_SECONDS) -> Backoff:
    """The processor's retries: base * 2^(N-1) seconds, spread +-20 % (the queue brings them back apart), capped."""
    return Backoff(base=base, cap=cap, jitter=Jitter.PROPORTIONAL, spread=0.2)


def backoff_seconds(
    attempt: int, base: float, *, cap: int = MAX_BACKOFF_SECONDS, rng: random.Random | None = None
) -> int:
    """The visibility delay for attempt N (1-based) of `retry_backoff`, in whole seconds (SQS's unit), at least 1."""
    rng = rng or random.Random()  # noqa: S311 - jitter, not security
    return int(max(1, round(retry_backoff(base, cap).delay(attempt, rng.random))))


def wait_seconds(retry_after: float | None, default: float, *, rng: random.Random | None = None) -> int:
    """The visibility delay of a wait that is not an attempt: what the breaker or the rate limit asked for, rounded
    up and spread by up to +50 % (messages told "not now" together must not all come back in the same second),
    at least 1 s (SQS counts whole seconds), at most MAX_BACKOFF_SECONDS."""
    rng = rng or random.Random()  # noqa: S311 - jitter, not security
    base = retry_after if retry_after is not None and retry_after > 0 else default
    return int(max(1, min(MAX_BACKOFF_SECONDS, math.ceil(base * rng.uniform(1.0, 1.5)))))
