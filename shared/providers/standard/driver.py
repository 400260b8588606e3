"""Standard Webhooks (https://www.standardwebhooks.com), and Svix, which uses the same scheme under `svix-*` names.

Signing, per the spec and its reference library (`standardwebhooks`):
- headers `webhook-id`, `webhook-timestamp` (epoch seconds), `webhook-signature`; Svix sends the same three as
  `svix-id`, `svix-timestamp`, `svix-signature`. Either family is accepted (the `webhook-*` one first when a
  delivery carries both);
- signed content `{id}.{timestamp}.{raw body}`, HMAC-SHA256, base64;
- the signature header is a space-separated list of `<version>,<base64>` entries; only `v1` is HMAC-SHA256,
  other versions (`v1a` is Ed25519) are ignored; any `v1` match passes (several are sent during a rotation);
- the secret is `whsec_` + base64 of the key: the key is the base64-DECODED bytes (a secret given without the
  prefix is base64 too);
- the timestamp must be within the tolerance in both directions.

The signature is compared as its base64 text against the canonical encoding of the expected MAC (as the
JavaScript reference does), not after decoding: a decoder tolerates non-canonical spellings (differing unused
low bits in the last character), and there is no reason to accept a signature in a spelling nobody produces.

Dedup: `webhook-id` is the same on every retry of a message, so it is the event id.

The body is the provider's own: the spec recommends `{"type", "timestamp", "data"}` but does not dictate the
payload (its own test vector's body is `{"test": 2432232314}`). This driver reads the payment from `data`
(`payment_id`, else `id`; `status`, `amount` in minor units, `currency`). A well-formed JSON object without `type`
or `data` is kept as what it is, a signed message about nothing the inbox tracks: its type is empty (no handler
routes it) and it names no payment, so it settles `ignored` (reason `unrouted_type`), never `failed`. Such
providers have no API the processor could refetch from: ordering falls back to `occurred_at`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from shared.providers._signing import (
    check_timestamp,
    epoch_to_utc,
    get_currency,
    get_id,
    get_int,
    get_str,
    iso_to_utc,
    load_json_object,
    matches_any,
    parse_epoch_seconds,
    require_object,
    usable_secrets,
)
from shared.providers.base import (
    DriverDefaults,
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
)

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of every secret, not a secret
SCHEME = "v1"
UNTYPED_EVENT_TYPE = ""  # a message whose payload has no `type`: no handler routes it
# (id, timestamp, signature) header names, in order of preference
HEADER_FAMILIES: tuple[tuple[str, str, str], ...] = (
    ("webhook-id", "webhook-timestamp", "webhook-signature"),
    ("svix-id", "svix-timestamp", "svix-signature"),
)


def decode_secret(secret: str) -> bytes:
    """`whsec_<base64>` (or bare base64) -> the HMAC key bytes.

    An undecodable secret is a configuration error (ValueError, so a 5xx and a retry by the gateway), never
    reported as a bad signature. The message never holds the secret.
    """
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    encoded += "=" * (-len(encoded) % 4)  # tolerate unpadded base64, as the reference library does
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("signing secret for 'standard' is not base64 (expected whsec_<base64>)") from None
    if not key:
        raise ValueError("signing secret for 'standard' is empty")
    return key


def compute_signature(msg_id: str, timestamp: str, body: bytes, key: bytes) -> str:
    """The base64 `v1` signature of `body` (without the `v1,` prefix)."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def _find_headers(request: WebhookRequest) -> tuple[str, str, str] | None:
    """(id, timestamp, signature) from the first header family that is complete, else None."""
    for names in HEADER_FAMILIES:
        msg_id, timestamp, signature = (request.header(name) for name in names)
        if msg_id and timestamp and signature:
            return msg_id, timestamp, signature
    return None


def _header(request: WebhookRequest, index: int) -> str | None:
    """One of (id, timestamp, signature): from the complete family if there is one, else whichever is set."""
    found = _find_headers(request)
    if found is not None:
        return found[index]
    for names in HEADER_FAMILIES:
        value = request.header(names[index])
        if value:
            return value
    return None


class StandardWebhooksDriver(DriverDefaults):
    name: str = "standard"
    replay_headers: tuple[str, ...] = tuple(name for family in HEADER_FAMILIES for name in family)
    signs_timestamp: bool = True

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        keys = [decode_secret(secret) for secret in usable_secrets(secrets, self.name)]
        found = _find_headers(request)
        if found is None:
            raise SignatureInvalid("missing webhook-id, webhook-timestamp or webhook-signature header")
        msg_id, timestamp_text, signature_header = found
        timestamp = parse_epoch_seconds(timestamp_text)

        signatures = []
        for entry in signature_header.split(" "):
            version, sep, signature = entry.partition(",")
            if sep and version == SCHEME and signature:
                signatures.append(signature)
        if not signatures:
            raise SignatureInvalid("no v1 signature in header")

        expected = [compute_signature(msg_id, timestamp_text, request.body, key) for key in keys]
        if not matches_any(expected, signatures):  # every pair compared in constant time, no early exit
            raise SignatureInvalid("no signature matches")
        check_timestamp(timestamp, now=now, tolerance_seconds=tolerance_seconds)

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        msg_id = _header(request, 0)
        if msg_id is None:
            raise PayloadInvalid("missing webhook-id header")
        payload = load_json_object(request.body)
        event_type = get_str(payload, "type", "type") or UNTYPED_EVENT_TYPE
        data = require_object(payload, "data", "data") if "data" in payload else {}

        timestamp = get_str(payload, "timestamp", "timestamp")
        if timestamp is not None:
            occurred_at = iso_to_utc(timestamp, "timestamp")
        else:
            header_value = _header(request, 1)
            try:
                seconds = parse_epoch_seconds(header_value or "")
            except SignatureInvalid:
                raise PayloadInvalid("no timestamp: neither a body timestamp nor a webhook-timestamp header") from None
            occurred_at = epoch_to_utc(seconds, "webhook-timestamp")

        resource_id = get_id(data, "payment_id", "data.payment_id") or get_id(data, "id", "data.id")
        return NormalizedEvent(
            event_id=msg_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=get_str(data, "status", "data.status"),
            amount=get_int(data, "amount", "data.amount"),
            currency=get_currency(data, "currency", "data.currency"),
        )

    def fallback_event_id(self, request: WebhookRequest) -> str:
        return _header(request, 0) or body_digest_id(request.body)


driver: ProviderDriver = StandardWebhooksDriver()
