"""Woovi refetch: `GET /api/v1/charge/{correlationID}` with the raw AppID in `Authorization`, and every status."""

from __future__ import annotations

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.woovi.client import WooviClient, charge_snapshot
from shared.sub_account import SubAccount
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

APP_ID = "Q2xpZW50X0lkX3dvb3ZpLXRlc3Q="
CORRELATION_ID = "9134e286-6f71-427a-bf00-241681624586"


@pytest.mark.parametrize(("status", "expected"), [("ACTIVE", S.PENDING), ("COMPLETED", S.PAID), ("EXPIRED", S.FAILED)])
def test_charge_status_table(status, expected):
    # Given a charge in each status Woovi documents, Then it reads as its canonical status, in centavos of BRL
    snapshot = charge_snapshot(CORRELATION_ID, {"status": status, "value": 1000, "correlationID": CORRELATION_ID})
    assert (snapshot.status, snapshot.provider_status, snapshot.amount, snapshot.currency) == (
        expected,
        status,
        1000,
        "BRL",
    )


@pytest.mark.parametrize("charge", [{"status": "REFUNDED"}, {}, {"status": "COMPLETED", "value": "10,00"}])
def test_unreadable_charges_are_invalid(charge):
    with pytest.raises(GatewayResponseInvalid):
        charge_snapshot(CORRELATION_ID, charge)


def make_client(pool: FakePool) -> WooviClient:
    http = JsonHttpClient("https://api.woovi.test", provider="woovi", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return WooviClient(http, lambda: APP_ID)


def test_reads_the_charge_by_its_correlation_id_with_the_raw_app_id():
    # Given Woovi's answer to GET /api/v1/charge/{id} (the shape of its API reference)
    answer = {"charge": {"status": "COMPLETED", "value": 100, "correlationID": CORRELATION_ID, "type": "DYNAMIC"}}
    pool = FakePool([FakeResponse(200, answer)])
    # When the processor refetches the charge
    snapshot = make_client(pool).fetch_payment(CORRELATION_ID)
    # Then it asked for that charge with the AppID as is (Woovi: no `Bearer` prefix), and reads it as paid
    assert pool.urls == [f"https://api.woovi.test/api/v1/charge/{CORRELATION_ID}"]
    assert pool.calls[0][2]["headers"]["Authorization"] == APP_ID
    assert (snapshot.status, snapshot.amount) == (S.PAID, 100)


def test_not_found_another_charge_bad_credentials_and_sub_accounts():
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, {"data": None, "errors": [{"message": "x"}]})])).fetch_payment("X")
    with pytest.raises(GatewayResponseInvalid):
        other = {"charge": {"status": "ACTIVE", "correlationID": "Y"}}
        make_client(FakePool([FakeResponse(200, other)])).fetch_payment("X")
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, {"data": None})])).fetch_payment("X")
    with pytest.raises(GatewayRejected):
        invalid = {"data": None, "errors": [{"message": "appID inválido"}]}
        make_client(FakePool([FakeResponse(401, invalid)])).fetch_payment("X")
    with pytest.raises(GatewayRejected):
        make_client(FakePool([])).fetch_payment("X", account=SubAccount("acct_1"))
