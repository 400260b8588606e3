"""Paddle: a delivery as Paddle signs it, and sample payment notifications
(shared/providers/paddle/driver.py verifies and parses them)."""

from __future__ import annotations

import hashlib
import json

from inbox_local.senders._samples import sample_values
from shared.providers._signing import JsonObject
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.paddle.driver import FINAL_STATUSES, SCHEME, SIGNATURE_HEADER, compute_signature

# canonical status -> (Paddle event type, transaction status or adjustment action)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("transaction.ready", "ready"),
    "paid": ("transaction.completed", "completed"),
    "failed": ("transaction.past_due", "past_due"),
    "canceled": ("transaction.canceled", "canceled"),
    "refunded": ("adjustment.created", "refund"),
    "charged_back": ("adjustment.created", "chargeback"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class PaddleSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                "user-agent": "Paddle",
                SIGNATURE_HEADER: f"ts={now};{SCHEME}={compute_signature(now, body, secret)}",
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A Paddle `transaction.*` (or `adjustment.*`) event for the canonical `status`; see SAMPLE_STATUSES."""
        event_type, paddle_status = sample_values(_SAMPLES, status, gateway="Paddle")
        when = utc_from_epoch(occurred_at).isoformat(timespec="microseconds").replace("+00:00", "Z")
        data: JsonObject
        if event_type.startswith("adjustment."):
            data = {
                "id": "adj_01h8c65c2ggq5nxswnnwv78e75",
                "action": paddle_status,
                "transaction_id": resource_id,
                "customer_id": "ctm_01h8441jn5pcwrfhwh78jqt8hk",
                "reason": "error",
                "currency_code": "USD",
                "status": "approved",
                "totals": {"subtotal": str(amount), "tax": "0", "total": str(amount), "currency_code": "USD"},
                "created_at": when,
                "updated_at": when,
            }
        else:
            totals = {
                "subtotal": str(amount),
                "discount": "0",
                "tax": "0",
                "total": str(amount),
                "credit": "0",
                "balance": "0" if paddle_status in FINAL_STATUSES else str(amount),
                "grand_total": str(amount),
                "fee": None,
                "earnings": None,
                "currency_code": "USD",
                "credit_to_balance": "0",
            }
            data = {
                "id": resource_id,
                "status": paddle_status,
                "customer_id": "ctm_01h8441jn5pcwrfhwh78jqt8hk",
                "currency_code": "USD",
                "origin": "web",
                "collection_mode": "automatic",
                "details": {"totals": totals},
                "created_at": when,
                "updated_at": when,
                "billed_at": when if paddle_status in FINAL_STATUSES else None,
            }
        body = {
            "event_id": event_id,
            "event_type": event_type,
            "occurred_at": when,
            "notification_id": "ntf_" + hashlib.sha256(event_id.encode()).hexdigest()[:26],
            "data": data,
        }
        return json.dumps(body).encode("utf-8")


sender = PaddleSender()
