"""Mercado Pago: a delivery as Mercado Pago signs it, and sample payment notifications
(shared/providers/mercadopago/driver.py verifies and parses them)."""

from __future__ import annotations

import hashlib
import json
import uuid

from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.mercadopago.driver import (
    DATA_ID_QUERY,
    PAYMENT_TYPE,
    REQUEST_ID_HEADER,
    SCHEME,
    SIGNATURE_HEADER,
    TYPE_QUERY,
    body_data_id,
    compute_signature,
    data_id_spellings,
)

SAMPLE_STATUSES: tuple[str, ...] = (
    "pending",
    "authorized",
    "paid",
    "failed",
    "canceled",
    "partially_refunded",
    "refunded",
    "disputed",
    "charged_back",
)


class MercadoPagoSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """A notification as Mercado Pago sends it: `?data.id=...&type=...` on the URL, x-signature, x-request-id."""
        data_id = body_data_id(body)
        # One request id per notification, kept on a redelivery signed later (not documented by Mercado Pago either
        # way; the driver's key is the signed data.id and this id: shared/providers/mercadopago/driver.py)
        request_id = str(uuid.uuid5(uuid.NAMESPACE_URL, hashlib.sha256(body).hexdigest()))
        ts = str(now)
        signature = compute_signature(data_id_spellings(data_id)[-1] if data_id else None, request_id, ts, secret)
        query = {DATA_ID_QUERY: data_id} if data_id else {}
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("type"), str):
            query[TYPE_QUERY] = payload["type"]
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                "user-agent": "MercadoPago WebHook v1.0 payment",
                SIGNATURE_HEADER: f"ts={ts},{SCHEME}={signature}",
                REQUEST_ID_HEADER: request_id,
            },
            query=query,
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A `payment` notification. Mercado Pago states no status or amount in it: `status` only picks the action
        (`payment.created` for pending, `payment.updated` otherwise) and `amount` is unused."""
        if status not in SAMPLE_STATUSES:
            raise ValueError(f"no Mercado Pago sample for status {status!r}; supported: {', '.join(SAMPLE_STATUSES)}")
        when = utc_from_epoch(occurred_at).isoformat(timespec="milliseconds")
        notification_id: int | str = int(event_id) if event_id.isdigit() else event_id
        body = {
            "id": notification_id,
            "live_mode": False,
            "type": PAYMENT_TYPE,
            "date_created": when,
            "user_id": 44444,
            "api_version": "v1",
            "action": "payment.created" if status == "pending" else "payment.updated",
            "data": {"id": resource_id},
        }
        return json.dumps(body).encode("utf-8")


sender = MercadoPagoSender()
