"""Several events in one delivery, over real HTTP through the local stack: Adyen's notificationItems and Efí's Pix
callbacks (skip-mTLS `?hmac=`, the `/pix` Efí appends, a refund repeating its Pix), each event stored once and
processed."""

from __future__ import annotations

import json
import re
import time
from typing import Any
from urllib.parse import urlencode

import pytest

from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from tests.e2e.conftest import wait_until
from tests.e2e.test_providers_brazil import post

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]


def adyen_delivery(*psp_references: str) -> tuple[bytes, dict[str, str]]:
    sender = sender_for("adyen")
    now = int(time.time())
    items: list[Any] = []
    for index, psp in enumerate(psp_references):
        body = sender.sample_body(
            event_id=psp, resource_id=psp, status="authorized", amount=990, occurred_at=now + index
        )
        items.extend(json.loads(body)["notificationItems"])
    signed = sender.sign(
        json.dumps({"live": "false", "notificationItems": items}).encode(), DEV_SECRETS["adyen"], now=now
    )
    return signed.body, {"content-type": "application/json", **signed.headers}


def sent_ids(stdout: str) -> tuple[str, str]:
    """(the stored event id, the payment) `inbox send` reports."""
    found = re.search(r"sent \S+ \(\S+\) event (\S+) about payment (\S+);", stdout)
    assert found, stdout
    return found.group(1), found.group(2)


def wait_for(stack: Any, source: str, event_id: str, statuses: set[str], timeout: float = 60) -> dict[str, Any]:
    """`inbox events show` of the event once its item is in one of `statuses` (waited for in-process)."""
    wait_until(
        lambda: stack.stored_event(source, event_id), lambda item: item.get("status") in statuses, timeout=timeout
    )
    shown: dict[str, Any] = json.loads(stack.cli("events", "show", source, event_id, "--json").stdout)
    if shown.get("status") not in statuses:
        raise AssertionError(f"{source} {event_id} never reached {statuses}: {shown}")
    return shown


def test_an_adyen_delivery_of_three_items_is_three_events_stored_once(local_stack):
    # Given an authentic Adyen delivery of three notification items, about three payments
    stamp = int(time.time() * 1000)
    references = [f"{stamp}{index}" for index in range(3)]
    body, headers = adyen_delivery(*references)
    url = f"{local_stack.url}/webhooks/adyen"
    # When Adyen posts it, Then it is accepted as Adyen documents
    assert post(url, body, headers) == (200, {"received": True, "notificationResponse": "[accepted]"})
    # and each item is its own event, listed about its own payment, and processed
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", "adyen").stdout)
    rows = [row for row in listed if row["resource_id"] in references]
    assert sorted(row["resource_id"] for row in rows) == sorted(references)
    for row in rows:
        wait_for(local_stack, "adyen", row["event_id"], {"processed"})
    # When Adyen delivers it again (its answer lost), Then nothing is stored twice
    assert post(url, body, headers)[1].get("duplicate") is True
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", "adyen").stdout)
    assert len([row for row in listed if row["resource_id"] in references]) == 3


def test_inbox_send_efi_is_refetched_and_a_refund_repeating_its_pix_stores_only_the_refund(local_stack):
    # Given a Pix received (the simulator knows it), sent by the CLI as Efí's skip-mTLS callback
    sent = local_stack.cli("send", "efi")
    assert '"received":true' in sent.stdout
    _, e2e_id = sent_ids(sent.stdout)
    wait_for(local_stack, "efi", e2e_id, {"processed"})
    # When Efí calls back again about that Pix with a devolução (the Pix repeated first), to the URL + /pix
    sender = sender_for("efi")
    now = int(time.time())
    body = sender.sample_body(event_id="dev1", resource_id=e2e_id, status="refunded", amount=1990, occurred_at=now)
    signed = sender.sign(body, DEV_SECRETS["efi"], now=now)
    url = f"{local_stack.url}/webhooks/efi/pix?{urlencode(signed.query)}"
    status, answer = post(url, signed.body, {"content-type": "application/json"})
    # Then the Pix is recognised (stored before) and only the devolução is stored: the delivery is accepted
    assert (status, answer) == (200, {"received": True})
    listed = json.loads(local_stack.cli("events", "list", "--json", "--provider", "efi").stdout)
    about = [row for row in listed if row["resource_id"] == e2e_id]
    assert sorted(row["event_type"] for row in about) == ["pix", "pix.devolucao"]
    refund = next(row for row in about if row["event_type"] == "pix.devolucao")
    # (refetched: the simulator's Pix was not refunded, so the devolução changes nothing or confirms it)
    wait_for(local_stack, "efi", refund["event_id"], {"processed", "ignored"})
    # and the same callback again is a duplicate
    assert post(url, signed.body, {"content-type": "application/json"})[1].get("duplicate") is True


def test_inbox_send_efi_refunded_ends_with_the_payment_refunded(local_stack):
    # Given a Pix the simulator took to refunded, and Efí's callback about it (the Pix and its devolução)
    sent = local_stack.cli("send", "efi", "--status", "refunded")
    stored_id, e2e_id = sent_ids(sent.stdout)
    # Then both events are stored and processed, and the payment reads as refunded
    wait_for(local_stack, "efi", stored_id, {"processed", "ignored"})
    wait_for(local_stack, "efi", e2e_id, {"processed", "ignored"})
    deadline = time.monotonic() + 30
    payment: dict[str, Any] = {}
    while time.monotonic() < deadline and payment.get("status") != "refunded":
        shown = local_stack.cli("payments", "show", "efi", e2e_id, "--json", check=False)
        payment = json.loads(shown.stdout) if shown.returncode == 0 else {}
        time.sleep(0.5)
    assert payment.get("status") == "refunded", payment


def test_efis_path_and_proof_are_checked(local_stack):
    sender = sender_for("efi")
    now = int(time.time())
    e2e_id = f"E00000000202406121945{now % 10**11:011d}"
    body = sender.sample_body(event_id="x", resource_id=e2e_id, status="paid", amount=990, occurred_at=now)
    headers = {"content-type": "application/json"}
    # Without a client certificate or the registered hmac: refused
    assert post(f"{local_stack.url}/webhooks/efi/pix", body, headers)[0] == 401
    assert post(f"{local_stack.url}/webhooks/efi/pix?hmac=guess", body, headers)[0] == 401
    # With the hmac: accepted on both the registered URL and the one Efí appends /pix to (one event)
    good = f"?hmac={DEV_SECRETS['efi']}&ignorar="
    assert post(f"{local_stack.url}/webhooks/efi/pix{good}", body, headers) == (200, {"received": True})
    assert post(f"{local_stack.url}/webhooks/efi{good}", body, headers)[1].get("duplicate") is True
    # /pix belongs to Efí's sources only
    assert post(f"{local_stack.url}/webhooks/stripe/pix", body, headers)[0] == 404
    # and the hmac (the secret itself) is not kept with the event
    shown = local_stack.cli("events", "show", "efi", e2e_id, "--json").stdout
    assert DEV_SECRETS["efi"] not in shown


def test_inbox_simulate_efi_ends_matching_the_gateway(local_stack):
    # Given Efí payments walking their lifecycles (paid, refunded in parts), delivered late, twice, concurrently;
    # every refund's callback repeats its Pix (a duplicate inside a delivery of new events)
    result = local_stack.cli(
        "simulate", "--json", "--provider", "efi", "--payments", "8", "--duplicates", "0.5", check=False, timeout=300
    )
    report = json.loads(result.stdout)
    # Then every payment equals the simulator's truth, and nothing failed or stayed pending
    assert report["ok"], report["mismatches"]
    assert report["matching"] == report["payments"] == 8
    assert report["statuses"].get("failed", 0) == 0 and report["delivery_failures"] == 0
