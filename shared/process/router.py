"""Which handler processes an event: a table of (provider, event type pattern) -> handler.

A handler splits its work in two: `prepare` gathers the truth (may do I/O: refetch from the gateway) and runs
outside any transaction; `apply` is pure and decides what that truth does to the stored payment. The core then
commits the decision in one transaction. Event types nobody handles are stored and marked ignored, not errors.
A user adds a handler of their own with `router.register(...)`; the core does not change.
"""

from __future__ import annotations

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


class Router:
    def __init__(self) -> None:
        self._exact: dict[tuple[str, str], EventHandler] = {}
        self._prefixes: list[tuple[str, str, EventHandler]] = []

    def register(self, provider: str, event_type: str, handler: EventHandler) -> None:
        """`event_type` is an exact type, a prefix ending in `*` (`"charge.*"`), or `"*"` for every type."""
        if event_type.endswith("*"):
            self._prefixes.append((provider, event_type[:-1], handler))
            self._prefixes.sort(key=lambda entry: len(entry[1]), reverse=True)  # most specific first
        else:
            self._exact[(provider, event_type)] = handler

    def resolve(self, provider: str, event_type: str) -> EventHandler | None:
        if (provider, event_type) in self._exact:
            return self._exact[(provider, event_type)]
        for registered_provider, prefix, handler in self._prefixes:
            if registered_provider == provider and event_type.startswith(prefix):
                return handler
        return None
