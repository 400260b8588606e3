"""Stripe Connect and thin events, client side: the account header each request carries (or does not), refusal of
an account reference that could carry a header of its own, and a thin event's charge/refund/dispute read back to
its PaymentIntent. Against a scripted HTTP pool: the exact request headers are what is under test."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from shared.gateway.base import GatewayRejected
from shared.gateway.http import GatewayResponseInvalid
from shared.gateway.registry import build_gateway_client, supported_providers
from shared.payments.status import PaymentStatus as S
from shared.sub_account import SubAccount
from tests.unit.gateway.fakes import FakePool, FakeResponse
from tests.unit.gateway.test_stripe import charge, intent, make_client

ACCOUNT = "acct_1032D82eZvKYlo2C"  # the connected account id of Stripe's own example
CONNECTED = SubAccount(ACCOUNT)  # an event's `account`


def headers_of(pool: FakePool) -> list[dict[str, Any]]:
    return [kwargs["headers"] for _, _, kwargs in pool.calls]


def test_a_connected_accounts_payment_is_read_with_stripe_account_on_every_request():
    # Given an intent that succeeded, whose charge the server does not expand
    pool = FakePool(
        [FakeResponse(200, intent("succeeded", latest_charge="ch_1")), FakeResponse(200, charge(amount_refunded=5))]
    )

    # When the payment of a connected account is fetched
    snapshot = make_client(pool).fetch_payment("pi_1", account=CONNECTED)

    # Then both requests are scoped to that account, with the one header Stripe documents for it
    assert snapshot.status is S.PARTIALLY_REFUNDED
    assert [h.get("Stripe-Account") for h in headers_of(pool)] == [ACCOUNT, ACCOUNT]
    assert all("Stripe-Context" not in h for h in headers_of(pool))


def test_the_platforms_own_payment_is_read_with_no_account_header():
    # Given an intent of the platform's own account
    pool = FakePool([FakeResponse(200, intent("processing"))])

    # When it is fetched without an account
    make_client(pool).fetch_payment("pi_1")

    # Then no request names an account
    assert all("Stripe-Account" not in h and "Stripe-Context" not in h for h in headers_of(pool))


@pytest.mark.parametrize("context", [ACCOUNT, "acct_111/acct_111a"])
def test_a_thin_events_context_goes_as_stripe_context(context):
    # Given a thin event's context: a connected account, or one below another account (an organization's)
    pool = FakePool([FakeResponse(200, intent("canceled"))])

    # When the payment is fetched within it
    make_client(pool).fetch_payment("pi_1", account=SubAccount(context, context=True))

    # Then it goes as Stripe-Context, as stripe-python's fetch_related_object sends it
    assert headers_of(pool)[0]["Stripe-Context"] == context
    assert "Stripe-Account" not in headers_of(pool)[0]


@pytest.mark.parametrize(
    "account",
    [
        "acct_1\r\nAuthorization: Bearer sk_live_attacker",
        "acct_1\nX-Injected: 1",
        "acct_1, acct_2",
        "acct_" + "a" * 100,
        "acct_1/" * 5 + "acct_1",
        "cus_123",
        "",
        "acct_",
        "acct_ä",
    ],
)
@pytest.mark.parametrize("context", [False, True])
def test_an_account_that_is_not_an_account_reference_is_refused_before_any_request(account, context):
    # Given a stored account value an attacker shaped (or a corrupted item)
    pool = FakePool([])  # any request would fail the test

    # When the payment is fetched within it  Then it is refused, and nothing was sent
    with pytest.raises(GatewayRejected, match="not a Stripe account reference"):
        make_client(pool).fetch_payment("pi_1", account=SubAccount(account, context=context))
    assert pool.calls == []


def test_an_account_id_is_one_account_not_a_path():
    # Given an event's `account` holding a path (only a context may)  When it is fetched  Then it is refused
    with pytest.raises(GatewayRejected):
        make_client(FakePool([])).fetch_payment("pi_1", account=SubAccount("acct_111/acct_111a"))


@pytest.mark.parametrize(
    ("object_id", "collection"),
    [("ch_1", "charges"), ("py_1", "charges"), ("re_1", "refunds"), ("dp_1", "disputes"), ("du_1", "disputes")],
)
def test_a_thin_events_object_is_read_back_to_its_intent(object_id, collection):
    # Given a thin event naming a charge, refund or dispute of a connected account
    pool = FakePool(
        [
            FakeResponse(200, {"id": object_id, "object": collection[:-1], "payment_intent": "pi_1"}),
            FakeResponse(200, intent("succeeded", latest_charge=charge())),
        ]
    )

    # When it is fetched
    snapshot = make_client(pool).fetch_payment(object_id, account=CONNECTED)

    # Then the object is read first, then its intent, both within the account; the payment is the intent
    assert [urlsplit(url).path for url in pool.urls] == [f"/v1/{collection}/{object_id}", "/v1/payment_intents/pi_1"]
    assert [h["Stripe-Account"] for h in headers_of(pool)] == [ACCOUNT, ACCOUNT]
    assert (snapshot.resource_id, snapshot.status) == ("pi_1", S.PAID)


def test_a_refund_of_neither_an_intent_nor_a_charge_is_invalid_not_a_guess():
    # Given a refund that names no PaymentIntent and no charge (no Stripe object looks like this)
    pool = FakePool([FakeResponse(200, {"id": "re_1", "object": "refund", "payment_intent": None, "charge": None})])

    # When a thin event about it is fetched  Then no payment is made up
    with pytest.raises(GatewayResponseInvalid, match="belongs to no payment intent nor charge"):
        make_client(pool).fetch_payment("re_1")


@pytest.mark.parametrize("provider", sorted(set(supported_providers()) - {"stripe"}))
def test_a_gateway_with_no_sub_accounts_refuses_one(provider):
    # Given the client of a gateway with no sub-accounts (its API key unset: any request would fail otherwise)
    client = build_gateway_client(provider, environ={})
    assert client is not None

    # When a payment naming a sub-account is fetched  Then it is refused rather than read from the main account
    with pytest.raises(GatewayRejected, match="no sub-accounts"):
        client.fetch_payment("anything", account=CONNECTED)
