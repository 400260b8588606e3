"""Kiwify (Brazil): sales webhooks (HMAC-SHA1 in the query) and Kiwify Banking webhooks (Ed25519), one provider id.

One id, `kiwify`, one URL: the delivery itself says which product sent it. A Banking delivery carries
`x-kiwify-digital-signature`; a sales delivery does not. Choosing by header is not a downgrade: each path
demands its own proof (the sales token's HMAC, or Kiwify's Ed25519 key), and neither accepts the other's.

Sales (docs.kiwify.com.br, "Receber e validar webhooks"):
- the URL gets `?signature=<hex>` (appended with `&` when the URL has a query): HMAC-SHA1 of the raw body, keyed
  with the webhook's `token`, 40 lower-case hex characters. The token itself is never sent. The configured
  secret is that token (current and previous, for a rotation). No timestamp is signed.
- no envelope id: dedup is `derive_event_id(order_id, webhook_event_type, order_status, the fact's time)`, the
  time being the one that dates the fact (`approved_date` for an approval, `refunded_at` for a refund, else
  `updated_at`, else `created_at`). A redelivery repeats them; a new fact about the order changes one of them.
- times ("2024-01-15 10:30", or with seconds, or ISO) carry no zone: Kiwify is Brazilian and they are read as
  America/Sao_Paulo, like Asaas's (inferred: the docs show no zone). Minute precision is kept as sent.
- money: `Commissions.charge_amount`, integer centavos (a number or a digit string).

Banking (docs.kiwify.com.br, "Webhook Headers & Verification", "Receiving Webhooks"):
- `x-kiwify-digital-signature`: base64url (no padding) Ed25519 signature; `x-kiwify-timestamp`: Unix ms.
- signed: SHA-256 of `{url_path}:POST:{raw body}:{timestamp}` (Kiwify's "prehashed" mode: the 32-byte digest is
  what Ed25519 signs), `url_path` being the path of the registered URL (here the request's path).
- timestamps further than the tolerance (Kiwify: 5 minutes) from now are refused, both directions.
- public keys: `GET /v1/webhooks-keys` (the `is_active` one, cache up to 24 h) needs an authenticated service
  account (PoP-signed requests), so the active key is configured: `INBOX_KIWIFY_BANKING_PUBLIC_KEYS` (JWKS,
  PEM, base64 or hex; several during a rotation) or an injected `KeySource`. Missing keys or a missing
  `cryptography` is a configuration error (5xx, Kiwify retries), never a 401. The sales token is not involved.
- the envelope `id` CHANGES on every retry: dedup is `derive_event_id(resource id, type, data.status)`, the
  resource being the id Kiwify names for deduplication (`transfer_id`, `qrcode_id`, `transaction_id`,
  `refund_id`, else `id`).

Ordering: Kiwify has no payment API we refetch from: events are ordered by `occurred_at`, and `provider_status`
carries the canonical status (`ORDER_STATUS`, `banking_status`) that the processor applies.
"""

from __future__ import annotations

import hashlib
import os
from decimal import Decimal
from typing import Any

from shared.payments.status import PaymentStatus
from shared.providers._public_keys import (
    ED25519,
    KeySource,
    StaticKeySource,
    b64url_decode,
    parse_ed25519_keys,
    verify_any,
)
from shared.providers._schemes import HmacScheme
from shared.providers._signing import (
    JsonObject,
    check_timestamp,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    require_object,
    require_str,
)
from shared.providers.asaas.driver import parse_asaas_time
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

SIGNATURE_PARAM = "signature"
BANKING_SIGNATURE_HEADER = "x-kiwify-digital-signature"
BANKING_TIMESTAMP_HEADER = "x-kiwify-timestamp"
ENV_BANKING_KEYS = "INBOX_KIWIFY_BANKING_PUBLIC_KEYS"
CURRENCY = "BRL"

S = PaymentStatus

# Sales `order_status` -> canonical
ORDER_STATUS: dict[str, PaymentStatus] = {
    "waiting_payment": S.PENDING,
    "processing": S.PENDING,
    "pending": S.PENDING,
    "authorized": S.AUTHORIZED,
    "paid": S.PAID,
    "approved": S.PAID,
    "pending_refund": S.PAID,  # a refund was asked for; the money has not gone back yet
    "refused": S.FAILED,
    "failed": S.FAILED,
    "expired": S.FAILED,  # an unpaid boleto/Pix that lapsed: a later payment may still arrive
    "canceled": S.CANCELED,
    "refunded": S.REFUNDED,
    "chargedback": S.CHARGED_BACK,
}
# Banking event type suffix -> canonical (CASHIN.PIX.QRCODES.PAID -> "PAID")
BANKING_STATUS: dict[str, PaymentStatus] = {
    "CREATED": S.PENDING,
    "SCHEDULED": S.PENDING,
    "PAID": S.PAID,
    "RECEIVED": S.PAID,
    "COMPLETED": S.PAID,
    "FAILED": S.FAILED,
}
# The sales event types that are about a payment (the provider catalog routes these, and every Banking event, to
# the processor; subscription and cart events are stored and left alone).
SALE_EVENTS: tuple[str, ...] = (
    "order_approved",
    "order_rejected",
    "order_refunded",
    "chargeback",
    "billet_created",
    "pix_created",
)
_BANKING_RESOURCE_KEYS: tuple[tuple[str, str], ...] = (
    ("CASHOUT.PIX.REFUNDS.", "refund_id"),
    ("CASHOUT.PIX.TRANSFERS.", "transfer_id"),
    ("CASHIN.PIX.QRCODES.", "qrcode_id"),
    ("CASHIN.DEPOSITS.", "transaction_id"),
)


# Sales webhooks: the hex HMAC-SHA1 of the raw body, keyed with the webhook's token, in `?signature=`.
SALES_AUTHENTICATION = HmacScheme(
    query_param=SIGNATURE_PARAM, algorithm="sha1", described_as="signature query parameter"
)


def banking_message(path: str, body: bytes, timestamp: str) -> bytes:
    """What Kiwify Banking signs: SHA-256 of `{path}:POST:{raw body}:{timestamp}`."""
    return hashlib.sha256(f"{path}:POST:".encode() + body + f":{timestamp}".encode()).digest()


def sale_status(order_status: str | None) -> PaymentStatus | None:
    """The canonical status of a sales `order_status`; None for one nobody maps."""
    return ORDER_STATUS.get((order_status or "").lower())


def banking_status(event_type: str) -> PaymentStatus | None:
    """The canonical status a Banking event type states (`CASHIN.PIX.QRCODES.PAID` -> paid)."""
    if event_type.startswith("CASHOUT.PIX.REFUNDS.") and event_type.endswith(".COMPLETED"):
        return S.REFUNDED
    if event_type.endswith(".SCHEDULED.FAILED"):
        return S.FAILED
    return BANKING_STATUS.get(event_type.rsplit(".", 1)[-1])


def _value(status: PaymentStatus | None) -> str | None:
    return status.value if status is not None else None


def default_banking_keys(environ: dict[str, str] | None = None) -> KeySource:
    env = os.environ if environ is None else environ
    text = env.get(ENV_BANKING_KEYS, "")
    return StaticKeySource(parse_ed25519_keys(text))  # KeysUnavailable (ValueError -> 5xx) when not configured


def _cents(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise PayloadInvalid(f"field {where} must be an amount in centavos")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    raise PayloadInvalid(f"field {where} must be an amount in centavos")


class KiwifyDriver(DriverDefaults):
    name: str = "kiwify"
    replay_headers: tuple[str, ...] = (BANKING_SIGNATURE_HEADER, BANKING_TIMESTAMP_HEADER)
    replay_query: tuple[str, ...] = SALES_AUTHENTICATION.replay_query  # an HMAC, not the token: safe to keep
    signs_timestamp: bool = False  # sales webhooks sign none (Banking ones do, and are checked)

    def __init__(self, banking_keys: KeySource | None = None) -> None:
        self._banking_keys = banking_keys

    @property
    def banking_keys(self) -> KeySource:
        if self._banking_keys is None:
            self._banking_keys = default_banking_keys()
        return self._banking_keys

    # ------------------------------------------------------------------------------------------------ verify

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        if request.header(BANKING_SIGNATURE_HEADER) is not None:
            self._verify_banking(request, now=now, tolerance_seconds=tolerance_seconds)
            return
        SALES_AUTHENTICATION.verify(request, secrets, provider=self.name, now=now, tolerance_seconds=tolerance_seconds)

    def _verify_banking(self, request: WebhookRequest, *, now: float, tolerance_seconds: int) -> None:
        signature_text = request.header(BANKING_SIGNATURE_HEADER) or ""
        timestamp_text = request.header(BANKING_TIMESTAMP_HEADER) or ""
        if not signature_text or not timestamp_text:
            raise SignatureInvalid("missing x-kiwify-digital-signature or x-kiwify-timestamp header")
        if (
            len(timestamp_text) > 16
            or not (timestamp_text.isascii() and timestamp_text.isdigit())
            or (len(timestamp_text) > 1 and timestamp_text[0] == "0")
        ):
            raise SignatureInvalid("malformed header")
        try:
            signature = b64url_decode(signature_text)
        except ValueError:
            raise SignatureInvalid("malformed header") from None
        if not request.path:
            raise SignatureInvalid("request path unknown: the signed message cannot be rebuilt")
        keys = [key for key in self.banking_keys.current() if key.algorithm == ED25519]
        message = banking_message(request.path, request.body, timestamp_text)
        if not verify_any(keys, signature, message):
            keys = [key for key in self.banking_keys.refreshed() if key.algorithm == ED25519]
            if not verify_any(keys, signature, message):
                raise SignatureInvalid("no signature matches")
        # After the signature, as the other drivers: a stale authentic delivery is reported as such.
        check_timestamp(int(timestamp_text) // 1000, now=now, tolerance_seconds=tolerance_seconds)

    # ------------------------------------------------------------------------------------------------- parse

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        if request.header(BANKING_SIGNATURE_HEADER) is not None:
            return self._parse_banking(request.body)
        return self._parse_sale(request.body)

    def _parse_sale(self, body: bytes) -> NormalizedEvent:
        sale = load_json_object(body, parse_float=Decimal)
        event_type = require_str(sale, "webhook_event_type", "webhook_event_type")
        order_id = get_str(sale, "order_id", "order_id")
        if order_id is None:  # a cart or subscription event without an order: stored, not about a payment
            return self._parse_other_sale(sale, event_type)
        status = require_str(sale, "order_status", "order_status")
        when_field = _fact_time_field(sale, status)
        if when_field is None:
            raise PayloadInvalid("missing field created_at")
        occurred_at = parse_asaas_time(require_str(sale, when_field, when_field), when_field)
        commissions = get_object(sale, "Commissions", "Commissions", required=False) or {}
        amount = _cents(commissions.get("charge_amount"), "Commissions.charge_amount")
        currency = get_str(commissions, "currency", "Commissions.currency")
        return NormalizedEvent(
            event_id=derive_event_id(order_id, event_type, status, occurred_at),
            event_type=event_type,
            resource_id=order_id,
            occurred_at=occurred_at,
            provider_status=_value(sale_status(status)),
            amount=amount,
            currency=(currency or CURRENCY).upper(),
        )

    def _parse_other_sale(self, sale: JsonObject, event_type: str) -> NormalizedEvent:
        object_id = get_str(sale, "id", "id") or get_str(sale, "subscription_id", "subscription_id")
        when_field = _fact_time_field(sale, "")
        if object_id is None or when_field is None:
            raise PayloadInvalid("missing field order_id")
        occurred_at = parse_asaas_time(require_str(sale, when_field, when_field), when_field)
        status = get_str(sale, "status", "status") or ""
        return NormalizedEvent(
            event_id=derive_event_id(object_id, event_type, status, occurred_at),
            event_type=event_type,
            resource_id=None,
            occurred_at=occurred_at,
        )

    def _parse_banking(self, body: bytes) -> NormalizedEvent:
        envelope = load_json_object(body, parse_float=Decimal)
        event_type = require_str(envelope, "type", "type")
        data = require_object(envelope, "data", "data")
        occurred_at = iso_to_utc(require_str(envelope, "created_at", "created_at"), "created_at")
        key = next((name for prefix, name in _BANKING_RESOURCE_KEYS if event_type.startswith(prefix)), "id")
        resource_id = _banking_id(data, key)
        status = get_str(data, "status", "data.status") or ""
        # Banking payloads' money format varies per type and is not needed to order them: only an integer is
        # taken as centavos, anything else is left unknown rather than failing an authentic event.
        amount_value = data.get("amount")
        amount = amount_value if isinstance(amount_value, int) and not isinstance(amount_value, bool) else None
        return NormalizedEvent(
            event_id=derive_event_id(resource_id, event_type, status, ""),
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=_value(banking_status(event_type)),
            amount=amount,
            currency=CURRENCY,
        )


def _fact_time_field(sale: JsonObject, status: str) -> str | None:
    preferred = {"paid": "approved_date", "refunded": "refunded_at", "chargedback": "refunded_at"}.get(status.lower())
    for field in (preferred, "updated_at", "created_at"):
        if field and isinstance(sale.get(field), str) and sale[field]:
            return field
    return None


def _banking_id(data: JsonObject, key: str) -> str:
    for name in (key, "id"):
        value = data.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and value:
            return value
    raise PayloadInvalid(f"missing field data.{key}")


driver: ProviderDriver = KiwifyDriver()
