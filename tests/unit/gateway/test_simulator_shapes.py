"""Every refetch provider's face of the gateway simulator, read by that provider's real client
(`shared/providers/<id>/client.py`): each lifecycle status comes back as the right snapshot, and the simulator's
not-found, bad-key and rate-limit answers map to the client's errors as the real API's would."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import urllib3

from inbox_local.gateway_simulator import SHAPES, GatewaySimulator, running_simulator
from inbox_local.senders import sender_for
from shared.definitions import REFETCH_PROVIDERS
from shared.gateway import registry
from shared.gateway.base import GatewayClient, GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.gateway.http import GatewayHttpRejected, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.base import parse_events
from shared.providers.registry import get_driver
from tests.unit.gateway.fakes import Clock, Sleeps

T0 = 1_718_221_503
AMOUNT = 12_345
# (provider, an id kind the client tells apart): every refetching provider of the catalog with the simulator's own
# ids, and Pagar.me also with v5 charge and order ids (it reads v4 transactions, v5 charges and v5 orders).
FACES = [
    *((provider, None) for provider in REFETCH_PROVIDERS),
    ("pagarme", "ch_sim0000000000001"),
    ("pagarme", "or_sim0000000000001"),
]


def expected_refund(status: S) -> int:
    return {S.PARTIALLY_REFUNDED: AMOUNT // 2, S.REFUNDED: AMOUNT}.get(status, 0)


# Read back in every status but these: a Pix exists at Efí only once it is received (a pending one is 404, see
# test_a_pix_not_received_yet_is_not_found).
NOT_READABLE = {("efi", S.PENDING)}
CASES = [
    (provider, resource_id, status)
    for provider, resource_id in FACES
    for status in S
    if status in SHAPES[provider].statuses(resource_id or SHAPES[provider].new_id(lambda n, a: a[1] * n))
    and (provider, status) not in NOT_READABLE
]
# A key of the right shape that is not the account's (Efí's is a JSON credential: a malformed one is refused before
# any request is made).
WRONG_KEYS = {"efi": json.dumps({"client_id": "Client_Id_wrong", "client_secret": "Client_Secret_wrong"})}


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=3, clock=Clock(T0)) as simulator:
        yield simulator


def wrong_key(sim: GatewaySimulator, provider: str) -> str:
    """Another key of the provider's form: a two-part key (`MERCHANT_ID:MERCHANT_KEY`, Cielo and Zoop) keeps its
    first part, so that the gateway, not the client's own check of the form, refuses it."""
    first, colon, _ = (sim.api_keys[provider] or "").partition(":")
    return f"{first}:not-the-key" if colon else "not-the-key"


def client(sim: GatewaySimulator, provider: str, *, key: str | None = None) -> GatewayClient:
    factory, _ = registry.client_class(provider)
    http = JsonHttpClient(
        sim.url,
        provider=provider,
        pool=urllib3.PoolManager(retries=False),
        sleep=Sleeps(),
        random=lambda: 0.0,
        timeout=urllib3.Timeout(connect=1.0, read=2.0),
    )
    api_key = key if key is not None else sim.api_keys[provider] or ""
    return factory(http, lambda: api_key)


@pytest.mark.parametrize(("provider", "resource_id", "status"), CASES)
def test_the_real_client_reads_each_status_back(sim, provider, resource_id, status):
    # Given a payment the gateway took to `status` by its own steps
    payment_id = sim.create_payment(provider, AMOUNT, resource_id=resource_id)
    sim.advance_to(provider, payment_id, status)
    # When the provider's real client refetches it
    snapshot = client(sim, provider).fetch_payment(payment_id)
    # Then it reads the canonical status, the amount, the currency and what was refunded
    assert (snapshot.resource_id, snapshot.status, snapshot.amount, snapshot.amount_refunded) == (
        payment_id,
        status,
        AMOUNT,
        expected_refund(status),
    )
    assert snapshot.currency == SHAPES[provider].default_currency
    assert snapshot.provider_status.split("/")[0] == sim.snapshot(provider, payment_id).provider_status.split("/")[0]


def test_a_pix_not_received_yet_is_not_found(sim):
    # Given an Efí payment still pending (the charge exists, no Pix was received for it)
    payment_id = sim.create_payment("efi", AMOUNT)
    # When the client reads the Pix, Then it is ResourceNotFound, as Efí's API answers an unknown e2eId
    with pytest.raises(ResourceNotFound):
        client(sim, "efi").fetch_payment(payment_id)


@pytest.mark.parametrize(("provider", "resource_id"), FACES)
def test_an_unknown_payment_is_not_found(sim, provider, resource_id):
    # Given a payment id in the provider's format that the gateway never created
    unknown = resource_id or SHAPES[provider].new_id(lambda n, a: a[1] * n)
    # When the client fetches it, Then it is ResourceNotFound (retried with backoff by the processor)
    with pytest.raises(ResourceNotFound):
        client(sim, provider).fetch_payment(unknown)


@pytest.mark.parametrize(("provider", "resource_id"), FACES)
def test_a_wrong_api_key_is_rejected(sim, provider, resource_id):
    # Given a payment the gateway knows
    payment_id = sim.create_payment(provider, AMOUNT, resource_id=resource_id)
    # When the client presents another key, Then the gateway refuses it as the real API does (Paddle: 403)
    with pytest.raises(GatewayRejected) as caught:
        client(sim, provider, key=WRONG_KEYS.get(provider) or wrong_key(sim, provider)).fetch_payment(payment_id)
    assert isinstance(caught.value, GatewayHttpRejected)
    assert caught.value.status == SHAPES[provider].unauthorized_status
    assert sim.snapshot(provider, payment_id).status is S.PENDING


@pytest.mark.parametrize(("provider", "resource_id"), FACES)
def test_rate_limited_answers_are_retried_then_unavailable_with_retry_after(sim, provider, resource_id):
    # Given a gateway that throttles every request for 2 s
    payment_id = sim.create_payment(provider, AMOUNT, resource_id=resource_id)
    sim.set_faults(throttle_rate=1.0, retry_after_seconds=2)
    # When the client fetches, Then it retries within its budget and gives up as unavailable, keeping Retry-After
    with pytest.raises(GatewayUnavailable) as caught:
        client(sim, provider).fetch_payment(payment_id)
    assert caught.value.retry_after == 2
    assert sim.stats()["throttle"] >= 1


@pytest.mark.parametrize("provider", sorted(SHAPES))
def test_a_status_the_gateway_cannot_express_is_refused(sim, provider):
    # Given the statuses this gateway has no word for (Asaas: failed; Paddle: authorized, disputed; ...)
    payment_id = sim.create_payment(provider, AMOUNT)
    missing = set(S) - SHAPES[provider].statuses(payment_id)
    # When the simulator is asked to reach one, Then it refuses instead of inventing a status
    for status in missing:
        with pytest.raises(ValueError):
            sim.check_reachable(provider, status)


@pytest.mark.parametrize(("provider", "resource_id", "status"), CASES)
def test_the_webhooks_on_the_way_are_the_drivers_own_and_name_the_payment(sim, provider, resource_id, status):
    # Given a payment taken to `status`, with every webhook the gateway sent on the way
    payment_id = sim.create_payment(provider, AMOUNT, resource_id=resource_id)
    webhooks = sim.creation_webhooks(provider, payment_id) + sim.advance_to(provider, payment_id, status)
    driver = get_driver(provider)
    sender = sender_for(provider)
    for webhook in webhooks:
        # When the provider's driver signs and parses each one as the ingest would
        # (a delivery of several events, an Efí refund after its Pix: the last one is the step's)
        event = parse_events(driver, sender.sign(webhook.body, "a-secret", now=webhook.occurred_at))[-1]
        # Then it is about this payment, with the type the simulator said
        assert (event.resource_id, event.event_type) == (payment_id, webhook.event_type)
        assert event.amount in (None, AMOUNT)
