"""PagBank / PagSeguro (Brazil): `x-authenticity-token` = SHA-256 hex of `{token}-{raw body}`.

Authentication (developer.pagbank.com.br, "Confirmar autenticidade da notificação"): the header is a plain
SHA-256 (not an HMAC) of the account token, a hyphen, and the payload exactly as received, in hex. It is
recomputed for the current and the previous token (rotation) and compared in constant time; hex case is not
significant. The header is a digest, not the token: it is kept for re-verification. No timestamp is signed.

Length extension (the `secret_prefix` trust class): SHA-256 is a Merkle-Damgard hash, so from one captured
`(body, digest)` anyone can compute the digest of `{token}-{body}` + SHA-256's padding + any suffix once they guess
the token's length, without the token. Such a forged body always carries the padding: a 0x80 byte right after the
original message, zero bytes, and the original message's length in bits in the 8 bytes that end a 64-byte block.
`verify` knows each candidate token, so it checks that exact structure (`carries_hash_padding`) and refuses the
delivery (401, nothing stored); a genuine body never holds a NUL-padded 0x80 followed by its own bit length. A
genuine body that does not parse (no padding in it) is still PagBank's, stored `failed` with its reason.

Body: the resource itself, no envelope: an order (`ORDE_...`, with `charges[]`) for Orders API notifications, or
a charge (`CHAR_...`) for Charges API ones. The payment is that resource: the order (its charges move
together) or the charge. The processor refetches it (`GET /orders/{id}` or `GET /charges/{id}`,
shared/providers/pagbank/client.py): the webhook is a hint.

Dedup: there is no notification id in the body. The key is derived from the business fact:
`derive_event_id(resource id, kind, "{status}:{paid}:{refunded}", the fact's time)` where status is the
charge's (an order's last charge), paid/refunded come from `amount.summary` (a partial refund leaves the status
PAID but changes them), and the time is the charge's `paid_at` when paid, else its `created_at`.

Time: ISO-8601 with an offset and milliseconds ("2019-09-24T18:31:19.027-03:00"): converted to UTC, precision
kept. Event type: PagBank sends none; it is `{kind}.{STATUS}` (e.g. `charge.PAID`, `order.PAID`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from shared.payments.status import PaymentStatus
from shared.providers._signing import (
    JsonObject,
    get_currency,
    get_int,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    require_header,
    require_match,
    require_str,
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
    derive_event_id,
)

SIGNATURE_HEADER = "x-authenticity-token"  # a digest of token + body, not the token

S = PaymentStatus

# charge `status` -> canonical, before `amount.summary` refines it (see `canonical_status`)
CHARGE_STATUS: dict[str, PaymentStatus] = {
    "WAITING": S.PENDING,
    "IN_ANALYSIS": S.PENDING,
    "AUTHORIZED": S.AUTHORIZED,
    "PAID": S.PAID,
    "CANCELED": S.CANCELED,
    "DECLINED": S.FAILED,
}


def canonical_status(status: str, *, amount: int | None, paid: int, refunded: int) -> PaymentStatus | None:
    """A charge's canonical status: its `status`, refined by `amount.summary` (refunds keep PAID or read
    CANCELED with money received). None for a status nobody maps. Shared with the refetch client."""
    canonical = CHARGE_STATUS.get(status)
    if canonical is S.CANCELED and paid > 0:  # a paid charge canceled: the money went back
        return S.REFUNDED if (refunded or paid) >= paid else S.PARTIALLY_REFUNDED
    if canonical is S.PAID and refunded > 0:
        return S.REFUNDED if refunded >= (paid or amount or 0) else S.PARTIALLY_REFUNDED
    return canonical


def compute_signature(body: bytes, token: str) -> str:
    """The hex SHA-256 of `{token}-{body}` PagBank sends in `x-authenticity-token`."""
    return hashlib.sha256(token.encode("utf-8") + b"-" + body).hexdigest()


_BLOCK = 64  # SHA-256's block, in bytes
_LENGTH_FIELD = 8  # the message length in bits, big-endian, that ends the padding


def carries_hash_padding(message: bytes) -> bool:
    """Whether `message` holds SHA-256's padding of one of its own prefixes: a length-extension forgery's glue.

    For a prefix of `n` bytes the padding is 0x80, then zeros up to 8 bytes before the next 64-byte boundary `end`,
    then `8 * n` in those 8 bytes. So at every block boundary `end` inside the message, the 8 bytes before it name a
    candidate `n` (bit length / 8), and the glue is there when `n` is where that padding would start. Linear in the
    message's length (one look per 64 bytes)."""
    for end in range(_BLOCK, len(message) + 1, _BLOCK):
        bits = int.from_bytes(message[end - _LENGTH_FIELD : end], "big")
        if bits % 8:
            continue
        n = bits // 8
        # The padding of an n-byte message ends at the first block boundary with room for 0x80 and the length.
        if n >= end or (n + 1 + _LENGTH_FIELD + _BLOCK - 1) // _BLOCK * _BLOCK != end:
            continue
        if message[n] == 0x80 and not any(message[n + 1 : end - _LENGTH_FIELD]):
            return True
    return False


def _charge_of(resource: JsonObject, kind: str) -> tuple[JsonObject | None, str]:
    if kind == "charge":
        return resource, ""
    charges = resource.get("charges")
    if charges is None:
        return None, "charges"
    if not isinstance(charges, list):
        raise PayloadInvalid("field charges must be an array")
    objects = [charge for charge in charges if isinstance(charge, dict)]
    return (objects[-1], "charges[-1].") if objects else (None, "charges")


class PagbankDriver(DriverDefaults):
    name: str = "pagbank"
    replay_headers: tuple[str, ...] = (SIGNATURE_HEADER,)  # a digest of token+body, not the token

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        candidates = usable_secrets(secrets, self.name)
        received = require_header(request, SIGNATURE_HEADER, SIGNATURE_HEADER)
        require_match([compute_signature(request.body, token) for token in candidates], [received.strip().lower()])
        # A digest that matches proves nothing when the body extends a signed one (module doc, "Length extension").
        extended = [carries_hash_padding(token.encode("utf-8") + b"-" + request.body) for token in candidates]
        if any(extended):
            raise SignatureInvalid("body extends a signed body (SHA-256 length extension)")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        resource = load_json_object(request.body)
        resource_id = require_str(resource, "id", "id")
        if resource_id.startswith("CHAR_"):
            kind = "charge"
        elif resource_id.startswith("ORDE_") or "charges" in resource:
            kind = "order"
        else:
            kind = "charge"
        charge, where = _charge_of(resource, kind)
        source = charge if charge is not None else resource
        prefix = where if charge is not None else ""
        status = get_str(source, "status", f"{prefix}status") or "CREATED"

        amount_object = get_object(source, "amount", f"{prefix}amount", required=False) or {}
        summary = get_object(amount_object, "summary", f"{prefix}amount.summary", required=False) or {}
        paid = get_int(summary, "paid", f"{prefix}amount.summary.paid") or 0
        refunded = get_int(summary, "refunded", f"{prefix}amount.summary.refunded") or 0
        amount = get_int(amount_object, "value", f"{prefix}amount.value")
        currency = get_currency(amount_object, "currency", f"{prefix}amount.currency")

        occurred_at = self._fact_time(source, resource, status, prefix)
        event_type = f"{kind}.{status}"
        canonical = canonical_status(status, amount=amount, paid=paid, refunded=refunded)
        return NormalizedEvent(
            event_id=derive_event_id(resource_id, kind, f"{status}:{paid}:{refunded}", occurred_at),
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=canonical.value if canonical is not None else None,
            amount=amount,
            currency=currency,
        )

    @staticmethod
    def _fact_time(source: JsonObject, resource: JsonObject, status: str, prefix: str) -> datetime:
        fields = ("paid_at", "created_at") if status == "PAID" else ("created_at",)
        for field in fields:
            text = get_str(source, field, f"{prefix}{field}")
            if text is not None:
                return iso_to_utc(text, f"{prefix}{field}")
        return iso_to_utc(require_str(resource, "created_at", "created_at"), "created_at")


driver: ProviderDriver = PagbankDriver()
