"""PagBank: a delivery as PagBank signs it, and sample payment notifications
(shared/providers/pagbank/driver.py verifies and parses them)."""

from __future__ import annotations

import json

from inbox_local.providers.asaas.sender import sao_paulo
from inbox_local.senders._samples import sample_values
from shared.providers._signing import JsonObject
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.pagbank.driver import SIGNATURE_HEADER, compute_signature


def local_iso(epoch: int) -> str:
    """PagBank's format: Sao Paulo offset, milliseconds ("2024-06-12T16:45:03.000-03:00")."""
    local = utc_from_epoch(epoch).astimezone(sao_paulo())
    return local.isoformat(timespec="milliseconds")


# canonical status -> charge status (CANCELED_PAID: a paid charge canceled, i.e. refunded)
_SAMPLES: dict[str, str] = {
    "pending": "WAITING",
    "authorized": "AUTHORIZED",
    "paid": "PAID",
    "partially_refunded": "PAID",
    "failed": "DECLINED",
    "canceled": "CANCELED",
    "refunded": "CANCELED_PAID",
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class PagbankSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        return WebhookRequest(
            body=body,
            headers={"content-type": "application/json", SIGNATURE_HEADER: compute_signature(body, secret)},
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """An Orders API notification (an order with one charge) for the canonical `status`. The order id is
        `resource_id`; PagBank bodies carry no event id, so `event_id` is not used (the id is derived)."""
        charge_status = sample_values(_SAMPLES, status, gateway="PagBank")
        created = local_iso(occurred_at - 60)
        paid = amount if charge_status in {"PAID", "CANCELED_PAID"} else 0
        refunded = (
            amount
            if charge_status == "CANCELED_PAID"
            else (max(1, amount // 2) if status == "partially_refunded" else 0)
        )
        wire_status = "CANCELED" if charge_status == "CANCELED_PAID" else charge_status
        charge: JsonObject = {
            "id": "CHAR_" + resource_id.removeprefix("ORDE_"),
            "reference_id": "pedido-1234",
            "status": wire_status,
            "created_at": created,
            "description": "Pedido 1234",
            "amount": {
                "value": amount,
                "currency": "BRL",
                "summary": {"total": amount, "paid": paid, "refunded": refunded},
            },
            "payment_response": {"code": "20000", "message": "SUCESSO"},
            "payment_method": {"type": "PIX"},
        }
        if paid:
            charge["paid_at"] = local_iso(occurred_at)
        order = {
            "id": resource_id,
            "reference_id": "pedido-1234",
            "created_at": created,
            "customer": {"name": "Jose da Silva", "email": "jose@example.com", "tax_id": "12345678909"},
            "items": [{"reference_id": "item-1", "name": "Produto", "quantity": 1, "unit_amount": amount}],
            "charges": [charge],
            "notification_urls": ["https://example.com/webhooks/pagbank"],
        }
        return json.dumps(order, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


sender = PagbankSender()
