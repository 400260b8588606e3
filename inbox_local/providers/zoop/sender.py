"""Zoop: a marketplace transaction event as Zoop posts it, with the webhook's `authorization` value in the
Authorization header (shared/providers/zoop/driver.py verifies and parses it; the body's status is not believed)."""

from __future__ import annotations

import json

from inbox_local.providers.zoop.simulator import STATUS, reais
from inbox_local.senders._samples import sample_values, token_delivery
from shared.payments.status import PaymentStatus
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.zoop.driver import AUTHENTICATION

# canonical status -> the transaction event Zoop sends for it
_EVENTS: dict[str, str] = {
    "pending": "transaction.created",
    "authorized": "transaction.pre_authorized",
    "paid": "transaction.succeeded",
    "failed": "transaction.failed",
    "canceled": "transaction.canceled",
    "refunded": "transaction.reversed",
    "disputed": "transaction.disputed",
    "charged_back": "transaction.charged_back",
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_EVENTS)


class ZoopSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Zoop signs nothing: the delivery carries the webhook's `authorization` value."""
        return token_delivery(AUTHENTICATION, body, secret, content_type="application/json")

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """The `transaction.*` event for the canonical `status` (see SAMPLE_STATUSES)."""
        event_type = sample_values(_EVENTS, status, gateway="zoop")
        when = utc_from_epoch(occurred_at).isoformat(timespec="seconds").replace("+00:00", "Z")
        return json.dumps(
            {
                "id": event_id,
                "resource": "event",
                "type": event_type,
                "created_at": when,
                "payload": {
                    "object": {
                        "id": resource_id,
                        "resource": "transaction",
                        "status": STATUS[PaymentStatus(status)],
                        "amount": reais(amount),
                        "currency": "BRL",
                        "updated_at": when,
                    }
                },
            }
        ).encode()


sender = ZoopSender()
