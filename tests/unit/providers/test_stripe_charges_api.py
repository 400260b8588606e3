"""Stripe's Charges API: a charge made without a PaymentIntent is its own payment, and its refunds and disputes
belong to it. Fixtures written from Stripe's documented shapes:
- the Charge object, https://docs.stripe.com/api/charges/object (`payment_intent` nullable, `captured`, `paid`,
  `refunded`, `amount_refunded`, `disputed`, `status` succeeded | pending | failed);
- the Refund object, https://docs.stripe.com/api/refunds/object (`charge`, `payment_intent` nullable);
- the Dispute object, https://docs.stripe.com/api/disputes/object (`charge`, `payment_intent` nullable, `status`);
- the event types, https://docs.stripe.com/api/events/types (charge.captured, charge.refunded, charge.updated,
  charge.refund.updated, charge.dispute.created | updated | funds_withdrawn | funds_reinstated | closed);
- objects of API versions before PaymentIntents existed carry no `payment_intent` field at all, and before 2014 a
  dispute had no `id` and a charge no `status` (only `paid`): the Stripe CLI captures published in stripe-ruby-mock
  (lib/stripe_mock/webhook_fixtures/charge.updated.json, charge.dispute.closed.json) have these shapes;
- setup_intent.created, the example of https://docs.stripe.com/api/events/object: not a payment.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.providers.base import WebhookRequest
from shared.providers.stripe.driver import driver

CREATED = 1_700_000_000


def event(event_type: str, obj: dict[str, Any], **envelope: Any) -> bytes:
    return json.dumps(
        {
            "id": "evt_1OaCharges",
            "object": "event",
            "api_version": "2020-08-27",
            "created": CREATED,
            "data": {"object": obj},
            "livemode": False,
            "pending_webhooks": 1,
            "type": event_type,
            **envelope,
        }
    ).encode()


def charge(**fields: Any) -> dict[str, Any]:
    """A Charge as https://docs.stripe.com/api/charges/object documents it, made with the Charges API."""
    return {
        "id": "ch_3Charges",
        "object": "charge",
        "amount": 1000,
        "amount_captured": 1000,
        "amount_refunded": 0,
        "captured": True,
        "created": CREATED,
        "currency": "usd",
        "disputed": False,
        "paid": True,
        "payment_intent": None,
        "refunded": False,
        "status": "succeeded",
        **fields,
    }


def refund(**fields: Any) -> dict[str, Any]:
    return {
        "id": "re_3Charges",
        "object": "refund",
        "amount": 1000,
        "charge": "ch_3Charges",
        "created": CREATED,
        "currency": "usd",
        "payment_intent": None,
        "status": "succeeded",
        **fields,
    }


def dispute(**fields: Any) -> dict[str, Any]:
    return {
        "id": "dp_3Charges",
        "object": "dispute",
        "amount": 1000,
        "charge": "ch_3Charges",
        "created": CREATED,
        "currency": "usd",
        "payment_intent": None,
        "reason": "fraudulent",
        "status": "needs_response",
        **fields,
    }


def parse(body: bytes):
    return driver.parse(WebhookRequest(body=body, headers={}))


@pytest.mark.parametrize(
    ("event_type", "obj"),
    [
        ("charge.captured", charge()),
        ("charge.refunded", charge(amount_refunded=1000, refunded=True)),
        ("charge.updated", charge(description="updated")),
        ("charge.refund.updated", refund()),
        ("charge.dispute.created", dispute(status="warning_needs_response")),
        ("charge.dispute.updated", dispute(status="under_review")),
        ("charge.dispute.funds_withdrawn", dispute()),
        ("charge.dispute.funds_reinstated", dispute(status="won")),
        ("charge.dispute.closed", dispute(status="won")),
    ],
)
def test_an_event_of_a_charge_with_no_intent_is_about_that_charge(event_type, obj):
    # Given an event of the Charges API: its charge (or the refund's, the dispute's) has no PaymentIntent
    parsed = parse(event(event_type, obj))
    # Then the payment is the charge: its id is the resource (one FIFO group, one payment for all of them)
    assert parsed.resource_id == "ch_3Charges"
    assert parsed.event_type == event_type


def test_an_object_older_than_payment_intents_is_about_its_charge():
    # Given a charge.updated and a charge.dispute.closed of an API version before PaymentIntents: no
    # `payment_intent` field at all, a charge with `paid` and no `status`, a dispute with no `id`
    old_charge = {k: v for k, v in charge().items() if k not in ("payment_intent", "status")}
    old_dispute = {k: v for k, v in dispute(status="won").items() if k not in ("payment_intent", "id")}
    # Then each is about the charge
    assert parse(event("charge.updated", old_charge)).resource_id == "ch_3Charges"
    assert parse(event("charge.dispute.closed", old_dispute)).resource_id == "ch_3Charges"


def test_an_expanded_charge_reference_is_read_for_its_id():
    # Given a refund whose `charge` was expanded into the Charge object
    parsed = parse(event("charge.refund.updated", refund(charge=charge())))
    assert parsed.resource_id == "ch_3Charges"


def test_an_intent_when_there_is_one_still_wins_over_the_charge():
    # Given a charge of a PaymentIntent, Then the payment is the intent, as before
    parsed = parse(event("charge.refunded", charge(payment_intent="pi_3Intent", refunded=True, amount_refunded=1000)))
    assert parsed.resource_id == "pi_3Intent"


def test_a_setup_intent_event_is_not_a_payment():
    # Given the event object example of https://docs.stripe.com/api/events/object (a SetupIntent saving a card)
    setup_intent = {
        "id": "seti_1NG8Du2eZvKYlo2C9XMqbR0x",
        "object": "setup_intent",
        "customer": None,
        "payment_method_types": ["acss_debit"],
        "status": "requires_confirmation",
        "usage": "off_session",
    }
    parsed = parse(event("setup_intent.created", setup_intent, api_version="2019-02-19"))
    # Then it names no payment (its type is not routed: the processor ignores it, reason unrouted_type)
    assert parsed.resource_id is None
    assert parsed.event_type == "setup_intent.created"


@pytest.mark.parametrize(
    "status", ["pending", "authorized", "paid", "failed", "partially_refunded", "refunded", "disputed", "charged_back"]
)
def test_the_senders_charges_api_samples_are_about_the_charge(status):
    # Given `inbox send stripe --resource-id ch_...`: a sample about a Charges-API charge
    from inbox_local.providers.stripe.sender import sender

    body = sender.sample_body(
        event_id="evt_1", resource_id="ch_1Local", status=status, amount=1990, occurred_at=CREATED
    )
    document = json.loads(body)
    # Then its object names no intent, and it parses to the charge as the payment
    assert document["data"]["object"]["payment_intent"] is None
    assert document["type"].startswith("charge.")
    assert parse(body).resource_id == "ch_1Local"


def test_a_charges_api_charge_has_no_canceled_sample():
    from inbox_local.providers.stripe.sender import sender

    with pytest.raises(ValueError, match="Charges API"):
        sender.sample_body(event_id="evt_1", resource_id="ch_1Local", status="canceled", amount=1, occurred_at=CREATED)
