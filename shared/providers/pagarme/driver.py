"""Pagar.me (Brazil): v5 webhooks (RS256, asymmetric) and the legacy <=v4 postbacks (HMAC-SHA1 with the API key).

Authentication, as Pagar.me's own plugins verify it (pagarme/ecommerce-module-core `WebhookValidatorService`,
used by pagarme/woocommerce and pagarme/magento2; pagarme-ruby `PagarMe::Postback`, pagarme-js `postback`):
- v5: header `X-Webhook-Asymmetric-Signature: alg=RS256; kid=<key id>; signature=<base64url>`, an RSA PKCS#1
  v1.5 / SHA-256 signature of the raw body by Pagar.me's private key. The public keys are the JWKS at
  `https://hubapi.pagar.me/.well-known/jwks.json` (`kty=RSA`, `use=sig`), selected by `kid`. Rotation is the
  JWKS's business: an unknown `kid` refetches it (at most every 5 minutes). No shared secret is involved, so
  `SigningSecrets` is not used on this path; `INBOX_PAGARME_JWKS` (an inline JWKS) replaces the URL for tests and
  the local stack, `INBOX_PAGARME_JWKS_URL` points elsewhere. Verification needs `cryptography` (lazy import;
  without it: 5xx "not configured", see `_public_keys.py`).
- legacy postbacks: header `X-Hub-Signature: sha1=<hex>`, HMAC-SHA1 of the raw (form-urlencoded) body keyed with
  the account's API key (`ak_...`), which is the configured secret (current or previous, for a rotation). Only
  `sha1` is accepted: it is what Pagar.me sends.
- neither scheme signs a timestamp: a captured delivery can be replayed; the dedup key makes that harmless.

The body decides the format: a JSON object is a v5 hook, anything else a legacy form postback.

Dedup:
- v5: the hook `id` (`hook_...`). Pagar.me's own modules deduplicate on it (ecommerce-module-core looks the hook
  up by its Pagar.me id and refuses it as "already handled"; the WooCommerce plugin keys its marker on it), so it
  is the same on every redelivery of a hook.
- legacy: no envelope id (the postback's `id` is the transaction's): `derive_event_id(transaction id, event,
  current_status, transaction[date_updated])`; without a date, the transition `old_status>current_status`.

The payment is the charge (`ch_...`): `charge.*` events are about `data.id`; `order.*` events about the order's
last charge (`data.charges[-1].id`; the order id when it has none). Legacy postbacks are about the transaction
(numeric id). The processor refetches each of them (`shared/providers/pagarme/client.py`).

Time: v5 `created_at` is ISO-8601; Pagar.me writes it with `Z`, and the nested objects' naive times are UTC too
(in Pagar.me's own fixtures a naive `updated_at` precedes the hook's `...Z` time by seconds, which a Sao Paulo
reading would put three hours later). A naive value is read as UTC. Precision is kept (up to 7 fractional digits
are sent; Python keeps microseconds).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from shared.payments.status import PaymentStatus
from shared.providers._forms import form_value, parse_form
from shared.providers._public_keys import (
    RS256,
    CachedKeySource,
    KeySource,
    StaticKeySource,
    b64url_decode,
    fetch_json_keys,
    parse_jwks,
    verify_any,
)
from shared.providers._schemes import HmacScheme
from shared.providers._signing import (
    JsonObject,
    get_currency,
    get_int,
    get_str,
    load_json_object,
    require_object,
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
    derive_event_id,
    utc_from_epoch,
)

ASYMMETRIC_HEADER = "x-webhook-asymmetric-signature"
HUB_HEADER = "x-hub-signature"
HUB_SCHEME = "sha1"
DEFAULT_JWKS_URL = "https://hubapi.pagar.me/.well-known/jwks.json"
CURRENCY = "BRL"
LEGACY_OBJECT = "transaction"

S = PaymentStatus

# v5 charge `status` -> canonical, as the webhook states it. The refetch refines it (authorizations, refunds:
# see shared/providers/pagarme/client.py), which is what the processor applies.
CHARGE_STATUS: dict[str, PaymentStatus] = {
    "pending": S.PENDING,
    "processing": S.PENDING,
    "underpaid": S.PENDING,  # a boleto/Pix paid for less than the charge: not settled
    "paid": S.PAID,
    "overpaid": S.PAID,
    "canceled": S.CANCELED,
    "refunded": S.REFUNDED,
    "failed": S.FAILED,
    "chargedback": S.CHARGED_BACK,
}
# <=v4 transaction `status` / `current_status` -> canonical
TRANSACTION_STATUS: dict[str, PaymentStatus] = {
    "processing": S.PENDING,
    "waiting_payment": S.PENDING,
    "analyzing": S.PENDING,
    "pending_review": S.PENDING,
    "authorized": S.AUTHORIZED,
    "paid": S.PAID,
    "pending_refund": S.PAID,  # the refund was asked for; the money has not left yet
    "refunded": S.REFUNDED,
    "refused": S.FAILED,
    "chargedback": S.CHARGED_BACK,
}


def canonical_status(status: str | None, *, legacy: bool = False) -> str | None:
    """The canonical status (its value) a webhook's status word maps to; None for one nobody maps."""
    found = (TRANSACTION_STATUS if legacy else CHARGE_STATUS).get(status or "")
    return found.value if found is not None else None


# Legacy postbacks: `X-Hub-Signature: sha1=<hex>`, HMAC-SHA1 of the raw body keyed with the API key. Another
# scheme word than `sha1` (or none) is refused as malformed.
HUB_AUTHENTICATION = HmacScheme(
    headers=(HUB_HEADER,), algorithm="sha1", prefix=f"{HUB_SCHEME}=", unreadable="malformed header"
)


def parse_asymmetric_header(value: str) -> tuple[str, str, bytes]:
    """`alg=RS256; kid=...; signature=...` -> (alg, kid, signature bytes). Unknown items are ignored."""
    items: dict[str, str] = {}
    for part in value.split(";"):
        key, sep, item_value = part.strip().partition("=")
        if not sep:
            continue
        if key in items:  # a repeated item: which one was meant is ambiguous
            raise SignatureInvalid("malformed header")
        items[key] = item_value.strip()
    alg, kid, signature = items.get("alg"), items.get("kid"), items.get("signature")
    if not alg or not kid or not signature:
        raise SignatureInvalid("malformed header")
    try:
        raw = b64url_decode(signature)
    except ValueError:
        raise SignatureInvalid("malformed header") from None
    return alg, kid, raw


def jwks_variables(provider: str) -> tuple[str, str]:
    """The variables that replace a Pagar.me-platform provider's JWKS: (inline JWKS, JWKS URL)."""
    return f"INBOX_{provider.upper()}_JWKS", f"INBOX_{provider.upper()}_JWKS_URL"


def default_key_source(environ: dict[str, str] | None = None, *, provider: str = "pagarme") -> KeySource:
    """Pagar.me's JWKS: inline from INBOX_<PROVIDER>_JWKS, else fetched from INBOX_<PROVIDER>_JWKS_URL or the
    default (Pagar.me's hub signs the hooks of every account on its platform, Stone's included)."""
    env = dict(os.environ) if environ is None else environ
    inline_variable, url_variable = jwks_variables(provider)
    inline = env.get(inline_variable, "").strip()
    if inline:
        return StaticKeySource(parse_jwks(inline))
    url = env.get(url_variable, "").strip() or DEFAULT_JWKS_URL
    return CachedKeySource(lambda: fetch_json_keys(url))


def parse_pagarme_time(text: str, where: str) -> datetime:
    """ISO-8601 as aware UTC; a naive value is UTC (see the module notes)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise PayloadInvalid(f"field {where} is not an ISO-8601 timestamp") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _last_charge(data: JsonObject) -> JsonObject | None:
    charges: Any = data.get("charges")
    if charges is None:
        return None
    if not isinstance(charges, list):
        raise PayloadInvalid("field data.charges must be an array")
    objects = [charge for charge in charges if isinstance(charge, dict)]
    return objects[-1] if objects else None


class PagarmeDriver(DriverDefaults):
    """Pagar.me's platform. `name` is the provider id it serves: another gateway built on the same platform (Stone's
    Connect Stone accounts are Pagar.me accounts, shared/providers/stone/driver.py) is this driver under its own name,
    with its own key variables (`jwks_variables(name)`) and its own secrets."""

    name: str = "pagarme"
    # Signatures, not secrets: both are kept so that a stored event can be re-verified.
    replay_headers: tuple[str, ...] = (ASYMMETRIC_HEADER, *HUB_AUTHENTICATION.replay_headers)

    def __init__(
        self, key_source: KeySource | None = None, *, clock: Callable[[], float] = time.time, name: str = "pagarme"
    ) -> None:
        self._key_source = key_source
        self._clock = clock
        self.name = name

    @property
    def key_source(self) -> KeySource:
        if self._key_source is None:
            self._key_source = default_key_source(provider=self.name)
        return self._key_source

    # ------------------------------------------------------------------------------------------------ verify

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        asymmetric = request.header(ASYMMETRIC_HEADER)
        if asymmetric:
            self._verify_asymmetric(request.body, asymmetric)
            return
        if not request.header(HUB_HEADER):
            raise SignatureInvalid("missing X-Webhook-Asymmetric-Signature or X-Hub-Signature header")
        HUB_AUTHENTICATION.verify(request, secrets, provider=self.name, now=now, tolerance_seconds=tolerance_seconds)

    def _verify_asymmetric(self, body: bytes, header: str) -> None:
        alg, kid, signature = parse_asymmetric_header(header)
        if alg != RS256:
            raise SignatureInvalid("unsupported signature algorithm")
        source = self.key_source
        keys = [key for key in source.current() if key.kid == kid and key.algorithm == RS256]
        if not keys:  # a key Pagar.me rotated in since the set was cached
            keys = [key for key in source.refreshed() if key.kid == kid and key.algorithm == RS256]
        if not keys:
            raise SignatureInvalid("unknown signing key")
        if not verify_any(keys, signature, body):
            raise SignatureInvalid("no signature matches")

    # ------------------------------------------------------------------------------------------------- parse

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        if request.body.lstrip().startswith(b"{"):
            return self._parse_v5(request.body)
        return self._parse_legacy(request.body)

    def _parse_v5(self, body: bytes) -> NormalizedEvent:
        hook = load_json_object(body)
        event_id = require_str(hook, "id", "id")
        event_type = require_str(hook, "type", "type")
        occurred_at = parse_pagarme_time(require_str(hook, "created_at", "created_at"), "created_at")
        data = require_object(hook, "data", "data")
        kind = event_type.split(".", 1)[0]

        charge: JsonObject | None
        where = "data"
        if kind == "charge":
            charge = data
        elif kind == "order":
            charge = _last_charge(data)
            where = "data.charges[-1]"
        else:
            charge = None

        if charge is not None:
            resource_id: str | None = require_str(charge, "id", f"{where}.id")
            provider_status = canonical_status(get_str(charge, "status", f"{where}.status"))
            amount = get_int(charge, "amount", f"{where}.amount")
            currency = get_currency(charge, "currency", f"{where}.currency")
        elif kind == "order":  # an order with no charge yet: the order stands for its payment
            resource_id = require_str(data, "id", "data.id")
            provider_status = canonical_status(get_str(data, "status", "data.status"))
            amount = get_int(data, "amount", "data.amount")
            currency = get_currency(data, "currency", "data.currency")
        else:  # customer.*, card.*, subscription.*...: stored, not about a payment
            resource_id, provider_status, amount, currency = None, None, None, None
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
        )

    def _parse_legacy(self, body: bytes) -> NormalizedEvent:
        fields = parse_form(body)
        object_id = form_value(fields, "id", required=True)
        assert object_id is not None
        event_type = form_value(fields, "event", required=True)
        assert event_type is not None
        current = form_value(fields, "current_status", required=True)
        assert current is not None
        kind = form_value(fields, "object") or LEGACY_OBJECT
        updated = form_value(fields, f"{kind}[date_updated]")
        if updated is not None:
            occurred_at = parse_pagarme_time(updated, f"{kind}[date_updated]")
            fact_time = occurred_at.isoformat()
        else:
            created = form_value(fields, f"{kind}[date_created]")
            occurred_at = (
                parse_pagarme_time(created, f"{kind}[date_created]") if created else utc_from_epoch(self._clock())
            )
            # The same transition is one fact: its redeliveries share the key, whatever time they arrive.
            fact_time = f"from:{form_value(fields, 'old_status') or ''}"
        amount_text = form_value(fields, f"{kind}[amount]")
        amount: int | None = None
        if amount_text is not None:
            if not (amount_text.isascii() and amount_text.isdigit()):
                raise PayloadInvalid(f"field {kind}[amount] must be an integer")
            amount = int(amount_text)
        is_payment = kind == LEGACY_OBJECT
        return NormalizedEvent(
            event_id=derive_event_id(object_id, event_type, current, fact_time),
            event_type=event_type,
            resource_id=object_id if is_payment else None,
            occurred_at=occurred_at,
            provider_status=canonical_status(current, legacy=True),
            amount=amount if is_payment else None,
            currency=CURRENCY if is_payment else None,
        )


driver: ProviderDriver = PagarmeDriver()
