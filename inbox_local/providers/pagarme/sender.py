"""Pagar.me: a delivery as Pagar.me signs it, and sample payment notifications
(shared/providers/pagarme/driver.py verifies and parses them)."""

from __future__ import annotations

from inbox_local.senders._forms import encode_form
from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.pagarme.driver import HUB_AUTHENTICATION, HUB_HEADER, HUB_SCHEME, LEGACY_OBJECT


def compute_hub_signature(body: bytes, api_key: str) -> str:
    """The hex HMAC-SHA1 Pagar.me puts (after `sha1=`) in `X-Hub-Signature` for a legacy postback."""
    return HUB_AUTHENTICATION.signature(body, api_key)


# canonical status -> (old_status, current_status) of a legacy transaction postback
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("processing", "waiting_payment"),
    "authorized": ("processing", "authorized"),
    "paid": ("processing", "paid"),
    "failed": ("processing", "refused"),
    "refunded": ("paid", "refunded"),
    "charged_back": ("paid", "chargedback"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class PagarmeSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """A legacy postback signed with the API key (`secret`). v5 deliveries are signed by Pagar.me's private
        key, which nobody else holds: tests sign those with a key of their own (see `sign_v5`)."""
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "user-agent": "PagarMe-Hookshot/1.0",
                HUB_HEADER: f"{HUB_SCHEME}={compute_hub_signature(body, secret)}",
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A legacy transaction postback for the canonical `status` (see SAMPLE_STATUSES).

        The event id is derived from the postback (it has none of its own), so `event_id` is not used."""
        old_status, current = sample_values(_SAMPLES, status, gateway="Pagar.me")
        when = utc_from_epoch(occurred_at).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        created = utc_from_epoch(max(0, occurred_at - 60)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return encode_form(
            [
                ("id", resource_id),
                ("event", "transaction_status_changed"),
                ("old_status", old_status),
                ("desired_status", "paid"),
                ("current_status", current),
                ("object", LEGACY_OBJECT),
                ("transaction[object]", LEGACY_OBJECT),
                ("transaction[status]", current),
                ("transaction[id]", resource_id),
                ("transaction[amount]", str(amount)),
                ("transaction[payment_method]", "credit_card"),
                ("transaction[date_created]", created),
                ("transaction[date_updated]", when),
            ]
        )


sender = PagarmeSender()
