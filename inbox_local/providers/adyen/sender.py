"""Adyen: a delivery as Adyen signs it, and sample payment notifications
(shared/providers/adyen/driver.py verifies and parses them)."""

from __future__ import annotations

import json

from inbox_local.senders._samples import sample_values
from shared.providers._signing import JsonObject
from shared.providers.adyen.driver import compute_signature, decode_key, notification_items, signing_string
from shared.providers.base import WebhookRequest, utc_from_epoch

MERCHANT_ACCOUNT = "InboxMerchantECOM"  # only written into sample bodies


# canonical status -> (eventCode, success)
_SAMPLES: dict[str, tuple[str, str]] = {
    "authorized": ("AUTHORISATION", "true"),
    "failed": ("AUTHORISATION", "false"),
    "paid": ("CAPTURE", "true"),
    "canceled": ("CANCELLATION", "true"),
    "refunded": ("REFUND", "true"),
    "disputed": ("NOTIFICATION_OF_CHARGEBACK", "true"),
    "charged_back": ("CHARGEBACK", "true"),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


class AdyenSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Put an hmacSignature into every item (Adyen signs inside the body). A body that is not a notification
        is returned unchanged: there is nothing to sign. `now` and `event_id` are unused."""
        key = decode_key(secret)
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None
        items = notification_items(payload)
        if items:
            for item in items:
                text = signing_string(item)
                if text is None:
                    continue
                additional = item.get("additionalData")
                if not isinstance(additional, dict):
                    additional = item["additionalData"] = {}
                additional["hmacSignature"] = compute_signature(text, key)
            body = json.dumps(payload).encode("utf-8")
        return WebhookRequest(body=body, headers={"content-type": "application/json", "user-agent": "Adyen HttpClient"})

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A one-item notification for the canonical `status` (see SAMPLE_STATUSES), not yet signed (`sign` adds
        the hmacSignature). An AUTHORISATION is about `resource_id` itself; a modification gets `event_id` as its
        own pspReference and `resource_id` as originalReference."""
        event_code, success = sample_values(_SAMPLES, status, gateway="Adyen")
        item: JsonObject = {
            "additionalData": {"authCode": "058705", "cardSummary": "1111", "expiryDate": "03/2030"},
            "amount": {"currency": "EUR", "value": amount},
            "eventCode": event_code,
            "eventDate": utc_from_epoch(occurred_at).isoformat(timespec="seconds"),
            "merchantAccountCode": MERCHANT_ACCOUNT,
            "merchantReference": f"order-{resource_id}",
            "paymentMethod": "visa",
            "reason": "" if success == "true" else "Refused",
            "success": success,
        }
        if event_code == "AUTHORISATION":
            item["pspReference"] = resource_id
            item["operations"] = ["CANCEL", "CAPTURE", "REFUND"]
        else:
            item["pspReference"] = event_id
            item["originalReference"] = resource_id
        return json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}).encode()


sender = AdyenSender()
