"""Woovi / OpenPix through the local stack: RSA-signed deliveries (the development key the local stack alone
trusts), a redelivery absorbed, forgeries refused, and every charge processed to the gateway simulator's truth."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from inbox_local.config import signing_secret
from inbox_local.providers.woovi.sender import key_pair_secret, sender
from shared.providers.woovi.driver import LEGACY_HMAC_HEADER, SIGNATURE_HEADER
from tests.e2e.conftest import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def settled(local_stack, resource_id: str, deadline_seconds: float = 60) -> dict[str, Any]:
    """The payment's first event as `inbox events list` shows it, once none of its events is pending (waited for
    in-process)."""
    wait_until(
        lambda: local_stack.stored_events(provider="woovi", resource_id=resource_id),
        lambda items: bool(items) and all(item["status"] in ("processed", "ignored", "failed") for item in items),
        timeout=deadline_seconds,
    )
    rows = json.loads(local_stack.cli("events", "list", "--json", "--provider", "woovi").stdout)
    mine = [row for row in rows if row["resource_id"] == resource_id]
    assert mine and all(row["status"] in ("processed", "ignored", "failed") for row in mine), mine
    first: dict[str, Any] = mine[0]
    return first


def test_inbox_send_woovi_is_verified_refetched_and_paid(local_stack):
    # Given the local stack, whose woovi source trusts the development key (and Woovi's pinned keys)
    resource_id = f"e2e-woovi-{int(time.time() * 1000)}"
    # When `inbox send woovi` posts a charge paid, signed with the development key
    sent = local_stack.cli("send", "woovi", "--status", "paid", "--resource-id", resource_id)
    assert '{"received":true}' in sent.stdout
    # Then the event (a derived key: Woovi's bodies have none) is processed after the charge is read back from the
    # simulator's Woovi API, and the payment is what the simulator says: paid, in centavos of BRL
    row = settled(local_stack, resource_id)
    assert (row["status"], row["event_id"][:2]) == ("processed", "d_")
    payment = json.loads(local_stack.cli("payments", "show", "woovi", resource_id, "--json").stdout)
    assert (payment["status"], payment["currency"]) == ("paid", "BRL")


def test_a_redelivery_is_absorbed_and_forgeries_are_refused(local_stack):
    # Given one delivery as Woovi would send it (built here once: the CLI signs a new fact at every call)
    now = int(time.time())
    resource_id = f"e2e-woovi-r-{now}"
    body = sender.sample_body(
        event_id=f"r{now}", resource_id=resource_id, status="pending", amount=990, occurred_at=now
    )
    genuine = sender.sign(body, signing_secret("woovi"), now=now)
    url = f"{local_stack.url}/webhooks/woovi"
    # When Woovi delivers it twice, Then the second delivery is absorbed as a duplicate
    assert post(url, body, genuine.headers) == (200, {"received": True})
    assert post(url, body, genuine.headers) == (200, {"received": True, "duplicate": True})
    # When a delivery is signed with a key the source does not trust, Then it is refused
    forged = sender.sign(body.replace(b"990", b"999"), key_pair_secret(), now=now)
    assert post(url, forged.body, forged.headers)[0] == 401
    # ...and so is one carrying only the deprecated X-OpenPix-Signature HMAC, or the genuine signature of other bytes
    hmac_only = {"content-type": "application/json", LEGACY_HMAC_HEADER: "jgR2XF0PKDiAwHP1s+TryvxMySQ="}
    assert post(url, body, hmac_only)[0] == 401
    assert post(url, body.replace(b"990", b"999"), genuine.headers)[0] == 401
    assert SIGNATURE_HEADER in genuine.headers


def test_inbox_simulate_woovi_ends_matching_the_gateway(local_stack):
    # Given Woovi charges walking their lifecycles on the simulator, delivered late, twice and concurrently
    result = local_stack.cli(
        "simulate",
        "--json",
        "--provider",
        "woovi",
        "--payments",
        "8",
        "--seed",
        "13",
        "--duplicates",
        "0.5",
        check=False,
        timeout=300,
    )
    report = json.loads(result.stdout)
    # Then every charge equals the simulator's truth, and nothing is left failed or pending
    assert report["ok"], report["mismatches"]
    assert report["matching"] == report["payments"] == 8
    assert report["deliveries"] > report["webhooks"]
    assert report["statuses"].get("failed", 0) == 0
