"""PagBank refetch: orders and charges with a Bearer token, and every row of the charge status table."""

from __future__ import annotations

from typing import Any

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.pagbank.client import PagbankClient, charge_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

TOKEN = "pagbank-bearer-token-0123456789"


def charge(status: str, paid: int = 0, refunded: int = 0, **extra: Any) -> dict[str, Any]:
    summary = {"total": 1000, "paid": paid, "refunded": refunded}
    return {"id": "CHAR_1", "status": status, "amount": {"value": 1000, "currency": "BRL", "summary": summary}, **extra}


@pytest.mark.parametrize(
    ("status", "paid", "refunded", "expected", "amount_refunded"),
    [
        ("WAITING", 0, 0, S.PENDING, 0),
        ("IN_ANALYSIS", 0, 0, S.PENDING, 0),
        ("AUTHORIZED", 0, 0, S.AUTHORIZED, 0),
        ("PAID", 1000, 0, S.PAID, 0),
        ("PAID", 1000, 250, S.PARTIALLY_REFUNDED, 250),
        ("PAID", 1000, 1000, S.REFUNDED, 1000),
        ("DECLINED", 0, 0, S.FAILED, 0),
        ("CANCELED", 0, 0, S.CANCELED, 0),
        ("CANCELED", 1000, 1000, S.REFUNDED, 1000),
        ("CANCELED", 1000, 0, S.REFUNDED, 1000),
        ("CANCELED", 1000, 400, S.PARTIALLY_REFUNDED, 400),
    ],
)
def test_charge_status_table(status, paid, refunded, expected, amount_refunded):
    canonical, _, amount, refunded_out, currency = charge_status(charge(status, paid, refunded))
    assert (canonical, refunded_out, amount, currency) == (expected, amount_refunded, 1000, "BRL")


@pytest.mark.parametrize(
    "document",
    [
        charge("NEW_STATUS"),
        charge(""),
        {"id": "CHAR_1", "status": "PAID"},
        {"id": "CHAR_1", "status": "PAID", "amount": {"value": 1000, "summary": {"paid": "10.00"}}},
    ],
)
def test_unreadable_charges_are_invalid(document):
    with pytest.raises(GatewayResponseInvalid):
        charge_status(document)


def make_client(pool: FakePool) -> PagbankClient:
    http = JsonHttpClient("https://api.pagbank.test", provider="pagbank", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return PagbankClient(http, lambda: TOKEN)


def test_an_order_is_read_with_a_bearer_token_and_its_last_charge_decides():
    order = {"id": "ORDE_1", "charges": [charge("DECLINED", id="CHAR_0"), charge("PAID", 1000, id="CHAR_2")]}
    pool = FakePool([FakeResponse(200, order)])
    snapshot = make_client(pool).fetch_payment("ORDE_1")
    assert (snapshot.resource_id, snapshot.status, snapshot.amount) == ("ORDE_1", S.PAID, 1000)
    assert pool.urls == ["https://api.pagbank.test/orders/ORDE_1"]
    assert pool.calls[0][2]["headers"]["Authorization"] == f"Bearer {TOKEN}"


def test_a_charge_is_read_from_charges():
    pool = FakePool([FakeResponse(200, charge("PAID", 1000, 300))])
    snapshot = make_client(pool).fetch_payment("CHAR_1")
    assert (snapshot.status, snapshot.amount_refunded, snapshot.provider_status) == (
        S.PARTIALLY_REFUNDED,
        300,
        "PAID/partially_refunded",
    )
    assert pool.urls == ["https://api.pagbank.test/charges/CHAR_1"]


def test_an_order_nobody_paid_yet_is_pending():
    snapshot = make_client(FakePool([FakeResponse(200, {"id": "ORDE_1", "charges": []})])).fetch_payment("ORDE_1")
    assert (snapshot.status, snapshot.provider_status) == (S.PENDING, "CREATED")


@pytest.mark.parametrize("resource_id", ["pay_1", "orde_1", ""])
def test_ids_that_are_not_pagbank_ids_are_not_found(resource_id):
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([])).fetch_payment(resource_id)


def test_http_answers():
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, {})])).fetch_payment("CHAR_1")
    with pytest.raises(GatewayRejected):
        make_client(FakePool([FakeResponse(401, {"error_messages": [{"code": "UNAUTHORIZED"}]})])).fetch_payment(
            "CHAR_1"
        )
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, charge("PAID", id="CHAR_other"))])).fetch_payment("CHAR_1")
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, {"id": "ORDE_1", "charges": {}})])).fetch_payment("ORDE_1")


def test_pagbank_and_iugu_are_refetched_from_their_apis():
    from shared.gateway.registry import build_gateway_client
    from shared.process.handlers import RefetchPaymentHandler, default_router
    from shared.providers.iugu.client import IuguClient

    router = default_router(lambda provider: None)
    assert isinstance(router.resolve("pagbank", "order.PAID"), RefetchPaymentHandler)
    assert isinstance(router.resolve("iugu", "invoice.status_changed"), RefetchPaymentHandler)
    assert router.resolve("iugu", "withdraw_request.status_changed") is None
    for provider, kind, base in [
        ("pagbank", PagbankClient, "https://api.pagseguro.com"),
        ("iugu", IuguClient, "https://api.iugu.com"),
        ("pagarme", None, "https://api.pagar.me"),
    ]:
        client: Any = build_gateway_client(provider, {})
        assert client is not None and client.client._http.base_url == base
        if kind is not None:
            assert isinstance(client.client, kind)
    overridden: Any = build_gateway_client("pagbank", {"INBOX_API_BASE_PAGBANK": "http://127.0.0.1:9/"})
    assert overridden.client._http.base_url == "http://127.0.0.1:9"
