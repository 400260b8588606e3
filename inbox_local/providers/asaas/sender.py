"""Asaas: a delivery as Asaas signs it, and sample payment notifications
(shared/providers/asaas/driver.py verifies and parses them)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, tzinfo

from inbox_local.senders._samples import sample_values, token_delivery
from shared.providers.asaas.driver import AUTHENTICATION, TIMEZONE
from shared.providers.base import WebhookRequest, time_zone


def sao_paulo() -> tzinfo:
    """The zone of Brazil's gateways' local times (Asaas, Kiwify, PagBank samples)."""
    return time_zone(TIMEZONE)


# canonical status -> (Asaas event, Asaas payment status)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("PAYMENT_CREATED", "PENDING"),
    "paid": ("PAYMENT_RECEIVED", "RECEIVED"),
    "refunded": ("PAYMENT_REFUNDED", "REFUNDED"),
    "disputed": ("PAYMENT_CHARGEBACK_REQUESTED", "CHARGEBACK_REQUESTED"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class AsaasSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Asaas signs nothing: the delivery carries the configured token. `now` and `event_id` are unused."""
        return token_delivery(AUTHENTICATION, body, secret, content_type="application/json")

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """An Asaas payment webhook for the canonical `status`: see SAMPLE_STATUSES for the supported values."""
        event_type, asaas_status = sample_values(_SAMPLES, status, gateway="Asaas")
        local = datetime.fromtimestamp(occurred_at, tz=UTC).astimezone(sao_paulo())
        paid = asaas_status in {"RECEIVED", "REFUNDED", "CHARGEBACK_REQUESTED"}
        day = local.date().isoformat()
        # amount / 100 as a float prints as the exact decimal (e.g. 10.1), and Asaas sends JSON numbers.
        value = amount / 100
        body = {
            "id": event_id,
            "event": event_type,
            "dateCreated": local.strftime("%Y-%m-%d %H:%M:%S"),
            "payment": {
                "object": "payment",
                "id": resource_id,
                "dateCreated": day,
                "customer": "cus_000005219613",
                "value": value,
                "netValue": value,
                "description": "Pedido 1234",
                "billingType": "PIX",
                "status": asaas_status,
                "dueDate": day,
                "paymentDate": day if paid else None,
                "clientPaymentDate": day if paid else None,
                "externalReference": None,
                "deleted": False,
            },
        }
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


sender = AsaasSender()
