"""Standard Webhooks: a delivery as Standard Webhooks signs it, and sample payment notifications
(shared/providers/standard/driver.py verifies and parses them)."""

from __future__ import annotations

import hashlib
import json

from shared.payments.status import PaymentStatus
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.standard.driver import HEADER_FAMILIES, SCHEME, compute_signature, decode_secret

# The body carries the status as given: every canonical status has a sample.
SAMPLE_STATUSES: tuple[str, ...] = tuple(status.value for status in PaymentStatus)


class StandardWebhooksSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        msg_id = event_id or "msg_" + hashlib.sha256(body).hexdigest()[:27]
        signature = compute_signature(msg_id, str(now), body, decode_secret(secret))
        id_header, timestamp_header, signature_header = HEADER_FAMILIES[0]
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                id_header: msg_id,
                timestamp_header: str(now),
                signature_header: f"{SCHEME},{signature}",
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """`{"type", "timestamp", "data"}` with the canonical `status` as the payment's status.

        The event id is not part of a Standard Webhooks body: it travels in `webhook-id` (see `sign`).
        """
        timestamp = utc_from_epoch(occurred_at).isoformat().replace("+00:00", "Z")
        payload = {
            "type": f"payment.{status}",
            "timestamp": timestamp,
            "data": {
                "id": resource_id,
                "object": "payment",
                "status": status,
                "amount": amount,
                "currency": "BRL",
            },
        }
        return json.dumps(payload, separators=(",", ":")).encode("utf-8")


sender = StandardWebhooksSender()
