"""Mercado Pago refetch: every row of the status table, exact money per currency, and a real loopback server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3

from shared.gateway import registry
from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.breaker import GuardedClient
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.mercadopago.client import STATUS_MAP, MercadoPagoClient, mercadopago_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

TOKEN = "APP_USR-8423526915216046-061214-5f3a6b7e8c9d0e1f2a3b4c5d6e7f8a9b-1234567"


def payment(status: str, detail: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": 1320000,
        "status": status,
        "status_detail": detail,
        "transaction_amount": Decimal("100.50"),
        "transaction_amount_refunded": Decimal("0"),
        "currency_id": "BRL",
        **extra,
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pending", S.PENDING),
        ("in_process", S.PENDING),
        ("authorized", S.AUTHORIZED),
        ("approved", S.PAID),
        ("in_mediation", S.DISPUTED),
        ("rejected", S.FAILED),
        ("cancelled", S.CANCELED),
        ("refunded", S.REFUNDED),
        ("charged_back", S.CHARGED_BACK),
    ],
)
def test_status_table(status, expected):
    canonical, provider_status = mercadopago_status(payment(status), amount=10050, amount_refunded=0)
    assert (canonical, provider_status) == (expected, status)


def test_the_table_covers_every_status_the_sdk_enumerates():
    # mercadopago sdk PaymentStatus: approved, pending, authorized, in_process, in_mediation, rejected, cancelled,
    # refunded, charged_back
    assert len(STATUS_MAP) == 9


@pytest.mark.parametrize(
    ("detail", "refunded", "expected"),
    [
        ("accredited", 0, S.PAID),
        ("partially_refunded", 0, S.PARTIALLY_REFUNDED),
        ("accredited", 2500, S.PARTIALLY_REFUNDED),
        ("accredited", 10050, S.REFUNDED),
    ],
)
def test_refunds_refine_an_approved_payment(detail, refunded, expected):
    canonical, provider_status = mercadopago_status(payment("approved", detail), amount=10050, amount_refunded=refunded)
    assert canonical is expected
    assert provider_status == f"approved/{detail}"


@pytest.mark.parametrize(
    ("detail", "expected"), [("in_process", S.DISPUTED), ("settled", S.CHARGED_BACK), ("reimbursed", S.CHARGED_BACK)]
)
def test_a_chargeback_still_in_process_is_disputed(detail, expected):
    assert mercadopago_status(payment("charged_back", detail), amount=1, amount_refunded=0)[0] is expected


@pytest.mark.parametrize("body", [payment("something_new"), payment(""), {"id": 1}])
def test_an_unknown_or_missing_status_is_invalid_not_a_guess(body):
    with pytest.raises(GatewayResponseInvalid):
        mercadopago_status(body, amount=None, amount_refunded=0)


def make_client(pool: Any, base: str = "https://api.mercadopago.test", **http: Any) -> MercadoPagoClient:
    transport = JsonHttpClient(base, provider="mercadopago", pool=pool, sleep=Sleeps(), random=lambda: 0, **http)
    return MercadoPagoClient(transport, lambda: TOKEN)


def test_fetches_the_payment_with_a_bearer_token():
    body = (
        b'{"id": 1320000, "status": "approved", "status_detail": "accredited", "transaction_amount": 10.1,'
        b' "transaction_amount_refunded": 0, "currency_id": "BRL"}'
    )
    pool = FakePool([FakeResponse(200, body)])

    snapshot = make_client(pool).fetch_payment("1320000")

    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.amount_refunded) == (S.PAID, 1010, "BRL", 0)
    assert snapshot.provider_status == "approved/accredited"
    assert pool.urls == ["https://api.mercadopago.test/v1/payments/1320000"]
    assert pool.calls[0][2]["headers"]["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [("10.1", "BRL", 1010), ("1500", "CLP", 1500), ("199.99", "MXN", 19999), ("0.29", "ARS", 29)],
)
def test_amounts_are_exact_minor_units_of_the_currency(amount, currency, minor):
    body = f'{{"id": 7, "status": "approved", "transaction_amount": {amount}, "currency_id": "{currency}"}}'
    snapshot = make_client(FakePool([FakeResponse(200, body.encode())])).fetch_payment("7")
    assert (snapshot.amount, snapshot.currency) == (minor, currency)


def test_a_partial_refund_reports_the_refunded_amount():
    body = (
        b'{"id": 7, "status": "approved", "status_detail": "partially_refunded", "transaction_amount": 100.0,'
        b' "transaction_amount_refunded": 25.5, "currency_id": "BRL"}'
    )
    snapshot = make_client(FakePool([FakeResponse(200, body)])).fetch_payment("7")
    assert (snapshot.status, snapshot.amount_refunded) == (S.PARTIALLY_REFUNDED, 2550)


def test_a_refunded_payment_without_a_refunded_amount_refunded_everything():
    body = b'{"id": 7, "status": "refunded", "transaction_amount": 50.0, "currency_id": "BRL"}'
    snapshot = make_client(FakePool([FakeResponse(200, body)])).fetch_payment("7")
    assert (snapshot.status, snapshot.amount_refunded) == (S.REFUNDED, 5000)


def test_an_unknown_payment_is_not_found():
    body = {"message": "Payment not found", "error": "not_found", "status": 404, "cause": []}
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, body)])).fetch_payment("123")


def test_a_bad_token_is_rejected():
    body = {"message": "invalid access token", "error": "unauthorized", "status": 401, "cause": []}
    with pytest.raises(GatewayRejected):
        make_client(FakePool([FakeResponse(401, body)])).fetch_payment("123")


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": 999, "status": "approved", "transaction_amount": 1.0, "currency_id": "BRL"}',
        b'{"id": 7, "status": "approved", "transaction_amount": "1.00", "currency_id": "BRL"}',
        b'{"id": 7, "status": "approved", "transaction_amount": 1e400, "currency_id": "BRL"}',
        b'{"id": 7, "transaction_amount": 1.0}',
    ],
)
def test_malformed_answers_are_invalid(body):
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, body)])).fetch_payment("7")


# ------------------------------------------------------------------------------------------ loopback server


class _MercadoPago(BaseHTTPRequestHandler):
    payments: dict[str, dict[str, Any]] = {}

    def do_GET(self) -> None:
        payment_id = self.path.removeprefix("/v1/payments/")
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._answer(401, {"message": "invalid access token", "error": "unauthorized", "status": 401})
        elif not self.path.startswith("/v1/payments/") or payment_id not in self.payments:
            self._answer(404, {"message": "Payment not found", "error": "not_found", "status": 404})
        else:
            self._answer(200, self.payments[payment_id])

    def _answer(self, status: int, document: Any) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def mercadopago_server() -> Iterator[str]:
    _MercadoPago.payments = {
        "1320000": {"id": 1320000, "status": "in_mediation", "transaction_amount": 99.9, "currency_id": "BRL"}
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MercadoPago)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_refetch_over_real_http(mercadopago_server):
    client = make_client(
        urllib3.PoolManager(retries=False), mercadopago_server, timeout=urllib3.Timeout(connect=1, read=2)
    )
    snapshot = client.fetch_payment("1320000")
    assert (snapshot.status, snapshot.amount, snapshot.provider_status) == (S.DISPUTED, 9990, "in_mediation")
    with pytest.raises(ResourceNotFound):
        client.fetch_payment("404404")


def test_the_registry_builds_the_client_from_the_environment(mercadopago_server, api_key_secrets):
    env = {"INBOX_API_BASE_MERCADOPAGO": mercadopago_server, **api_key_secrets({"mercadopago": TOKEN})}
    client = registry.build_gateway_client("mercadopago", env)
    assert isinstance(client, GuardedClient) and isinstance(client.client, MercadoPagoClient)
    assert client.fetch_payment("1320000").status is S.DISPUTED
    assert "mercadopago" in registry.supported_providers()


def test_the_default_base_url_is_mercado_pagos_api():
    client = registry.build_gateway_client("mercadopago", {})
    assert isinstance(client, GuardedClient)
    assert client.client._http.base_url == "https://api.mercadopago.com"  # type: ignore[attr-defined]


def test_without_a_key_nothing_is_sent():
    # Given no API-key secret named to the client, Then the call is rejected before any request
    client = registry.build_gateway_client("mercadopago", {"INBOX_API_BASE_MERCADOPAGO": "http://127.0.0.1:9"})
    assert client is not None
    with pytest.raises(GatewayRejected, match="no API key for mercadopago"):
        client.fetch_payment("1")
