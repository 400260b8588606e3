"""The JSON GET client: status mapping, bounded retries with full jitter, Retry-After, budgets, real sockets."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3

from shared.backoff import Backoff, Jitter
from shared.gateway.base import GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.gateway.http import (
    MAX_BODY_BYTES,
    GatewayHttpRejected,
    JsonHttpClient,
    parse_retry_after,
    path_segment,
)
from tests.unit.gateway.fakes import Clock, FakePool, FakeResponse, Sleeps

NOW = 1_700_000_000.0


def client(pool: FakePool, sleeps: Sleeps, **kwargs: Any) -> JsonHttpClient:
    kwargs.setdefault("random", lambda: 1.0)  # the top of the jitter range: deterministic waits
    kwargs.setdefault("clock", lambda: NOW)
    return JsonHttpClient("https://api.example.test/", provider="example", pool=pool, sleep=sleeps, **kwargs)


def get(c: JsonHttpClient, **kwargs: Any) -> dict[str, Any]:
    return c.get_json("/v1/things/abc", headers={"Authorization": "Bearer sk_test_secret"}, **kwargs)


# ------------------------------------------------------------------------------------------- status mapping


def test_returns_the_json_object_and_sends_the_headers(sleeps):
    pool = FakePool([FakeResponse(200, {"id": "abc", "amount": 10})])

    assert get(client(pool, sleeps), query=[("expand[]", "latest_charge")]) == {"id": "abc", "amount": 10}

    method, url, kwargs = pool.calls[0]
    assert (method, url) == ("GET", "https://api.example.test/v1/things/abc?expand%5B%5D=latest_charge")
    assert kwargs["headers"]["Authorization"] == "Bearer sk_test_secret"
    assert kwargs["headers"]["Accept"] == "application/json"
    assert kwargs["retries"] is False and kwargs["redirect"] is False  # our retries, never urllib3's
    assert sleeps == []


def test_a_404_is_resource_not_found_and_is_not_retried(sleeps):
    pool = FakePool([FakeResponse(404, {"error": {"code": "resource_missing"}})])

    with pytest.raises(ResourceNotFound):
        get(client(pool, sleeps))
    assert len(pool.calls) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 301, 405, 422])
def test_client_errors_are_rejected_without_retrying(sleeps, status):
    pool = FakePool([FakeResponse(status, {"errors": [{"code": "invalid_access_token", "description": "x"}]})])

    with pytest.raises(GatewayRejected) as caught:
        get(client(pool, sleeps))

    assert isinstance(caught.value, GatewayHttpRejected)
    assert caught.value.status == status
    assert caught.value.error_codes == ("invalid_access_token",)
    assert len(pool.calls) == 1 and sleeps == []


def test_error_codes_are_read_from_stripe_shaped_bodies_too(sleeps):
    pool = FakePool([FakeResponse(401, {"error": {"type": "invalid_request_error", "message": "Invalid API Key"}})])

    with pytest.raises(GatewayHttpRejected) as caught:
        get(client(pool, sleeps))
    assert caught.value.error_codes == ("invalid_request_error",)


def test_never_puts_the_key_or_the_body_in_the_error(sleeps):
    secret_body = {"error": {"message": "customer jane@example.com card 4242"}}
    pool = FakePool([FakeResponse(403, secret_body)])

    with pytest.raises(GatewayRejected) as caught:
        get(client(pool, sleeps))
    assert "sk_test_secret" not in str(caught.value)
    assert "jane" not in str(caught.value)


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429, 408])
def test_retryable_statuses_are_retried_then_succeed(sleeps, status):
    pool = FakePool([FakeResponse(status), FakeResponse(status), FakeResponse(200, {"ok": True})])

    assert get(client(pool, sleeps)) == {"ok": True}
    assert len(pool.calls) == 3
    assert sleeps == [0.25, 0.5]  # full jitter at random() = 1: base * 2**(n-1)


def test_gives_up_after_the_attempts_with_gateway_unavailable(sleeps):
    pool = FakePool([FakeResponse(503)] * 3)

    with pytest.raises(GatewayUnavailable) as caught:
        get(client(pool, sleeps))

    assert len(pool.calls) == 3  # bounded
    assert len(sleeps) == 2  # no pointless wait after the last attempt
    assert caught.value.circuit_open is False
    assert "503" in str(caught.value)


@pytest.mark.parametrize(
    "error",
    [
        urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"),  # type: ignore[arg-type]
        urllib3.exceptions.ConnectTimeoutError("connect timed out"),
        urllib3.exceptions.NewConnectionError(None, "refused"),  # type: ignore[arg-type]
        urllib3.exceptions.ProtocolError("connection reset"),
    ],
)
def test_timeouts_and_connection_errors_are_retried(sleeps, error):
    pool = FakePool([error, FakeResponse(200, {"ok": True})])

    assert get(client(pool, sleeps)) == {"ok": True}
    assert len(pool.calls) == 2


def test_jitter_is_drawn_from_the_whole_range(sleeps):
    draws = iter([0.0, 0.5])
    pool = FakePool([FakeResponse(500), FakeResponse(500), FakeResponse(200, {})])

    get(client(pool, sleeps, random=lambda: next(draws)))

    assert sleeps == [0.0, 0.25]  # 0 * 0.25, 0.5 * 0.5


def test_full_jitter_is_capped():
    assert Backoff(base=0.25, cap=2.0, jitter=Jitter.FULL).delay(10, rand=lambda: 1.0) == 2.0
    assert Backoff(base=0.25, cap=2.0, jitter=Jitter.FULL).delay(1, rand=lambda: 0.5) == 0.125


def test_the_connection_goes_back_to_the_pool(sleeps):
    responses = [FakeResponse(503), FakeResponse(200, {})]
    pool = FakePool(list(responses))

    get(client(pool, sleeps))
    assert all(response.released for response in responses)


# ------------------------------------------------------------------------------------------------- Retry-After


def test_retry_after_in_seconds_is_honoured(sleeps):
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "3"}), FakeResponse(200, {})])

    get(client(pool, sleeps))
    assert sleeps == [3.0]


def test_retry_after_as_an_http_date_is_honoured(sleeps):
    when = format_datetime(datetime.fromtimestamp(NOW + 4, tz=UTC), usegmt=True)
    pool = FakePool([FakeResponse(503, headers={"Retry-After": when}), FakeResponse(200, {})])

    get(client(pool, sleeps))
    assert sleeps == [4.0]


def test_retry_after_shorter_than_the_jitter_does_not_shorten_the_wait(sleeps):
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "0"}), FakeResponse(200, {})])

    get(client(pool, sleeps))
    assert sleeps == [0.25]


def test_retry_after_beyond_the_cap_gives_up_at_once_and_says_how_long(sleeps):
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "60"})])

    with pytest.raises(GatewayUnavailable) as caught:
        get(client(pool, sleeps))

    assert caught.value.retry_after == 60.0  # the caller delays the message; the Lambda does not sleep
    assert len(pool.calls) == 1 and sleeps == []


def test_the_last_retry_after_is_reported_when_attempts_run_out(sleeps):
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "1"})] * 3)

    with pytest.raises(GatewayUnavailable) as caught:
        get(client(pool, sleeps))
    assert caught.value.retry_after == 1.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", 5.0),
        (" 2 ", 2.0),
        ("1.5", 1.5),
        ("-3", 0.0),
        ("", None),
        (None, None),
        ("soon", None),
        ("nan", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: go now
    ],
)
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value, now=NOW) == expected


def test_parse_retry_after_date_in_the_future():
    when = format_datetime(datetime.fromtimestamp(NOW + 7, tz=UTC), usegmt=True)
    assert parse_retry_after(when, now=NOW) == 7.0


# ----------------------------------------------------------------------------------------------- budgets, bodies


def test_the_waiting_budget_stops_retries_early(sleeps):
    clock = Clock(0.0)
    pool = FakePool([FakeResponse(429, headers={"Retry-After": "8"}), FakeResponse(429, headers={"Retry-After": "8"})])

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(seconds)

    c = JsonHttpClient(
        "https://api.example.test", provider="example", pool=pool, sleep=sleep, monotonic=clock, budget_seconds=12
    )
    with pytest.raises(GatewayUnavailable) as caught:
        get(c)

    assert sleeps == [8.0]  # a second 8 s wait would pass the 12 s budget
    assert len(pool.calls) == 2
    assert "budget" in str(caught.value)


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"[1, 2]", b"\xff\xfe", b'{"a": NaN}'])
def test_a_2xx_body_that_is_not_a_json_object_is_unavailable(sleeps, body):
    pool = FakePool([FakeResponse(200, body)])

    with pytest.raises(GatewayUnavailable):
        get(client(pool, sleeps))
    assert len(pool.calls) == 1  # not retried in the loop: the event is retried later


def test_an_oversized_body_is_refused_and_its_connection_dropped(sleeps):
    response = FakeResponse(200, b"{" + b" " * MAX_BODY_BYTES + b"}")
    pool = FakePool([response])

    with pytest.raises(GatewayUnavailable):
        get(client(pool, sleeps))
    assert response.closed and response.released


def test_parse_float_is_passed_to_json(sleeps):
    from decimal import Decimal

    pool = FakePool([FakeResponse(200, b'{"value": 10.1}')])

    assert get(client(pool, sleeps), parse_float=Decimal) == {"value": Decimal("10.1")}


@pytest.mark.parametrize(
    ("resource_id", "segment"),
    [("pi_123", "pi_123"), ("../charges/ch_1", "..%2Fcharges%2Fch_1"), ("a?b#c", "a%3Fb%23c"), ("pay 1", "pay%201")],
)
def test_path_segment_keeps_an_id_inside_its_segment(resource_id, segment):
    assert path_segment(resource_id) == segment


@pytest.mark.parametrize("resource_id", ["", ".", ".."])
def test_path_segment_refuses_ids_that_would_move_the_path(resource_id):
    with pytest.raises(ResourceNotFound):
        path_segment(resource_id)


def test_max_attempts_must_be_positive():
    with pytest.raises(ValueError, match="max_attempts"):
        JsonHttpClient("https://x", provider="x", max_attempts=0)


# --------------------------------------------------------------------------------------- real loopback sockets


Script = list[Callable[[BaseHTTPRequestHandler], None]]


@pytest.fixture
def loopback() -> Iterator[tuple[str, Script, list[dict[str, str]]]]:
    """A tiny HTTP server on 127.0.0.1 answering from a script of handlers; records request headers."""
    script: Script = []
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            seen.append({k.lower(): v for k, v in self.headers.items()})
            script.pop(0)(self)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script, seen
    finally:
        server.shutdown()
        server.server_close()


def answer(status: int, body: bytes = b"{}", headers: dict[str, str] | None = None, delay: float = 0.0):
    def handle(handler: BaseHTTPRequestHandler) -> None:
        if delay:
            time.sleep(delay)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        try:
            handler.wfile.write(body)
        except ConnectionError:  # the client timed out and left: expected in the timeout tests
            handler.close_connection = True

    return handle


def real_client(url: str, sleeps: Sleeps, **kwargs: Any) -> JsonHttpClient:
    return JsonHttpClient(
        url,
        provider="loopback",
        pool=urllib3.PoolManager(retries=False),
        sleep=sleeps,
        random=lambda: 0.0,
        timeout=urllib3.Timeout(connect=1.0, read=0.3),
        **kwargs,
    )


def test_over_http_a_503_then_a_200_succeeds(loopback, sleeps):
    url, script, seen = loopback
    script += [answer(503, b'{"error": {"type": "api_error"}}'), answer(200, b'{"id": "pi_1"}')]

    assert real_client(url, sleeps).get_json("/v1/payment_intents/pi_1", headers={"X-Key": "k"}) == {"id": "pi_1"}
    assert len(seen) == 2 and seen[0]["x-key"] == "k"


def test_over_http_retry_after_is_read_from_the_response(loopback, sleeps):
    url, script, _ = loopback
    script += [answer(429, headers={"Retry-After": "2"}), answer(200, b"{}")]

    real_client(url, sleeps).get_json("/x", headers={})
    assert sleeps == [2.0]


def test_over_http_a_404_and_a_401_are_mapped(loopback, sleeps):
    url, script, _ = loopback
    script += [answer(404, b'{"error": {"code": "resource_missing"}}'), answer(401, b"{}")]

    with pytest.raises(ResourceNotFound):
        real_client(url, sleeps).get_json("/a", headers={})
    with pytest.raises(GatewayRejected):
        real_client(url, sleeps).get_json("/b", headers={})


def test_over_http_read_timeouts_are_retried_then_unavailable(loopback, sleeps):
    url, script, seen = loopback
    script += [answer(200, delay=1.0)] * 3

    started = time.monotonic()
    with pytest.raises(GatewayUnavailable) as caught:
        real_client(url, sleeps).get_json("/slow", headers={})

    assert "ReadTimeoutError" in str(caught.value)
    assert len(seen) == 3
    assert time.monotonic() - started < 3.0  # three 0.3 s read timeouts, not three 1 s answers


def test_over_http_a_refused_connection_is_unavailable(sleeps):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(GatewayUnavailable):
        real_client(f"http://127.0.0.1:{port}", sleeps).get_json("/x", headers={})
    assert len(sleeps) == 2
