"""Eduzz: a webhook v3 delivery as Eduzz signs it, and sample invoice notifications
(shared/providers/eduzz/driver.py verifies and parses them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest
from shared.providers.eduzz.driver import AUTHENTICATION, SIGNATURE_HEADER


def compute_signature(body: bytes, secret: str) -> str:
    """The `x-signature` value for `body` signed with `secret` (hex HMAC-SHA256)."""
    return AUTHENTICATION.signature(body, secret)


# canonical status -> (event, invoice status)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("myeduzz.invoice_waiting_payment", "waiting_payment"),
    "paid": ("myeduzz.invoice_paid", "paid"),
    "failed": ("myeduzz.invoice_expired", "expired"),
    "canceled": ("myeduzz.invoice_canceled", "canceled"),
    "refunded": ("myeduzz.invoice_refunded", "refunded"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class EduzzSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Eduzz signs the body only: `now` and `event_id` are not part of the delivery."""
        return WebhookRequest(
            body=body,
            headers={"content-type": "application/json", SIGNATURE_HEADER: compute_signature(body, secret)},
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A `myeduzz.invoice_*` webhook for the canonical `status` (see SAMPLE_STATUSES), in the shape of
        Eduzz's published examples (trimmed: producer, buyer and one item)."""
        event_type, invoice_status = sample_values(_SAMPLES, status, gateway="Eduzz")
        value = float(Decimal(amount) / 100)
        body = {
            "id": event_id,
            "event": event_type,
            "sentDate": _iso(occurred_at),
            "data": {
                "id": resource_id,
                "status": invoice_status,
                "producer": {"id": "123456", "email": "produtor@example.com", "name": "Produtor Exemplo"},
                "buyer": {"name": "Comprador Exemplo", "email": "comprador@example.com"},
                "createdAt": _iso(occurred_at - 60),
                "price": {"currency": "BRL", "value": value},
                "paymentMethod": "pix",
                "installments": 1,
                "items": [{"productId": "P567", "name": "Curso Exemplo", "price": {"currency": "BRL", "value": value}}],
            },
        }
        return json.dumps(body).encode("utf-8")


sender = EduzzSender()
