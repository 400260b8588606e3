"""Woovi / OpenPix (Brazil, Pix): RSA-signed webhooks, verified with Woovi's published public keys.

Authentication (developers.woovi.com, "Validando Webhook payload usando x-webhook-signature" and "Buscando a chave
pública da Woovi via API"; docs/providers.md has the sources):
- every delivery carries `x-webhook-signature`: base64 of an RSA signature (`sha256WithRSAEncryption`: PKCS#1 v1.5
  + SHA-256) of the raw body by Woovi's private key, the same key for every account. No timestamp is signed.
- the public keys are published (`GET /api/v1/webhook/public-keys`, no authentication) as a list "so that the key
  can be rotated": during a rotation the old and the new key are both published, and a receiver accepts either.
- there is no key id in the header: every trusted key is tried (verify_any).

Which keys are trusted:
- PINNED_KEYS: Woovi's production key and its sandbox key, pinned here with their source URL and fingerprint (the
  SHA-256 of the DER, which is Woovi's own `key_identifier`). Nothing is fetched at run time.
- the source's signing secret (`current` and `previous`): any RSA public key written in it, as PEM or as base64 of
  the PEM (the form Woovi publishes beside the PEM), is trusted too. That is how an operator follows a rotation
  before a release pins the new key (`inbox secrets set SOURCE --kind signing --stack NAME < new-key.pem`), and how
  the local stack trusts its development key (inbox_local/providers/woovi/dev.py holds its public half; the sender in
  inbox_local/providers/woovi/sender.py holds the private half). A value holding no key, like the stack's generated
  placeholder, adds none: a deployed stack trusts exactly the pinned keys until an operator stores another.
- key sizes: an operator's key must have at least 2048 bits (`_public_keys.parse_rsa_public_keys`). Woovi's pinned
  production key has 1024 bits, below that floor and below what NIST has allowed since 2013; it is trusted because
  it is the key Woovi signs with (refusing it would refuse every delivery). The risk is that of a forged hint, not
  of forged money: every Woovi event is refetched from Woovi's API with the source's AppID before anything is
  applied (docs/providers.md, "Woovi").
- the deprecated `X-OpenPix-Signature` (base64 HMAC-SHA1 of the body with the webhook's own secret key) is
  accepted only by a source that declares `legacy_signature: true` (`with_legacy_signature()`), and only for a
  delivery without `x-webhook-signature`: when that header is present it alone decides (no downgrade). Its key is a
  value of the source's secret that holds no public key (a public key is public: it can never be an HMAC key).
  Without the option the header is ignored and a delivery without `x-webhook-signature` is refused.

Dedup: Woovi's bodies carry no event id. The key is derived from the business fact: the charge's `correlationID`,
the event and the charge's status, with the Pix `endToEndId` (unique per Pix transaction) when the delivery reports
a Pix, else the charge's `updatedAt`. A Pix without a charge (static QR code): its `endToEndId`. Anything else
(refunds, disputes, account events, the dashboard's test delivery) names no charge and is stored under the digest
of its body (a retry resends the same body: inferred), then ignored.

The payment is the charge, by its `correlationID` (what the merchant chose when creating it, and what the API reads
a charge back by); the processor refetches it (`shared/providers/woovi/client.py`).
"""

from __future__ import annotations

import base64
import binascii
import time
from datetime import datetime
from functools import lru_cache

from shared.payments.status import PaymentStatus
from shared.providers._public_keys import PublicKey, parse_rsa_public_keys, verify_any
from shared.providers._schemes import HmacScheme
from shared.providers._signing import (
    JsonObject,
    get_int,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    require_str,
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
    derive_event_id,
    utc_from_epoch,
)

SIGNATURE_HEADER = "x-webhook-signature"
LEGACY_HMAC_HEADER = "x-openpix-signature"  # deprecated by Woovi: only for a source with legacy_signature
CURRENCY = "BRL"
# Signatures of keys up to 4096 bits are 512 bytes (684 base64 characters): anything longer is not one.
MAX_SIGNATURE_CHARS = 1024
# Woovi's production key (1024 bits) is the one key trusted below this; see the module notes.
OPERATOR_KEY_MIN_BITS = 2048

S = PaymentStatus

# The charge `status` vocabulary (woovi-nodejs-sdk `Charge.status`; Woovi's charge guide "Status Possíveis").
CHARGE_STATUS: dict[str, PaymentStatus] = {
    "ACTIVE": S.PENDING,  # waiting for the Pix
    "COMPLETED": S.PAID,
    "EXPIRED": S.FAILED,  # lapsed unpaid (as iugu's and Kiwify's expired: a later payment may still be applied)
}
# The events about a charge: the catalog routes them to the refetch (the webhook is only a hint).
CHARGE_EVENTS: tuple[str, ...] = (
    "OPENPIX:CHARGE_CREATED",
    "OPENPIX:CHARGE_COMPLETED",
    "OPENPIX:CHARGE_COMPLETED_NOT_SAME_CUSTOMER_PAYER",
    "OPENPIX:CHARGE_EXPIRED",
    "OPENPIX:TRANSACTION_RECEIVED",
    "OPENPIX:CHARGE",  # UNNAMED_CHARGE_EVENT
)
UNNAMED_CHARGE_EVENT = "OPENPIX:CHARGE"  # a body about a charge that names no event (see parse)


class PinnedKey:
    __slots__ = ("environment", "fingerprint", "pem", "source")

    def __init__(self, environment: str, pem: str, fingerprint: str, source: str) -> None:
        self.environment, self.pem, self.fingerprint, self.source = environment, pem, fingerprint, source


PINNED_KEYS: tuple[PinnedKey, ...] = (
    PinnedKey(
        "production",
        "-----BEGIN PUBLIC KEY-----\n"
        "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC/+NtIkjzevvqD+I3MMv3bLXDt\n"
        "pvxBjY4BsRrSdca3rtAwMcRYYvxSnd7jagVLpctMiOxQO8ieUCKLSWHpsMAjO/zZ\n"
        "WMKbqoG8MNpi/u3fp6zz0mcHCOSqYsPUUG19buW8bis5ZZ2IZgBObWSpTvJ0cnj6\n"
        "HKBAA82Jln+lGwS1MwIDAQAB\n"
        "-----END PUBLIC KEY-----\n",
        "9dce618794f8986c603915a51b7029126c260e5cfdb2aa47e131d837fd62311c",  # RSA-1024
        "https://developers.woovi.com/docs/webhook/seguranca/webhook-public-keys",
    ),
    PinnedKey(
        "sandbox",
        "-----BEGIN PUBLIC KEY-----\n"
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAoZwBaFwmstKqy9VAqqxi\n"
        "SbCWgJR3dd5CTtDi6Fwthtd2owFkZIMqTqKg3Bq5ExjuOxE+v/1gIWFqR9jNjbtY\n"
        "umwPq+wXQhvx9TrQgrrFMVZ6tMPcwzj8Nknw182N/HMIQsV6B+8JWWzf/cN4ZZVS\n"
        "sRZfQvoVgFM7PSvSvc/h6v0X2Lkzjypvw7ZRkfxoc+z7B0p3vdQmLSKxPRpLzdLL\n"
        "VlJ+CJA2aATKVQR5feiuWHKdOlvCT7IRhal0hxUAjc7rxho5eHgaxWO5rITke8wS\n"
        "IjYIpuw38vMobYSxXb6iuj5Zrjpe2GV8vwuGud8H2dngYhkqbGuY5f4j1kfcN7gC\n"
        "8QIDAQAB\n"
        "-----END PUBLIC KEY-----\n",
        "7c8efa31466209cf247d23f6198a61643b8c322a0d80ea6d0a7a54073b2d6e91",  # RSA-2048
        "https://developers.woovi.com/docs/webhook/seguranca/webhook-sandbox-public-key",
    ),
)
# The floor of the pinned keys alone: Woovi's production key (see the module notes).
PINNED_KEY_MIN_BITS = 1024


@lru_cache(maxsize=1)
def pinned_public_keys() -> tuple[PublicKey, ...]:
    """The pinned keys, parsed once (on the first delivery: `cryptography` is imported lazily)."""
    return tuple(
        key for pinned in PINNED_KEYS for key in parse_rsa_public_keys(pinned.pem, min_bits=PINNED_KEY_MIN_BITS)
    )


@lru_cache(maxsize=8)
def _configured_keys(text: str) -> tuple[PublicKey, ...]:
    return parse_rsa_public_keys(text, min_bits=OPERATOR_KEY_MIN_BITS)


def trusted_keys(secrets: SigningSecrets) -> tuple[PublicKey, ...]:
    """The pinned keys and those the source's secret holds (current and previous)."""
    added = tuple(key for value in secrets.candidates() for key in _configured_keys(value))
    return (*pinned_public_keys(), *added)


def decode_signature(value: str) -> bytes:
    text = value.strip()
    if not text or len(text) > MAX_SIGNATURE_CHARS:
        raise SignatureInvalid("malformed x-webhook-signature header")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureInvalid("malformed x-webhook-signature header") from None


def canonical_status(status: str | None) -> str | None:
    found = CHARGE_STATUS.get(status or "")
    return found.value if found is not None else None


# The deprecated scheme, for a source that enables it (docs/providers.md, "Woovi").
LEGACY_AUTHENTICATION = HmacScheme(
    headers=(LEGACY_HMAC_HEADER,), algorithm="sha1", encoding="base64", described_as="x-openpix-signature header"
)


def hmac_keys(secrets: SigningSecrets) -> SigningSecrets:
    """The values of the source's secret that can key the legacy HMAC: those holding no public key."""
    keys = [value for value in secrets.candidates() if not _configured_keys(value)]
    if not keys:
        raise ValueError("legacy_signature is enabled but the source's secret holds no HMAC key, only public keys")
    return SigningSecrets(keys[0], keys[1] if len(keys) > 1 else None)


class WooviDriver(DriverDefaults):
    name: str = "woovi"

    def __init__(self, *, legacy_signature: bool = False) -> None:
        self.legacy_signature = legacy_signature
        # Signatures, not secrets: kept so that a stored event can be re-verified.
        self.replay_headers: tuple[str, ...] = (
            (SIGNATURE_HEADER, *LEGACY_AUTHENTICATION.replay_headers) if legacy_signature else (SIGNATURE_HEADER,)
        )

    def with_legacy_signature(self) -> ProviderDriver:
        return _LEGACY_DRIVER

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        header = request.header(SIGNATURE_HEADER)
        if not header:
            if self.legacy_signature and request.header(LEGACY_HMAC_HEADER):
                LEGACY_AUTHENTICATION.verify(
                    request, hmac_keys(secrets), provider=self.name, now=now, tolerance_seconds=tolerance_seconds
                )
                return
            raise SignatureInvalid("missing x-webhook-signature header")
        signature = decode_signature(header)
        if not verify_any(trusted_keys(secrets), signature, request.body):
            raise SignatureInvalid("no signature matches")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body)
        charge = get_object(body, "charge", "charge", required=False)
        pix = get_object(body, "pix", "pix", required=False)
        # Woovi's own signature example (2021) has no `event`: such a body is read as an update of its charge.
        event_type = get_str(body, "event", "event") or (UNNAMED_CHARGE_EVENT if charge is not None else "")
        if not event_type:
            raise PayloadInvalid("missing field event")
        if charge is not None:
            resource_id: str | None = require_str(charge, "correlationID", "charge.correlationID")
            status = get_str(charge, "status", "charge.status") or ""
            end_to_end = get_str(pix, "endToEndId", "pix.endToEndId") if pix is not None else None
            when_text = (
                get_str(charge, "updatedAt", "charge.updatedAt")
                or get_str(charge, "paidAt", "charge.paidAt")
                or require_str(charge, "createdAt", "charge.createdAt")
            )
            assert resource_id is not None
            event_id = derive_event_id(resource_id, event_type, status, end_to_end or when_text)
            provider_status = canonical_status(status)
            amount = get_int(charge, "value", "charge.value")
            currency: str | None = CURRENCY
        elif pix is not None:  # a Pix to a static QR code: no charge to refetch
            end_to_end = require_str(pix, "endToEndId", "pix.endToEndId")
            when_text = require_str(pix, "time", "pix.time")
            status = get_str(pix, "status", "pix.status") or ""
            event_id = derive_event_id(end_to_end, event_type, status, when_text)
            resource_id, provider_status, amount, currency = None, None, None, None
        else:  # refunds, disputes, account events, the dashboard's test delivery: no charge named
            return NormalizedEvent(
                event_id=body_digest_id(request.body),
                event_type=event_type,
                resource_id=None,
                occurred_at=_time_of(body),
            )
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=iso_to_utc(when_text, "charge.updatedAt" if charge is not None else "pix.time"),
            provider_status=provider_status,
            amount=amount,
            currency=currency,
        )


def _time_of(body: JsonObject) -> datetime:
    """The time an event without a charge states (its first object's `time` or `createdAt`), else now."""
    for value in body.values():
        if isinstance(value, dict):
            for key in ("time", "createdAt"):
                text = value.get(key)
                if isinstance(text, str) and text:
                    try:
                        return iso_to_utc(text, key)
                    except PayloadInvalid:
                        continue
    return utc_from_epoch(time.time())


driver: ProviderDriver = WooviDriver()
_LEGACY_DRIVER = WooviDriver(legacy_signature=True)
