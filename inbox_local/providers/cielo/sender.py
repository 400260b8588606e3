"""Cielo: a Notification Post as Cielo sends it, `{"PaymentId", "ChangeType": 1}` with the header the merchant
registered (shared/providers/cielo/driver.py verifies and parses it). The body carries no status: every sample status
writes the same body, and the refetch tells the processor what the payment became."""

from __future__ import annotations

import json

from inbox_local.senders._samples import token_delivery
from shared.providers.base import WebhookRequest
from shared.providers.cielo.driver import AUTHENTICATION

# The canonical statuses Cielo's query API can report (inbox_local/providers/cielo/simulator.py)
SAMPLE_STATUSES: tuple[str, ...] = (
    "pending",
    "authorized",
    "paid",
    "failed",
    "canceled",
    "partially_refunded",
    "refunded",
)
PAYMENT_STATUS_CHANGED = 1


class CieloSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Cielo signs nothing: the delivery carries the header secret the merchant registered (KEY/VALUE)."""
        return token_delivery(AUTHENTICATION, body, secret, content_type="application/json")

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A "payment status change" (ChangeType 1) about `resource_id`. Only the id is in it: `status` is checked
        against SAMPLE_STATUSES, and `event_id`, `amount` and `occurred_at` have nowhere to go."""
        if status not in SAMPLE_STATUSES:
            raise ValueError(f"no cielo sample for status {status!r}; supported: {', '.join(sorted(SAMPLE_STATUSES))}")
        return json.dumps({"PaymentId": resource_id, "ChangeType": PAYMENT_STATUS_CHANGED}).encode()


sender = CieloSender()
