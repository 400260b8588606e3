"""Routing: (provider, event type) -> handler, most specific first; user modules extend it without core changes."""

from __future__ import annotations

import pytest

from shared.process.app import build_router
from shared.process.handlers import EventTimeOrderedHandler, RefetchPaymentHandler
from tests.unit.process.custom_handlers_example import SubscriptionRenewedHandler


def no_clients(provider):
    return None


def test_built_in_routes():
    router = build_router(no_clients)
    assert isinstance(router.resolve("stripe", "payment_intent.succeeded"), RefetchPaymentHandler)
    assert isinstance(router.resolve("stripe", "charge.dispute.created"), RefetchPaymentHandler)
    assert isinstance(router.resolve("asaas", "PAYMENT_RECEIVED"), RefetchPaymentHandler)
    assert isinstance(router.resolve("standard", "payment.paid"), EventTimeOrderedHandler)


@pytest.mark.parametrize(
    ("provider", "event_type"), [("stripe", "customer.created"), ("github", "push"), ("asaas", "")]
)
def test_event_types_nobody_handles_resolve_to_nothing(provider, event_type):
    assert build_router(no_clients).resolve(provider, event_type) is None


def test_a_user_module_adds_a_handler_without_touching_the_core():
    router = build_router(no_clients, "tests.unit.process.custom_handlers_example")
    assert isinstance(router.resolve("standard", "subscription.renewed"), SubscriptionRenewedHandler)
    assert isinstance(router.resolve("standard", "payment.paid"), EventTimeOrderedHandler)  # ours still there


def test_an_exact_route_wins_over_a_prefix():
    router = build_router(no_clients)
    special = EventTimeOrderedHandler()
    router.register("stripe", "charge.refunded", special)
    assert router.resolve("stripe", "charge.refunded") is special
    assert isinstance(router.resolve("stripe", "charge.succeeded"), RefetchPaymentHandler)
