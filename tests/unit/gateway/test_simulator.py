"""The gateway simulator: its webhooks parse with the real drivers, its API reads back through the real clients,
and its faults look to a client like a real gateway's bad day."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import urllib3
from moto import mock_aws

from inbox_local.gateway_simulator import Faults, GatewaySimulator, running_simulator
from inbox_local.resources import simple_table_spec
from shared.gateway import registry
from shared.gateway.base import GatewayClient, GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.gateway.breaker import BreakerState, CircuitBreaker, GuardedClient
from shared.gateway.http import JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.asaas.client import AsaasClient
from shared.providers.asaas.driver import driver as asaas_driver
from shared.providers.base import WebhookRequest
from shared.providers.stripe.client import StripeClient
from shared.providers.stripe.driver import driver as stripe_driver
from tests.unit.gateway.fakes import Clock, Sleeps

DRIVERS = {"stripe": stripe_driver, "asaas": asaas_driver}
T0 = 1_718_221_503  # 2024-06-12 19:45:03 UTC = 16:45:03 in Sao Paulo

# Paths a payment can take at the gateway, one step per transition.
LIFECYCLES: dict[str, list[list[S]]] = {
    "stripe": [
        [S.PAID, S.PARTIALLY_REFUNDED, S.PARTIALLY_REFUNDED, S.REFUNDED],
        [S.AUTHORIZED, S.PAID, S.DISPUTED, S.CHARGED_BACK],
        [S.PAID, S.PARTIALLY_REFUNDED, S.DISPUTED, S.PARTIALLY_REFUNDED, S.REFUNDED],  # dispute won
        [S.FAILED, S.PENDING, S.PAID, S.DISPUTED, S.PAID],
        [S.AUTHORIZED, S.CANCELED],
        [S.FAILED, S.CANCELED],
    ],
    "asaas": [
        [S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED],
        [S.AUTHORIZED, S.PAID, S.DISPUTED, S.CHARGED_BACK],
        [S.PAID, S.PARTIALLY_REFUNDED, S.DISPUTED, S.PARTIALLY_REFUNDED],  # dispute won
        [S.PAID, S.DISPUTED, S.PAID, S.REFUNDED],
        [S.CANCELED],
    ],
}
LIFECYCLE_CASES = [(provider, path) for provider, paths in LIFECYCLES.items() for path in paths]


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=7, clock=Clock(T0)) as simulator:
        yield simulator


def make_clients(sim: GatewaySimulator, sleeps: Sleeps | None = None, **http: Any) -> dict[str, GatewayClient]:
    pool = urllib3.PoolManager(retries=False)
    http.setdefault("timeout", urllib3.Timeout(connect=1.0, read=2.0))

    def transport(provider: str) -> JsonHttpClient:
        return JsonHttpClient(
            sim.url,
            provider=provider,
            pool=pool,
            sleep=Sleeps() if sleeps is None else sleeps,
            random=lambda: 0.0,
            **http,
        )

    stripe_key, asaas_key = sim.api_keys["stripe"] or "", sim.api_keys["asaas"] or ""
    return {
        "stripe": StripeClient(transport("stripe"), lambda: stripe_key),
        "asaas": AsaasClient(transport("asaas"), lambda: asaas_key),
    }


def admin(sim: GatewaySimulator, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    response = urllib3.request(method, f"{sim.url}{path}", body=data, retries=False)
    return response.status, json.loads(response.data)


def parse(provider: str, body: bytes) -> Any:
    return DRIVERS[provider].parse(WebhookRequest(body=body, headers={}))


# -------------------------------------------------------------------------------------------------- webhooks


@pytest.mark.parametrize(("provider", "path"), LIFECYCLE_CASES)
def test_every_webhook_parses_with_the_ingest_driver(sim, provider, path):
    resource_id = sim.create_payment(provider, 12_345, "BRL")
    webhooks = sim.creation_webhooks(provider, resource_id)
    for step, status in enumerate(path, start=1):
        webhooks += sim.transition(provider, resource_id, status, at=T0 + step)

    assert webhooks
    for webhook in webhooks:
        event = parse(provider, webhook.body)
        assert event.resource_id == resource_id
        assert event.event_type == webhook.event_type
        assert int(event.occurred_at.timestamp()) == webhook.occurred_at
        assert event.currency in (None, "BRL")
        assert event.amount in (None, 12_345)
    ids = [parse(provider, w.body).event_id for w in webhooks]
    assert len(set(ids)) == len(ids)  # every notification is its own event


def test_stripe_events_have_the_real_envelope(sim):
    pi = sim.create_payment("stripe", 2000, "usd")
    (succeeded,) = sim.transition("stripe", pi, S.PAID, at=T0)
    (refunded,) = sim.transition("stripe", pi, S.PARTIALLY_REFUNDED, refund_amount=500, at=T0 + 1)
    (disputed,) = sim.transition("stripe", pi, S.DISPUTED, at=T0 + 2)

    event = json.loads(succeeded.body)
    assert event["id"].startswith("evt_") and event["object"] == "event"
    assert (event["type"], event["created"]) == ("payment_intent.succeeded", T0)
    assert event["data"]["object"]["object"] == "payment_intent"
    assert event["data"]["object"]["currency"] == "usd"

    charge = json.loads(refunded.body)["data"]["object"]
    assert (charge["object"], charge["payment_intent"], charge["amount_refunded"]) == ("charge", pi, 500)
    assert charge["refunded"] is False

    dispute = json.loads(disputed.body)
    assert dispute["type"] == "charge.dispute.created"
    assert dispute["data"]["object"]["payment_intent"] == pi
    assert parse("stripe", disputed.body).provider_status == "disputed"


def test_asaas_events_use_sao_paulo_time_and_decimal_values(sim):
    pay = sim.create_payment("asaas", 1010)
    (received,) = sim.transition("asaas", pay, S.PAID, at=T0)

    body = json.loads(received.body)
    assert body["id"].startswith("evt_")
    assert (body["event"], body["dateCreated"]) == ("PAYMENT_RECEIVED", "2024-06-12 16:45:03")
    assert b'"value": 10.1' in received.body
    assert body["payment"]["status"] == "RECEIVED"
    event = parse("asaas", received.body)
    assert (event.amount, event.occurred_at.isoformat()) == (1010, "2024-06-12T19:45:03+00:00")


def test_asaas_overdue_and_creation_notifications(sim):
    pay = sim.create_payment("asaas", 500)
    (created,) = sim.creation_webhooks("asaas", pay)
    (overdue,) = sim.mark_overdue(pay)

    assert (created.event_type, overdue.event_type) == ("PAYMENT_CREATED", "PAYMENT_OVERDUE")
    assert parse("asaas", overdue.body).provider_status == "OVERDUE"
    assert sim.snapshot("asaas", pay).status is S.PENDING


# ------------------------------------------------------------------------------------ the API is the truth


@pytest.mark.parametrize(("provider", "path"), LIFECYCLE_CASES)
def test_the_real_clients_read_back_the_truth_at_every_step(sim, provider, path):
    client = make_clients(sim)[provider]
    resource_id = sim.create_payment(provider, 9_999)
    assert client.fetch_payment(resource_id).status is S.PENDING

    for status in path:
        sim.transition(provider, resource_id, status)
        fetched, truth = client.fetch_payment(resource_id), sim.snapshot(provider, resource_id)
        assert truth.status is status
        assert (fetched.status, fetched.amount, fetched.currency, fetched.amount_refunded) == (
            truth.status,
            truth.amount,
            truth.currency,
            truth.amount_refunded,
        ), f"after {status}: {fetched}"


def test_through_the_registry_with_the_environment_overrides(sim, monkeypatch, api_key_secrets):
    for name, value in sim.environment().items():
        monkeypatch.setenv(name, value)
    # the accounts' keys where the local stack puts them: its Secrets Manager
    keys = {provider: sim.api_keys[provider] or "" for provider in ("stripe", "asaas")}
    for name, value in api_key_secrets(keys).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CONTROL_TABLE", raising=False)
    registry.reset_gateway_clients()

    pi, pay = sim.create_payment("stripe", 700), sim.create_payment("asaas", 700)
    sim.transition("stripe", pi, S.PAID)
    sim.transition("asaas", pay, S.PAID)

    stripe, asaas = registry.gateway_client("stripe"), registry.gateway_client("asaas")
    assert stripe is not None and asaas is not None
    assert stripe.fetch_payment(pi).status is S.PAID
    assert asaas.fetch_payment(pay).status is S.PAID


def test_unknown_resources_and_bad_keys(sim):
    clients = make_clients(sim)
    with pytest.raises(ResourceNotFound):
        clients["stripe"].fetch_payment("pi_nope")
    with pytest.raises(ResourceNotFound):
        clients["asaas"].fetch_payment("pay_nope")

    sim.api_keys["stripe"] = "sk_test_other"
    with pytest.raises(GatewayRejected):
        clients["stripe"].fetch_payment("pi_nope")


def test_snapshot_and_the_payments_listing(sim):
    pi = sim.create_payment("stripe", 1500, "eur")
    sim.transition("stripe", pi, S.PAID, at=T0 + 5)

    snapshot = sim.snapshot("stripe", pi)
    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.provider_status) == (
        S.PAID,
        1500,
        "EUR",
        "succeeded",
    )
    status, listing = admin(sim, "GET", "/_sim/payments")
    assert status == 200
    assert listing == [
        {
            "provider": "stripe",
            "source": "stripe",  # the provider's default account
            "resource_id": pi,
            "status": "paid",
            "amount": 1500,
            "currency": "EUR",
            "amount_refunded": 0,
            "history": [{"status": "pending", "at": T0}, {"status": "paid", "at": T0 + 5}],
        }
    ]


# -------------------------------------------------------------------------------------------- what is refused


@pytest.mark.parametrize(
    ("provider", "path", "bad"),
    [
        ("stripe", [S.PAID], S.PENDING),  # paid never goes back to pending
        ("stripe", [S.PAID, S.REFUNDED], S.PAID),
        ("stripe", [S.CANCELED], S.PAID),
        ("stripe", [], S.PARTIALLY_REFUNDED),  # a refund needs a payment first
        ("stripe", [S.PAID, S.PARTIALLY_REFUNDED, S.DISPUTED], S.PAID),  # won returns to where it was
        ("asaas", [], S.FAILED),  # Asaas has no failed status
        ("asaas", [S.PAID], S.PAID),
    ],
)
def test_impossible_steps_are_refused(sim, provider, path, bad):
    resource_id = sim.create_payment(provider, 1000)
    for status in path:
        sim.transition(provider, resource_id, status)

    with pytest.raises(ValueError):
        sim.transition(provider, resource_id, bad)
    assert sim.snapshot(provider, resource_id).status is (path[-1] if path else S.PENDING)


def test_refund_amounts_are_checked(sim):
    pi = sim.create_payment("stripe", 1000)
    sim.transition("stripe", pi, S.PAID)

    for bad in (0, 1000, 1500):
        with pytest.raises(ValueError):
            sim.transition("stripe", pi, S.PARTIALLY_REFUNDED, refund_amount=bad)
    sim.transition("stripe", pi, S.PARTIALLY_REFUNDED, refund_amount=300)
    with pytest.raises(ValueError):
        sim.transition("stripe", pi, S.REFUNDED, refund_amount=300)  # a full refund refunds all that is left
    sim.transition("stripe", pi, S.REFUNDED)
    assert sim.snapshot("stripe", pi).amount_refunded == 1000


@pytest.mark.parametrize(
    ("provider", "amount", "currency"), [("paypal", 1, "BRL"), ("stripe", 0, "BRL"), ("asaas", 100, "USD")]
)
def test_bad_payments_are_refused(sim, provider, amount, currency):
    with pytest.raises(ValueError):
        sim.create_payment(provider, amount, currency)


# ------------------------------------------------------------------------------------------------------ faults


def test_unknown_until_n_fetches_models_webhooks_racing_the_api(sim):
    sim.set_faults(unknown_fetches=2)
    pay = sim.create_payment("asaas", 100)
    sim.set_faults(unknown_fetches=0)
    later = sim.create_payment("asaas", 100)  # created after the knob went back to 0
    client = make_clients(sim)["asaas"]

    for _ in range(2):
        with pytest.raises(ResourceNotFound):
            client.fetch_payment(pay)
    assert client.fetch_payment(pay).status is S.PENDING
    assert client.fetch_payment(later).status is S.PENDING
    assert sim.stats()["unknown"] == 2


def test_a_payment_unknown_until_revealed_answers_once_the_admin_says_the_api_caught_up(sim):
    # Given a payment the API will not know for a million fetches, and one it knows
    sim.set_faults(unknown_fetches=1_000_000)
    hidden = sim.create_payment("asaas", 100)
    sim.set_faults(unknown_fetches=0)
    known = sim.create_payment("asaas", 100)
    client = make_clients(sim)["asaas"]
    with pytest.raises(ResourceNotFound):
        client.fetch_payment(hidden)
    # When the admin route reveals every payment
    status, answer = admin(sim, "POST", "/_sim/payments/known", {})
    # Then only the hidden one counted, and both answer now
    assert (status, answer) == (200, {"revealed": 1})
    assert client.fetch_payment(hidden).status is S.PENDING
    assert client.fetch_payment(known).status is S.PENDING


def test_errors_are_retried_then_reported_unavailable(sim):
    sim.set_faults(error_rate=1.0)
    sleeps = Sleeps()
    pi = sim.create_payment("stripe", 100)

    with pytest.raises(GatewayUnavailable) as caught:
        make_clients(sim, sleeps)["stripe"].fetch_payment(pi)

    assert "HTTP 500" in str(caught.value)
    assert sim.stats()["error"] == 3
    assert len(sleeps) == 2


def test_the_faults_injected_are_counted_per_provider_as_well(sim):
    # Given a Stripe payment whose fetches all answer 500, and an Asaas one its API does not know yet
    sim.set_faults(error_rate=1.0)
    pi = sim.create_payment("stripe", 100)
    with pytest.raises(GatewayUnavailable):
        make_clients(sim, Sleeps())["stripe"].fetch_payment(pi)
    sim.set_faults(error_rate=0.0, unknown_fetches=1)
    pay = sim.create_payment("asaas", 100)
    with pytest.raises(ResourceNotFound):
        make_clients(sim)["asaas"].fetch_payment(pay)
    # When the faults are read per provider (as `inbox chaos` reads them, over the admin API)
    status, by_provider = admin(sim, "GET", "/_sim/stats/providers")
    # Then each provider's faults are its own, and they add up to the totals
    assert status == 200 and by_provider == {"stripe": {"error": 3}, "asaas": {"unknown": 1}}
    assert by_provider == sim.faults_by_provider()
    assert (sim.stats()["error"], sim.stats()["unknown"]) == (3, 1)


def test_throttling_with_a_short_retry_after_is_waited_out(sim):
    sim.set_faults(throttle_rate=1.0, retry_after_seconds=2)
    sleeps = Sleeps()
    pay = sim.create_payment("asaas", 100)

    with pytest.raises(GatewayUnavailable):
        make_clients(sim, sleeps)["asaas"].fetch_payment(pay)
    assert sleeps == [2.0, 2.0]


def test_throttling_with_a_long_retry_after_hands_the_wait_back(sim):
    sim.set_faults(throttle_rate=1.0, retry_after_seconds=45)
    pay = sim.create_payment("asaas", 100)

    with pytest.raises(GatewayUnavailable) as caught:
        make_clients(sim)["asaas"].fetch_payment(pay)
    assert caught.value.retry_after == 45.0
    assert sim.stats()["throttle"] == 1


def test_slow_answers_time_out():
    with running_simulator(seed=1) as sim:
        sim.set_faults(slow_rate=1.0, slow_seconds=0.6)
        pi = sim.create_payment("stripe", 100)
        client = make_clients(sim, timeout=urllib3.Timeout(connect=1.0, read=0.2))["stripe"]

        with pytest.raises(GatewayUnavailable) as caught:
            client.fetch_payment(pi)
        assert "Timeout" in str(caught.value)

        sim.set_faults(slow_seconds=0.05)
        assert client.fetch_payment(pi).status is S.PENDING  # slow but within the read timeout


def test_faults_are_reproducible_from_the_seed():
    def run(seed: int) -> tuple[list[str], list[str]]:
        outcomes: list[str] = []
        with running_simulator(seed=seed, faults=Faults(error_rate=0.3, throttle_rate=0.2)) as sim:
            ids = [sim.create_payment("stripe", 100) for _ in range(3)]
            client = make_clients(sim, max_attempts=1)["stripe"]
            for _ in range(20):
                try:
                    client.fetch_payment(ids[0])
                    outcomes.append("ok")
                except GatewayUnavailable as error:
                    outcomes.append(str(error).split(":")[1].split("(")[0].strip())
        return ids, outcomes

    first, second, other = run(11), run(11), run(12)
    assert first == second
    assert first != other
    assert {"ok", "HTTP 500", "HTTP 429"} <= set(first[1])


def test_faults_over_the_admin_endpoint(sim):
    status, faults = admin(sim, "POST", "/_sim/faults", {"error_rate": 1, "unknown_fetches": 3})
    assert status == 200
    assert (faults["error_rate"], faults["unknown_fetches"], faults["throttle_rate"]) == (1.0, 3, 0.0)
    assert sim.faults.error_rate == 1.0
    assert admin(sim, "GET", "/_sim/faults")[1] == faults

    for bad in ({"error_rate": 2}, {"nope": 1}, {"error_rate": "high"}, [1], {"error_rate": 0.7, "throttle_rate": 0.5}):
        status, answer = admin(sim, "POST", "/_sim/faults", bad)
        assert status == 400, bad
        assert "error" in answer
    assert sim.faults.error_rate == 1.0  # a refused change changes nothing

    status, _ = admin(sim, "POST", "/_sim/faults", None)
    assert status == 200  # an empty body changes nothing
    assert admin(sim, "GET", "/_sim/stats")[0] == 200
    assert admin(sim, "GET", "/_sim/nothing")[0] == 404


def test_another_process_can_drive_payments_over_the_admin_endpoint(sim):
    status, created = admin(sim, "POST", "/_sim/payments", {"provider": "stripe", "amount": 4990})
    assert status == 200
    pi = created["id"]
    assert [w["event_type"] for w in created["webhooks"]] == ["payment_intent.created"]

    webhooks = []
    for step in ("paid", "partially_refunded", "refunded"):
        status, answer = admin(sim, "POST", f"/_sim/payments/stripe/{pi}/transition", {"status": step})
        assert status == 200, answer
        webhooks += answer["webhooks"]

    assert [w["event_type"] for w in webhooks] == ["payment_intent.succeeded", "charge.refunded", "charge.refunded"]
    for webhook in created["webhooks"] + webhooks:
        event = parse("stripe", webhook["body"].encode("utf-8"))  # the exact text the gateway sends
        assert (event.resource_id, event.event_type) == (pi, webhook["event_type"])
        assert int(event.occurred_at.timestamp()) == webhook["occurred_at"]
    assert sim.snapshot("stripe", pi).status is S.REFUNDED


def test_admin_transitions_take_refund_amounts_and_times(sim):
    pay = admin(sim, "POST", "/_sim/payments", {"provider": "asaas", "amount": 1000})[1]["id"]
    admin(sim, "POST", f"/_sim/payments/asaas/{pay}/transition", {"status": "paid"})

    status, answer = admin(
        sim,
        "POST",
        f"/_sim/payments/asaas/{pay}/transition",
        {"status": "partially_refunded", "refund_amount": 250, "at": T0 + 60},
    )
    assert status == 200
    (webhook,) = answer["webhooks"]
    assert (webhook["event_type"], webhook["occurred_at"]) == ("PAYMENT_PARTIALLY_REFUNDED", T0 + 60)
    assert sim.snapshot("asaas", pay).amount_refunded == 250


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("/_sim/payments", {"provider": "paypal", "amount": 1}, 400),
        ("/_sim/payments", {"provider": "stripe"}, 400),
        ("/_sim/payments", {"provider": "stripe", "amount": "10"}, 400),
        ("/_sim/payments", [1], 400),
        ("/_sim/payments/stripe/pi_nope/transition", {"status": "paid"}, 404),
        ("/_sim/payments/stripe/{pi}/transition", {"status": "refunded"}, 409),  # not paid yet
        ("/_sim/payments/stripe/{pi}/transition", {"status": "bogus"}, 400),
        ("/_sim/payments/stripe/{pi}/transition", {}, 400),
        ("/_sim/payments/stripe/{pi}/transition", {"status": "paid", "at": "later"}, 400),
    ],
)
def test_admin_payment_errors(sim, path, body, expected):
    pi = sim.create_payment("stripe", 100)
    status, answer = admin(sim, "POST", path.format(pi=pi), body)
    assert status == expected
    assert "error" in answer


def test_admin_routes_are_never_faulted(sim):
    sim.set_faults(error_rate=1.0)
    assert admin(sim, "GET", "/_sim/payments")[0] == 200


# ------------------------------------------------------------------------------------------------- together


def test_the_breaker_stops_calling_a_failing_simulator():
    with mock_aws(), running_simulator(seed=3) as sim:
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**simple_table_spec("control", "pk"))
        clock = Clock(T0)
        breaker = CircuitBreaker(
            "control", "stripe", failure_threshold=2, cooldown_seconds=30, clock=clock, dynamodb=dynamodb
        )
        client = GuardedClient(make_clients(sim, max_attempts=1)["stripe"], breaker)
        pi = sim.create_payment("stripe", 100)

        sim.set_faults(error_rate=1.0)
        for _ in range(2):
            with pytest.raises(GatewayUnavailable):
                client.fetch_payment(pi)
        served = sim.stats()["requests"]
        for _ in range(5):
            with pytest.raises(GatewayUnavailable) as caught:
                client.fetch_payment(pi)
            assert caught.value.circuit_open
        assert sim.stats()["requests"] == served  # the gateway was left alone

        sim.set_faults(error_rate=0.0)
        clock.advance(31)  # half-open: a probe goes through and closes it
        assert client.fetch_payment(pi).status is S.PENDING
        assert breaker.state() == BreakerState()


def test_many_threads_drive_and_read_the_simulator_at_once(sim):
    clients = make_clients(sim)
    errors: list[BaseException] = []

    def worker(provider: str) -> None:
        try:
            for _ in range(5):
                resource_id = sim.create_payment(provider, 1000)
                for status in (S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED):
                    sim.transition(provider, resource_id, status)
                    clients[provider].fetch_payment(resource_id)
                assert clients[provider].fetch_payment(resource_id).status is S.REFUNDED
        except BaseException as error:  # collected for the main thread
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(p,)) for p in ("stripe", "asaas") * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    truths = sim.payments()
    assert len(truths) == 40
    assert all(t["status"] == "refunded" and t["amount_refunded"] == 1000 for t in truths)
    assert len({(t["provider"], t["resource_id"]) for t in truths}) == 40


def test_ids_are_reproducible_from_the_seed():
    def ids(seed: int) -> list[str]:
        simulator = GatewaySimulator(seed=seed)  # the model works without the HTTP face
        return [simulator.create_payment(p, 100) for p in ("stripe", "asaas", "stripe")]

    assert ids(5) == ids(5) != ids(6)
    assert ids(5)[0].startswith("pi_") and ids(5)[1].startswith("pay_")


def test_two_accounts_of_one_provider_each_see_only_their_own_payments():
    # Given a simulator with two Stripe accounts (sources), each with its own API key, and the same payment id in both
    with running_simulator(seed=2, accounts={"stripe-br": "stripe", "stripe-us": "stripe"}) as sim:
        sim.create_payment("stripe-br", 1000, "BRL", resource_id="pi_same")
        sim.create_payment("stripe-us", 2500, "USD", resource_id="pi_same")
        sim.transition("stripe-br", "pi_same", S.PAID)
        keys = sim.api_keys
        assert len({keys["stripe"], keys["stripe-br"], keys["stripe-us"]}) == 3
        env = sim.environment()
        assert env["INBOX_API_BASE_STRIPE_BR"] == env["INBOX_API_BASE_STRIPE_US"] == sim.url
        assert not [name for name in env if name.startswith("INBOX_API_KEY")]  # keys are secrets, not variables

        def fetch(key: str) -> tuple[int, Any]:
            status, _, document = sim.handle_api(
                "GET", "/v1/payment_intents/pi_same", {"authorization": f"Bearer {key}"}
            )
            return status, document

        # When each account's key asks for the payment, Then each sees its own account's payment
        br, us = fetch(keys["stripe-br"] or ""), fetch(keys["stripe-us"] or "")
        assert (br[0], br[1]["amount"], br[1]["status"]) == (200, 1000, "succeeded")
        assert (us[0], us[1]["amount"], us[1]["currency"]) == (200, 2500, "usd")
        # And the default account's key does not see either, and a key of no account is refused
        assert fetch(keys["stripe"] or "")[0] == 404
        assert fetch("sk_test_nobody")[0] == 401
        # And the admin listing names each payment's account
        assert sorted((p["source"], p["amount"]) for p in sim.payments()) == [("stripe-br", 1000), ("stripe-us", 2500)]
