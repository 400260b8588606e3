"""Stripe driver, Connect and thin events: which sub-account an event names, what a thin event is about, and a
body whose account reference could become a header of its own refused (stored failed by the ingest, never sent)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import stripe

from inbox_local.providers.stripe.sender import sender, thin_event
from shared.providers.base import PayloadInvalid, SigningSecrets, WebhookRequest
from shared.providers.stripe.driver import driver
from shared.sub_account import SubAccount

SECRET = "whsec_test_secret_current_0123456789"
NOW = 1_718_221_503
ACCOUNT = "acct_1032D82eZvKYlo2C"


def _snapshot(**extra: Any) -> bytes:
    obj = {"id": "pi_1", "object": "payment_intent", "amount": 990, "currency": "usd", "status": "succeeded"}
    event = {
        "id": "evt_1",
        "object": "event",
        "type": "payment_intent.succeeded",
        "created": NOW,
        "data": {"object": obj},
    }
    return json.dumps({**event, **extra}).encode()


def _thin(**extra: Any) -> bytes:
    event = {
        "id": "evt_65RCjj4EqW1sabcjs2Z16RCMoNQdSQkOWvfL6L5uU2K40u",
        "object": "v2.core.event",
        "type": "v1.payment_intent.succeeded",
        "created": "2025-01-01T00:00:00.000Z",
        "context": None,
        "livemode": False,
        "related_object": {"id": "pi_1", "type": "payment_intent", "url": "/v1/payment_intents/pi_1"},
    }
    return json.dumps({**event, **extra}).encode()


def _parse(body: bytes):
    return driver.parse(WebhookRequest(body=body, headers={}))


def test_a_connected_accounts_event_names_its_account():
    # Given a snapshot event from a connected account (top-level `account`)  When it is parsed
    event = _parse(_snapshot(account=ACCOUNT))

    # Then the account is the event's sub-account, to be sent as Stripe-Account
    assert event.account == SubAccount(ACCOUNT)
    assert (event.resource_id, event.provider_status, event.amount) == ("pi_1", "succeeded", 990)


def test_the_platforms_own_event_names_no_account():
    assert _parse(_snapshot()).account is None
    assert _parse(_snapshot(account=None, context=None)).account is None


def test_account_wins_over_context_and_a_context_alone_is_a_context():
    # Given events of API versions >= 2025-04-30: Connect ones carry both, an organization's only `context`
    both = _parse(_snapshot(account=ACCOUNT, context=f"acct_1Org/{ACCOUNT}"))
    alone = _parse(_snapshot(context="acct_1Org/acct_1Plat"))

    # Then `account` is used when present, else `context` (as Stripe-Context)
    assert both.account == SubAccount(ACCOUNT)
    assert alone.account == SubAccount("acct_1Org/acct_1Plat", context=True)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("account", "acct_1\r\nAuthorization: Bearer sk_live_attacker"),
        ("account", "acct_1/acct_2"),  # a path is a context, never an account id
        ("account", "cus_1"),
        ("account", 42),
        ("account", "acct_" + "A" * 60),
        ("context", "acct_1\nX-Injected: 1"),
        ("context", "/".join(["acct_1"] * 5)),
    ],
)
def test_an_account_reference_of_another_shape_is_refused(field, value):
    # Given a signed event whose account reference is not one  When it is parsed  Then it is PayloadInvalid
    with pytest.raises(PayloadInvalid):
        _parse(_snapshot(**{field: value}))


def test_a_thin_event_is_about_its_related_object_in_its_context():
    # Given a thin event (event destination, thin payload) from a connected account
    event = _parse(_thin(context=ACCOUNT))

    # Then its resource is the related object, its time the ISO `created`, its context a Stripe-Context
    assert event.event_id == "evt_65RCjj4EqW1sabcjs2Z16RCMoNQdSQkOWvfL6L5uU2K40u"
    assert event.event_type == "v1.payment_intent.succeeded"
    assert event.resource_id == "pi_1"
    assert event.occurred_at == datetime(2025, 1, 1, tzinfo=UTC)
    assert event.account == SubAccount(ACCOUNT, context=True)
    # and it states nothing about the payment: the refetch is the truth
    assert (event.provider_status, event.amount, event.currency) == (None, None, None)


@pytest.mark.parametrize("kind", ["charge", "refund", "dispute"])
def test_a_thin_event_about_what_belongs_to_a_payment_names_that_object(kind):
    event = _parse(_thin(type=f"v1.{kind}.updated", related_object={"id": "x_1", "type": kind, "url": "/v1/x/x_1"}))
    assert event.resource_id == "x_1"


@pytest.mark.parametrize(
    "related",
    [None, {"id": "cus_1", "type": "customer", "url": "/v1/customers/cus_1"}, {"id": "mtr_1", "type": "v2.x"}],
)
def test_a_thin_event_about_anything_else_has_no_resource(related):
    # Given a thin event about no payment (a customer, a v2 object, or no related object)  Then it names none
    assert _parse(_thin(type="v1.customer.created", related_object=related)).resource_id is None


@pytest.mark.parametrize(
    "body",
    [
        _thin(created=1735689600),  # thin `created` is ISO-8601, not epoch seconds
        _thin(created="yesterday"),
        _thin(related_object="pi_1"),
        _thin(related_object={"type": "payment_intent"}),
        _thin(id=None),
    ],
)
def test_a_malformed_thin_event_is_payload_invalid(body):
    with pytest.raises(PayloadInvalid):
        _parse(body)


def test_the_senders_thin_event_is_one_stripe_python_accepts_and_our_driver_verifies():
    # Given the sender's thin version of a Connect payment's event, signed as Stripe signs
    body = sender.sample_body(
        event_id="evt_thin_1",
        resource_id="pi_9",
        status="paid",
        amount=500,
        occurred_at=NOW,
        account=ACCOUNT,
        thin=True,
    )
    request = sender.sign(body, SECRET, now=NOW)

    # When stripe-python parses it as an event notification, and our driver verifies and parses it
    notification = stripe.StripeClient("sk_test_x").parse_event_notification(
        body, request.headers["stripe-signature"], SECRET, tolerance=10**10
    )
    driver.verify(request, SigningSecrets(SECRET), now=NOW, tolerance_seconds=300)
    event = driver.parse(request)

    # Then both read the same event, object and context
    assert (notification.id, notification.type, str(notification.context)) == (
        "evt_thin_1",
        "v1.payment_intent.succeeded",
        ACCOUNT,
    )
    assert (event.event_id, event.resource_id, event.account) == ("evt_thin_1", "pi_9", SubAccount(ACCOUNT, True))


def test_thin_event_renders_the_related_objects_url():
    obj = {"id": "ch_1", "object": "charge"}
    document = json.loads(thin_event(event_id="evt_1", event_type="charge.refunded", obj=obj, created=NOW))
    assert document["related_object"] == {"id": "ch_1", "type": "charge", "url": "/v1/charges/ch_1"}
    assert document["type"] == "v1.charge.refunded"
    assert document["context"] is None


def test_a_thin_sample_about_a_made_up_charge_is_refused():
    # A thin event names only its object; a sample's charge id resolves to no payment anywhere
    with pytest.raises(ValueError, match="thin Stripe sample is about the payment's own object"):
        sender.sample_body(
            event_id="evt_1", resource_id="pi_1", status="refunded", amount=5, occurred_at=NOW, thin=True
        )
