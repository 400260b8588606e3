"""Captured deliveries posted again, through the local stack over HTTP (docs/architecture.md, "Trust classes"): a
genuine delivery is processed, then a copy of it with its unsigned parts changed is posted, as someone who captured
it but holds no secret would. None of them changes the payment or its `last_event_at`; each stores at most a
duplicate or an `ignored` event; the PagBank length-extension forgery is refused and stores nothing.

"After its retention" is the original inbox item deleted, as DynamoDB's TTL does (the embedded AWS never expires
items). Times are fixed offsets from the moment each test starts; nothing waits on the wall clock but the
processing it polls for."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

import pytest

from inbox_local.config import LocalNames
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from shared.inbox.model import inline_body
from shared.inbox.store import from_attributes
from shared.providers.base import WebhookRequest, derive_event_id
from shared.providers.pagbank.driver import compute_signature
from shared.providers.registry import get_driver
from tests.e2e.conftest import RunningStack, wait_until
from tests.length_extension import forge

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

FAR_FUTURE_ISO = "2099-01-01T00:00:00Z"


def post(stack: RunningStack, provider: str, request: WebhookRequest) -> tuple[int, dict[str, Any]]:
    query = "?" + urlencode(request.query) if request.query else ""
    headers = {"content-type": "application/json", **request.headers}
    http = urllib.request.Request(
        f"{stack.url}/webhooks/{provider}{query}", data=request.body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(http, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def payment(stack: RunningStack, provider: str, resource_id: str) -> dict[str, Any]:
    answer = stack.client("dynamodb").get_item(
        TableName=LocalNames().payments_table, Key={"pk": {"S": f"{provider}#{resource_id}"}}, ConsistentRead=True
    )
    return from_attributes(answer["Item"]) if "Item" in answer else {}


def settled(stack: RunningStack, provider: str, event_id: str) -> dict[str, Any]:
    item = stack.settled_event(provider, event_id)
    assert item.get("status") in ("processed", "ignored"), item
    return item


def forget(stack: RunningStack, provider: str, event_id: str) -> None:
    """The item's retention ends (what DynamoDB's TTL does): its key is free again."""
    stack.client("dynamodb").delete_item(
        TableName=LocalNames().inbox_table, Key={"pk": {"S": f"{provider}#{event_id}"}}
    )


def events_about(stack: RunningStack, provider: str, resource_id: str) -> list[dict[str, Any]]:
    return stack.stored_events(provider=provider, resource_id=resource_id)


def signed(provider: str, *, event_id: str, resource_id: str, status: str, at: int) -> WebhookRequest:
    sender = sender_for(provider)
    body = sender.sample_body(event_id=event_id, resource_id=resource_id, status=status, amount=1990, occurred_at=at)
    return sender.sign(body, DEV_SECRETS[provider], now=at, event_id=event_id)


def test_a_shopify_paid_order_replayed_with_a_2099_triggered_at_freezes_nothing(local_stack):
    # Given a paid order, delivered and applied
    start = int(time.time())
    order = str(start * 1000 + 7)
    paid = signed("shopify", event_id="ev-paid", resource_id=order, status="paid", at=start - 600)
    assert post(local_stack, "shopify", paid)[0] == 200
    paid_id = get_driver("shopify").parse(paid).event_id
    settled(local_stack, "shopify", paid_id)
    before = payment(local_stack, "shopify", order)
    assert before["status"] == "paid"
    # When the captured delivery is posted again with a new event id and a triggered-at in 2099
    replay = WebhookRequest(
        paid.body,
        {**paid.headers, "x-shopify-event-id": "forged-event", "x-shopify-triggered-at": FAR_FUTURE_ISO},
    )
    # Then it is a duplicate of itself: nothing stored, nothing moved
    assert post(local_stack, "shopify", replay) == (200, {"received": True, "duplicate": True})
    # And once the original item is gone (retention), the copy is stored but settles ignored, moving nothing
    forget(local_stack, "shopify", paid_id)
    assert post(local_stack, "shopify", replay) == (200, {"received": True})
    assert settled(local_stack, "shopify", paid_id)["status"] == "ignored"
    assert payment(local_stack, "shopify", order) == before
    # And the genuine refund that follows is applied (the payment was not frozen at paid)
    refund = signed("shopify", event_id="ev-refund", resource_id=order, status="refunded", at=start - 300)
    assert post(local_stack, "shopify", refund)[0] == 200
    assert settled(local_stack, "shopify", get_driver("shopify").parse(refund).event_id)["status"] == "processed"
    assert payment(local_stack, "shopify", order)["status"] == "refunded"
    assert len(events_about(local_stack, "shopify", order)) == 2


def test_an_adyen_capture_replayed_after_its_retention_with_a_future_event_date_freezes_nothing(local_stack):
    # Given a captured payment, delivered and applied
    start = int(time.time())
    psp = f"PSP{start}"
    capture = signed("adyen", event_id=f"{psp}C", resource_id=psp, status="paid", at=start - 600)
    assert post(local_stack, "adyen", capture)[0] == 200
    capture_id = derive_event_id(f"{psp}C", "CAPTURE", "true", "")
    settled(local_stack, "adyen", capture_id)
    before = payment(local_stack, "adyen", psp)
    assert before["status"] == "paid"
    # When, after the item's retention, the captured delivery is posted again with eventDate in 2099 (not signed:
    # the item's hmacSignature still verifies)
    forget(local_stack, "adyen", capture_id)
    document = json.loads(capture.body)
    document["notificationItems"][0]["NotificationRequestItem"]["eventDate"] = "2099-01-01T00:00:00+01:00"
    replay = WebhookRequest(json.dumps(document).encode(), capture.headers)
    assert post(local_stack, "adyen", replay)[0] == 200
    # Then it is stored once, its time is not after its receipt, and it settles ignored with the payment unchanged
    item = settled(local_stack, "adyen", capture_id)
    assert item["status"] == "ignored" and item["occurred_at"] < "2099"
    assert payment(local_stack, "adyen", psp) == before
    # And the genuine refund that follows is applied
    refund = signed("adyen", event_id=f"{psp}R", resource_id=psp, status="refunded", at=start - 300)
    assert post(local_stack, "adyen", refund)[0] == 200
    assert settled(local_stack, "adyen", derive_event_id(f"{psp}R", "REFUND", "true", ""))["status"] == "processed"
    assert payment(local_stack, "adyen", psp)["status"] == "refunded"


def test_a_mercadopago_notification_replayed_with_other_body_ids_is_one_event(local_stack):
    # Given a notification of a payment the gateway (the stack's simulator) holds as paid, processed
    resource_id = str(int(time.time() * 1000))
    local_stack.cli("send", "mercadopago", "--resource-id", resource_id, "--status", "paid")
    (stored,) = wait_until(
        lambda: events_about(local_stack, "mercadopago", resource_id),
        lambda items: len(items) == 1 and items[0].get("status") in ("processed", "ignored"),
    )
    before = payment(local_stack, "mercadopago", resource_id)
    assert before["status"] == "paid"
    # When the captured delivery (what the inbox keeps: body, signature headers, signed query) is posted five more
    # times, each with another body id
    body = json.loads(inline_body(stored) or b"{}")
    copies = [
        WebhookRequest(json.dumps({**body, "id": 9_000_000 + n}).encode(), stored["headers"], stored["query"])
        for n in range(5)
    ]
    answers = [post(local_stack, "mercadopago", copy) for copy in copies]
    # Then every one is a duplicate: one event, one refetch, the payment unchanged
    assert answers == [(200, {"received": True, "duplicate": True})] * 5
    assert [item["event_id"] for item in events_about(local_stack, "mercadopago", resource_id)] == [stored["event_id"]]
    assert payment(local_stack, "mercadopago", resource_id) == before


def test_a_pagbank_length_extension_forgery_is_refused_and_stores_nothing(local_stack):
    # Given a genuine PagBank notification of an order the gateway (the stack's simulator) holds, processed: a
    # PagBank payment is an order (ORDE_...), and one the simulator cannot hold would only be retried, never settle
    resource_id = f"ORDE_{int(time.time() * 1000)}"
    local_stack.cli("send", "pagbank", "--resource-id", resource_id, "--status", "paid")
    (stored,) = wait_until(
        lambda: events_about(local_stack, "pagbank", resource_id),
        lambda items: len(items) == 1 and items[0].get("status") == "processed",
    )
    assert stored["status"] == "processed", stored
    body, digest = inline_body(stored) or b"", stored["headers"]["x-authenticity-token"]
    before = (payment(local_stack, "pagbank", resource_id), len(local_stack.stored_events(provider="pagbank")))
    assert before[0]["status"] == "paid"
    # When a forger extends the captured body with SHA-256's padding and a suffix, for every token length guess
    suffix = b',"status":"CANCELED"}'
    token = DEV_SECRETS["pagbank"]
    for guess in range(1, 65):
        glue, forged_digest = forge(digest, guess + 1 + len(body), suffix)
        forged = WebhookRequest(body + glue + suffix, {"x-authenticity-token": forged_digest})
        if guess == len(token):  # the right guess: a digest PagBank's scheme itself accepts
            assert compute_signature(forged.body, token) == forged_digest
        # Then each one is refused, 401
        assert post(local_stack, "pagbank", forged) == (401, {"error": "invalid signature"}), guess
    # And nothing was stored, nothing applied
    after = (payment(local_stack, "pagbank", resource_id), len(local_stack.stored_events(provider="pagbank")))
    assert after == before
