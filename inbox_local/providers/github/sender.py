"""GitHub: a delivery as GitHub signs it, and sample payment notifications
(shared/providers/github/driver.py verifies and parses them)."""

from __future__ import annotations

import hashlib
import json
import uuid

from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.github.driver import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    LEGACY_SHA1,
    LEGACY_SIGNATURE_HEADER,
    SHA256,
    SIGNATURE_HEADER,
)


def compute_signature(body: bytes, secret: str) -> str:
    """`sha256=<hex>`: the X-Hub-Signature-256 value GitHub sends for `body` signed with `secret`."""
    return SHA256.prefix + SHA256.signature(body, secret)


def compute_legacy_signature(body: bytes, secret: str) -> str:
    """`sha1=<hex>`: the legacy X-Hub-Signature value."""
    return LEGACY_SHA1.prefix + LEGACY_SHA1.signature(body, secret)


HOOK_ID_HEADER = "x-github-hook-id"


def _event_name(body: bytes) -> str:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "ping"
    return "marketplace_purchase" if isinstance(payload, dict) and "marketplace_purchase" in payload else "ping"


# canonical status -> marketplace_purchase action
_SAMPLES: dict[str, str] = {
    "paid": "purchased",
    "pending": "pending_change",
    "canceled": "cancelled",
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class GitHubSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """A delivery as GitHub sends it: both signature headers, the delivery GUID and the event name.

        The event name is read from the body: a `marketplace_purchase` body (see `sample_body`) is that event,
        anything else is sent as `ping`. `now` is unused (GitHub signs no timestamp).
        """
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                "user-agent": "GitHub-Hookshot/044aadd",
                SIGNATURE_HEADER: compute_signature(body, secret),
                LEGACY_SIGNATURE_HEADER: compute_legacy_signature(body, secret),
                DELIVERY_HEADER: event_id or str(uuid.uuid5(uuid.NAMESPACE_URL, hashlib.sha256(body).hexdigest())),
                EVENT_HEADER: _event_name(body),
                HOOK_ID_HEADER: "292430182",
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A `marketplace_purchase` event (GitHub's closest thing to a payment), for `inbox send github`.

        `status` picks the action (see SAMPLE_STATUSES); `resource_id` becomes the purchasing account's login and
        `amount` the plan's monthly price in cents. `event_id` travels in X-GitHub-Delivery (see `sign`); the
        stored key is the body's digest.
        """
        action = sample_values(_SAMPLES, status, gateway="GitHub")
        when = utc_from_epoch(occurred_at).isoformat().replace("+00:00", "Z")
        payload = {
            "action": action,
            "effective_date": when,
            "sender": {"login": "octocat", "id": 583231, "type": "User"},
            "marketplace_purchase": {
                "account": {"type": "Organization", "id": 18404719, "login": resource_id},
                "billing_cycle": "monthly",
                "unit_count": 1,
                "on_free_trial": False,
                "free_trial_ends_on": None,
                "next_billing_date": when,
                "plan": {
                    "id": 435,
                    "name": "Basic Plan",
                    "description": "Basic Plan",
                    "monthly_price_in_cents": amount,
                    "yearly_price_in_cents": amount * 10,
                    "price_model": "FLAT_RATE",
                    "has_free_trial": False,
                    "unit_name": None,
                    "bullets": [],
                },
            },
        }
        return json.dumps(payload, indent=2).encode("utf-8")


sender = GitHubSender()
