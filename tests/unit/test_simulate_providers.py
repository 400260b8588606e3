"""`inbox simulate` over every provider, without a stack: which lifecycles each provider can live through, that
each one ends where its gateway's truth is (read back by the real client for a refetched provider; by the
processor's own decision, in any delivery order, for one ordered by event time), the spread of payments, and the
signing time of a provider that dates events by their delivery."""

from __future__ import annotations

import itertools
import random

import pytest

from inbox_cli.simulate import (
    EventTimeSender,
    SimulationOptions,
    Truth,
    lifecycles_for,
    mismatches,
    refetched,
    simulated_providers,
    spread,
    wire,
)
from inbox_cli.simulate.lifecycles import NAMED_LIFECYCLES
from inbox_local.config import signing_secret
from inbox_local.gateway_simulator import running_simulator
from shared.gateway.registry import build_gateway_client, supported_providers
from shared.inbox.model import iso_utc
from shared.payments.model import Payment
from shared.process.decide import Apply, Touch, decide
from shared.process.handlers import EventTimeOrderedHandler
from shared.process.router import InboxEvent
from shared.providers.registry import get_driver, provider_names

NOW = "2026-01-01T00:00:00.000000Z"
EVENT_TIME_PROVIDERS = [p for p in simulated_providers() if not refetched(p)]


def test_every_refetched_provider_and_those_ordered_by_event_time_are_simulated():
    # Then every provider the processor refetches from is simulated, with at least one lifecycle
    assert set(supported_providers()) <= set(simulated_providers())
    # And so are the senders with no API that the processor orders by event time
    assert {"standard", "kiwify", "hotmart"} <= set(EVENT_TIME_PROVIDERS)
    # But not a provider whose events are about no payment (GitHub)
    assert "github" in provider_names() and "github" not in simulated_providers()
    # And a provider gets only lifecycles its gateway can express (Asaas has no failed status)
    assert "failed" not in lifecycles_for("asaas") and "failed" in lifecycles_for("stripe")


@pytest.mark.parametrize("provider", supported_providers())
def test_every_lifecycle_of_a_refetched_provider_ends_with_its_client_reading_the_truth(provider):
    with running_simulator(seed=5) as simulator:
        client = build_gateway_client(
            provider, simulator.environment(), api_key=lambda: simulator.api_keys[provider] or ""
        )
        assert client is not None
        for name, steps in lifecycles_for(provider).items():
            # Given a payment walked through the lifecycle on the simulator
            resource_id = simulator.create_payment(provider, 4990)
            last = simulator.creation_webhooks(provider, resource_id)
            for step in steps:
                last = simulator.transition(provider, resource_id, step)
            # Then its last step was announced (a webhook the processor refetches on)
            assert last, f"{provider} {name}: the last step sends no webhook"
            # And the real client reads what the simulator holds as the truth
            snapshot = client.fetch_payment(resource_id)
            truth = next(t for t in simulator.payments() if t["resource_id"] == resource_id)
            assert (snapshot.status.value, snapshot.amount_refunded) == (truth["status"], truth["amount_refunded"]), (
                name
            )


def _inbox_event(provider: str, webhook: dict[str, object]) -> InboxEvent:
    """The event as the ingest stores it and the processor reads it."""
    body = str(webhook["body"]).encode()
    event = wire.read_back(provider, body, signing_secret(provider), now=int(str(webhook["occurred_at"])))
    return InboxEvent(
        pk=f"{provider}#{event.event_id}",
        provider=provider,
        event_id=event.event_id,
        event_type=event.event_type,
        resource_id=event.resource_id,
        occurred_at=iso_utc(event.occurred_at),
        provider_status=event.provider_status,
        amount=event.amount,
        currency=event.currency,
        attempts=0,
    )


@pytest.mark.parametrize("provider", EVENT_TIME_PROVIDERS)
def test_an_event_time_lifecycle_ends_in_its_last_status_whatever_order_its_events_arrive_in(provider):
    handler = EventTimeOrderedHandler()
    for name, steps in lifecycles_for(provider).items():
        # Given a payment of a sender with no API walked through the lifecycle
        sender = EventTimeSender(seed=1, clock=lambda: 1_767_225_600)
        resource_id, webhooks = sender.create_payment(provider, 1990)
        for step in steps:
            webhooks += sender.transition(provider, resource_id, step)
        events = [_inbox_event(provider, webhook) for webhook in webhooks]
        assert len({event.pk for event in events}) == len(events), f"{name}: two events share an inbox key"
        (truth,) = sender.truths()
        # When the processor decides on its events in every order they could arrive in (a sample of them)
        orders = list(itertools.permutations(events)) if len(events) <= 5 else [events, events[::-1]]
        for order in orders:
            current: Payment | None = None
            for event in order:
                decision = decide(current, handler.prepare(event), now=NOW)
                if isinstance(decision, Apply | Touch):
                    current = decision.payment
            # Then the payment ends in the last status by event time: the sender's truth
            assert current is not None and current.status.value == truth.status, f"{name}: {order}"


def test_payments_are_spread_evenly_over_the_providers_in_a_seeded_order():
    plan = spread(random.Random(3), 27, ["a", "b", "c", "d"])
    assert sorted(plan.count(p) for p in "abcd") == [6, 7, 7, 7]
    assert plan == spread(random.Random(3), 27, ["a", "b", "c", "d"]) != spread(random.Random(4), 27, list("abcd"))
    with pytest.raises(ValueError, match="no provider"):
        spread(random.Random(3), 1, [])


def test_events_signed_for_delivery_read_as_happening_at_the_events_time():
    # Given a Shopify order event (dated by its signed body's updated_at) and a Standard Webhooks one (body)
    sender = EventTimeSender(seed=2, clock=lambda: 1_767_225_600)
    shopify_id, (shopify,) = sender.create_payment("shopify", 1990)
    _, (standard,) = sender.create_payment("standard", 1990)
    # When each is signed for delivery
    for provider, webhook in (("shopify", shopify), ("standard", standard)):
        body = str(webhook["body"]).encode()
        request = wire.signed(
            provider, body, signing_secret(provider), event_time=int(webhook["occurred_at"]), ordered_by_event_time=True
        )
        event = get_driver(provider).parse(request)
        # Then the event reads as happening when the sender says, not when it was delivered
        assert int(event.occurred_at.timestamp()) == webhook["occurred_at"] == 1_767_225_600
    # And neither reads its time from what signing adds (Shopify's X-Shopify-Triggered-At is not signed)
    assert not wire.dated_by_delivery("shopify", str(shopify["body"]).encode(), signing_secret("shopify"))
    assert not wire.dated_by_delivery("standard", str(standard["body"]).encode(), signing_secret("standard"))
    assert shopify_id.isdigit()


def test_a_truth_without_a_refunded_amount_compares_the_status_only():
    stored = {"standard#1": None}
    assert mismatches([Truth("standard", "1", "paid", None)], stored) == [
        {"provider": "standard", "resource_id": "1", "gateway": {"status": "paid"}, "inbox": None}
    ]
    assert mismatches([Truth("standard", "2", "paid", None)], stored) == []  # not one of the payments compared


def test_every_named_lifecycle_is_lived_by_some_provider():
    lived = {name for provider in simulated_providers() for name in lifecycles_for(provider)}
    assert lived == set(NAMED_LIFECYCLES)


def test_asking_for_a_lifecycle_keeps_to_the_providers_that_live_it():
    # Given no provider asked for, but a lifecycle that some providers cannot express (Kiwify has no dispute)
    options = SimulationOptions(lifecycles=("dispute won",))
    # Then the payments go to the providers that can live it, refetched or not
    assert "kiwify" not in options.chosen_providers
    assert {"stripe", "asaas", "standard"} <= set(options.chosen_providers)
    assert SimulationOptions(providers=("kiwify",)).chosen_providers == ("kiwify",)
    assert SimulationOptions().chosen_providers == simulated_providers()


def test_two_runs_with_the_same_seed_on_one_stack_draw_new_payment_and_event_ids():
    # Given two simulations of the same seed (a second `inbox simulate` on the stack the first one used)
    first, second = (EventTimeSender(seed=7, clock=lambda: 1_767_225_600) for _ in range(2))
    # When each creates a payment of a sender with no API
    (first_id, first_webhooks), (second_id, second_webhooks) = (
        s.create_payment("standard", 1990) for s in (first, second)
    )
    # Then neither the payment nor its event is the other's: the inbox would absorb the second as a duplicate
    assert first_id != second_id
    assert first_webhooks[0]["body"] != second_webhooks[0]["body"]
    # ... while a fixed run id still reproduces a run exactly
    fixed = [
        EventTimeSender(seed=7, clock=lambda: 1_767_225_600, run_id="r").create_payment("standard", 1990) for _ in "ab"
    ]
    assert fixed[0] == fixed[1]
