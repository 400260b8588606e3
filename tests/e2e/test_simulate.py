"""`inbox simulate` over the local stack: duplicates, reordering, concurrent repeats, delays — and the truth."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from inbox_cli.simulate import simulated_providers

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]


def run_simulation(local_stack, *args: str, timeout: float = 300) -> dict[str, Any]:
    result = local_stack.cli("simulate", "--json", *args, check=False, timeout=timeout)
    assert result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    assert (result.returncode == 0) == report["ok"]
    return report


def test_every_lifecycle_of_every_provider_ends_matching_the_gateway(local_stack):
    # Given three payments of each simulated provider (the seven refetched from the gateway simulator, and the
    # senders ordered by event time) walking their lifecycles, delivered late, twice, concurrently
    providers = simulated_providers()
    payments = 3 * len(providers)
    report = run_simulation(local_stack, "--payments", str(payments), "--seed", "21", "--duplicates", "0.5")
    # Then every payment equals its gateway's truth, and no event is left failed or pending
    assert report["ok"], report["mismatches"]
    assert report["matching"] == report["payments"] == payments
    # And every provider was covered, each of its payments matching
    assert set(report["providers"]) == set(providers)
    assert all(
        f["payments"] == f["matching"] == 3 and f["deliveries"] >= f["webhooks"] > 0
        for f in report["providers"].values()
    ), report["providers"]
    assert report["statuses"].get("failed", 0) == 0
    assert report["statuses"].get("pending", 0) == 0
    assert report["deliveries"] > report["webhooks"]  # duplicates really were delivered
    assert report["delivery_failures"] == 0
    # And a payment reads back through the CLI
    some = json.loads(local_stack.cli("events", "list", "--json", "--status", "processed", "--limit", "1").stdout)[0]
    shown = json.loads(local_stack.cli("payments", "show", some["provider"], some["resource_id"], "--json").stdout)
    assert shown["pk"] == f"{some['provider']}#{some['resource_id']}"
    assert shown["transitions"] >= 1
    # And the Stripe payments of connected accounts (every third) were refetched within their accounts: they match
    # (the simulator 404s without the account) and show it
    url = f"http://127.0.0.1:{local_stack.env['INBOX_GATEWAY_PORT']}/_sim/payments"
    with urllib.request.urlopen(url, timeout=5) as response:
        connect = [truth for truth in json.loads(response.read()) if truth.get("account")]
    assert connect, "no Stripe payment of a connected account was simulated"
    for truth in connect:
        shown = json.loads(local_stack.cli("payments", "show", "stripe", truth["resource_id"], "--json").stdout)
        assert (shown["account"], shown["status"]) == (truth["account"], truth["status"])


@pytest.mark.soak  # ~4-7 minutes: `make chaos` runs it; `make test` keeps the 100-payment runs
def test_three_thousand_events_over_three_hundred_payments(local_stack):
    # Given 300 Stripe payments each paid then refunded in nine parts (about 12 webhooks each)
    report = run_simulation(
        local_stack,
        "--payments",
        "300",
        "--provider",
        "stripe",
        "--lifecycle",
        "refunded in nine parts",
        "--seed",
        "3000",
        "--duplicates",
        "0.3",
        "--timeout",
        "900",
        timeout=1200,
    )
    events = sum(report["statuses"].values())
    # Then at least 3,000 distinct events went through, none failed or pending, every payment matches
    assert events >= 3000
    assert report["statuses"].get("failed", 0) == 0
    assert report["statuses"].get("pending", 0) == 0
    assert report["matching"] == 300
    print(
        f"\n3000-event run: {events} events, {report['deliveries']} deliveries, "
        f"{report['events_per_second']} events/s, receipt->processed p50 {report['latency_ms']['p50']} ms, "
        f"p99 {report['latency_ms']['p99']} ms"
    )
