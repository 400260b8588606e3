"""Forwarding never follows a redirect: a 3xx from the customer's endpoint is a failed attempt, retried on the
backoff schedule, its Location recorded without the query; nothing ever connects to where it points (loopback
servers only)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from shared.backoff import Backoff
from shared.forwarding import DeliveryFailed, Forwarder
from shared.forwarding_log import Answer, attempt_item
from tests.unit.test_forwarding_log import EVENT, SECRET, WHEN

TOKEN = "s3cret-redirect-token"


class Landing:
    """Where a redirect points: a bare listener counting the connections made to it (plain or TLS alike)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self._running:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def stop(self) -> None:
        self._running = False
        self.listener.close()


class RedirectingEndpoint:
    """The customer's endpoint answering every POST with `status` and a Location."""

    def __init__(self, status: int, location: str) -> None:
        self.requests = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                endpoint.requests += 1
                self.send_response(status)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST  # a followed redirect would arrive here as a GET

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def landing() -> Iterator[Landing]:
    target = Landing()
    yield target
    target.stop()


@pytest.mark.parametrize("scheme", ["https", "http"])
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failed_attempt_retried_on_the_schedule_and_never_followed(
    landing: Landing, scheme: str, status: int
) -> None:
    # Given an endpoint that answers every POST with a redirect to another server, a token in the Location's query
    location = f"{scheme}://127.0.0.1:{landing.port}/elsewhere?token={TOKEN}"
    endpoint = RedirectingEndpoint(status, location)
    recorded: list[tuple[str, Answer]] = []
    slept: list[float] = []
    forwarder = Forwarder(
        url=endpoint.url,
        secrets=(SECRET,),
        max_attempts=3,
        timeout_seconds=5,
        sleep=slept.append,
        record=lambda _event, url, answer, _started: recorded.append((url, answer)),
    )
    try:
        # When an event is delivered
        with pytest.raises(DeliveryFailed, match="last status " + str(status)):
            forwarder.deliver(EVENT)
    finally:
        endpoint.stop()
    # Then every attempt was a failure, POSTed to the configured URL, with the usual backoff between them
    assert endpoint.requests == 3 and forwarder.attempts == 3
    assert slept == [Backoff(0.5, 30.0).delay(1), Backoff(0.5, 30.0).delay(2)]
    assert [answer.status for _url, answer in recorded] == [status] * 3
    assert {url for url, _answer in recorded} == {endpoint.url}
    # And nothing followed the redirect: no connection reached where it pointed
    assert landing.connections == 0
    # And the attempt's record names the Location without its query (the token stays out of the log)
    answer = recorded[0][1]
    assert answer.error == f"redirect not followed (Location: {scheme}://127.0.0.1:{landing.port}/elsewhere)"
    item = attempt_item(EVENT, url=endpoint.url, answer=answer, attempted_at=WHEN, sender="forwarder")
    assert item["response_headers"]["location"] == f"{scheme}://127.0.0.1:{landing.port}/elsewhere"
    assert item["status"] == status and TOKEN not in repr(item)


def test_a_relative_location_is_recorded_resolved_against_the_endpoint(landing: Landing) -> None:
    endpoint = RedirectingEndpoint(302, f"/moved?token={TOKEN}")
    forwarder = Forwarder(url=endpoint.url, secrets=(SECRET,), max_attempts=1, timeout_seconds=5)
    try:
        answer = forwarder.exchange(EVENT)
    finally:
        endpoint.stop()
    assert answer.status == 302 and endpoint.requests == 1
    assert answer.error == f"redirect not followed (Location: {endpoint.url.removesuffix('/hooks')}/moved)"


def test_a_redirect_without_a_location_is_a_failed_attempt_too() -> None:
    endpoint = RedirectingEndpoint(302, "")
    forwarder = Forwarder(url=endpoint.url, secrets=(SECRET,), max_attempts=1, timeout_seconds=5)
    try:
        answer = forwarder.exchange(EVENT)
    finally:
        endpoint.stop()
    assert answer.status == 302 and not answer.accepted and answer.error == "redirect not followed (no Location)"
