"""Stripe: `Stripe-Signature: t=<ts>,v1=<hex>[,v1=<hex>...]` over `{t}.{raw body}`, HMAC-SHA256.

Signing, as stripe-python's `WebhookSignature` does it:
- the key is the whole `whsec_...` string as UTF-8 bytes (it is NOT base64-decoded, unlike Standard Webhooks);
- the header may carry several `v1` signatures (Stripe sends one per active secret while a secret is being
  rolled): any match passes. `v0` and unknown schemes are ignored;
- the timestamp must be within the tolerance. The SDK only bounds the past; we bound the future too (see
  `check_timestamp`).

Dedup: the event `id` (`evt_...`) is the same on every redelivery of an event, so it is the event id.

The payment, for the inbox, is the PaymentIntent: `payment_intent.*` events are about `data.object.id`;
charge, refund and dispute events belong to their intent (`data.object.payment_intent`). A charge made with the
Charges API has no intent (`payment_intent: null`, or no such field in objects of API versions before intents
existed: https://docs.stripe.com/api/charges/object, "payment_intent: nullable"): the charge is then its own
payment, and its refunds and disputes belong to it (`data.object.charge`, an id or an expanded charge). Other
events (customer, invoice, payout, setup_intent...) are stored with no resource and left to the processor to ignore
(their types are not routed).

Connect: an event from a connected account carries the top-level `account` (`acct_...`; "each event for a
connected account contains a top-level account attribute", https://docs.stripe.com/connect/webhooks). It becomes
the event's `account`, so the refetch asks within that account (`Stripe-Account`) and the payment records it.
Since API version 2025-04-30 events also carry `context` (Connect events carry both, organization events only
`context`: https://docs.stripe.com/changelog/basil/2025-04-30/additional-context-organization-events); `account`
wins when both are there, and a `context` alone is the account reference.

Thin events (event destinations with thin payloads: `"object": "v2.core.event"`,
https://docs.stripe.com/api/v2/core/events/object) carry no state, only `related_object {id, type, url}` and
the `context` needed to fetch it; they are signed with the same `Stripe-Signature` scheme. Their v1 types are the
snapshot names with a `v1.` prefix (`v1.payment_intent.succeeded`, https://docs.stripe.com/changelog/endive/
2026-09-30/thin-events-for-api-v1-resources-generally-available); `created` is an ISO-8601 time, not epoch seconds.
The resource is the related object when its type is one the processor routes (THIN_RESOURCE_TYPES); the client
resolves a charge, refund or dispute to its PaymentIntent. A thin event about anything else is stored with no
resource (and ignored, as its type is not routed).

An account reference of any other shape than `shared.providers.stripe.account` allows is PayloadInvalid: it will
be a request header.
"""

from __future__ import annotations

from typing import Any

from shared.providers._schemes import SchemeVerified, TimestampedListScheme
from shared.providers._signing import (
    JsonObject,
    epoch_to_utc,
    get_currency,
    get_int,
    get_str,
    iso_to_utc,
    load_json_object,
    require_int,
    require_object,
    require_str,
)
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
)
from shared.providers.stripe.account import is_account_id, is_account_reference
from shared.sub_account import SubAccount

# stripe-python's WebhookSignature: items split on ",", values as sent; `v0` and unknown schemes ignored.
AUTHENTICATION = TimestampedListScheme(
    header="stripe-signature", called="Stripe-Signature", separator=",", timestamp_key="t", scheme="v1", joiner="."
)
SIGNATURE_HEADER = AUTHENTICATION.header
SCHEME = AUTHENTICATION.scheme
compute_signature = AUTHENTICATION.sign  # the hex `v1` Stripe computes for (timestamp, body, secret)
THIN_EVENT_OBJECT = "v2.core.event"
# related_object.type of the thin events whose object the processor refetches (a payment, or what belongs to one)
THIN_RESOURCE_TYPES = frozenset({"payment_intent", "charge", "refund", "dispute"})


def _intent_reference(obj: JsonObject) -> str | None:
    """`payment_intent` of a charge, refund or dispute: an id, null, or (when expanded) an object with an id."""
    value: Any = obj.get("payment_intent")
    if isinstance(value, dict):
        return get_str(value, "id", "data.object.payment_intent.id")
    return get_str(obj, "payment_intent", "data.object.payment_intent")


def _charge_reference(obj: JsonObject) -> str | None:
    """`charge` of a refund or dispute: an id, or (when expanded) an object with an id."""
    value: Any = obj.get("charge")
    if isinstance(value, dict):
        return get_str(value, "id", "data.object.charge.id")
    return get_str(obj, "charge", "data.object.charge")


def _payment_of(kind: str | None, obj: JsonObject) -> str | None:
    """The payment a charge, refund or dispute belongs to: its intent; with none (the Charges API), the charge
    itself (a charge's own id, a refund's or dispute's `charge`)."""
    intent = _intent_reference(obj)
    if intent is not None:
        return intent
    if kind == "charge":
        return get_str(obj, "id", "data.object.id")
    if kind in ("refund", "dispute"):
        return _charge_reference(obj)
    return None


def _object_kind(event_type: str, obj: JsonObject) -> str | None:
    kind = get_str(obj, "object", "data.object.object")
    if kind is not None:
        return kind
    # `object` is always present in real events; infer it from the event type if it is not.
    for prefix, inferred in (
        ("payment_intent.", "payment_intent"),
        ("charge.dispute.", "dispute"),
        ("charge.refund.", "refund"),
        ("refund.", "refund"),
        ("charge.", "charge"),
    ):
        if event_type.startswith(prefix):
            return inferred
    return None


def _context(event: JsonObject) -> SubAccount | None:
    value = get_str(event, "context", "context")
    if value is None:
        return None
    if not is_account_reference(value):
        raise PayloadInvalid("field context is not a Stripe context (account ids acct_... joined by /)")
    return SubAccount(value, context=True)


def _account(event: JsonObject) -> SubAccount | None:
    """The connected account a snapshot event comes from: `account`, else (an organization's event) `context`."""
    value = get_str(event, "account", "account")
    if value is None:
        return _context(event)
    if not is_account_id(value):
        raise PayloadInvalid("field account is not a Stripe account id (acct_ and letters or digits)")
    return SubAccount(value)


def _parse_thin(event: JsonObject) -> NormalizedEvent:
    """A thin event: which object changed, in which account; no state (the processor refetches it)."""
    related = event.get("related_object")
    resource_id: str | None = None
    if related is not None:
        if not isinstance(related, dict):
            raise PayloadInvalid("field related_object must be an object")
        if get_str(related, "type", "related_object.type") in THIN_RESOURCE_TYPES:
            resource_id = require_str(related, "id", "related_object.id")
    return NormalizedEvent(
        event_id=require_str(event, "id", "id"),
        event_type=require_str(event, "type", "type"),
        resource_id=resource_id,
        occurred_at=iso_to_utc(require_str(event, "created", "created"), "created"),
        account=_context(event),
    )


class StripeDriver(SchemeVerified):
    name: str = "stripe"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        event = load_json_object(request.body)
        if event.get("object") == THIN_EVENT_OBJECT:
            return _parse_thin(event)
        event_id = require_str(event, "id", "id")
        event_type = require_str(event, "type", "type")
        occurred_at = epoch_to_utc(require_int(event, "created", "created"), "created")
        obj = require_object(require_object(event, "data", "data"), "object", "data.object")
        kind = _object_kind(event_type, obj)

        resource_id: str | None
        if event_type.startswith("payment_intent."):
            resource_id = require_str(obj, "id", "data.object.id")
        elif event_type.startswith(("charge.", "refund.")):
            resource_id = _payment_of(kind, obj)  # the intent, or the Charges-API charge that is its own payment
        elif kind == "payment_intent":
            resource_id = require_str(obj, "id", "data.object.id")
        else:
            resource_id = None

        provider_status: str | None
        amount: int | None
        if kind == "charge":
            amount = get_int(obj, "amount", "data.object.amount")
            refunded_amount = get_int(obj, "amount_refunded", "data.object.amount_refunded") or 0
            if obj.get("refunded") is True:
                provider_status = "refunded"
            elif refunded_amount > 0:
                provider_status = "partially_refunded"
            else:
                provider_status = get_str(obj, "status", "data.object.status")
        elif kind == "dispute":
            # A dispute's own status (needs_response, won, lost...) is not the payment's; the processor
            # refetches the intent for the outcome. Its `amount` is the disputed amount, which may be less
            # than the payment's, so it is not reported as the payment's amount.
            provider_status = "disputed"
            amount = None
        elif kind == "refund":
            # A refund's status ("succeeded") and amount (the refunded part) describe the refund, not the
            # payment: reporting them would read as "payment succeeded, amount = refund". The processor
            # refetches the intent and its latest charge instead.
            provider_status = None
            amount = None
        else:
            provider_status = get_str(obj, "status", "data.object.status")
            amount = get_int(obj, "amount", "data.object.amount")

        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=provider_status,
            amount=amount,
            currency=get_currency(obj, "currency", "data.object.currency"),
            account=_account(event),
        )


driver: ProviderDriver = StripeDriver()
