"""Stripe: a delivery as Stripe signs it, and sample payment notifications
(shared/providers/stripe/driver.py verifies and parses them).

A sample about a PaymentIntent (`pi_...`) is an intent's event (or its charge's, refund's, dispute's); a sample
about a charge id (`ch_...`) is a Charges-API charge's, made without an intent (`payment_intent: null`): the charge
is then the payment (https://docs.stripe.com/api/charges/object), and a Charges-API charge is never canceled."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from inbox_local.senders._samples import sample_values
from shared.providers._signing import JsonObject
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.stripe.driver import SCHEME, SIGNATURE_HEADER, THIN_EVENT_OBJECT, compute_signature

API_VERSION = "2024-06-20"  # written into sample bodies; parsing does not depend on it
_Builder = Callable[[str, int, int], JsonObject]  # (resource_id, amount, created) -> data.object


def _suffix(resource_id: str) -> str:
    return resource_id.split("_", 1)[1] if "_" in resource_id else resource_id


def _intent(status: str, **extra: Any) -> _Builder:
    def build(resource_id: str, amount: int, created: int) -> JsonObject:
        obj: JsonObject = {
            "id": resource_id,
            "object": "payment_intent",
            "amount": amount,
            "amount_capturable": amount if status == "requires_capture" else 0,
            "amount_received": amount if status == "succeeded" else 0,
            "capture_method": "manual" if status == "requires_capture" else "automatic",
            "created": created,
            "currency": "brl",
            "latest_charge": f"ch_{_suffix(resource_id)}",
            "livemode": False,
            "metadata": {},
            "payment_method_types": ["card"],
            "status": status,
        }
        obj.update(extra)
        return obj

    return build


CHARGE_PREFIX = "ch_"


def is_charge_payment(resource_id: str) -> bool:
    """Whether the payment is a Charges-API charge (no PaymentIntent)."""
    return resource_id.startswith(CHARGE_PREFIX)


def _charge_id(resource_id: str) -> str:
    return resource_id if is_charge_payment(resource_id) else f"ch_{_suffix(resource_id)}"


def _intent_of(resource_id: str) -> str | None:
    return None if is_charge_payment(resource_id) else resource_id


def _charge(refunded_fraction: int, *, status: str = "succeeded", captured: bool = True) -> _Builder:
    """refunded_fraction: 0 none, 1 half, 2 all."""

    def build(resource_id: str, amount: int, created: int) -> JsonObject:
        refunded = {0: 0, 1: max(1, amount // 2), 2: amount}[refunded_fraction]
        return {
            "id": _charge_id(resource_id),
            "object": "charge",
            "amount": amount,
            "amount_captured": amount if captured and status == "succeeded" else 0,
            "amount_refunded": refunded,
            "captured": captured,
            "created": created,
            "currency": "brl",
            "disputed": False,
            "failure_code": "card_declined" if status == "failed" else None,
            "livemode": False,
            "paid": status == "succeeded",
            "payment_intent": _intent_of(resource_id),
            "refunded": refunded == amount,
            "status": status,
        }

    return build


def _dispute(status: str) -> _Builder:
    def build(resource_id: str, amount: int, created: int) -> JsonObject:
        return {
            "id": f"dp_{_suffix(resource_id)}",
            "object": "dispute",
            "amount": amount,
            "charge": _charge_id(resource_id),
            "created": created,
            "currency": "brl",
            "livemode": False,
            "payment_intent": _intent_of(resource_id),
            "reason": "fraudulent",
            "status": status,
        }

    return build


# canonical status -> (Stripe event type, data.object builder)
_SAMPLES: dict[str, tuple[str, _Builder]] = {
    "pending": ("payment_intent.processing", _intent("processing")),
    "authorized": ("payment_intent.amount_capturable_updated", _intent("requires_capture")),
    "paid": ("payment_intent.succeeded", _intent("succeeded")),
    "failed": (
        "payment_intent.payment_failed",
        _intent(
            "requires_payment_method",
            last_payment_error={"code": "card_declined", "message": "Your card was declined.", "type": "card_error"},
        ),
    ),
    "canceled": ("payment_intent.canceled", _intent("canceled", cancellation_reason="requested_by_customer")),
    "partially_refunded": ("charge.refunded", _charge(1)),
    "refunded": ("charge.refunded", _charge(2)),
    "disputed": ("charge.dispute.created", _dispute("needs_response")),
    "charged_back": ("charge.dispute.closed", _dispute("lost")),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)
# A Charges-API charge's own events for the statuses an intent's events announce (refunds and disputes: as above).
_CHARGE_SAMPLES: dict[str, tuple[str, _Builder]] = {
    **{status: _SAMPLES[status] for status in ("partially_refunded", "refunded", "disputed", "charged_back")},
    "pending": ("charge.pending", _charge(0, status="pending", captured=False)),
    "authorized": ("charge.succeeded", _charge(0, captured=False)),
    "paid": ("charge.succeeded", _charge(0)),
    "failed": ("charge.failed", _charge(0, status="failed", captured=False)),
}


_COLLECTIONS = {"payment_intent": "payment_intents", "charge": "charges", "refund": "refunds", "dispute": "disputes"}


def snapshot_event(
    *, event_id: str, event_type: str, obj: JsonObject, created: int, account: str | None = None
) -> bytes:
    """A snapshot Event as Stripe sends it; a Connect account's carries the top-level `account`."""
    event: JsonObject = {
        "id": event_id,
        "object": "event",
        "api_version": API_VERSION,
        "created": created,
        "data": {"object": obj},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }
    if account is not None:
        event["account"] = account
    return json.dumps(event, indent=2).encode("utf-8")  # Stripe pretty-prints its event bodies


def thin_event(*, event_id: str, event_type: str, obj: JsonObject, created: int, account: str | None = None) -> bytes:
    """The thin version of a snapshot event (`v1.` + its type): which object changed and in which account
    (`context`), no state. Shape: https://docs.stripe.com/api/v2/core/events/object."""
    kind, object_id = str(obj["object"]), str(obj["id"])
    event: JsonObject = {
        "id": event_id,
        "object": THIN_EVENT_OBJECT,
        "type": f"v1.{event_type}",
        "created": utc_from_epoch(created).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "context": account,
        "livemode": False,
        "reason": None,
        "related_object": {"id": object_id, "type": kind, "url": f"/v1/{_COLLECTIONS.get(kind, kind)}/{object_id}"},
    }
    return json.dumps(event, indent=2).encode("utf-8")


class StripeSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        signature = compute_signature(now, body, secret)
        return WebhookRequest(
            body=body,
            headers={
                "content-type": "application/json; charset=utf-8",
                "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
                SIGNATURE_HEADER: f"t={now},{SCHEME}={signature}",
            },
        )

    def sample_body(
        self,
        *,
        event_id: str,
        resource_id: str,
        status: str,
        amount: int,
        occurred_at: int,
        account: str | None = None,
        thin: bool = False,
    ) -> bytes:
        """A Stripe Event for the canonical `status`: see SAMPLE_STATUSES for the supported values. `account`: from
        that Connect account; `thin`: the thin version (about the same object)."""
        samples = _CHARGE_SAMPLES if is_charge_payment(resource_id) else _SAMPLES
        gateway = "Stripe (Charges API)" if samples is _CHARGE_SAMPLES else "Stripe"
        event_type, build = sample_values(samples, status, gateway=gateway)
        render = thin_event if thin else snapshot_event
        obj = build(resource_id, amount, occurred_at)
        if thin and obj["id"] != resource_id:
            # A thin event names only its object, and a sample's charge or dispute id is made up: no gateway (nor the
            # simulator) could resolve it to the payment. Snapshot samples carry the payment's id inside the object.
            own = [name for name, (_, built) in samples.items() if built(resource_id, 1, 0)["id"] == resource_id]
            raise ValueError(f"a thin Stripe sample is about the payment's own object: status one of {', '.join(own)}")
        return render(event_id=event_id, event_type=event_type, obj=obj, created=occurred_at, account=account)


sender = StripeSender()
