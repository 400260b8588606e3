"""Stripe refetch: every row of the status table, and the requests the client makes to read them."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.stripe.client import API_VERSION, StripeClient, stripe_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"


def intent(status: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": "pi_1", "object": "payment_intent", "amount": 2000, "currency": "brl", "status": status, **extra}


def charge(**extra: Any) -> dict[str, Any]:
    return {
        "id": "ch_1",
        "object": "charge",
        "amount": 2000,
        "amount_refunded": 0,
        "refunded": False,
        "disputed": False,
        "payment_intent": "pi_1",
        **extra,
    }


ERROR = {"code": "card_declined", "type": "card_error"}


@pytest.mark.parametrize(
    ("intent_obj", "charge_obj", "dispute", "expected", "provider_status"),
    [
        (intent("requires_payment_method", last_payment_error=ERROR), None, None, S.FAILED, None),
        (intent("requires_payment_method", last_payment_error=None), None, None, S.PENDING, "requires_payment_method"),
        (intent("requires_confirmation"), None, None, S.PENDING, "requires_confirmation"),
        (intent("requires_action"), None, None, S.PENDING, "requires_action"),
        (intent("processing"), None, None, S.PENDING, "processing"),
        (intent("requires_capture"), None, None, S.AUTHORIZED, "requires_capture"),
        (intent("canceled"), None, None, S.CANCELED, "canceled"),
        (intent("succeeded"), None, None, S.PAID, "succeeded"),
        (intent("succeeded"), charge(), None, S.PAID, "succeeded"),
        (intent("succeeded"), charge(refunded=True, amount_refunded=2000), None, S.REFUNDED, "succeeded/refunded"),
        (intent("succeeded"), charge(amount_refunded=500), None, S.PARTIALLY_REFUNDED, "succeeded/partially_refunded"),
        (intent("succeeded"), charge(disputed=True), {"status": "needs_response"}, S.DISPUTED, None),
        (intent("succeeded"), charge(disputed=True), {"status": "under_review"}, S.DISPUTED, None),
        (intent("succeeded"), charge(disputed=True), {"status": "warning_needs_response"}, S.DISPUTED, None),
        (intent("succeeded"), charge(disputed=True), {"status": "appeal_under_review"}, S.DISPUTED, None),
        (intent("succeeded"), charge(disputed=True), {"status": "brand_new_status"}, S.DISPUTED, None),
        (intent("succeeded"), charge(disputed=True), None, S.DISPUTED, "succeeded/disputed:unknown"),
        (intent("succeeded"), charge(disputed=True), {"status": "lost"}, S.CHARGED_BACK, "succeeded/disputed:lost"),
        (intent("succeeded"), charge(disputed=True), {"status": "won"}, S.PAID, "succeeded"),
        (intent("succeeded"), charge(disputed=True), {"status": "warning_closed"}, S.PAID, "succeeded"),
        (intent("succeeded"), charge(disputed=True), {"status": "prevented"}, S.PAID, "succeeded"),
        # a won dispute on a partly refunded charge returns to partially_refunded
        (
            intent("succeeded"),
            charge(disputed=True, amount_refunded=500),
            {"status": "won"},
            S.PARTIALLY_REFUNDED,
            None,
        ),
        # an open dispute wins over the refund flags
        (
            intent("succeeded"),
            charge(disputed=True, amount_refunded=500),
            {"status": "needs_response"},
            S.DISPUTED,
            None,
        ),
    ],
)
def test_status_table(intent_obj, charge_obj, dispute, expected, provider_status):
    status, provider = stripe_status(intent_obj, charge_obj, dispute)
    assert status is expected
    if provider_status is not None:
        assert provider == provider_status


@pytest.mark.parametrize("obj", [intent("requires_something_new"), {"id": "pi_1"}, intent(None)])
def test_an_unknown_or_missing_status_is_invalid_not_a_guess(obj):
    with pytest.raises(GatewayResponseInvalid):
        stripe_status(obj, None, None)
    assert issubclass(GatewayResponseInvalid, GatewayRejected)


def make_client(pool: FakePool) -> StripeClient:
    http = JsonHttpClient("https://api.stripe.test", provider="stripe", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return StripeClient(http, lambda: KEY)


def test_reads_the_intent_with_its_charge_expanded():
    pool = FakePool([FakeResponse(200, intent("succeeded", latest_charge=charge(amount_refunded=700)))])

    snapshot = make_client(pool).fetch_payment("pi_1")

    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.amount_refunded) == (
        S.PARTIALLY_REFUNDED,
        2000,
        "BRL",
        700,
    )
    assert snapshot.resource_id == "pi_1"
    _, url, kwargs = pool.calls[0]
    parts = urlsplit(url)
    assert parts.path == "/v1/payment_intents/pi_1"
    assert parse_qs(parts.query) == {"expand[]": ["latest_charge"]}
    assert kwargs["headers"]["Authorization"] == f"Bearer {KEY}"
    assert kwargs["headers"]["Stripe-Version"] == API_VERSION
    assert len(pool.calls) == 1


def test_fetches_the_charge_when_the_server_did_not_expand_it():
    pool = FakePool(
        [FakeResponse(200, intent("succeeded", latest_charge="ch_1")), FakeResponse(200, charge(refunded=True))]
    )

    snapshot = make_client(pool).fetch_payment("pi_1")

    assert snapshot.status is S.REFUNDED
    assert urlsplit(pool.urls[1]).path == "/v1/charges/ch_1"
    assert pool.calls[1][2]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_does_not_fetch_a_charge_for_an_intent_that_has_not_succeeded():
    pool = FakePool([FakeResponse(200, intent("requires_capture", latest_charge="ch_1"))])

    assert make_client(pool).fetch_payment("pi_1").status is S.AUTHORIZED
    assert len(pool.calls) == 1


def test_a_disputed_charge_reads_the_dispute():
    disputes = {
        "object": "list",
        "data": [{"id": "du_old", "status": "won", "created": 1}, {"id": "du_new", "status": "lost", "created": 9}],
    }
    pool = FakePool(
        [FakeResponse(200, intent("succeeded", latest_charge=charge(disputed=True))), FakeResponse(200, disputes)]
    )

    snapshot = make_client(pool).fetch_payment("pi_1")

    assert snapshot.status is S.CHARGED_BACK  # the most recent dispute decides
    parts = urlsplit(pool.urls[1])
    assert parts.path == "/v1/disputes"
    assert parse_qs(parts.query) == {"charge": ["ch_1"], "limit": ["10"]}


def test_a_stand_in_without_disputes_leaves_the_payment_disputed():
    pool = FakePool(
        [FakeResponse(200, intent("succeeded", latest_charge=charge(disputed=True))), FakeResponse(404, b"")]
    )

    snapshot = make_client(pool).fetch_payment("pi_1")
    assert (snapshot.status, snapshot.provider_status) == (S.DISPUTED, "succeeded/disputed:unknown")


def test_a_succeeded_intent_without_a_charge_is_paid():
    pool = FakePool([FakeResponse(200, intent("succeeded", latest_charge=None))])

    snapshot = make_client(pool).fetch_payment("pi_1")
    assert (snapshot.status, snapshot.amount_refunded) == (S.PAID, 0)


def test_a_missing_intent_is_not_found():
    pool = FakePool([FakeResponse(404, {"error": {"code": "resource_missing", "type": "invalid_request_error"}})])

    with pytest.raises(ResourceNotFound):
        make_client(pool).fetch_payment("pi_unknown")


def test_a_bad_key_is_rejected():
    pool = FakePool([FakeResponse(401, {"error": {"type": "invalid_request_error"}})])

    with pytest.raises(GatewayRejected):
        make_client(pool).fetch_payment("pi_1")


def test_the_id_is_escaped_into_one_path_segment():
    pool = FakePool([FakeResponse(404, {})])

    with pytest.raises(ResourceNotFound):
        make_client(pool).fetch_payment("../charges/ch_1")
    assert urlsplit(pool.urls[0]).path == "/v1/payment_intents/..%2Fcharges%2Fch_1"


@pytest.mark.parametrize(
    "body",
    [
        {**intent("succeeded"), "id": "pi_other"},
        intent("succeeded", amount="2000"),
        intent("succeeded", latest_charge=17),
        intent("succeeded", latest_charge=charge(amount_refunded="7")),
    ],
)
def test_malformed_answers_are_invalid(body):
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, body)])).fetch_payment("pi_1")
