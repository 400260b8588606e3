"""iugu refetch: `GET /v1/invoices/{id}` with Basic auth, and every invoice status."""

from __future__ import annotations

import base64

import pytest

from shared.gateway.base import ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.iugu.client import IuguClient, invoice_status
from shared.providers.iugu.driver import INVOICE_STATUS
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

TOKEN = "iugu-api-token-0123456789"


@pytest.mark.parametrize(
    ("status", "refunded", "expected", "amount_refunded"),
    [
        ("draft", 0, S.PENDING, 0),
        ("pending", 0, S.PENDING, 0),
        ("partially_paid", 0, S.PENDING, 0),
        ("in_analysis", 0, S.PENDING, 0),
        ("authorized", 0, S.AUTHORIZED, 0),
        ("paid", 0, S.PAID, 0),
        ("externally_paid", 0, S.PAID, 0),
        ("paid", 300, S.PARTIALLY_REFUNDED, 300),
        ("paid", 1000, S.REFUNDED, 1000),
        ("partially_refunded", 300, S.PARTIALLY_REFUNDED, 300),
        ("refunded", 0, S.REFUNDED, 1000),
        ("canceled", 0, S.CANCELED, 0),
        ("expired", 0, S.FAILED, 0),
        ("in_protest", 0, S.DISPUTED, 0),
        ("chargeback", 0, S.CHARGED_BACK, 0),
    ],
)
def test_invoice_status_table(status, refunded, expected, amount_refunded):
    canonical, _, refunded_out = invoice_status({"status": status, "total_cents": 1000, "refunded_cents": refunded})
    assert (canonical, refunded_out) == (expected, amount_refunded)
    assert status in INVOICE_STATUS


@pytest.mark.parametrize("invoice", [{"status": "new"}, {}, {"status": "paid", "total_cents": "10,00"}])
def test_unreadable_invoices_are_invalid(invoice):
    with pytest.raises(GatewayResponseInvalid):
        invoice_status(invoice)


def make_client(pool: FakePool) -> IuguClient:
    http = JsonHttpClient("https://api.iugu.test", provider="iugu", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return IuguClient(http, lambda: TOKEN)


def test_reads_the_invoice_with_basic_auth():
    invoice = {"id": "1757E1D7", "status": "paid", "total_cents": 1990, "currency": "BRL"}
    pool = FakePool([FakeResponse(200, invoice)])
    snapshot = make_client(pool).fetch_payment("1757E1D7")
    assert (snapshot.status, snapshot.amount, snapshot.currency) == (S.PAID, 1990, "BRL")
    assert pool.urls == ["https://api.iugu.test/v1/invoices/1757E1D7"]
    assert pool.calls[0][2]["headers"]["Authorization"] == "Basic " + base64.b64encode(f"{TOKEN}:".encode()).decode()


def test_not_found_and_other_invoices():
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, {"errors": "Not Found"})])).fetch_payment("X")
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, {"id": "Y", "status": "paid"})])).fetch_payment("X")
