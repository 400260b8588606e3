"""Routing: (provider, event type) -> handler, most specific first; user modules extend it without core changes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.process.app import build_router
from shared.process.handlers import EventTimeOrderedHandler, RefetchPaymentHandler
from shared.process.router import Router
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


# A provider whose routes read their event types from its driver module ("module:attribute" in the catalog).
DEFERRED = "shopify"  # Route(event_types_from="shared.providers.shopify.driver:PAYMENT_TOPICS")


def test_a_drivers_event_types_are_read_with_its_first_event_not_when_the_router_is_built():
    # Given a fresh interpreter (nothing imported by other tests), When the processor's router is built
    script = (
        "import sys, json; from shared.process.app import build_router; router = build_router(lambda p: None); "
        "before = 'shared.providers.shopify.driver' in sys.modules; "
        "handler = router.resolve('shopify', 'orders/paid'); "
        "print(json.dumps([before, 'shared.providers.shopify.driver' in sys.modules, type(handler).__name__]))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    before, after, handler = json.loads(result.stdout.strip().splitlines()[-1])
    # Then the driver module is not imported until an event of its provider is resolved, and then it routes
    assert (before, after, handler) == (False, True, "EventTimeOrderedHandler")


def test_a_registration_after_deferred_routes_still_replaces_them():
    # Given the built-in routes (shopify's deferred) and a user handler registered for one of its types
    router = build_router(no_clients)
    special = RefetchPaymentHandler(no_clients)
    router.register(DEFERRED, "orders/paid", special)
    # When shopify's first event is resolved (its deferred routes are read now)
    # Then the later registration wins, and the rest of the deferred routes are there
    assert router.resolve(DEFERRED, "orders/paid") is special
    assert isinstance(router.resolve(DEFERRED, "orders/cancelled"), EventTimeOrderedHandler)


def test_deferred_routes_are_read_once_even_by_threads_resolving_at_once():
    # Given a router whose one provider's routes are deferred, read slowly, counted
    reads = []
    handler = EventTimeOrderedHandler()

    def load():
        reads.append(1)
        time.sleep(0.05)
        return [("a.b", handler)]

    router = Router()
    router.defer("p", load)
    # When eight threads resolve that provider's event at once
    with ThreadPoolExecutor(max_workers=8) as pool:
        resolved = list(pool.map(lambda _: router.resolve("p", "a.b"), range(8)))
    # Then every one found the route (none saw it half-read), and the routes were read once
    assert resolved == [handler] * 8
    assert reads == [1]
