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

What the HMAC authenticates: the raw body, and nothing else (the `body` trust class). Every header beside the HMAC
(topic, event id, webhook id, triggered-at, shop domain) can be changed by whoever holds a captured delivery, so
none of them is an event's identity or time:
- Dedup: derived from the body alone, `derive_event_id(resource, kind, status, time)`, where the kind is what the
  body is (an order, a transaction or a dispute: read from its fields, not from the topic header). A redelivery
  carries the same body, so the same key; a captured body posted again under any other event id, topic or
  triggered-at is a duplicate of itself. A body that is none of the three (products, customers...) is keyed by its
  digest (the body is the only authenticated part). Shopify's own `X-Shopify-Event-Id` is not the key: it is not
  signed.
- Time: the body's own, when the object last changed: an order's `updated_at`, a dispute's latest of
  `finalized_on`, `evidence_sent_on` and `initiated_at`, a transaction's `processed_at` or `created_at`.
  `X-Shopify-Triggered-At` is not signed: a captured `paid` order posted with a triggered-at in 2099 must not
  become the payment's watermark.
- The topic header still names the event type (what is routed and shown; `unknown` without one). It cannot change
  what a body means: the body's kind decides how it is read, and a body posted under another topic is the same
  event (the same key).

The payment is the order:
- `orders/*` topics carry the order: resource = `id`, status = `financial_status`, amount = `total_price`
  (a decimal string, converted to minor units by the currency's exponent), currency = `currency`;
- `order_transactions/*` carry a transaction: resource = `order_id`; a transaction alone does not say what the
  order's status became (a refund may be partial), so its mapping is informational and the processor routes only
  the order topics, whose `financial_status` summarises every transaction;
- `disputes/*` carry a dispute: resource = `order_id`, status from the dispute's `status`; the disputed amount is
  not the order's, so it is not reported.
Other topics (products, customers...) are stored with no resource.

Ordering: Shopify's Admin API is not refetched; events are ordered by the body's time (above; ISO-8601 with an
offset, kept to microseconds).

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

from datetime import datetime
from typing import Any

from shared.providers._money import decimal_to_minor_units
from shared.providers._schemes import HmacScheme, SchemeVerified
from shared.providers._signing import (
    JsonObject,
    get_currency,
    get_id,
    get_str,
    iso_to_utc,
    load_json_object,
)
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
    body_digest_id,
    derive_event_id,
)

HMAC_HEADERS = ("x-shopify-hmac-sha256", "shopify-hmac-sha256")
TOPIC_HEADERS = ("x-shopify-topic", "shopify-topic")
EVENT_ID_HEADERS = ("x-shopify-event-id", "shopify-event-id")
WEBHOOK_ID_HEADER = "x-shopify-webhook-id"
TRIGGERED_AT_HEADERS = ("x-shopify-triggered-at", "shopify-triggered-at")
SHOP_DOMAIN_HEADER = "x-shopify-shop-domain"
API_VERSION_HEADER = "x-shopify-api-version"

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


# The base64 HMAC-SHA256 of the raw body, in either header family (`x-shopify-*` first).
AUTHENTICATION = HmacScheme(headers=HMAC_HEADERS, encoding="base64", described_as="X-Shopify-Hmac-Sha256 header")


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


class ShopifyDriver(SchemeVerified):
    name: str = "shopify"
    authentication = AUTHENTICATION
    replay_headers: tuple[str, ...] = (
        *AUTHENTICATION.replay_headers,
        *TOPIC_HEADERS,
        *EVENT_ID_HEADERS,
        WEBHOOK_ID_HEADER,
        *TRIGGERED_AT_HEADERS,
        SHOP_DOMAIN_HEADER,
        API_VERSION_HEADER,
    )

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        # Every Shopify delivery names its topic; without one (a changed copy) the body is still what it is, under
        # the same key, with a type no route applies.
        topic = _first_header(request, TOPIC_HEADERS) or NO_TOPIC
        body = load_json_object(request.body)

        kind = body_kind(body)
        resource_id: str | None = None
        provider_status: str | None = None
        amount: int | None = None
        currency: str | None = None
        if kind == KIND_ORDER:
            resource_id = get_id(body, "id", "id")
            financial = get_str(body, "financial_status", "financial_status")
            provider_status = FINANCIAL_STATUS.get(financial) if financial else None
            currency = get_currency(body, "currency", "currency")
            amount = _minor_units(body, "total_price", currency, "total_price")
        elif kind == KIND_TRANSACTION:
            resource_id = get_id(body, "order_id", "order_id")
            provider_status = transaction_status(get_str(body, "kind", "kind"), get_str(body, "status", "status"))
        elif kind == KIND_DISPUTE:
            resource_id = get_id(body, "order_id", "order_id")
            dispute = get_str(body, "status", "status")
            provider_status = DISPUTE_STATUS.get(dispute) if dispute else None
            currency = get_currency(body, "currency", "currency")  # the amount is the disputed one: not reported

        if kind == KIND_OTHER:
            occurred_at = _other_time(request, body)
            event_id = body_digest_id(request.body)
        else:
            occurred_at = _body_time(body, kind)
            event_id = derive_event_id(resource_id or "", kind, provider_status or "", occurred_at)
        return NormalizedEvent(
            event_id=event_id,
            event_type=topic,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
        )


NO_TOPIC = "unknown"  # the event type of a delivery without a topic header (routed nowhere)
KIND_ORDER = "order"
KIND_TRANSACTION = "transaction"
KIND_DISPUTE = "dispute"
KIND_OTHER = "other"
# The fields, most specific first, whose latest value is when a dispute last changed.
_DISPUTE_TIMES = ("finalized_on", "evidence_sent_on", "initiated_at")


def body_kind(body: JsonObject) -> str:
    """What the signed body is, from its own fields: an order has `financial_status`; a transaction and a dispute
    name their `order_id`, a transaction with its `kind`, a dispute with its `reason` or `initiated_at`."""
    if "financial_status" in body:
        return KIND_ORDER
    if "order_id" in body:
        if "kind" in body:
            return KIND_TRANSACTION
        if "reason" in body or "initiated_at" in body:
            return KIND_DISPUTE
    return KIND_OTHER


def _body_time(body: JsonObject, kind: str) -> datetime:
    """When the object last changed, by the body's own fields (see the module doc)."""
    if kind == KIND_DISPUTE:
        times = [iso_to_utc(text, name) for name in _DISPUTE_TIMES if (text := get_str(body, name, name))]
        if times:
            return max(times)
        raise PayloadInvalid("no event time: the dispute has none of " + ", ".join(_DISPUTE_TIMES))
    names = ("processed_at", "created_at") if kind == KIND_TRANSACTION else ("updated_at", "created_at")
    for name in names:
        text = get_str(body, name, name)
        if text is not None:
            return iso_to_utc(text, name)
    raise PayloadInvalid(f"no event time: neither {names[0]} nor {names[1]}")


def _other_time(request: WebhookRequest, body: JsonObject) -> datetime:
    """The time of a body that is no payment's: its `updated_at` or `created_at`, else `X-Shopify-Triggered-At`
    (GDPR topics' bodies carry no time). Unsigned there, and harmless: such an event orders nothing (it is about
    no payment), its key is the body's digest, and the ingest clamps a time later than receipt."""
    for name in ("updated_at", "created_at"):
        text = get_str(body, name, name)
        if text is not None:
            return iso_to_utc(text, name)
    triggered = _first_header(request, TRIGGERED_AT_HEADERS)
    if triggered:
        return iso_to_utc(triggered.strip(), "X-Shopify-Triggered-At")
    raise PayloadInvalid("no event time: neither updated_at nor X-Shopify-Triggered-At")


driver: ProviderDriver = ShopifyDriver()
