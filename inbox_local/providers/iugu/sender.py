"""iugu: a delivery as iugu signs it, and sample payment notifications
(shared/providers/iugu/driver.py verifies and parses them)."""

from __future__ import annotations

from inbox_local.senders._forms import encode_form
from inbox_local.senders._samples import sample_values, token_delivery
from shared.providers.base import WebhookRequest
from shared.providers.iugu.driver import AUTHENTICATION

# canonical status -> iugu invoice status
_SAMPLES: dict[str, str] = {
    "pending": "pending",
    "authorized": "authorized",
    "paid": "paid",
    "failed": "expired",
    "canceled": "canceled",
    "refunded": "refunded",
    "disputed": "in_protest",
    "charged_back": "chargeback",
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class IuguSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """iugu signs nothing: the delivery carries the webhook's `authorization` value (the token)."""
        return token_delivery(AUTHENTICATION, body, secret, content_type="application/x-www-form-urlencoded")

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """An `invoice.status_changed` trigger for the canonical `status` (see SAMPLE_STATUSES). iugu sends no
        event id, time or amount: `event_id`, `amount` and `occurred_at` are not used."""
        iugu_status = sample_values(_SAMPLES, status, gateway="iugu")
        return encode_form(
            [
                ("event", "invoice.status_changed"),
                ("data[id]", resource_id),
                ("data[status]", iugu_status),
                ("data[account_id]", "70CA2A8AAB8E4C4D8B0E2B2F1F7E0D11"),
                ("data[subscription_id]", ""),
            ]
        )


sender = IuguSender()
