"""`make run`'s server over real HTTP: what a newcomer does first, and what a gateway sees."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.e2e.conftest import start_stack, stop_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group(__name__),
    pytest.mark.shared_stack,
]  # ingests and lists, never waits for processing


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.mark.parametrize("provider", ["stripe", "standard", "asaas"])
def test_inbox_send_is_stored_and_listed(local_stack, provider):
    # Given the local stack is running
    event_id = f"evt_e2e_{provider}_{int(time.time() * 1000)}"
    # When a newcomer sends a signed sample event with the CLI
    sent = local_stack.cli("send", provider, "--event-id", event_id)
    # Then it is accepted and shows up in the inbox listing and detail
    assert '{"received":true}' in sent.stdout
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", provider).stdout)
    assert event_id in {row["event_id"] for row in listed}
    shown = json.loads(local_stack.cli("events", "show", provider, event_id, "--json").stdout)
    assert shown["pk"] == f"{provider}#{event_id}"
    assert shown["body"]  # the raw body, exactly as received


def test_a_repeat_over_http_is_a_duplicate(local_stack):
    local_stack.cli("send", "stripe", "--event-id", "evt_e2e_repeat")
    again = local_stack.cli("send", "stripe", "--event-id", "evt_e2e_repeat")
    assert '"duplicate":true' in again.stdout


def test_a_forged_delivery_is_refused_over_http(local_stack):
    status, answer = post(
        f"{local_stack.url}/webhooks/stripe",
        b'{"id": "evt_forged", "type": "payment_intent.succeeded"}',
        {"content-type": "application/json", "stripe-signature": f"t={int(time.time())},v1={'0' * 64}"},
    )
    assert (status, answer) == (401, {"error": "invalid signature"})


def test_unknown_provider_is_404_over_http(local_stack):
    status, _ = post(f"{local_stack.url}/webhooks/nobody", b"{}", {"content-type": "application/json"})
    assert status == 404


def test_the_stack_stops_cleanly_on_interrupt():
    # Given a separate local stack
    stack = start_stack()
    # When it is interrupted (Ctrl-C)
    code = stop_stack(stack)
    # Then it exits with success and says so
    output = stack.output()
    assert code == 0
    assert "stopped." in output
