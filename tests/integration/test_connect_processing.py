"""Stripe Connect and thin events through the processor, against moto and the gateway simulator's Stripe (which,
like Stripe, answers 404 for a connected account's objects unless the request names the account). The real
StripeClient makes the requests; a pool in between records the headers each one carried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.http import JsonHttpClient
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.handlers import RefetchPaymentHandler, default_router
from shared.process.messages import ReconcileMessage
from shared.process.service import EventProcessor, Outcome, RetryLater
from shared.providers.stripe.client import StripeClient
from shared.sub_account import SubAccount
from tests.integration.operations_support import a_payment, put_payment
from tests.integration.processing_support import RecordingQueue, run, store_event

S = PaymentStatus
ACCOUNT = "acct_1ConnectedSeller01"
SCOPE_HEADERS = ("Stripe-Account", "Stripe-Context")


class RecordingPool:
    """A real connection pool that remembers the headers of every request."""

    def __init__(self) -> None:
        self._pool = urllib3.PoolManager(retries=False)
        self.headers: list[dict[str, str]] = []

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.headers.append(dict(kwargs["headers"]))
        return self._pool.request(method, url, **kwargs)

    def scopes(self) -> list[dict[str, str]]:
        return [{name: h[name] for name in SCOPE_HEADERS if name in h} for h in self.headers]


@pytest.fixture
def sim() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=21) as simulator:
        yield simulator


@pytest.fixture
def pool() -> RecordingPool:
    return RecordingPool()


@pytest.fixture
def processor(aws_world, sim, pool) -> EventProcessor:
    http = JsonHttpClient(sim.url, provider="stripe", pool=pool, sleep=lambda _: None, random=lambda: 0.0)
    client = StripeClient(http, lambda: sim.api_keys["stripe"] or "")
    clients = lambda source: client if source == "stripe" else None  # noqa: E731
    names = aws_world.names
    return EventProcessor(
        ProcessingStore(names.inbox_table, names.payments_table),
        default_router(clients),
        RecordingQueue(),
        max_attempts=3,
        retry_base_seconds=1,
        reconciler=RefetchPaymentHandler(clients),
    )


def load(aws_world, key: str):
    return ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment(key)


def test_a_connected_accounts_event_is_refetched_within_its_account(aws_world, sim, pool, processor):
    # Given a connected account's paid payment at the gateway, and its webhook (top-level `account`) in the inbox
    pi = sim.create_payment("stripe", 4200, "BRL", connect_account=ACCOUNT)
    sim.advance_to("stripe", pi, S.PAID)
    pk = store_event(aws_world.names, resource_id=pi, amount=4200, account=SubAccount(ACCOUNT))

    # When it is processed
    assert run(processor, pk) is Outcome.PROCESSED

    # Then every request named the account with Stripe-Account, and the payment records it under its own id
    assert pool.scopes() and all(scope == {"Stripe-Account": ACCOUNT} for scope in pool.scopes())
    payment = load(aws_world, f"stripe#{pi}")
    assert (payment.status, payment.amount, payment.account) == (S.PAID, 4200, SubAccount(ACCOUNT))
    assert payment.to_item()["account"] == ACCOUNT


def test_the_platforms_own_event_is_refetched_with_no_account_header(aws_world, sim, pool, processor):
    pi = sim.create_payment("stripe", 4200, "BRL")
    sim.advance_to("stripe", pi, S.PAID)
    assert run(processor, store_event(aws_world.names, resource_id=pi, amount=4200)) is Outcome.PROCESSED
    assert pool.headers and pool.scopes() == [{}] * len(pool.headers)
    assert "account" not in load(aws_world, f"stripe#{pi}").to_item()


def test_without_the_account_the_connected_accounts_payment_is_not_found(aws_world, sim, pool, processor):
    # Given a connected account's payment whose event lost its account (what every Connect event was before)
    pi = sim.create_payment("stripe", 4200, "BRL", connect_account=ACCOUNT)
    sim.advance_to("stripe", pi, S.PAID)
    pk = store_event(aws_world.names, resource_id=pi, amount=4200)

    # When it is processed  Then Stripe's 404 sends it back to retry, and no payment is made
    with pytest.raises(RetryLater, match="ResourceNotFound"):
        run(processor, pk)
    assert load(aws_world, f"stripe#{pi}") is None


def test_a_thin_event_about_a_charge_is_refetched_in_its_context(aws_world, sim, pool, processor):
    # Given a connected account's refunded payment whose event destination sends thin events
    pi = sim.create_payment("stripe", 4200, "BRL", connect_account=ACCOUNT, thin=True)
    webhooks = sim.advance_to("stripe", pi, S.REFUNDED)
    charge_id = json.loads(webhooks[-1].body)["related_object"]["id"]
    assert [w.event_type for w in webhooks] == ["v1.payment_intent.succeeded", "v1.charge.refunded"]
    pk = store_event(
        aws_world.names,
        resource_id=charge_id,
        event_type="v1.charge.refunded",
        status=None,
        amount=None,
        account=SubAccount(ACCOUNT, context=True),
    )

    # When the thin event (about the charge) is processed
    assert run(processor, pk) is Outcome.PROCESSED

    # Then the charge and then its intent were read with Stripe-Context, and the payment is the intent's
    assert pool.scopes() and all(scope == {"Stripe-Context": ACCOUNT} for scope in pool.scopes())
    payment = load(aws_world, f"stripe#{pi}")
    assert (payment.status, payment.account) == (S.REFUNDED, SubAccount(ACCOUNT, context=True))


def test_reconciliation_refetches_a_stuck_connect_payment_within_its_account(aws_world, sim, pool, processor):
    # Given a connected account's payment stored pending, which the gateway has since paid (no webhook came)
    pi = sim.create_payment("stripe", 1000, "BRL", connect_account=ACCOUNT)
    sim.advance_to("stripe", pi, S.PAID)
    put_payment(aws_world, a_payment(resource_id=pi, account=SubAccount(ACCOUNT)))

    # When the sweeper's reconciliation of it is processed
    assert processor.reconcile(ReconcileMessage("stripe", pi)) is Outcome.PROCESSED

    # Then it asked within the account the payment records, and applied the change
    assert pool.scopes() and all(scope == {"Stripe-Account": ACCOUNT} for scope in pool.scopes())
    assert load(aws_world, f"stripe#{pi}").status is S.PAID
