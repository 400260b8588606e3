"""Hotmart: a delivery as Hotmart signs it, and sample payment notifications
(shared/providers/hotmart/driver.py verifies and parses them)."""

from __future__ import annotations

import json
from decimal import Decimal

from inbox_local.senders._samples import sample_values, token_delivery
from shared.providers.base import WebhookRequest
from shared.providers.hotmart.driver import AUTHENTICATION

VERSION = "2.0.0"


def _decimal_number(value: object) -> float | int:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(type(value).__name__)


# canonical status -> (event, purchase status)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("PURCHASE_BILLET_PRINTED", "PRINTED_BILLET"),
    "paid": ("PURCHASE_APPROVED", "APPROVED"),
    "failed": ("PURCHASE_EXPIRED", "EXPIRED"),
    "canceled": ("PURCHASE_CANCELED", "CANCELED"),
    "refunded": ("PURCHASE_REFUNDED", "REFUNDED"),
    "disputed": ("PURCHASE_PROTEST", "PROTESTED"),
    "charged_back": ("PURCHASE_CHARGEBACK", "CHARGEBACK"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class HotmartSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Hotmart signs nothing: the delivery carries the configured token. `now` and `event_id` are unused."""
        return token_delivery(AUTHENTICATION, body, secret, content_type="application/json")

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A 2.0.0 purchase webhook for the canonical `status` (see SAMPLE_STATUSES).

        The `hottok` body field is left out on purpose: the sample is stored as is, and needs no secret in it."""
        event_type, purchase_status = sample_values(_SAMPLES, status, gateway="Hotmart")
        ms = occurred_at * 1000
        value = Decimal(amount) / 100
        body = {
            "id": event_id,
            "creation_date": ms,
            "event": event_type,
            "version": VERSION,
            "data": {
                "product": {"id": 213344, "ucode": "fb056612-bcc6-4217-9e6d-2a5d1110ac2f", "name": "Curso Exemplo"},
                "buyer": {"email": "comprador@example.com", "name": "Comprador Exemplo"},
                "purchase": {
                    "transaction": resource_id,
                    "status": purchase_status,
                    "order_date": ms - 60_000,
                    "approved_date": ms if purchase_status in {"APPROVED", "COMPLETE", "REFUNDED"} else None,
                    "price": {"value": value, "currency_value": "BRL"},
                    "payment": {"type": "PIX", "installments_number": 1},
                },
            },
        }
        return json.dumps(body, default=_decimal_number).encode("utf-8")


sender = HotmartSender()
