"""iugu: a delivery as iugu sends it, signed, and sample payment notifications.

Verifying and parsing it is the driver's business (shared/providers/iugu.py); this only imitates the gateway."""

from __future__ import annotations

from inbox_local.senders._forms import encode_form
from shared.providers.base import WebhookRequest
from shared.providers.iugu import AUTHORIZATION_HEADER


class IuguSender:
    @property
    def sample_statuses(self) -> tuple[str, ...]:
        return SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """iugu signs nothing: the delivery carries the webhook's `authorization` value (the token)."""
        return WebhookRequest(
            body=body,
            headers={"content-type": "application/x-www-form-urlencoded", AUTHORIZATION_HEADER: secret},
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """An `invoice.status_changed` trigger for the canonical `status` (see SAMPLE_STATUSES). iugu sends no
        event id, time or amount: `event_id`, `amount` and `occurred_at` are not used."""
        try:
            iugu_status = _SAMPLES[status]
        except KeyError:
            supported = ", ".join(sorted(_SAMPLES))
            raise ValueError(f"no iugu sample for status {status!r}; supported: {supported}") from None
        return encode_form(
            [
                ("event", "invoice.status_changed"),
                ("data[id]", resource_id),
                ("data[status]", iugu_status),
                ("data[account_id]", "70CA2A8AAB8E4C4D8B0E2B2F1F7E0D11"),
                ("data[subscription_id]", ""),
            ]
        )


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


sender = IuguSender()
