"""GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body keyed with the webhook secret.

Signing, as GitHub documents it and octokit's `@octokit/webhooks-methods` implements it:
- the key is the secret as UTF-8; the signed content is the raw body, nothing else (no timestamp: GitHub signs
  none, so there is no tolerance to enforce and a captured delivery can be replayed; deduplication by delivery id
  is what makes that harmless);
- the header is `sha256=` + the lower-case hex digest, compared in constant time (hex case is not significant).
Both headers are rows of the configuration engine (`_schemes.py`): nothing of the scheme is code here.

Legacy `X-Hub-Signature: sha1=<hex>`: GitHub still sends it beside the SHA-256 header for old receivers. It is
accepted ONLY when a delivery carries no `X-Hub-Signature-256` at all (GitHub Enterprise Server versions that
predate SHA-256). When the SHA-256 header is present it alone decides: a wrong SHA-256 signature is never rescued
by a matching SHA-1 one, so there is no downgrade path.

Dedup: the HMAC covers the body only (the `body` trust class), so no header can be an event's identity: the event
id is the body's digest. A redelivery (GitHub does not retry failed deliveries automatically; an operator redelivers
from the hook's settings or the API) carries the same body, so the same key; `X-GitHub-Delivery` (a GUID, the same on
a redelivery) is not signed, and a captured body posted again under other delivery ids is a duplicate of itself.
The delivery header is still required (every GitHub delivery has one) and kept with the stored event.

GitHub events are not payments: they are stored with no resource, and the payment processor has no route for
them (they end `ignored`). The event type is `X-GitHub-Event`, refined by the body's `action` when it has one
(`issues.opened`). GitHub sends no event time (no header, and no common body field): `occurred_at` is the time
the delivery was parsed, i.e. received. Nothing orders GitHub events, so that is only informational.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.providers._schemes import FirstCarried, HmacScheme, SchemeVerified
from shared.providers._signing import get_str, load_json_object
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
    body_digest_id,
    utc_from_epoch,
)

SIGNATURE_HEADER = "x-hub-signature-256"
LEGACY_SIGNATURE_HEADER = "x-hub-signature"
DELIVERY_HEADER = "x-github-delivery"
EVENT_HEADER = "x-github-event"
# A value without its prefix is not a signature GitHub sends: it reads as a mismatch.
SHA256 = HmacScheme(
    headers=(SIGNATURE_HEADER,),
    prefix="sha256=",
    described_as="X-Hub-Signature-256 header",
    unreadable="no signature matches",
)
LEGACY_SHA1 = HmacScheme(
    headers=(LEGACY_SIGNATURE_HEADER,),
    algorithm="sha1",
    prefix="sha1=",
    described_as="X-Hub-Signature-256 header",
    unreadable="no signature matches",
)
# The SHA-256 header, when present, alone decides; SHA-1 only when there is none at all (no downgrade path).
AUTHENTICATION = FirstCarried((SHA256, LEGACY_SHA1))


class GitHubDriver(SchemeVerified):
    name: str = "github"
    authentication = AUTHENTICATION
    replay_headers: tuple[str, ...] = (*AUTHENTICATION.replay_headers, DELIVERY_HEADER, EVENT_HEADER)

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

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
            event_id=body_digest_id(request.body),
            event_type=f"{event_name}.{action}" if action else event_name,
            resource_id=None,
            occurred_at=utc_from_epoch(self._clock()),
        )


driver: ProviderDriver = GitHubDriver()
