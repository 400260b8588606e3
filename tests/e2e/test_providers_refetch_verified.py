"""Refetch-verified gateways (Cielo, Zoop) over real HTTP, through the local stack and its gateway simulator:
a delivery with the header secret is stored and processed to the simulator's truth; a redelivery is a second
stored notification that settles ignored; a wrong header secret is refused with 403 and stores nothing."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest

from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from tests.e2e.conftest import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

PROVIDERS = ["cielo", "zoop"]
SETTLED = {"processed", "ignored", "failed"}


def resource_id_for(provider: str) -> str:
    return str(uuid.uuid4()) if provider == "cielo" else uuid.uuid4().hex


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def events_of(stack: Any, provider: str, resource_id: str) -> list[dict[str, Any]]:
    listed = json.loads(stack.cli("events", "list", "--json", "--provider", provider).stdout)
    return [row for row in listed if row.get("resource_id") == resource_id]


def settled_events(stack: Any, provider: str, resource_id: str, count: int) -> list[dict[str, Any]]:
    wait_until(  # in-process; then what `inbox events list` shows
        lambda: stack.stored_events(provider=provider, resource_id=resource_id),
        lambda items: len(items) >= count and all(item.get("status") in SETTLED for item in items),
    )
    rows = events_of(stack, provider, resource_id)
    if len(rows) >= count and all(row.get("status") in SETTLED for row in rows):
        return rows
    raise AssertionError(f"{provider} {resource_id}: not settled in 60 s: {rows}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_notification_is_processed_to_the_gateways_truth_and_a_redelivery_settles_ignored(local_stack, provider):
    # Given a payment the gateway simulator holds as paid, announced with `inbox send` (the header secret set)
    resource_id = resource_id_for(provider)
    sent = local_stack.cli("send", provider, "--resource-id", resource_id, "--status", "paid")
    # Then the answer names the delivery's own key, and `inbox send` prints it
    delivery = re.search(r'"delivery":"(n_[0-9TZ]+_[0-9a-f]{16})"', sent.stdout)
    assert delivery, sent.stdout
    assert f"inbox events show {provider} {delivery.group(1)}" in sent.stdout
    (first,) = settled_events(local_stack, provider, resource_id, 1)
    assert first["status"] == "processed"
    payment = json.loads(local_stack.cli("payments", "show", provider, resource_id, "--json").stdout)
    assert payment["status"] == "paid"  # the refetch's truth: the body said nothing about it

    # When the gateway redelivers the same notification twice (the same bytes)
    sender = sender_for(provider)
    now = int(time.time())
    body = sender.sample_body(
        event_id="evt_again", resource_id=resource_id, status="paid", amount=1990, occurred_at=now
    )
    signed = sender.sign(body, DEV_SECRETS[provider], now=now)
    headers = {"content-type": "application/json", **signed.headers}
    answers = [post(f"{local_stack.url}/webhooks/{provider}", signed.body, headers) for _ in range(2)]
    # Then each is stored as a notification of its own (no dedup by the body), and both settle ignored
    assert [code for code, _ in answers] == [200, 200]
    assert answers[0][1]["delivery"] != answers[1][1]["delivery"]
    rows = settled_events(local_stack, provider, resource_id, 3)
    assert sorted(row["status"] for row in rows) == ["ignored", "ignored", "processed"]
    again = json.loads(local_stack.cli("payments", "show", provider, resource_id, "--json").stdout)
    assert (again["status"], again["transitions"]) == ("paid", payment["transitions"])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_header_secret_is_forbidden_and_nothing_is_stored(local_stack, provider):
    # Given a notification carrying another secret than the source's
    sender = sender_for(provider)
    resource_id = resource_id_for(provider)
    now = int(time.time())
    body = sender.sample_body(event_id="evt_forged", resource_id=resource_id, status="paid", amount=1, occurred_at=now)
    forged = sender.sign(body, "not-the-" + DEV_SECRETS[provider], now=now)
    # When it is posted, Then it is refused with 403 and no event of that payment exists
    code, answer = post(
        f"{local_stack.url}/webhooks/{provider}", forged.body, {"content-type": "application/json", **forged.headers}
    )
    assert (code, answer) == (403, {"error": "forbidden"})
    assert events_of(local_stack, provider, resource_id) == []
