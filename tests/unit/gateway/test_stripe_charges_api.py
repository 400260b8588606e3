"""The Stripe refetch of a Charges-API charge (no PaymentIntent): `GET /v1/charges/{id}` is the payment, a refund
or dispute is read for its `charge`, a disputed charge's disputes decide. Shapes: https://docs.stripe.com/api/charges/
object, https://docs.stripe.com/api/refunds/object, https://docs.stripe.com/api/disputes/object."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.stripe.client import StripeClient, charge_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"


def charge(**fields: Any) -> dict[str, Any]:
    return {
        "id": "ch_1",
        "object": "charge",
        "amount": 1000,
        "amount_refunded": 0,
        "captured": True,
        "currency": "usd",
        "disputed": False,
        "paid": True,
        "payment_intent": None,
        "refunded": False,
        "status": "succeeded",
        **fields,
    }


def make_client(pool: FakePool) -> StripeClient:
    http = JsonHttpClient("https://api.stripe.test", provider="stripe", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return StripeClient(http, lambda: KEY)


def paths(pool: FakePool) -> list[str]:
    return [urlsplit(url).path for url in pool.urls]


@pytest.mark.parametrize(
    ("fields", "dispute", "expected", "provider_status"),
    [
        ({}, None, S.PAID, "charge:succeeded"),
        ({"captured": False}, None, S.AUTHORIZED, "charge:succeeded/uncaptured"),
        ({"status": "pending", "paid": False}, None, S.PENDING, "charge:pending"),
        ({"status": "failed", "paid": False}, None, S.FAILED, "charge:failed"),
        ({"refunded": True, "amount_refunded": 1000}, None, S.REFUNDED, "charge:succeeded/refunded"),
        ({"amount_refunded": 300}, None, S.PARTIALLY_REFUNDED, "charge:succeeded/partially_refunded"),
        ({"disputed": True}, {"status": "needs_response"}, S.DISPUTED, "charge:succeeded/disputed:needs_response"),
        ({"disputed": True}, {"status": "lost"}, S.CHARGED_BACK, "charge:succeeded/disputed:lost"),
        ({"disputed": True}, {"status": "won"}, S.PAID, "charge:succeeded"),
        ({"disputed": True, "amount_refunded": 300}, {"status": "won"}, S.PARTIALLY_REFUNDED, None),
        ({"disputed": True}, None, S.DISPUTED, "charge:succeeded/disputed:unknown"),
        # before `status` existed, `paid` said it
        ({"status": None, "paid": True}, None, S.PAID, "charge:succeeded"),
        ({"status": None, "paid": False}, None, S.FAILED, "charge:failed"),
    ],
)
def test_every_row_of_the_charge_table(fields, dispute, expected, provider_status):
    status, shown = charge_status(charge(**fields), dispute)
    assert status is expected
    if provider_status is not None:
        assert shown == provider_status


@pytest.mark.parametrize("status", ["canceled", ""])
def test_a_charge_status_nobody_maps_is_invalid(status):
    with pytest.raises(GatewayResponseInvalid):
        charge_status(charge(status=status), None)


def test_a_charge_of_no_intent_is_read_as_its_own_payment():
    # Given a refunded Charges-API charge
    pool = FakePool([FakeResponse(200, charge(refunded=True, amount_refunded=1000))])
    # When the payment ch_1 is fetched
    snapshot = make_client(pool).fetch_payment("ch_1")
    # Then one GET /v1/charges/ch_1 is the payment: its id, status, amounts
    assert paths(pool) == ["/v1/charges/ch_1"]
    assert (snapshot.resource_id, snapshot.status, snapshot.amount, snapshot.currency) == (
        "ch_1",
        S.REFUNDED,
        1000,
        "USD",
    )
    assert snapshot.amount_refunded == 1000


@pytest.mark.parametrize(("object_id", "collection"), [("re_1", "refunds"), ("pyr_1", "refunds"), ("dp_1", "disputes")])
def test_a_refund_or_dispute_of_no_intent_is_read_back_to_its_charge(object_id, collection):
    # Given a refund or dispute with no intent, of the charge ch_1 (expanded, for the dispute)
    reference: Any = "ch_1" if collection == "refunds" else {"id": "ch_1", "object": "charge"}
    pool = FakePool(
        [
            FakeResponse(
                200, {"id": object_id, "object": collection[:-1], "payment_intent": None, "charge": reference}
            ),
            FakeResponse(200, charge(amount_refunded=400)),
        ]
    )
    # When it is fetched
    snapshot = make_client(pool).fetch_payment(object_id)
    # Then the object, then its charge are read, and the payment is the charge
    assert paths(pool) == [f"/v1/{collection}/{object_id}", "/v1/charges/ch_1"]
    assert (snapshot.resource_id, snapshot.status) == ("ch_1", S.PARTIALLY_REFUNDED)


def test_a_disputed_charge_reads_its_latest_dispute():
    # Given a disputed Charges-API charge whose disputes list holds an older won one and a newer lost one
    listing = {"object": "list", "data": [{"status": "won", "created": 1}, {"status": "lost", "created": 2}]}
    pool = FakePool([FakeResponse(200, charge(disputed=True)), FakeResponse(200, listing)])
    snapshot = make_client(pool).fetch_payment("ch_1")
    assert paths(pool) == ["/v1/charges/ch_1", "/v1/disputes"]
    assert snapshot.status is S.CHARGED_BACK


def test_another_charge_than_the_one_asked_for_is_invalid():
    pool = FakePool([FakeResponse(200, charge(id="ch_other"))])
    with pytest.raises(GatewayResponseInvalid, match="another charge"):
        make_client(pool).fetch_payment("ch_1")
