"""GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body keyed with the webhook secret.

Signing, as GitHub documents it and octokit's `@octokit/webhooks-methods` implements it:
- the key is the secret as UTF-8; the signed content is the raw body, nothing else (no timestamp: GitHub signs
  none, so there is no tolerance to enforce and a captured delivery can be replayed; deduplication by delivery id
  is what makes that harmless);
- the header is `sha256=` + the lower-case hex digest, compared in constant time.

Legacy `X-Hub-Signature: sha1=<hex>`: GitHub still sends it beside the SHA-256 header for old receivers. It is
accepted ONLY when a delivery carries no `X-Hub-Signature-256` at all (GitHub Enterprise Server versions that
predate SHA-256). When the SHA-256 header is present it alone decides: a wrong SHA-256 signature is never rescued
by a matching SHA-1 one, so there is no downgrade path.

Dedup: `X-GitHub-Delivery` (a GUID) is the same when a delivery is redelivered, so it is the event id. GitHub does
not retry failed deliveries automatically; an operator redelivers from the hook's settings (or the API).

GitHub events are not payments: they are stored with no resource, and the payment processor has no route for
them (they end `ignored`). The event type is `X-GitHub-Event`, refined by the body's `action` when it has one
(`issues.opened`). GitHub sends no event time (no header, and no common body field): `occurred_at` is the time
the delivery was parsed, i.e. received. Nothing orders GitHub events, so that is only informational.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable

from shared.providers._signing import constant_time_equals, get_str, load_json_object, usable_secrets
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
    utc_from_epoch,
)

SIGNATURE_HEADER = "x-hub-signature-256"
LEGACY_SIGNATURE_HEADER = "x-hub-signature"
DELIVERY_HEADER = "x-github-delivery"
EVENT_HEADER = "x-github-event"
HOOK_ID_HEADER = "x-github-hook-id"
SHA256_PREFIX = "sha256="
SHA1_PREFIX = "sha1="


def compute_signature(body: bytes, secret: str) -> str:
    """`sha256=<hex>`: the X-Hub-Signature-256 value GitHub sends for `body` signed with `secret`."""
    return SHA256_PREFIX + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def compute_legacy_signature(body: bytes, secret: str) -> str:
    """`sha1=<hex>`: the legacy X-Hub-Signature value."""
    return SHA1_PREFIX + hmac.new(secret.encode("utf-8"), body, hashlib.sha1).hexdigest()


class GitHubDriver:
    name: str = "github"
    replay_headers: tuple[str, ...] = (SIGNATURE_HEADER, LEGACY_SIGNATURE_HEADER, DELIVERY_HEADER, EVENT_HEADER)
    replay_query: tuple[str, ...] = ()  # nothing in the URL is signed
    secret_body_fields: tuple[str, ...] = ()
    signs_timestamp: bool = False

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        candidates = usable_secrets(secrets, self.name)
        signature = request.header(SIGNATURE_HEADER)
        if signature is not None:
            compute: Callable[[bytes, str], str] = compute_signature
        else:
            signature = request.header(LEGACY_SIGNATURE_HEADER)
            compute = compute_legacy_signature
        if not signature:
            raise SignatureInvalid("missing X-Hub-Signature-256 header")
        matched = False
        for secret in candidates:  # no early exit: each candidate compared in constant time
            matched |= constant_time_equals(compute(request.body, secret), signature.strip())
        if not matched:
            raise SignatureInvalid("no signature matches")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        delivery = request.header(DELIVERY_HEADER)
        if not delivery:
            raise PayloadInvalid("missing X-GitHub-Delivery header")
        event_name = request.header(EVENT_HEADER)
        if not event_name:
            raise PayloadInvalid("missing X-GitHub-Event header")
        payload = load_json_object(request.body)
        action = get_str(payload, "action", "action")
        return NormalizedEvent(
            event_id=delivery,
            event_type=f"{event_name}.{action}" if action else event_name,
            resource_id=None,
            occurred_at=utc_from_epoch(self._clock()),
        )

    def fallback_event_id(self, request: WebhookRequest) -> str:
        return request.header(DELIVERY_HEADER) or body_digest_id(request.body)

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
        `amount` the plan's monthly price in cents. The event id travels in X-GitHub-Delivery (see `sign`).
        """
        try:
            action = _SAMPLES[status]
        except KeyError:
            supported = ", ".join(sorted(_SAMPLES))
            raise ValueError(f"no GitHub sample for status {status!r}; supported: {supported}") from None
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

driver: ProviderDriver = GitHubDriver()
