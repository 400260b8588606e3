"""Pagar.me refetch: which endpoint an id reads, how it authenticates, and every row of the status tables."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.pagarme.client import PagarmeClient, charge_status, transaction_status
from shared.providers.pagarme.driver import CHARGE_STATUS, TRANSACTION_STATUS
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

KEY = "sk_test_0123456789abcdefghijklmn"


def charge(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "ch_1", "amount": 10000, "currency": "BRL", "status": status, **extra}


@pytest.mark.parametrize(
    ("status", "extra", "expected", "refunded"),
    [
        ("pending", {}, S.PENDING, 0),
        ("pending", {"last_transaction": {"status": "authorized_pending_capture"}}, S.AUTHORIZED, 0),
        ("processing", {}, S.PENDING, 0),
        ("underpaid", {"paid_amount": 5000}, S.PENDING, 0),
        ("paid", {"paid_amount": 10000}, S.PAID, 0),
        ("overpaid", {"paid_amount": 12000}, S.PAID, 0),
        ("paid", {"paid_amount": 10000, "canceled_amount": 2500}, S.PARTIALLY_REFUNDED, 2500),
        ("paid", {"paid_amount": 10000, "canceled_amount": 10000}, S.REFUNDED, 10000),
        ("canceled", {}, S.CANCELED, 0),
        ("canceled", {"paid_amount": 10000, "canceled_amount": 10000}, S.REFUNDED, 10000),
        ("canceled", {"paid_amount": 10000, "canceled_amount": 4000}, S.PARTIALLY_REFUNDED, 4000),
        ("refunded", {"paid_amount": 10000}, S.REFUNDED, 10000),
        ("failed", {}, S.FAILED, 0),
        ("chargedback", {"paid_amount": 10000}, S.CHARGED_BACK, 0),
    ],
)
def test_charge_status_table(status, extra, expected, refunded):
    canonical, _, amount_refunded = charge_status(charge(status, **extra))
    assert (canonical, amount_refunded) == (expected, refunded)


def test_the_charge_table_covers_every_status_pagarme_documents():
    # pagarme/ecommerce-module-core ChargeStatus: paid, pending, canceled, processing, failed, underpaid, overpaid;
    # plus chargedback and refunded (charge.chargedback / charge.refunded hooks)
    assert set(CHARGE_STATUS) == {
        "paid",
        "pending",
        "canceled",
        "processing",
        "failed",
        "underpaid",
        "overpaid",
        "chargedback",
        "refunded",
    }


@pytest.mark.parametrize(
    ("status", "extra", "expected"),
    [
        ("processing", {}, S.PENDING),
        ("waiting_payment", {}, S.PENDING),
        ("analyzing", {}, S.PENDING),
        ("pending_review", {}, S.PENDING),
        ("authorized", {}, S.AUTHORIZED),
        ("paid", {}, S.PAID),
        ("pending_refund", {}, S.PAID),
        ("paid", {"refunded_amount": 300}, S.PARTIALLY_REFUNDED),
        ("refunded", {"refunded_amount": 10000}, S.REFUNDED),
        ("refused", {}, S.FAILED),
        ("chargedback", {}, S.CHARGED_BACK),
    ],
)
def test_v4_transaction_status_table(status, extra, expected):
    assert transaction_status({"id": 1, "amount": 10000, "status": status, **extra})[0] is expected
    assert status in TRANSACTION_STATUS


@pytest.mark.parametrize("status", ["", "partial_magic", None])
def test_unknown_statuses_are_invalid(status):
    with pytest.raises(GatewayResponseInvalid):
        charge_status(charge(status))
    with pytest.raises(GatewayResponseInvalid):
        transaction_status({"status": status})


def test_amounts_must_be_centavos():
    with pytest.raises(GatewayResponseInvalid):
        charge_status(charge("paid", paid_amount="100.00"))


def make_client(pool: FakePool) -> PagarmeClient:
    http = JsonHttpClient("https://api.pagar.test", provider="pagarme", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return PagarmeClient(http, lambda: KEY)


def test_a_charge_is_read_from_core_v5_with_basic_auth():
    pool = FakePool([FakeResponse(200, charge("paid", paid_amount=10000))])
    snapshot = make_client(pool).fetch_payment("ch_1")
    assert (snapshot.status, snapshot.amount, snapshot.currency) == (S.PAID, 10000, "BRL")
    assert pool.urls == ["https://api.pagar.test/core/v5/charges/ch_1"]
    assert pool.calls[0][2]["headers"]["Authorization"] == "Basic " + base64.b64encode(f"{KEY}:".encode()).decode()


def test_an_order_reads_its_last_charge():
    order = {"id": "or_1", "status": "paid", "charges": [charge("failed", id="ch_0"), charge("paid", id="ch_2")]}
    pool = FakePool([FakeResponse(200, order)])
    snapshot = make_client(pool).fetch_payment("or_1")
    assert (snapshot.resource_id, snapshot.status) == ("or_1", S.PAID)
    assert pool.urls == ["https://api.pagar.test/core/v5/orders/or_1"]


def test_an_order_without_charges_reads_as_itself():
    pool = FakePool([FakeResponse(200, {"id": "or_1", "status": "pending", "amount": 500, "currency": "brl"})])
    snapshot = make_client(pool).fetch_payment("or_1")
    assert (snapshot.status, snapshot.amount, snapshot.currency) == (S.PENDING, 500, "BRL")


def test_a_legacy_transaction_is_read_from_v4_with_the_api_key_parameter():
    pool = FakePool([FakeResponse(200, {"object": "transaction", "id": 2727403, "status": "paid", "amount": 1000})])
    snapshot = make_client(pool).fetch_payment("2727403")
    assert (snapshot.status, snapshot.amount) == (S.PAID, 1000)
    assert pool.urls == [f"https://api.pagar.test/1/transactions/2727403?api_key={KEY}"]
    assert "Authorization" not in pool.calls[0][2]["headers"]


@pytest.mark.parametrize("resource_id", ["pay_1", "", "../charges/ch_1"])
def test_ids_that_are_not_pagarme_ids_are_not_found(resource_id):
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([])).fetch_payment(resource_id)


def test_a_404_is_not_found_and_a_401_rejected():
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, {"message": "Charge not found"})])).fetch_payment("ch_1")
    with pytest.raises(GatewayRejected):
        make_client(FakePool([FakeResponse(401, {"message": "Authorization has been denied"})])).fetch_payment("ch_1")


def test_an_answer_about_another_charge_is_invalid():
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, charge("paid", id="ch_other"))])).fetch_payment("ch_1")
