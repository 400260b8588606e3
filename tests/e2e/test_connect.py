"""Stripe Connect, thin events and the Charges API through the local stack (`make run`): a connected account's
webhook, sent with the CLI, is refetched from the gateway simulator within its account (which answers 404 without
it, as Stripe does), ends `processed`, and `inbox payments show` finds the payment by the intent's own id, with its
account; a Charges-API charge (no PaymentIntent) is its own payment, and its refund reaches it."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from typing import Any

import pytest

from tests.e2e.conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

INBOX = ROOT / ".venv" / "bin" / "inbox"
ACCOUNT = "acct_1LocalSeller0001"


def inbox(stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(INBOX), *args], env=stack.env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def send(stack, *args: str) -> tuple[str, str]:
    """`inbox send stripe ...`: (event id, payment id) it reports."""
    result = inbox(stack, "send", "stripe", *args)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    sent = re.search(r"sent stripe \(stripe\) event (\S+) about payment (\S+);", result.stdout)
    assert sent, result.stdout
    return sent.group(1), sent.group(2)


def settled(stack, event_id: str) -> dict[str, Any]:
    """`inbox events show` of the event once the inbox no longer holds it pending (waited for in-process)."""
    stack.settled_event("stripe", event_id)
    shown = inbox(stack, "events", "show", "stripe", event_id, "--json")
    assert shown.returncode == 0, shown.stderr
    item: dict[str, Any] = json.loads(shown.stdout)
    return item


def gateway_truth(stack, resource_id: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{stack.env['INBOX_GATEWAY_PORT']}/_sim/payments"
    with urllib.request.urlopen(url, timeout=5) as response:
        payments: list[dict[str, Any]] = json.loads(response.read())
    return next(p for p in payments if p["resource_id"] == resource_id)


@pytest.mark.parametrize(("flags", "context"), [((), False), (("--thin",), True)])
def test_a_connected_accounts_event_is_processed_and_its_payment_shows_the_account(local_stack, flags, context):
    # Given the local stack, and a connected account's payment the gateway simulator holds (paid)
    # When its webhook (a snapshot event with `account`, or the thin version with `context`) is sent with the CLI
    event_id, resource_id = send(local_stack, "--account", ACCOUNT, "--status", "paid", "--amount", "2590", *flags)

    # Then the event is processed: the refetch asked within the account (the simulator 404s otherwise)
    item = settled(local_stack, event_id)
    assert (item["status"], item.get("last_error")) == ("processed", None)
    assert item["account"] == ACCOUNT

    # And the payment, found by the intent's own id, matches the gateway and shows its account
    shown = inbox(local_stack, "payments", "show", "stripe", resource_id, "--json")
    assert shown.returncode == 0, shown.stderr
    payment = json.loads(shown.stdout)
    truth = gateway_truth(local_stack, resource_id)
    assert (payment["status"], payment["amount"], payment["currency"]) == (truth["status"], 2590, truth["currency"])
    assert truth["account"] == ACCOUNT
    assert payment["account"] == ACCOUNT
    assert payment.get("account_context", False) is context
    text = inbox(local_stack, "payments", "show", "stripe", resource_id).stdout
    assert re.search(rf"^\s+account: {ACCOUNT}$", text, re.M), text


def test_an_account_that_is_not_one_is_refused_by_the_cli(local_stack):
    result = inbox(local_stack, "send", "stripe", "--account", "acct_1\r\nX-Evil: 1")
    assert result.returncode == 2 and "acct_" in result.stderr


def test_a_charges_api_refund_reaches_its_charge_payment(local_stack):
    # Given a charge made with the Charges API (no PaymentIntent), paid: `inbox send` registers it with the gateway
    # simulator under its charge id and sends its charge.succeeded
    charge_id = "ch_1ChargesApiE2e0000000001"
    paid_event, resource_id = send(local_stack, "--resource-id", charge_id, "--status", "paid", "--amount", "4200")
    assert resource_id == charge_id
    assert settled(local_stack, paid_event)["status"] == "processed"

    # When the charge is refunded and its charge.refunded (payment_intent null) is sent
    refund_event, _ = send(local_stack, "--resource-id", charge_id, "--status", "refunded", "--amount", "4200")

    # Then the refund is processed against the charge itself, refetched with GET /v1/charges/{id}
    item = settled(local_stack, refund_event)
    assert (item["status"], item["resource_id"], item["event_type"]) == ("processed", charge_id, "charge.refunded")
    shown = inbox(local_stack, "payments", "show", "stripe", charge_id, "--json")
    assert shown.returncode == 0, shown.stderr
    payment = json.loads(shown.stdout)
    truth = gateway_truth(local_stack, charge_id)
    assert (payment["status"], payment["amount"], payment["amount_refunded"]) == ("refunded", 4200, 4200)
    assert payment["status"] == truth["status"]
    assert payment["provider_status"] == "charge:succeeded/refunded"
