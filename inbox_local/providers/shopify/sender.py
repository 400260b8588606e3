"""Shopify: a delivery as Shopify signs it, and sample payment notifications
(shared/providers/shopify/driver.py verifies and parses them)."""

from __future__ import annotations

import hashlib
import json
import uuid

from inbox_local.senders._samples import sample_values
from shared.providers._signing import JsonObject
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.shopify.driver import (
    API_VERSION_HEADER,
    AUTHENTICATION,
    EVENT_ID_HEADERS,
    HMAC_HEADERS,
    SHOP_DOMAIN_HEADER,
    TOPIC_HEADERS,
    TRIGGERED_AT_HEADERS,
    WEBHOOK_ID_HEADER,
)


def compute_signature(body: bytes, secret: str) -> str:
    """The base64 X-Shopify-Hmac-Sha256 value for `body` signed with `secret`."""
    return AUTHENTICATION.signature(body, secret)


API_VERSION = "2025-01"  # only written into sample deliveries


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


class ShopifySender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

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
        kind, provider_value = sample_values(_SAMPLES, status, gateway="Shopify")
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


sender = ShopifySender()
