"""The simulator's Stripe Connect accounts and thin events, read through the real Stripe client and driver: a
connected account's objects exist only for requests that name the account (404 otherwise, as Stripe answers), and
its webhooks name the account (`account`, or a thin event's `context`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.base import ResourceNotFound
from shared.payments.status import PaymentStatus as S
from shared.providers.base import WebhookRequest
from shared.providers.stripe.client import StripeClient
from shared.providers.stripe.driver import driver
from shared.sub_account import SubAccount
from tests.unit.gateway.fakes import Clock
from tests.unit.gateway.test_simulator import T0, make_clients

ACCOUNT = "acct_1Connected0000001"
OTHER = "acct_1Connected0000002"


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=11, clock=Clock(T0)) as simulator:
        yield simulator


def stripe(sim: GatewaySimulator) -> StripeClient:
    client = make_clients(sim)["stripe"]
    assert isinstance(client, StripeClient)
    return client


def test_a_connected_accounts_payment_is_found_only_within_its_account(sim):
    # Given a paid, partly refunded payment of a connected account
    pi = sim.create_payment("stripe", 5000, connect_account=ACCOUNT)
    sim.advance_to("stripe", pi, S.PARTIALLY_REFUNDED)
    client = stripe(sim)

    # When it is fetched within its account (Stripe-Account or Stripe-Context), it is found with its charge
    assert client.fetch_payment(pi, account=SubAccount(ACCOUNT)).status is S.PARTIALLY_REFUNDED
    assert client.fetch_payment(pi, account=SubAccount(ACCOUNT, context=True)).status is S.PARTIALLY_REFUNDED
    assert client.fetch_payment(pi, account=SubAccount(f"acct_1Org/{ACCOUNT}", context=True)).amount == 5000

    # Then without the account, or within another one, Stripe knows no such intent
    for account in (None, SubAccount(OTHER)):
        with pytest.raises(ResourceNotFound):
            client.fetch_payment(pi, account=account)


def test_the_platforms_payment_is_not_found_within_a_connected_account(sim):
    pi = sim.create_payment("stripe", 5000)
    sim.advance_to("stripe", pi, S.PAID)
    assert stripe(sim).fetch_payment(pi).status is S.PAID
    with pytest.raises(ResourceNotFound):
        stripe(sim).fetch_payment(pi, account=SubAccount(ACCOUNT))


def test_a_connected_accounts_webhooks_carry_the_account(sim):
    # Given a connected account's payment taken to disputed
    pi = sim.create_payment("stripe", 5000, connect_account=ACCOUNT)
    webhooks = sim.creation_webhooks("stripe", pi) + sim.advance_to("stripe", pi, S.DISPUTED)

    # Then every webhook names the account, and the driver reads it as the sub-account to refetch within
    events = [driver.parse(WebhookRequest(body=w.body, headers={})) for w in webhooks]
    assert {json.loads(w.body)["account"] for w in webhooks} == {ACCOUNT}
    assert {event.account for event in events} == {SubAccount(ACCOUNT)}
    assert {event.resource_id for event in events} == {pi}


def test_a_thin_payments_webhooks_are_thin_events_whose_objects_read_back_to_the_intent(sim):
    # Given a connected account's payment whose event destination sends thin events, refunded then disputed
    pi = sim.create_payment("stripe", 5000, connect_account=ACCOUNT, thin=True)
    webhooks = sim.advance_to("stripe", pi, S.PARTIALLY_REFUNDED) + sim.transition("stripe", pi, S.DISPUTED)
    events = [driver.parse(WebhookRequest(body=w.body, headers={})) for w in webhooks]

    # Then they are thin (v1. types, context), about the intent, its charge and its dispute
    assert [w.event_type for w in webhooks] == [
        "v1.payment_intent.succeeded",
        "v1.charge.refunded",
        "v1.charge.dispute.created",
    ]
    assert {json.loads(w.body)["object"] for w in webhooks} == {"v2.core.event"}
    assert {event.account for event in events} == {SubAccount(ACCOUNT, context=True)}
    kinds = [event.resource_id.split("_")[0] if event.resource_id else None for event in events]
    assert kinds == ["pi", "ch", "du"]

    # And each named object, fetched within the context, is the same payment: the disputed intent
    client = stripe(sim)
    for event in events:
        assert event.resource_id is not None
        snapshot = client.fetch_payment(event.resource_id, account=event.account)
        assert (snapshot.resource_id, snapshot.status) == (pi, S.DISPUTED)


@pytest.mark.parametrize(
    ("provider", "account", "thin"),
    [("asaas", ACCOUNT, False), ("asaas", None, True), ("stripe", "cus_1", False), ("stripe", "acct_1\r\nX: 1", False)],
)
def test_an_account_the_simulator_cannot_model_is_refused(sim, provider, account, thin):
    with pytest.raises(ValueError):
        sim.create_payment(provider, 5000, connect_account=account, thin=thin)
