"""The built-in payment handlers and the default routing table, built from the provider catalog's routes
(`shared.definitions.PROVIDER_CATALOG`): each route names a handler kind, mapped here to its handler class."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shared.definitions import (
    HANDLER_OCCURRED_AT,
    HANDLER_REFETCH,
    PROVIDER_CATALOG,
    HandlerKind,
    IgnoredReason,
    ProviderEntry,
    Route,
)
from shared.gateway.base import GatewayClient, PaymentSnapshot
from shared.payments.status import PaymentStatus
from shared.process.coalesce import Refetches
from shared.process.decide import Observation
from shared.process.router import (
    EventHandler,
    InboxEvent,
    NothingToApply,
    Router,
    StateMachineApply,
    UnprocessableEvent,
)
from shared.sub_account import SubAccount

# source name -> the gateway client of that source (its own API key, base URL and breaker), None without an API.
ClientLookup = Callable[[str], GatewayClient | None]


def check_amount_agrees(event: InboxEvent, snapshot: PaymentSnapshot) -> None:
    """A webhook stating another amount or currency than the gateway's API is failed, never applied."""
    if event.amount is not None and snapshot.amount is not None and event.amount != snapshot.amount:
        raise UnprocessableEvent(f"amount mismatch: webhook {event.amount}, gateway {snapshot.amount}")
    if event.currency and snapshot.currency and event.currency.upper() != snapshot.currency.upper():
        raise UnprocessableEvent(f"currency mismatch: webhook {event.currency}, gateway {snapshot.currency}")


class RefetchPaymentHandler(StateMachineApply):
    """For gateways with an API: the webhook is only a hint; the payment is read back from the API."""

    def __init__(self, clients: ClientLookup) -> None:
        self._clients = clients

    def prepare(self, event: InboxEvent) -> Observation:
        return self.prepare_sharing(event, None)

    def prepare_sharing(self, event: InboxEvent, refetches: Refetches | None) -> Observation:
        """`prepare`, reading the payment through `refetches` when given: an earlier event of the same payment in
        the same batch may already have read it (shared/process/coalesce.py). The amounts are checked per event.
        A subclass with a `prepare` of its own (a user's handler) keeps it: its events are not coalesced."""
        if refetches is not None and type(self).prepare is not RefetchPaymentHandler.prepare:
            return self.prepare(event)
        if not event.resource_id:
            raise NothingToApply(IgnoredReason.NO_PAYMENT, "event names no payment")
        client = self._clients(event.source)
        if client is None:
            raise UnprocessableEvent(f"no API client for source {event.source!r}")
        if refetches is None:
            snapshot = client.fetch_payment(event.resource_id, account=event.account)
        else:
            snapshot = refetches.fetch(client, event.source, event.resource_id, account=event.account)
        check_amount_agrees(event, snapshot)
        return observation_from_snapshot(event.source, event.provider, snapshot, event, account=event.account)

    def observe(
        self,
        source: str,
        resource_id: str,
        *,
        account: SubAccount | None = None,
        refetches: Refetches | None = None,
    ) -> Observation:
        """The payment as the source's gateway API reports it now, with no event at hand (the sweeper's
        reconciliation, a payment's verification), read within the sub-account the stored payment records;
        through `refetches` when given (one read serves the payment's messages of one batch)."""
        client = self._clients(source)
        if client is None:
            raise UnprocessableEvent(f"no API client for source {source!r}")
        if refetches is None:
            snapshot = client.fetch_payment(resource_id, account=account)
        else:
            snapshot = refetches.fetch(client, source, resource_id, account=account)
        return observation_from_snapshot(source, client.provider, snapshot, None, account=account)


def observation_from_snapshot(
    source: str,
    provider: str,
    snapshot: PaymentSnapshot,
    event: InboxEvent | None,
    *,
    account: SubAccount | None = None,
) -> Observation:
    return Observation(
        source=source,
        provider=provider,
        resource_id=snapshot.resource_id,
        status=snapshot.status,
        provider_status=snapshot.provider_status,
        amount=snapshot.amount,
        currency=snapshot.currency,
        amount_refunded=snapshot.amount_refunded,
        event_id=event.event_id if event else None,
        event_occurred_at=event.occurred_at if event else None,
        ordered_by_event_time=False,
        account=account,
    )


class EventTimeOrderedHandler(StateMachineApply):
    """For senders with no API to ask (Standard Webhooks): the event states the status, and only an event newer
    than the last applied one (occurred_at vs last_event_at) may change the payment."""

    def prepare(self, event: InboxEvent) -> Observation:
        if not event.resource_id:
            raise NothingToApply(IgnoredReason.NO_PAYMENT, "event names no payment")
        if not event.provider_status:  # a stated status nobody maps is failed below; none at all is nothing to apply
            raise NothingToApply(IgnoredReason.NOTHING_TO_APPLY, "event states no status and there is no API to ask")
        try:
            status = PaymentStatus(event.provider_status)
        except ValueError:
            raise UnprocessableEvent(f"status {event.provider_status!r} is not a canonical payment status") from None
        return Observation(
            source=event.source,
            provider=event.provider,
            resource_id=event.resource_id,
            status=status,
            provider_status=event.provider_status,
            amount=event.amount,
            currency=event.currency,
            amount_refunded=0,
            event_id=event.event_id,
            event_occurred_at=event.occurred_at,
            ordered_by_event_time=True,
            account=event.account,
        )


def route_event_types(route: Route) -> tuple[str, ...]:
    """The route's event types: its own, then those its `event_types_from` names (a tuple kept beside a driver's
    status tables, or a function returning one: the `generic` driver's come from its configuration)."""
    named: tuple[str, ...] = ()
    if route.event_types_from:
        # With the provider's first event (Router.defer), as its driver: a processor that sees only providers with
        # inline routes never imports the drivers' registry and interface.
        from shared.providers.registry import load_reference  # noqa: PLC0415

        value = load_reference(route.event_types_from)
        named = tuple(value() if callable(value) else value)
    return (*route.event_types, *named)


def default_router(clients: ClientLookup, catalog: Iterable[ProviderEntry] = PROVIDER_CATALOG) -> Router:
    """Every catalog route, registered with the handler of its kind. A provider without routes (GitHub: its events
    are not payments) has its events stored and ignored."""
    handlers: dict[HandlerKind, EventHandler] = {
        HANDLER_REFETCH: RefetchPaymentHandler(clients),
        HANDLER_OCCURRED_AT: EventTimeOrderedHandler(),
    }
    router = Router()
    for entry in catalog:
        routes = entry.routes

        def load(routes: tuple[Route, ...] = routes) -> list[tuple[str, EventHandler]]:
            return [(event_type, handlers[r.handler]) for r in routes for event_type in route_event_types(r)]

        if any(route.event_types_from for route in routes):
            router.defer(entry.id, load)  # its types live beside its driver: imported with its first event
        else:
            for event_type, handler in load():
                router.register(entry.id, event_type, handler)
    return router
