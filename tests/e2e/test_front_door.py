"""The local front door holds AWS's limits and a gateway's burst, over real HTTP (docs/aws-limits.md)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from inbox_cli.main import register_with_simulator
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from inbox_local.server import API_GATEWAY_MAX_BODY_BYTES

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group(__name__),
    pytest.mark.shared_stack,
]  # ingests and lists, never waits for processing

BURST_CONNECTIONS = 200


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=timeout)
    try:
        connection.request("POST", parts.path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def _signed_stripe(event_id: str, resource_id: str | None = None) -> tuple[bytes, dict[str, str]]:
    sender = sender_for("stripe")
    now = int(time.time())
    body = sender.sample_body(
        event_id=event_id, resource_id=resource_id or f"pi_{event_id}", status="paid", amount=100, occurred_at=now
    )
    signed = sender.sign(body, DEV_SECRETS["stripe"], now=now, event_id=event_id)
    return signed.body, {"content-type": "application/json", **signed.headers}


def test_a_burst_of_200_concurrent_deliveries_is_accepted_with_no_connection_reset(local_stack):
    # Given 200 gateway workers, each with its own connection and its own signed event, released at once: a retry
    # storm about one payment the gateway simulator knows. (About 200 payments it did not know, the processor went on
    # refetching 404s after the test, 8 attempts each: minutes of work, and Stripe's refetch rate, spent on a stack
    # whose next modules then waited behind them.)
    stamp = int(time.time() * 1000)
    payment, _ = register_with_simulator(
        f"http://127.0.0.1:{local_stack.env['INBOX_GATEWAY_PORT']}",
        "stripe",
        status="paid",
        amount=100,
        resource_id=None,
    )
    assert payment, "the gateway simulator did not register the burst's payment"
    deliveries = [_signed_stripe(f"evt_burst_{stamp}_{n}", payment) for n in range(BURST_CONNECTIONS)]
    barrier = threading.Barrier(BURST_CONNECTIONS)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def deliver(body: bytes, headers: dict[str, str]) -> None:
        parts = urlsplit(local_stack.url)
        connection = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=120)
        try:
            barrier.wait(timeout=60)
            connection.connect()  # every connection opened at the same moment: what the backlog must hold
            connection.request("POST", "/webhooks/stripe", body=body, headers=headers)
            response = connection.getresponse()
            outcome: Any = (response.status, json.loads(response.read()))
        except OSError as error:  # ConnectionResetError, BrokenPipeError, refused: the burst was not held
            outcome = error
        finally:
            connection.close()
        with lock:
            outcomes.append(outcome)

    workers = [threading.Thread(target=deliver, args=delivery) for delivery in deliveries]
    # When they all deliver at once
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
    # Then no connection was reset or refused, every delivery was answered 200 as new, and each event is stored
    errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
    assert errors == [], f"{len(errors)} of {BURST_CONNECTIONS} deliveries failed, e.g. {errors[:3]}"
    assert sorted(status for status, _ in outcomes) == [200] * BURST_CONNECTIONS
    assert all(answer == {"received": True} for _, answer in outcomes)
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", "stripe", "--limit", "100000").stdout)
    stored = {row["event_id"] for row in listed}
    assert {f"evt_burst_{stamp}_{n}" for n in range(BURST_CONNECTIONS)} <= stored


def test_a_body_over_the_http_api_payload_quota_is_refused_unread(local_stack):
    # Given a request announcing a body one byte over the HTTP API's 10 MB payload quota
    parts = urlsplit(local_stack.url)
    connection = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=30)
    try:
        connection.putrequest("POST", "/webhooks/stripe")
        connection.putheader("content-type", "application/json")
        connection.putheader("content-length", str(API_GATEWAY_MAX_BODY_BYTES + 1))
        connection.endheaders()  # When only its headers have been sent
        response = connection.getresponse()
        # Then API Gateway's own answer comes back at once, without waiting for the body: 413, in plain text
        answer = (response.status, response.read().decode())
    finally:
        connection.close()
    assert answer == (413, f"HTTP content length exceeded {API_GATEWAY_MAX_BODY_BYTES} bytes.")


def test_a_body_over_lambdas_invoke_payload_never_reaches_the_function(local_stack):
    # Given a correctly signed 7 MB delivery: under API Gateway's 10 MB, over Lambda's 6 MB invoke payload
    event_id = f"evt_over_invoke_{int(time.time() * 1000)}"
    document = json.loads(_signed_stripe(event_id)[0])
    document["data"]["object"]["metadata"] = {"blob": "z" * (7 * 1024 * 1024)}
    sender = sender_for("stripe")
    signed = sender.sign(json.dumps(document).encode(), DEV_SECRETS["stripe"], now=int(time.time()), event_id=event_id)
    # When it is posted
    status, text = _post(
        f"{local_stack.url}/webhooks/stripe", signed.body, {"content-type": "application/json", **signed.headers}
    )
    # Then API Gateway answers 413 "Request Too Long" and the event was never stored
    assert (status, json.loads(text)) == (413, {"message": "Request Too Long"})
    shown = local_stack.cli("events", "show", "stripe", event_id, "--json", check=False)
    assert shown.returncode != 0
