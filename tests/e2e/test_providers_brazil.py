"""The Brazilian gateways over real HTTP: `inbox send <provider>` is accepted and shows up in the inbox."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

import pytest

from inbox_cli.main import register_with_simulator
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from shared.gateway.registry import supported_providers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group(__name__),
    pytest.mark.shared_stack,
]  # ingests and lists, never waits for processing

# Hotmart's and Eduzz's samples carry their own event id; the others have none on the wire and get a derived one.
PROVIDERS = ["pagarme", "kiwify", "hotmart", "pagbank", "iugu", "eduzz", "stone"]
OWN_EVENT_ID = {"hotmart", "eduzz"}
RESOURCES = {
    "pagarme": "2727{stamp}",
    "kiwify": "b6ba3959-{stamp}",
    "hotmart": "HP{stamp}",
    "pagbank": "ORDE_{stamp}",
    "iugu": "1757E1D7{stamp}",
    "eduzz": "8{stamp}",
    "stone": "3737{stamp}",
}


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_inbox_send_is_accepted_and_listed(local_stack, provider):
    # Given the local stack is running with its development secrets
    resource_id = RESOURCES[provider].format(stamp=int(time.time() * 1000))
    event_id = f"evt_e2e_{provider}_{int(time.time() * 1000)}"
    # When a signed sample of the provider is sent with the CLI
    sent = local_stack.cli("send", provider, "--resource-id", resource_id, "--event-id", event_id)
    # Then it is accepted and listed, about the payment it was sent for
    assert '{"received":true}' in sent.stdout
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", provider).stdout)
    rows = [row for row in listed if row["resource_id"] == resource_id]
    assert len(rows) == 1
    if provider in OWN_EVENT_ID:
        assert rows[0]["event_id"] == event_id
    else:
        assert rows[0]["event_id"].startswith("d_")  # derived from the business fact
    shown = json.loads(local_stack.cli("events", "show", provider, rows[0]["event_id"], "--json").stdout)
    assert shown["pk"] == f"{provider}#{rows[0]['event_id']}"
    assert shown["body"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_redelivery_is_a_duplicate(local_stack, provider):
    # Given one signed delivery (the CLI signs a new fact at every call, so the bytes are built here once)
    sender = sender_for(provider)
    now = int(time.time())
    resource_id = RESOURCES[provider].format(stamp=f"{now}7")
    if provider in supported_providers():
        # about a payment the gateway simulator knows: on the shared stack, one it did not know would be refetched
        # (404) eight times over minutes, the next modules' wait (tests/README.md)
        registered, note = register_with_simulator(
            f"http://127.0.0.1:{local_stack.env['INBOX_GATEWAY_PORT']}",
            provider,
            status="paid",
            amount=990,
            resource_id=resource_id,
        )
        assert registered == resource_id and note.startswith("registered"), note
    body = sender.sample_body(
        event_id=f"evt_r_{resource_id}", resource_id=resource_id, status="paid", amount=990, occurred_at=now
    )
    signed = sender.sign(body, DEV_SECRETS[provider], now=now, event_id=f"evt_r_{resource_id}")
    url = f"{local_stack.url}/webhooks/{provider}" + (f"?{urlencode(signed.query)}" if signed.query else "")
    headers = {"content-type": "application/json", **signed.headers}
    # When the gateway delivers it twice, Then the second delivery is absorbed as a duplicate
    assert post(url, signed.body, headers) == (200, {"received": True})
    assert post(url, signed.body, headers) == (200, {"received": True, "duplicate": True})


def test_the_iugu_token_is_not_stored(local_stack):
    resource_id = f"1757E1D7{int(time.time() * 1000)}"
    local_stack.cli("send", "iugu", "--resource-id", resource_id)
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", "iugu").stdout)
    event_id = next(row["event_id"] for row in listed if row["resource_id"] == resource_id)
    shown = local_stack.cli("events", "show", "iugu", event_id, "--json").stdout
    assert "local-development-only-iugu-token" not in shown
