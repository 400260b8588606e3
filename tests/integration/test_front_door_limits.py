"""The local front door's API Gateway behaviours, on a loopback server with a stand-in function."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_local.server import ApiServer, TokenBucket
from shared import definitions


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_the_burst_at_once_then_the_rate():
    # Given API Gateway's throttle with a burst of 3 and a rate of 2 per second
    clock = FakeClock()
    bucket = TokenBucket(rate=2, burst=3, clock=clock)
    # When 4 requests arrive at the same instant
    first = [bucket.take() for _ in range(4)]
    # Then the burst passes and the 4th is throttled
    assert first == [True, True, True, False]
    # And half a second later one more token has been refilled, never more than the burst after a long pause
    clock.now += 0.5
    assert [bucket.take(), bucket.take()] == [True, False]
    clock.now += 3600
    assert sum(bucket.take() for _ in range(10)) == 3


def test_the_default_throttle_admits_what_a_new_inbox_table_absorbs():
    # Given the local front door's default throttle (the stack's stage has the same) and a new on-demand inbox table
    clock = FakeClock()
    server = ApiServer(("127.0.0.1", 0), lambda _event, _context: {}, access_log=False)
    server.server_close()
    bucket = TokenBucket(server.throttle.rate, server.throttle.burst, clock=clock)
    assert (bucket.rate, bucket.burst) == (definitions.API_THROTTLE_RATE_LIMIT, definitions.API_THROTTLE_BURST_LIMIT)
    # When deliveries arrive at 5,000 a second for 20 seconds
    arrivals_per_second, seconds = 5_000, 20
    admitted = [0] * seconds
    start = clock.now
    for arrival in range(arrivals_per_second * seconds):
        clock.now = start + arrival / arrivals_per_second
        admitted[arrival // arrivals_per_second] += bucket.take()
    # Then the first second's deliveries fit the table's units with the ingest's writes alone (their settles come
    # after the Pipe and the queue), and every later second's with each delivery's ingest and settle
    table = definitions.ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND
    assert admitted[0] * definitions.INBOX_WRITE_UNITS_PER_STORED_DELIVERY <= table
    per_delivery = definitions.INBOX_WRITE_UNITS_PER_STORED_DELIVERY + definitions.INBOX_WRITE_UNITS_PER_SETTLED_EVENT
    assert all(count * per_delivery <= table for count in admitted[1:])
    # And the throttle is not set below what the table absorbs: within a delivery or two a second of it (the token
    # refilled at a second's last instant falls in the next)
    assert admitted[-1] >= table // per_delivery - 1
    assert admitted[0] >= table // definitions.INBOX_WRITE_UNITS_PER_STORED_DELIVERY - 2


def test_a_pre_warmed_table_raises_the_throttle_with_it():
    # Given an inbox table pre-warmed to 16,000 write units a second (-c inbox_warm_write_units=16000)
    # When the stage's throttle is worked out for it
    rate, burst = definitions.api_throttle(16_000)
    # Then it admits four times the default, in the same proportion
    assert (rate, burst) == (2_666, 2_667)
    assert rate * 6 <= 16_000 and (rate + burst) * 3 <= 16_000


@pytest.fixture
def server_with_small_throttle() -> Iterator[tuple[ApiServer, list[dict[str, Any]]]]:
    invoked: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        invoked.append(event)
        return {"statusCode": 200, "body": json.dumps({"received": True})}

    # A bucket that never refills: exactly `burst` requests pass
    server = ApiServer(("127.0.0.1", 0), handler, access_log=False, throttle=TokenBucket(rate=0, burst=2))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, invoked
    server.shutdown()
    server.server_close()


def _post(server: ApiServer) -> tuple[int, Any]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(str(host), int(port), timeout=10)
    try:
        connection.request("POST", "/webhooks/stripe", body=b"{}", headers={"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_past_the_throttle_api_gateway_answers_429_and_the_function_is_not_invoked(server_with_small_throttle):
    # Given a front door whose throttle holds two requests
    server, invoked = server_with_small_throttle
    # When three deliveries arrive
    answers = [_post(server) for _ in range(3)]
    # Then two reach the function and the third gets API Gateway's own 429
    assert answers == [(200, {"received": True}), (200, {"received": True}), (429, {"message": "Too Many Requests"})]
    assert len(invoked) == 2
