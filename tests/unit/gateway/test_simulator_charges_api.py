"""The simulator's Charges-API charges (a payment whose id is a charge's, made without a PaymentIntent), read
through the real Stripe client and driver: the charge is its own payment, its webhooks name it, and its refunds
and disputes reach it."""

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
from tests.unit.gateway.fakes import Clock
from tests.unit.gateway.test_simulator import T0, make_clients

CHARGE = "ch_1ChargesApiLocal0000001"


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=13, clock=Clock(T0)) as simulator:
        yield simulator


def stripe(sim: GatewaySimulator) -> StripeClient:
    client = make_clients(sim)["stripe"]
    assert isinstance(client, StripeClient)
    return client


def test_a_charge_walks_to_refunded_and_every_webhook_names_the_charge(sim):
    # Given a Charges-API charge of the simulator
    sim.create_payment("stripe", 4000, resource_id=CHARGE)
    # When it succeeds, is partly refunded, then refunded
    sent = [*sim.transition("stripe", CHARGE, S.PAID), *sim.transition("stripe", CHARGE, S.PARTIALLY_REFUNDED)]
    sent += sim.transition("stripe", CHARGE, S.REFUNDED)
    # Then its webhooks are the charge's (no intent), and each parses to the charge as the payment
    assert [webhook.event_type for webhook in sent] == ["charge.succeeded", "charge.refunded", "charge.refunded"]
    for webhook in sent:
        assert json.loads(webhook.body)["data"]["object"]["payment_intent"] is None
        assert driver.parse(WebhookRequest(body=webhook.body, headers={})).resource_id == CHARGE
    # And the refetch reads GET /v1/charges/{id}: refunded, the whole amount
    snapshot = stripe(sim).fetch_payment(CHARGE)
    assert (snapshot.resource_id, snapshot.status, snapshot.amount_refunded) == (CHARGE, S.REFUNDED, 4000)


def test_a_charge_captured_later_and_a_lost_dispute(sim):
    sim.create_payment("stripe", 4000, resource_id=CHARGE)
    assert [w.event_type for w in sim.transition("stripe", CHARGE, S.AUTHORIZED)] == ["charge.succeeded"]
    assert stripe(sim).fetch_payment(CHARGE).status is S.AUTHORIZED
    assert [w.event_type for w in sim.transition("stripe", CHARGE, S.PAID)] == ["charge.captured"]
    (opened,) = sim.transition("stripe", CHARGE, S.DISPUTED)
    assert driver.parse(WebhookRequest(body=opened.body, headers={})).resource_id == CHARGE
    assert stripe(sim).fetch_payment(CHARGE).status is S.DISPUTED
    sim.transition("stripe", CHARGE, S.CHARGED_BACK)
    assert stripe(sim).fetch_payment(CHARGE).status is S.CHARGED_BACK


def test_a_charge_is_not_an_intent_and_cannot_be_canceled(sim):
    sim.create_payment("stripe", 4000, resource_id=CHARGE)
    sim.transition("stripe", CHARGE, S.PAID)
    # Then GET /v1/payment_intents/{charge id} does not know it
    with pytest.raises(ResourceNotFound):
        stripe(sim).fetch_payment("pi_" + CHARGE.removeprefix("ch_"))
    # And a charge has no canceled step (an uncaptured charge is refunded instead)
    other = "ch_1ChargesApiLocal0000002"
    sim.create_payment("stripe", 4000, resource_id=other)
    with pytest.raises(ValueError, match="cannot move"):
        sim.transition("stripe", other, S.CANCELED)
