"""Kiwify: a delivery as Kiwify signs it, and sample payment notifications
(shared/providers/kiwify/driver.py verifies and parses them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from inbox_local.providers.asaas.sender import sao_paulo
from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest
from shared.providers.kiwify.driver import SALES_AUTHENTICATION, SIGNATURE_PARAM


def compute_signature(body: bytes, token: str) -> str:
    """The hex HMAC-SHA1 Kiwify appends as `?signature=` to a sales webhook."""
    return SALES_AUTHENTICATION.signature(body, token)


def _sao_paulo_text(epoch: int) -> str:
    """Kiwify's "YYYY-MM-DD HH:MM:SS", Sao Paulo local time."""
    return datetime.fromtimestamp(epoch, tz=UTC).astimezone(sao_paulo()).strftime("%Y-%m-%d %H:%M:%S")


# canonical status -> (webhook_event_type, order_status) of a sales webhook
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("pix_created", "waiting_payment"),
    "paid": ("order_approved", "paid"),
    "failed": ("order_rejected", "refused"),
    "refunded": ("order_refunded", "refunded"),
    "charged_back": ("chargeback", "chargedback"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class KiwifySender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """A sales webhook: `?signature=` with the token (`secret`). Banking deliveries are signed with Kiwify's
        private key: tests sign those with a key of their own (see the tests' `sign_banking`)."""
        return WebhookRequest(
            body=body,
            headers={"content-type": "application/json"},
            query={SIGNATURE_PARAM: compute_signature(body, secret)},
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A sales webhook for the canonical `status` (see SAMPLE_STATUSES). It has no event id of its own:
        `event_id` is not used (the id is derived from the sale)."""
        event_type, order_status = sample_values(_SAMPLES, status, gateway="Kiwify")
        local = _sao_paulo_text(occurred_at)
        sale = {
            "order_id": resource_id,
            "order_ref": resource_id[-8:].upper(),
            "order_status": order_status,
            "product_type": "membership",
            "payment_method": "pix",
            "store_id": "Aa1Bb2Cc3Dd4",
            "installments": 1,
            "sale_type": "producer",
            "created_at": local,
            "updated_at": local,
            "approved_date": local if order_status in {"paid", "refunded", "chargedback"} else None,
            "refunded_at": local if order_status in {"refunded", "chargedback"} else None,
            "webhook_event_type": event_type,
            "Product": {"product_id": "0c1d2e3f-0000-4000-8000-000000000001", "product_name": "Curso Exemplo"},
            "Customer": {"full_name": "Maria Exemplo", "email": "maria@example.com", "mobile": "+5511999999999"},
            "Commissions": {"charge_amount": amount, "product_base_price": amount, "currency": "BRL"},
            "TrackingParameters": {"src": None, "utm_source": None},
        }
        return json.dumps(sale, ensure_ascii=False).encode("utf-8")


sender = KiwifySender()
