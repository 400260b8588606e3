"""Cielo and Zoop refetch: their two-part credentials, their reads and every status they report."""

from __future__ import annotations

import base64

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.cielo.client import CieloClient, sale_status
from shared.providers.zoop.client import ZoopClient, centavos, transaction_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

MERCHANT_ID = "6b1a5e2c-0d1f-4c3e-9a7b-2f8e4d6c1a90"
PAYMENT_ID = "24bc8366-fc31-4d6c-8555-17049a836a07"


def http(pool: FakePool, provider: str) -> JsonHttpClient:
    return JsonHttpClient("https://api.test", provider=provider, pool=pool, sleep=Sleeps(), random=lambda: 0)


@pytest.mark.parametrize(
    ("payment", "expected", "refunded"),
    [
        ({"Status": 0}, S.PENDING, 0),
        ({"Status": 1}, S.AUTHORIZED, 0),
        ({"Status": 2}, S.PAID, 0),
        ({"Status": 3}, S.FAILED, 0),
        ({"Status": 10, "Amount": 1000}, S.CANCELED, 0),
        ({"Status": 10, "CapturedAmount": 1000, "VoidedAmount": 1000}, S.REFUNDED, 1000),
        ({"Status": 11, "CapturedAmount": 1000, "VoidedAmount": 300}, S.PARTIALLY_REFUNDED, 300),
        ({"Status": 11, "Amount": 1000}, S.REFUNDED, 1000),
        ({"Status": 12}, S.PENDING, 0),
        ({"Status": 13}, S.FAILED, 0),
        ({"Status": 20}, S.PENDING, 0),
    ],
)
def test_cielo_payment_status_table(payment, expected, refunded):
    canonical, _, amount_refunded = sale_status(payment)
    assert (canonical, amount_refunded) == (expected, refunded)


@pytest.mark.parametrize("payment", [{}, {"Status": 4}, {"Status": "2"}, {"Status": 11, "CapturedAmount": "10,00"}])
def test_cielo_unreadable_payments_are_invalid(payment):
    with pytest.raises(GatewayResponseInvalid):
        sale_status(payment)


def test_cielo_reads_the_sale_with_merchant_id_and_key():
    pool = FakePool([FakeResponse(200, {"Payment": {"PaymentId": PAYMENT_ID, "Status": 2, "Amount": 1990}})])
    snapshot = CieloClient(http(pool, "cielo"), lambda: f"{MERCHANT_ID}:the-merchant-key").fetch_payment(PAYMENT_ID)
    assert (snapshot.status, snapshot.amount, snapshot.currency) == (S.PAID, 1990, "BRL")
    assert pool.urls == [f"https://api.test/1/sales/{PAYMENT_ID}"]
    headers = pool.calls[0][2]["headers"]
    assert (headers["MerchantId"], headers["MerchantKey"]) == (MERCHANT_ID, "the-merchant-key")


@pytest.mark.parametrize("key", ["s3cr3t-no-colon", ":s3cr3t", "s3cr3t:"])
def test_a_credential_without_both_parts_is_an_operators_problem_and_is_not_repeated(key):
    # Given a source whose API key is not MERCHANT_ID:MERCHANT_KEY, Then the refetch is refused without a call,
    # and the message says the form without repeating the value
    pool = FakePool([])
    with pytest.raises(GatewayRejected, match="MERCHANT_ID:MERCHANT_KEY") as caught:
        CieloClient(http(pool, "cielo"), lambda: key).fetch_payment(PAYMENT_ID)
    assert "s3cr3t" not in str(caught.value)
    assert pool.calls == []


def test_cielo_not_found_and_another_payment():
    key = f"{MERCHANT_ID}:k"
    with pytest.raises(ResourceNotFound):
        CieloClient(http(FakePool([FakeResponse(404, [])]), "cielo"), lambda: key).fetch_payment(PAYMENT_ID)
    other = FakeResponse(200, {"Payment": {"PaymentId": "other", "Status": 2}})
    with pytest.raises(GatewayResponseInvalid):
        CieloClient(http(FakePool([other]), "cielo"), lambda: key).fetch_payment(PAYMENT_ID)


@pytest.mark.parametrize(
    ("transaction", "expected"),
    [
        ({"status": "new"}, S.PENDING),
        ({"status": "pending"}, S.PENDING),
        ({"status": "pre_authorized"}, S.AUTHORIZED),
        ({"status": "succeeded"}, S.PAID),
        ({"status": "failed"}, S.FAILED),
        ({"status": "canceled"}, S.CANCELED),
        ({"status": "canceled", "captured": True}, S.REFUNDED),
        ({"status": "reversed"}, S.REFUNDED),
        ({"status": "dispute"}, S.DISPUTED),
        ({"status": "charged_back"}, S.CHARGED_BACK),
    ],
)
def test_zoop_transaction_status_table(transaction, expected):
    assert transaction_status(transaction)[0] is expected


@pytest.mark.parametrize(("amount", "expected"), [("10.00", 1000), ("19.9", 1990), (7, 700), (None, None)])
def test_zoop_amounts_are_reais(amount, expected):
    assert centavos(amount) == expected


@pytest.mark.parametrize("amount", ["ten", "-1", "1e20", True, {}])
def test_zoop_unreadable_amounts_are_invalid(amount):
    with pytest.raises(GatewayResponseInvalid):
        centavos(amount)


def test_zoop_reads_the_marketplace_transaction_with_basic_auth():
    marketplace, transaction_id = "3249465a7753536b62545a6a684b0000", "a" * 32
    pool = FakePool([FakeResponse(200, {"id": transaction_id, "status": "succeeded", "amount": "19.90"})])
    client = ZoopClient(http(pool, "zoop"), lambda: f"{marketplace}:zpk_test_key")
    snapshot = client.fetch_payment(transaction_id)
    assert (snapshot.status, snapshot.amount) == (S.PAID, 1990)
    assert pool.urls == [f"https://api.test/v1/marketplaces/{marketplace}/transactions/{transaction_id}"]
    expected = "Basic " + base64.b64encode(b"zpk_test_key:").decode()
    assert pool.calls[0][2]["headers"]["Authorization"] == expected
