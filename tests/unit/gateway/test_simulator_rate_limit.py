"""The gateway simulator's rate limit: requests per wall-clock second and provider above the limit get 429 with
Retry-After, and every second's requests are counted for the burst bench."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.base import GatewayUnavailable
from shared.gateway.http import JsonHttpClient
from shared.providers.stripe.client import StripeClient
from tests.unit.gateway.fakes import Clock, Sleeps

T0 = 1_718_221_503.25


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def sim(clock: Clock) -> Iterator[GatewaySimulator]:
    with running_simulator(seed=3, clock=clock) as simulator:
        yield simulator


def stripe(sim: GatewaySimulator) -> StripeClient:
    http = JsonHttpClient(sim.url, provider="stripe", max_attempts=1, sleep=Sleeps(), random=lambda: 0.0)
    key = sim.api_keys["stripe"] or ""
    return StripeClient(http, lambda: key)


def fetch(client: StripeClient, resource_id: str) -> str:
    try:
        client.fetch_payment(resource_id)
    except GatewayUnavailable as error:
        return f"429 after {error.retry_after:g}" if "429" in str(error) else "unavailable"
    return "ok"


def test_above_the_limit_a_second_answers_429_until_the_next_second(sim, clock):
    # Given a gateway limited to 3 requests per second and a payment (one GET per refetch while pending)
    sim.set_faults(rate_limit_per_second=3)
    pi = sim.create_payment("stripe", 1000)
    client = stripe(sim)

    # When 5 refetches arrive within one second
    outcomes = [fetch(client, pi) for _ in range(5)]

    # Then 3 are answered, the rest get 429 with the whole seconds left in the window
    assert outcomes == ["ok", "ok", "ok", "429 after 1", "429 after 1"]
    # And the next second has room again
    clock.advance(1.0)
    assert fetch(client, pi) == "ok"
    # And every second is counted, the 429s among its requests
    seconds = sim.rate_stats()["seconds"]
    assert [(s["provider"], s["requests"], s["throttled"]) for s in seconds] == [("stripe", 5, 2), ("stripe", 1, 0)]
    assert seconds[1]["second"] == seconds[0]["second"] + 1
    assert sim.stats()["rate_limited"] == 2


def test_providers_have_a_window_of_their_own_and_zero_means_no_limit(sim):
    sim.set_faults(rate_limit_per_second=1)
    pi = sim.create_payment("stripe", 1000)
    pay = sim.create_payment("asaas", 1000)
    client = stripe(sim)
    assert fetch(client, pi) == "ok"
    assert sim.handle_api("GET", f"/v3/payments/{pay}", {"access_token": sim.api_keys["asaas"] or ""})[0] == 200
    sim.set_faults(rate_limit_per_second=0)
    assert [fetch(client, pi) for _ in range(5)] == ["ok"] * 5


def test_admin_routes_set_read_and_reset_the_rate_figures(sim):
    def admin(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        response = urllib3.request(method, f"{sim.url}{path}", body=data, retries=False)
        return response.status, json.loads(response.data)

    assert admin("POST", "/_sim/faults", {"rate_limit_per_second": 20})[1]["rate_limit_per_second"] == 20.0
    assert admin("POST", "/_sim/faults", {"rate_limit_per_second": -1})[0] == 400
    fetch(stripe(sim), sim.create_payment("stripe", 1000))
    status, figures = admin("GET", "/_sim/stats/rate")
    assert status == 200 and figures["limit_per_second"] == 20.0 and figures["seconds"][0]["requests"] == 1
    assert admin("POST", "/_sim/stats/rate/reset")[0] == 200
    assert admin("GET", "/_sim/stats/rate")[1]["seconds"] == []  # admin requests are never counted
