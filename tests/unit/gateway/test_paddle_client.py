"""Paddle refetch: the status table, adjustments totals, how the request looks, and a real loopback HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3

from shared.gateway import registry
from shared.gateway.base import GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.gateway.breaker import GuardedClient
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.paddle.client import STATUS_MAP, PaddleClient, paddle_status
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

KEY = "pdl_live_apikey_01gtgztp8fzz9e4d3tjbe1f9qm_ABCDEFGHIJKLMNOPQRSTUV_XYZ"
TXN = "txn_01hv8wptq8987qeep44cyrewp9"


def transaction(status: str, *, refund: str = "0", chargeback: str = "0", grand_total: str = "2750") -> dict[str, Any]:
    return {
        "id": TXN,
        "status": status,
        "currency_code": "usd",
        "details": {"totals": {"subtotal": "2500", "tax": "250", "total": grand_total, "grand_total": grand_total}},
        "adjustments_totals": {
            "subtotal": "0",
            "tax": "0",
            "total": "0",
            "fee": "0",
            "earnings": "0",
            "breakdown": {"credit": "0", "refund": refund, "chargeback": chargeback},
            "currency_code": "USD",
        },
    }


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("draft", S.PENDING),
        ("ready", S.PENDING),
        ("billed", S.PENDING),
        ("paid", S.PAID),
        ("completed", S.PAID),
        ("past_due", S.FAILED),
        ("canceled", S.CANCELED),
    ],
)
def test_status_table(status, expected):
    canonical, provider_status, refunded = paddle_status(transaction(status), amount=2750)
    assert (canonical, provider_status, refunded) == (expected, status, 0)


def test_the_table_covers_every_transaction_status_the_sdk_enumerates():
    # paddle_billing TransactionStatus: draft, ready, billed, paid, completed, canceled, past_due
    assert set(STATUS_MAP) == {"draft", "ready", "billed", "paid", "completed", "canceled", "past_due"}


@pytest.mark.parametrize(
    ("refund", "chargeback", "expected", "label"),
    [
        ("1000", "0", S.PARTIALLY_REFUNDED, "completed/partially_refunded"),
        ("2750", "0", S.REFUNDED, "completed/refunded"),
        ("0", "2750", S.CHARGED_BACK, "completed/chargeback"),
        ("1000", "1750", S.CHARGED_BACK, "completed/chargeback"),
    ],
)
def test_adjustments_refine_a_paid_transaction(refund, chargeback, expected, label):
    canonical, provider_status, refunded = paddle_status(
        transaction("completed", refund=refund, chargeback=chargeback), amount=2750
    )
    assert (canonical, provider_status, refunded) == (expected, label, int(refund))


def test_adjustments_do_not_refine_an_unpaid_transaction():
    assert paddle_status(transaction("billed", refund="100"), amount=2750)[0] is S.PENDING


@pytest.mark.parametrize("body", [{"status": "something_new"}, {"status": ""}, {}])
def test_an_unknown_or_missing_status_is_invalid_not_a_guess(body):
    with pytest.raises(GatewayResponseInvalid):
        paddle_status(body, amount=None)


def make_client(pool: Any, base: str = "https://api.paddle.test", **http: Any) -> PaddleClient:
    transport = JsonHttpClient(base, provider="paddle", pool=pool, sleep=Sleeps(), random=lambda: 0, **http)
    return PaddleClient(transport, lambda: KEY)


def test_reads_the_transaction_with_its_adjustments_totals():
    pool = FakePool([FakeResponse(200, {"data": transaction("completed", refund="750"), "meta": {"request_id": "r"}})])

    snapshot = make_client(pool).fetch_payment(TXN)

    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.amount_refunded) == (
        S.PARTIALLY_REFUNDED,
        2750,
        "USD",
        750,
    )
    assert snapshot.provider_status == "completed/partially_refunded"
    assert pool.urls == [f"https://api.paddle.test/transactions/{TXN}?include=adjustments_totals"]
    headers = pool.calls[0][2]["headers"]
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Paddle-Version"] == "1"


def test_total_is_used_when_there_is_no_grand_total():
    body = transaction("completed")
    body["details"]["totals"].pop("grand_total")
    body["details"]["totals"]["total"] = "999"
    snapshot = make_client(FakePool([FakeResponse(200, {"data": body})])).fetch_payment(TXN)
    assert snapshot.amount == 999


def test_a_transaction_without_adjustments_totals_is_plainly_paid():
    body = transaction("paid")
    body.pop("adjustments_totals")
    snapshot = make_client(FakePool([FakeResponse(200, {"data": body})])).fetch_payment(TXN)
    assert (snapshot.status, snapshot.amount_refunded) == (S.PAID, 0)


def test_an_unknown_transaction_is_not_found():
    body = {"error": {"type": "request_error", "code": "not_found", "detail": "Entity not found"}}
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, body)])).fetch_payment("txn_unknown")


def test_a_bad_key_is_rejected_with_the_error_code_kept():
    body = {"error": {"type": "request_error", "code": "authentication_malformed", "detail": "..."}}
    with pytest.raises(GatewayRejected) as caught:
        make_client(FakePool([FakeResponse(403, body)])).fetch_payment(TXN)
    assert "authentication_malformed" in str(caught.value)


def test_a_rate_limit_is_retried():
    pool = FakePool([FakeResponse(429, b"", {"Retry-After": "1"}), FakeResponse(200, {"data": transaction("paid")})])
    assert make_client(pool).fetch_payment(TXN).status is S.PAID
    assert len(pool.calls) == 2


def test_the_id_is_escaped_into_one_path_segment():
    pool = FakePool([FakeResponse(404, b"")])
    with pytest.raises(ResourceNotFound):
        make_client(pool).fetch_payment("../customers/ctm_1")
    assert pool.urls == ["https://api.paddle.test/transactions/..%2Fcustomers%2Fctm_1?include=adjustments_totals"]


@pytest.mark.parametrize(
    "body",
    [
        {"meta": {}},
        {"data": [transaction("paid")]},
        {"data": {**transaction("paid"), "id": "txn_other"}},
        {"data": {**transaction("paid"), "details": {"totals": {"grand_total": 27.5}}}},
        {"data": {**transaction("paid"), "details": {"totals": {"grand_total": "-5"}}}},
        {"data": transaction("paid", refund="ten")},
    ],
)
def test_malformed_answers_are_invalid(body):
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, body)])).fetch_payment(TXN)


# ------------------------------------------------------------------------------------------ loopback server


class _Paddle(BaseHTTPRequestHandler):
    """A stand-in speaking Paddle's REST shape: GET /transactions/{id}, Bearer key, {"data": ...}."""

    transactions: dict[str, dict[str, Any]] = {}
    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, dict(self.headers)))
        path, _, query = self.path.partition("?")
        txn = path.removeprefix("/transactions/")
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            self._answer(403, {"error": {"code": "forbidden"}})
        elif not path.startswith("/transactions/") or txn not in self.transactions:
            self._answer(404, {"error": {"code": "not_found"}})
        else:
            data = dict(self.transactions[txn])
            if "include=adjustments_totals" not in query:
                data.pop("adjustments_totals", None)
            self._answer(200, {"data": data, "meta": {"request_id": "req_1"}})

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
def paddle_server() -> Iterator[str]:
    _Paddle.transactions = {TXN: transaction("completed", refund="2750")}
    _Paddle.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Paddle)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_refetch_over_real_http(paddle_server):
    client = make_client(urllib3.PoolManager(retries=False), paddle_server, timeout=urllib3.Timeout(connect=1, read=2))
    snapshot = client.fetch_payment(TXN)
    assert (snapshot.status, snapshot.amount_refunded) == (S.REFUNDED, 2750)
    with pytest.raises(ResourceNotFound):
        client.fetch_payment("txn_missing")


def test_the_registry_builds_the_client_from_the_environment(paddle_server, api_key_secrets):
    # Given INBOX_API_BASE_PADDLE pointing at a stand-in server, and the source's key in Secrets Manager
    env = {"INBOX_API_BASE_PADDLE": paddle_server, **api_key_secrets({"paddle": KEY})}
    client = registry.build_gateway_client("paddle", env)
    # Then the guarded Paddle client reads from it, with the key from its secret
    assert isinstance(client, GuardedClient) and isinstance(client.client, PaddleClient)
    assert client.fetch_payment(TXN).status is S.REFUNDED
    assert "paddle" in registry.supported_providers()


def test_the_default_base_url_is_paddles_api():
    client = registry.build_gateway_client("paddle", {})
    assert isinstance(client, GuardedClient)
    assert client.client._http.base_url == "https://api.paddle.com"  # type: ignore[attr-defined]


def test_a_dead_server_is_unavailable_not_rejected():
    client = make_client(
        urllib3.PoolManager(retries=False),
        "http://127.0.0.1:9",
        max_attempts=2,
        timeout=urllib3.Timeout(connect=0.5, read=0.5),
    )
    with pytest.raises(GatewayUnavailable):
        client.fetch_payment(TXN)
