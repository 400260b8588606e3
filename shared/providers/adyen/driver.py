"""Adyen (standard payment webhooks, JSON): an HMAC inside every NotificationRequestItem, not over the body.

Signing, as Adyen documents it and its libraries (adyen-python-api-library `Adyen.util`) implement it:
- each item carries `additionalData.hmacSignature` = base64(HMAC-SHA256(key, signing string)), where the key is
  the HMAC key from the Customer Area, HEX-DECODED (a key that is not hex is a configuration error), and the
  signing string is
  `pspReference:originalReference:merchantAccountCode:merchantReference:amount.value:amount.currency:eventCode:success`
  with an absent field as the empty string;
- EVERY item of a delivery must verify (the Python library only checks the first one); the signature is compared
  as base64 text, in constant time, with the current and the previous key (rotation);
- nothing is timestamped and the raw body is not what is signed: a re-serialized body verifies as well as the
  original. There is no tolerance to enforce.

Several events per delivery: `notificationItems` is an array, and each NotificationRequestItem is an event of its
own (`parse_many`): the ingest stores one inbox item per item, all of them or none (shared/ingest_batch.py), and a
retry stores nothing twice. An item that cannot be read makes the whole delivery one `failed` event (body kept,
reason naming the item), answered 2xx like any verified body that cannot be parsed.

Dedup: Adyen has no event id. A redelivery repeats `pspReference` + `eventCode` + `success` (the documented way to
recognise a duplicate), so the event id is `derive_event_id(pspReference, eventCode, success, "")`. Adyen retries
an unaccepted webhook for up to 30 days.

Accepting: Adyen used to require the answer `[accepted]`; since 2024 any 2xx accepts a webhook (Adyen's "accept
with 2XX" change; the Node library's AccountNotificationResponse: "Respond with any 2xx"). The answer is
`{"received": true, "notificationResponse": "[accepted]"}` with 200 (Adyen's NotificationResponse field,
`accept_fields`); it must come within 10 s.

The payment is `originalReference` (a modification points at the payment it modifies) or `pspReference`.
Time: `eventDate` (ISO-8601 with offset, seconds or milliseconds) is read, but it is NOT in the signing string (the
`signed_fields` trust class): a captured item posted again after its inbox item's retention with a future
`eventDate` must not become the payment's watermark: the ingest caps it at the receipt plus the source's tolerance
(shared/ingest.py, `trusted_events`), and the processor ignores an item that is already the payment's last event.
What stays unsigned, and so a residual risk docs/providers.md names: `additionalData` (CANCEL_OR_REFUND's
`modification.action`). There is no API to refetch from here: `provider_status` carries the canonical status:

| eventCode                                        | success=true       | success=false (request refused) |
|--------------------------------------------------|--------------------|---------------------------------|
| AUTHORISATION                                    | authorized         | failed                          |
| CAPTURE                                          | paid               | authorized (still)              |
| CAPTURE_FAILED                                   | failed             |                                 |
| CANCELLATION, TECHNICAL_CANCEL                   | canceled           | authorized (still)              |
| CANCEL_OR_REFUND (`modification.action`)         | canceled / refunded|                                 |
| REFUND                                           | refunded (*)       | paid (still)                    |
| REFUND_FAILED, REFUNDED_REVERSED                 | paid               |                                 |
| NOTIFICATION_OF_CHARGEBACK, REQUEST_FOR_INFORMATION | disputed        |                                 |
| CHARGEBACK, SECOND_CHARGEBACK, PREARBITRATION_LOST | charged_back     |                                 |
| CHARGEBACK_REVERSED, PREARBITRATION_WON          | paid               |                                 |

A refused request leaves the payment where it was: the "still" status is a no-op for a payment already there,
and the state machine refuses it as a regression anywhere else. (*) A REFUND item does not say whether it refunded
everything; it reads as `refunded`. The amount is reported for AUTHORISATION and CAPTURE only (a refund's or a
chargeback's amount is that modification's, not the payment's).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from shared.providers._signing import (
    JsonObject,
    get_currency,
    get_int,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    matches_any,
    require_str,
    usable_secrets,
)
from shared.providers.base import (
    DriverDefaults,
    MultiEventDriver,
    NormalizedEvent,
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    derive_event_id,
)

SIGNING_FIELDS = (
    "pspReference",
    "originalReference",
    "merchantAccountCode",
    "merchantReference",
    "value",
    "currency",
    "eventCode",
    "success",
)

# eventCode -> (canonical status when success is "true", when "false")
STATUS_TABLE: dict[str, tuple[str | None, str | None]] = {
    "AUTHORISATION": ("authorized", "failed"),
    "CAPTURE": ("paid", "authorized"),
    "CAPTURE_FAILED": ("failed", None),
    "CANCELLATION": ("canceled", "authorized"),
    "TECHNICAL_CANCEL": ("canceled", "authorized"),
    "CANCEL_OR_REFUND": (None, None),  # decided by additionalData["modification.action"]
    "REFUND": ("refunded", "paid"),
    "REFUND_FAILED": ("paid", None),
    "REFUNDED_REVERSED": ("paid", None),
    "NOTIFICATION_OF_CHARGEBACK": ("disputed", None),
    "REQUEST_FOR_INFORMATION": ("disputed", None),
    "CHARGEBACK": ("charged_back", None),
    "SECOND_CHARGEBACK": ("charged_back", None),
    "PREARBITRATION_LOST": ("charged_back", None),
    "CHARGEBACK_REVERSED": ("paid", None),
    "PREARBITRATION_WON": ("paid", None),
}
PAYMENT_EVENT_CODES: tuple[str, ...] = tuple(STATUS_TABLE)
# Items whose amount is the payment's: the authorised amount, and the captured one (what was actually paid).
AMOUNT_EVENT_CODES = frozenset({"AUTHORISATION", "CAPTURE"})


def decode_key(secret: str) -> bytes:
    """The HMAC key: the hex string from Adyen's Customer Area, decoded. Not hex -> a configuration error."""
    try:
        key = binascii.unhexlify(secret.strip())
    except (binascii.Error, ValueError):
        raise ValueError("signing secret for 'adyen' is not a hex HMAC key") from None
    if not key:
        raise ValueError("signing secret for 'adyen' is empty")
    return key


def _field_text(value: Any) -> str | None:
    """A signing-string field as Adyen writes it; None when the value cannot be part of a signing string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    return None


def signing_string(item: JsonObject) -> str | None:
    """The colon-joined signing string of one NotificationRequestItem; None when a field has an unusable type."""
    amount = item.get("amount")
    amount = amount if isinstance(amount, dict) else {}
    values = {**item, "value": amount.get("value"), "currency": amount.get("currency")}
    parts = [_field_text(values.get(name)) for name in SIGNING_FIELDS]
    if any(part is None for part in parts):
        return None
    return ":".join(part for part in parts if part is not None)


def compute_signature(text: str, key: bytes) -> str:
    """The base64 hmacSignature of a signing string."""
    return base64.b64encode(hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()).decode("ascii")


def notification_items(payload: Any) -> list[JsonObject] | None:
    """The NotificationRequestItem objects of a notification, or None if it is not shaped like one."""
    if not isinstance(payload, dict):
        return None
    wrappers = payload.get("notificationItems")
    if not isinstance(wrappers, list):
        return None
    items = []
    for wrapper in wrappers:
        item = wrapper.get("NotificationRequestItem") if isinstance(wrapper, dict) else None
        if not isinstance(item, dict):
            return None
        items.append(item)
    return items


def _success_text(item: JsonObject) -> str:
    value = item.get("success")
    if isinstance(value, bool):
        return "true" if value else "false"
    if value not in ("true", "false"):
        raise PayloadInvalid('field success must be "true" or "false"')
    return str(value)


def canonical_status(item: JsonObject, event_code: str, success: bool) -> str | None:
    if event_code == "CANCEL_OR_REFUND":
        additional = item.get("additionalData")
        action = additional.get("modification.action") if isinstance(additional, dict) else None
        if not success:
            return None
        return {"cancel": "canceled", "refund": "refunded"}.get(action if isinstance(action, str) else "")
    on_success, on_failure = STATUS_TABLE.get(event_code, (None, None))
    return on_success if success else on_failure


class AdyenDriver(DriverDefaults):
    name: str = "adyen"
    # The signature travels in the body: no header is needed to re-verify. (Adyen can add basic auth: that
    # Authorization header holds a credential and is never stored.)
    replay_headers: tuple[str, ...] = ()
    # Adyen's NotificationResponse: `notificationResponse: "[accepted]"` acknowledges a webhook (any 2xx does
    # since 2024; the field costs nothing and satisfies an integration still configured the old way).
    accept_fields: dict[str, str] = {"notificationResponse": "[accepted]"}

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        keys = [decode_key(secret) for secret in usable_secrets(secrets, self.name)]
        try:
            payload = json.loads(request.body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise SignatureInvalid("body is not an Adyen notification") from None
        items = notification_items(payload)
        if items is None:
            raise SignatureInvalid("body is not an Adyen notification")
        if not items:
            raise SignatureInvalid("no notification items")
        for item in items:
            additional = item.get("additionalData")
            signature = additional.get("hmacSignature") if isinstance(additional, dict) else None
            if not isinstance(signature, str) or not signature:
                raise SignatureInvalid("notification item without hmacSignature")
            text = signing_string(item)
            if text is None:
                raise SignatureInvalid("malformed notification item")
            if not matches_any([compute_signature(text, key) for key in keys], [signature]):
                raise SignatureInvalid("no signature matches")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        events = self.parse_many(request)
        if len(events) != 1:
            raise PayloadInvalid(f"delivery holds {len(events)} notification items: parse_many reads them")
        return events[0]

    def parse_many(self, request: WebhookRequest) -> tuple[NormalizedEvent, ...]:
        """One event per NotificationRequestItem, in the delivery's order (the ingest stores them all or none)."""
        payload = load_json_object(request.body)
        items = notification_items(payload)
        if items is None:
            raise PayloadInvalid("missing field notificationItems[].NotificationRequestItem")
        if not items:
            raise PayloadInvalid("no notification items")
        events = []
        for index, item in enumerate(items):
            try:
                events.append(self._event(item))
            except PayloadInvalid as invalid:
                raise PayloadInvalid(f"notification item {index}: {invalid}") from None
        return tuple(events)

    @staticmethod
    def _event(item: JsonObject) -> NormalizedEvent:
        psp_reference = require_str(item, "pspReference", "pspReference")
        event_code = require_str(item, "eventCode", "eventCode")
        success_text = _success_text(item)
        occurred_at = iso_to_utc(require_str(item, "eventDate", "eventDate"), "eventDate")
        resource_id = get_str(item, "originalReference", "originalReference") or psp_reference
        amount_object = get_object(item, "amount", "amount", required=False) or {}
        amount = get_int(amount_object, "value", "amount.value") if event_code in AMOUNT_EVENT_CODES else None
        return NormalizedEvent(
            event_id=derive_event_id(psp_reference, event_code, success_text, ""),
            event_type=event_code,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=canonical_status(item, event_code, success_text == "true"),
            amount=amount,
            currency=get_currency(amount_object, "currency", "amount.currency"),
        )


driver: MultiEventDriver = AdyenDriver()
