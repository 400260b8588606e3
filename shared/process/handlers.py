"""The built-in payment handlers and the default routing table."""

from __future__ import annotations

from collections.abc import Callable

from shared.gateway.base import GatewayClient, PaymentSnapshot
from shared.payments.status import PaymentStatus
from shared.process.decide import Observation
from shared.process.router import InboxEvent, Router, StateMachineApply, UnprocessableEvent
from shared.providers import adyen, generic, hotmart, kiwify, shopify

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
        if not event.resource_id:
            raise UnprocessableEvent("event names no payment")
        client = self._clients(event.provider)
        if client is None:
            raise UnprocessableEvent(f"no API client for provider {event.provider!r}")
        snapshot = client.fetch_payment(event.resource_id)
        check_amount_agrees(event, snapshot)
        return observation_from_snapshot(event.provider, snapshot, event)

    def observe(self, provider: str, resource_id: str) -> Observation:
        """The payment as the gateway's API reports it now, with no event at hand (the sweeper's reconciliation)."""
        client = self._clients(provider)
        if client is None:
            raise UnprocessableEvent(f"no API client for provider {provider!r}")
        return observation_from_snapshot(provider, client.fetch_payment(resource_id), None)


def observation_from_snapshot(provider: str, snapshot: PaymentSnapshot, event: InboxEvent | None) -> Observation:
    return Observation(
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
    )


class EventTimeOrderedHandler(StateMachineApply):
    """For senders with no API to ask (Standard Webhooks): the event states the status, and only an event newer
    than the last applied one (occurred_at vs last_event_at) may change the payment."""

    def prepare(self, event: InboxEvent) -> Observation:
        if not event.resource_id:
            raise UnprocessableEvent("event names no payment")
        try:
            status = PaymentStatus(event.provider_status or "")
        except ValueError:
            raise UnprocessableEvent(f"status {event.provider_status!r} is not a canonical payment status") from None
        return Observation(
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
        )


def default_router(clients: ClientLookup) -> Router:
    router = Router()
    refetch = RefetchPaymentHandler(clients)
    for event_type in ("payment_intent.*", "charge.*", "refund.*"):
        router.register("stripe", event_type, refetch)
    router.register("asaas", "PAYMENT_*", refetch)
    router.register("standard", "payment.*", EventTimeOrderedHandler())
    # Brazilian gateways (docs/providers-brazil.md): Pagar.me, PagBank and iugu are refetched; Kiwify and Hotmart
    # have no payment API and are ordered by event time (their provider_status is already canonical).
    for event_type in ("charge.*", "order.*", "transaction_status_changed"):
        router.register("pagarme", event_type, refetch)
    for event_type in ("charge.*", "order.*"):
        router.register("pagbank", event_type, refetch)
    router.register("iugu", "invoice.*", refetch)
    by_event_time = EventTimeOrderedHandler()
    for event_type in (*kiwify.SALE_EVENTS, *(f"{prefix}*" for prefix in kiwify.BANKING_EVENT_PREFIXES)):
        router.register("kiwify", event_type, by_event_time)
    for event_type in hotmart.PURCHASE_EVENTS:
        router.register("hotmart", event_type, by_event_time)
    # International providers (docs/providers.md). GitHub events are not payments: no route, they end ignored.
    # Paddle and Mercado Pago are refetched; Shopify (order and dispute topics only: a transaction alone does not
    # say what the order became), Adyen and the configurable `generic` driver are ordered by event time.
    for event_type in ("transaction.*", "adjustment.*"):
        router.register("paddle", event_type, refetch)
    for event_type in ("payment", "payment.*"):
        router.register("mercadopago", event_type, refetch)
    for event_type in shopify.PAYMENT_TOPICS:
        router.register("shopify", event_type, by_event_time)
    for event_type in adyen.PAYMENT_EVENT_CODES:
        router.register("adyen", event_type, by_event_time)
    for event_type in generic.payment_event_patterns():
        router.register("generic", event_type, by_event_time)
    return router
