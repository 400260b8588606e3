"""What one provider's face of the simulator is: its REST routes, auth, status vocabulary and error answers,
and the webhooks its gateway steps send. The core (`core.py`) owns payments, faults and dispatch; a shape only
renders and reads one provider's shape. Shapes import this module and `model` only: no cycle with the core."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from inbox_local.config import signing_secret
from inbox_local.gateway_simulator.model import GatewayStep, SimulatedPayment, Tokens, Webhook
from inbox_local.senders import sender_for
from shared.gateway.http import basic_authorization
from shared.payments.status import PaymentStatus
from shared.providers.base import parse_events, utc_from_epoch
from shared.providers.registry import get_driver

Answer = tuple[int, dict[str, str], Any]
"""(HTTP status, extra headers, JSON document)."""


@dataclass(frozen=True)
class ApiRequest:
    """One API request: the decoded path segments, the query, the lower-cased headers."""

    segments: tuple[str, ...]
    query: dict[str, list[str]]
    headers: dict[str, str]

    def param(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None


class PaymentLookup(Protocol):
    """The payments of one provider, as the shape's routes may read them (the core holds its lock)."""

    def fetch(self, resource_id: str) -> SimulatedPayment | None:
        """An API read of one payment: None while unknown (missing, or inside its `unknown_fetches`)."""
        ...

    def all(self) -> list[SimulatedPayment]:
        """Every payment of the provider, counting no fetch (for lookups by a secondary id, listings)."""
        ...


class ProviderShape(Protocol):
    name: str
    default_api_key: str
    default_currency: str
    currencies: frozenset[str] | None  # the only currencies the gateway charges in; None: any
    routes: tuple[tuple[str, ...], ...]  # path prefixes (segments) its API answers
    unauthorized_status: int  # what a wrong API key gets (Paddle answers 403)

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        """The canonical statuses a payment with this id can be in (ValueError: not an id this gateway uses)."""
        ...

    def new_id(self, tokens: Tokens) -> str: ...

    def authorized(self, request: ApiRequest, key: str) -> bool:
        """Whether the request carries `key` the way the real API wants it."""
        ...

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer: ...

    def unauthorized(self, request: ApiRequest) -> Any: ...

    def throttled(self, request: ApiRequest) -> Any: ...

    def server_error(self, request: ApiRequest) -> Any: ...

    def creation_webhooks(self, p: SimulatedPayment, tokens: Tokens) -> list[Webhook]: ...

    def step(self, p: SimulatedPayment, move: GatewayStep, tokens: Tokens) -> list[Webhook]:
        """Move the provider's own state one step (p.status still reads `move.current`); the webhooks it sends."""
        ...

    def provider_status(self, p: SimulatedPayment) -> str: ...


def same(presented: str | None, expected: str) -> bool:
    return secrets.compare_digest((presented or "").encode(), expected.encode())


def bearer(request: ApiRequest, key: str) -> bool:
    return same(request.headers.get("authorization"), f"Bearer {key}")


def basic_user(request: ApiRequest, key: str) -> bool:
    """HTTP Basic with the key as user and an empty password (Pagar.me v5, iugu)."""
    return same(request.headers.get("authorization"), basic_authorization(key))


def sample_webhook(
    provider: str, p: SimulatedPayment, status: PaymentStatus, when: int, event_id: str
) -> Webhook | None:
    """The notification the provider's own driver renders for `status` (`sample_body`, what `inbox send` posts),
    with its event type read back by the same driver; None when the driver has no sample for that status."""
    driver, sender = get_driver(provider), sender_for(provider)
    try:
        body = sender.sample_body(
            event_id=event_id, resource_id=p.resource_id, status=str(status), amount=p.amount, occurred_at=when
        )
    except ValueError:
        return None
    # parse() reads the request as the ingest does: sign it (any secret) so providers that read headers or the
    # query string (Mercado Pago's data.id) see a complete delivery.
    # The last event of the delivery is the one the step announces (an Efí refund repeats its Pix first).
    event = parse_events(driver, sender.sign(body, signing_secret(provider), now=when, event_id=event_id))[-1]
    return Webhook(event.event_type, body, when)


class SampledLifecycle:
    """Steps for gateways whose REST state the simulator derives from the canonical status (and the amount
    refunded): a step only counts the refund, and the webhook is the provider driver's own sample for the new
    status (none when the driver has no sample for it: that gateway step goes unannounced)."""

    name: str

    def event_id(self, tokens: Tokens) -> str:
        return f"evt_{tokens(24, 'abcdefghijklmnopqrstuvwxyz0123456789')}"

    def creation_webhooks(self, p: SimulatedPayment, tokens: Tokens) -> list[Webhook]:
        webhook = sample_webhook(self.name, p, PaymentStatus.PENDING, p.created, self.event_id(tokens))
        return [webhook] if webhook else []

    def step(self, p: SimulatedPayment, move: GatewayStep, tokens: Tokens) -> list[Webhook]:
        p.amount_refunded += move.refund
        webhook = sample_webhook(self.name, p, move.target, move.when, self.event_id(tokens))
        return [webhook] if webhook else []


def iso_utc(epoch: int, *, timespec: str = "seconds") -> str:
    """`2024-06-12T19:45:03Z`: the UTC timestamps most of these APIs answer."""
    return utc_from_epoch(epoch).isoformat(timespec=timespec).replace("+00:00", "Z")
