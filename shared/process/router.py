"""Which handler processes an event: a table of (provider, event type pattern) -> handler.

A handler splits its work in two: `prepare` gathers the truth (may do I/O: refetch from the gateway) and runs
outside any transaction; `apply` is pure and decides what that truth does to the stored payment. The core then
commits the decision in one transaction. Event types nobody handles are stored and marked ignored, not errors.
A user adds a handler of their own with `router.register(...)`; the core does not change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from shared.definitions import IgnoredReason, source_of
from shared.payments.model import Payment
from shared.process.decide import Decision, Observation, decide
from shared.sub_account import SubAccount


class UnprocessableEvent(Exception):
    """Retrying cannot help (amounts disagree with the gateway, a status nobody maps): the event is failed."""


class NothingToApply(Exception):
    """A well-formed event with nothing to apply to a payment (it names none, or states nothing): it settles
    `ignored` with `reason`, never `failed`. `failed` is for an event that should have changed a payment and could
    not."""

    def __init__(self, reason: IgnoredReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class InboxEvent:
    """The parts of an inbox item a handler reads."""

    pk: str
    provider: str
    event_id: str
    event_type: str
    resource_id: str | None
    occurred_at: str | None
    provider_status: str | None
    amount: int | None
    currency: str | None
    attempts: int
    account: SubAccount | None = None  # the gateway sub-account the payment lives in (NormalizedEvent.account)
    source: str = ""  # the source (account) it was delivered to; "" means the provider's default source
    received_at: str | None = None  # when the inbox stored it (ISO-8601 UTC): how long it has waited

    def __post_init__(self) -> None:
        if not self.source:
            object.__setattr__(self, "source", self.provider)

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> InboxEvent:
        return cls(
            pk=item["pk"],
            source=source_of(item),
            provider=item["provider"],
            event_id=item["event_id"],
            event_type=item.get("event_type", ""),
            resource_id=item.get("resource_id"),
            occurred_at=item.get("occurred_at"),
            provider_status=item.get("provider_status"),
            amount=item.get("amount"),
            currency=item.get("currency"),
            attempts=int(item.get("attempts") or 0),
            account=SubAccount.from_attributes(item),
            received_at=item.get("received_at"),
        )


class EventHandler(Protocol):
    def prepare(self, event: InboxEvent) -> Observation:
        """Gather the truth about the event's payment. May raise ResourceNotFound, GatewayUnavailable,
        GatewayRejected, UnprocessableEvent, or NothingToApply (the event settles ignored)."""
        ...

    def apply(self, current: Payment | None, seen: Observation, *, now: str) -> Decision:
        """Pure: what the observation does to the current payment."""
        ...


class StateMachineApply:
    """The default `apply`: the canonical state machine (transitions as data), refusing regressions."""

    def apply(self, current: Payment | None, seen: Observation, *, now: str) -> Decision:
        return decide(current, seen, now=now)


# Routes whose reading is put off until a provider's first event (Router.defer): (event type, handler) pairs.
RouteLoader = Callable[[], Iterable[tuple[str, EventHandler]]]


class Router:
    def __init__(self) -> None:
        # Each registration keeps its place in the order of registration (`_order`): for one (provider, type), the
        # latest wins; among prefixes of one length, the earliest (deferred routes keep the place they were given).
        self._order = 0
        self._exact: dict[tuple[str, str], tuple[int, EventHandler]] = {}
        self._prefixes: list[tuple[str, str, int, EventHandler]] = []
        self._deferred: dict[str, list[tuple[int, RouteLoader]]] = {}
        self._loading = threading.Lock()

    def _next(self) -> int:
        self._order += 1
        return self._order

    def register(self, provider: str, event_type: str, handler: EventHandler) -> None:
        """`event_type` is an exact type, a prefix ending in `*` (`"charge.*"`), or `"*"` for every type."""
        self._add(provider, event_type, handler, self._next())

    def defer(self, provider: str, load: RouteLoader) -> None:
        """Routes of `provider` read when one of its events is first resolved: reading them may import the
        provider's driver (a route's `event_types_from`), and a processor then loads only the drivers of the
        providers it sees (all of them at once were ~10 ms of its cold start, bench/cold_start.py). They rank as
        registered now: a later `register` of the same provider and type still replaces them."""
        self._deferred.setdefault(provider, []).append((self._next(), load))

    def _add(self, provider: str, event_type: str, handler: EventHandler, order: int) -> None:
        if event_type.endswith("*"):
            self._prefixes.append((provider, event_type[:-1], order, handler))
            self._prefixes.sort(key=lambda entry: (-len(entry[1]), entry[2]))  # most specific first
        elif order >= self._exact.get((provider, event_type), (0, None))[0]:
            self._exact[(provider, event_type)] = (order, handler)

    def resolve(self, provider: str, event_type: str) -> EventHandler | None:
        with self._loading:  # a batch's groups resolve from threads: none reads a provider's routes half-added
            for order, load in self._deferred.pop(provider, ()):
                for deferred_type, handler in load():
                    self._add(provider, deferred_type, handler, order)
        if (provider, event_type) in self._exact:
            return self._exact[(provider, event_type)][1]
        for registered_provider, prefix, _order, handler in self._prefixes:
            if registered_provider == provider and event_type.startswith(prefix):
                return handler
        return None
