"""Shopify: `X-Shopify-Hmac-Sha256`, the base64 HMAC-SHA256 of the raw body keyed with the app's client secret.

Signing, as `@shopify/shopify-api` (shopify-app-js) validates it:
- the key is the app's client secret (API secret key) as UTF-8; the signed content is the raw body only;
- the header is the base64 digest. It is compared as text against the canonical encoding of the expected MAC
  (as `standard` does), never after decoding;
- no timestamp is signed: there is no tolerance to enforce;
- "events" deliveries (Shopify's newer event subscriptions) carry the same values under `shopify-*` names
  (`shopify-hmac-sha256`, `shopify-topic`, `shopify-event-id`, `shopify-triggered-at`) beside or instead of the
  `x-shopify-*` ones; both families are read, `x-shopify-*` first.
- Rotation: after the client secret is rotated Shopify may keep signing with the old one for up to an hour; the
  previous secret verifies meanwhile.

Dedup: `X-Shopify-Event-Id` ("the same value across more than one webhook indicates a duplicate", Shopify's
duplicate-webhook guide). Without it, `X-Shopify-Webhook-Id` (documented as unique per delivery: if it changes on
a retry, the retry is stored twice, and the occurred_at ordering below makes the second copy `ignored`), and
without either the id is derived from the business fact (order, topic, status, triggered-at).

The payment is the order:
- `orders/*` topics carry the order: resource = `id`, status = `financial_status`, amount = `total_price`
  (a decimal string, converted to minor units by the currency's exponent), currency = `currency`;
- `order_transactions/*` carry a transaction: resource = `order_id`; a transaction alone does not say what the
  order's status became (a refund may be partial), so its mapping is informational and the processor routes only
  the order topics, whose `financial_status` summarises every transaction;
- `disputes/*` carry a dispute: resource = `order_id`, status from the dispute's `status`; the disputed amount is
  not the order's, so it is not reported.
Other topics (products, customers...) are stored with no resource.

Ordering: Shopify's Admin API is not refetched; events are ordered by `X-Shopify-Triggered-At` (when the event
fired; ISO-8601 UTC with up to nanoseconds, kept to microseconds), falling back to the body's `updated_at`.

Canonical statuses (`provider_status` carries the canonical value; the processor applies it):

| order financial_status      | canonical          |
|-----------------------------|--------------------|
| pending, partially_paid     | pending            |
| authorized                  | authorized         |
| paid                        | paid               |
| partially_refunded          | partially_refunded |
| refunded                    | refunded           |
| voided                      | canceled           |
| expired                     | failed             |

| dispute status                         | canonical    |
|----------------------------------------|--------------|
| needs_response, under_review           | disputed     |
| won                                    | paid         |
| lost, accepted                         | charged_back |
| charge_refunded                        | refunded     |
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from datetime import datetime
from typing import Any

from shared.providers._money import decimal_to_minor_units
from shared.providers._signing import (
    JsonObject,
    constant_time_equals,
    get_currency,
    get_id,
    get_str,
    iso_to_utc,
    load_json_object,
    usable_secrets,
)
from shared.providers.base import (
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

HMAC_HEADERS = ("x-shopify-hmac-sha256", "shopify-hmac-sha256")
TOPIC_HEADERS = ("x-shopify-topic", "shopify-topic")
EVENT_ID_HEADERS = ("x-shopify-event-id", "shopify-event-id")
WEBHOOK_ID_HEADER = "x-shopify-webhook-id"
TRIGGERED_AT_HEADERS = ("x-shopify-triggered-at", "shopify-triggered-at")
SHOP_DOMAIN_HEADER = "x-shopify-shop-domain"
API_VERSION_HEADER = "x-shopify-api-version"
API_VERSION = "2025-01"  # only written into sample deliveries

FINANCIAL_STATUS: dict[str, str] = {
    "pending": "pending",
    "partially_paid": "pending",
    "authorized": "authorized",
    "paid": "paid",
    "partially_refunded": "partially_refunded",
    "refunded": "refunded",
    "voided": "canceled",
    "expired": "failed",
}
# The topics whose body is a whole order (with financial_status) or a dispute: what the processor applies.
ORDER_TOPICS: tuple[str, ...] = (
    "orders/create",
    "orders/updated",
    "orders/paid",
    "orders/cancelled",
    "orders/fulfilled",
    "orders/partially_fulfilled",
)
DISPUTE_TOPICS: tuple[str, ...] = ("disputes/create", "disputes/update")
PAYMENT_TOPICS: tuple[str, ...] = (*ORDER_TOPICS, *DISPUTE_TOPICS)
DISPUTE_STATUS: dict[str, str] = {
    "needs_response": "disputed",
    "under_review": "disputed",
    "won": "paid",
    "lost": "charged_back",
    "accepted": "charged_back",
    "charge_refunded": "refunded",
}


def compute_signature(body: bytes, secret: str) -> str:
    """The base64 X-Shopify-Hmac-Sha256 value for `body` signed with `secret`."""
    return base64.b64encode(hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()).decode("ascii")


def transaction_status(kind: str | None, status: str | None) -> str | None:
    """The canonical status an order transaction implies, when it implies one (informational: see the module doc)."""
    if status == "success":
        return {"sale": "paid", "capture": "paid", "authorization": "authorized", "void": "canceled"}.get(kind or "")
    if status in {"failure", "error"} and kind in {"sale", "authorization"}:
        return "failed"
    return None


def _first_header(request: WebhookRequest, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = request.header(name)
        if value:
            return value
    return None


def _minor_units(obj: JsonObject, key: str, currency: str | None, where: str) -> int | None:
    value: Any = obj.get(key)
    if value is None or currency is None:
        return None
    try:
        return decimal_to_minor_units(value, currency)
    except ValueError:
        raise PayloadInvalid(f"field {where} is not a decimal amount") from None


class ShopifyDriver:
    name: str = "shopify"
    replay_headers: tuple[str, ...] = (
        *HMAC_HEADERS,
        *TOPIC_HEADERS,
        *EVENT_ID_HEADERS,
        WEBHOOK_ID_HEADER,
        *TRIGGERED_AT_HEADERS,
        SHOP_DOMAIN_HEADER,
        API_VERSION_HEADER,
    )
    replay_query: tuple[str, ...] = ()  # nothing in the URL is signed
    secret_body_fields: tuple[str, ...] = ()
    signs_timestamp: bool = False

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        candidates = usable_secrets(secrets, self.name)
        signature = _first_header(request, HMAC_HEADERS)
        if not signature:
            raise SignatureInvalid("missing X-Shopify-Hmac-Sha256 header")
        matched = False
        for secret in candidates:  # no early exit: each candidate compared in constant time
            matched |= constant_time_equals(compute_signature(request.body, secret), signature.strip())
        if not matched:
            raise SignatureInvalid("no signature matches")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        topic = _first_header(request, TOPIC_HEADERS)
        if not topic:
            raise PayloadInvalid("missing X-Shopify-Topic header")
        body = load_json_object(request.body)

        resource_id: str | None
        provider_status: str | None
        amount: int | None = None
        currency: str | None = None
        if topic.startswith("orders/"):
            resource_id = get_id(body, "id", "id")
            financial = get_str(body, "financial_status", "financial_status")
            provider_status = FINANCIAL_STATUS.get(financial) if financial else None
            currency = get_currency(body, "currency", "currency")
            amount = _minor_units(body, "total_price", currency, "total_price")
        elif topic.startswith("order_transactions/"):
            resource_id = get_id(body, "order_id", "order_id")
            provider_status = transaction_status(get_str(body, "kind", "kind"), get_str(body, "status", "status"))
        elif topic.startswith("disputes/"):
            resource_id = get_id(body, "order_id", "order_id")
            dispute = get_str(body, "status", "status")
            provider_status = DISPUTE_STATUS.get(dispute) if dispute else None
            currency = get_currency(body, "currency", "currency")  # the amount is the disputed one: not reported
        else:
            resource_id, provider_status = None, None

        occurred_at = self._occurred_at(request, body)
        event_id = _first_header(request, EVENT_ID_HEADERS) or request.header(WEBHOOK_ID_HEADER)
        if not event_id:
            event_id = derive_event_id(resource_id or "", topic, provider_status or "", occurred_at)
        return NormalizedEvent(
            event_id=event_id,
            event_type=topic,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
        )

    @staticmethod
    def _occurred_at(request: WebhookRequest, body: JsonObject) -> datetime:
        triggered = _first_header(request, TRIGGERED_AT_HEADERS)
        if triggered:
            return iso_to_utc(triggered.strip(), "X-Shopify-Triggered-At")
        updated = get_str(body, "updated_at", "updated_at") or get_str(body, "created_at", "created_at")
        if updated is None:
            raise PayloadInvalid("no event time: neither X-Shopify-Triggered-At nor updated_at")
        return iso_to_utc(updated, "updated_at")

    def fallback_event_id(self, request: WebhookRequest) -> str:
        return (
            _first_header(request, EVENT_ID_HEADERS)
            or request.header(WEBHOOK_ID_HEADER)
            or body_digest_id(request.body)
        )

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """A delivery as Shopify sends it. The topic is read from the body: a body with `financial_status` is
        `orders/updated`, one with a dispute `reason` is `disputes/update`, anything else `shop/update`."""
        triggered = utc_from_epoch(now).isoformat(timespec="microseconds").replace("+00:00", "Z")
        digest = hashlib.sha256(body).hexdigest()
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json",
                "user-agent": "Shopify-Captain-Hook",
                HMAC_HEADERS[0]: compute_signature(body, secret),
                TOPIC_HEADERS[0]: _topic(body),
                EVENT_ID_HEADERS[0]: event_id or str(uuid.uuid5(uuid.NAMESPACE_URL, digest)),
                WEBHOOK_ID_HEADER: str(uuid.uuid5(uuid.NAMESPACE_OID, f"{digest}:{now}")),
                TRIGGERED_AT_HEADERS[0]: triggered,
                SHOP_DOMAIN_HEADER: "inbox-dev.myshopify.com",
                API_VERSION_HEADER: API_VERSION,
            },
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """An order (or, for `disputed`/`charged_back`, a dispute) for the canonical `status`; see SAMPLE_STATUSES.

        Shopify order ids are integers: a `resource_id` made of digits is sent as a number, anything else as given.
        """
        try:
            kind, provider_value = _SAMPLES[status]
        except KeyError:
            supported = ", ".join(sorted(_SAMPLES))
            raise ValueError(f"no Shopify sample for status {status!r}; supported: {supported}") from None
        order_id: int | str = int(resource_id) if resource_id.isdigit() else resource_id
        when = utc_from_epoch(occurred_at).isoformat()
        price = f"{amount // 100}.{amount % 100:02d}"
        if kind == "dispute":
            payload: JsonObject = {
                "id": 1052608616,
                "order_id": order_id,
                "type": "chargeback",
                "amount": price,
                "currency": "USD",
                "reason": "fraudulent",
                "network_reason_code": "4837",
                "status": provider_value,
                "evidence_due_by": when,
                "evidence_sent_on": None,
                "finalized_on": None,
                "initiated_at": when,
            }
        else:
            payload = {
                "id": order_id,
                "admin_graphql_api_id": f"gid://shopify/Order/{resource_id}",
                "name": "#1001",
                "created_at": when,
                "updated_at": when,
                "currency": "USD",
                "presentment_currency": "USD",
                "financial_status": provider_value,
                "fulfillment_status": None,
                "subtotal_price": price,
                "total_price": price,
                "total_tax": "0.00",
                "test": True,
            }
        return json.dumps(payload).encode("utf-8")


def _topic(body: bytes) -> str:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "shop/update"
    if not isinstance(payload, dict):
        return "shop/update"
    if "financial_status" in payload:
        return "orders/updated"
    if "reason" in payload and "order_id" in payload:
        return "disputes/update"
    return "shop/update"


# canonical status -> (sample kind, Shopify status value)
_SAMPLES: dict[str, tuple[str, str]] = {
    "pending": ("order", "pending"),
    "authorized": ("order", "authorized"),
    "paid": ("order", "paid"),
    "partially_refunded": ("order", "partially_refunded"),
    "refunded": ("order", "refunded"),
    "canceled": ("order", "voided"),
    "failed": ("order", "expired"),
    "disputed": ("dispute", "needs_response"),
    "charged_back": ("dispute", "lost"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)

driver: ProviderDriver = ShopifyDriver()
