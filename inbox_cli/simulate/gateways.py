"""The gateways a simulation drives, and their truth.

- Providers the processor refetches from: the local gateway simulator (`inbox_local/gateway_simulator/`, its
  `/_sim/` admin API over HTTP), which renders each webhook in the provider's shape and answers the refetches.
- Providers with no API, ordered by `occurred_at`: `EventTimeSender`, in this process. It renders each step with
  the provider's own sample body, dated one second after the payment's previous event, so the events of one
  payment have a strict order whatever order they are delivered in. Their truth is the last status by that date;
  their events carry no refunded amount, so only the status is compared.

Every webhook is `{"event_type", "body" (the exact UTF-8 text), "occurred_at" (epoch s)}`, from either side.

Stripe Connect: every CONNECT_EVERY-th Stripe payment belongs to one of CONNECT_ACCOUNTS (a marketplace's sellers),
so its webhooks carry `account` and the simulator finds it only when the refetch names the account: a run that
matches its truth proves the processor sent Stripe-Account. Chosen by count, not drawn, so the schedule's random
draws, the ids and every figure of a run stay what they were.
"""

from __future__ import annotations

import json
import random
import secrets
import string
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inbox_cli.simulate import wire
from inbox_cli.simulate.lifecycles import refetched
from inbox_local.config import signing_secret
from shared.payments.model import Payment

Webhooks = list[dict[str, Any]]

CONNECT_EVERY = 3
CONNECT_ACCOUNTS = ("acct_1SimSeller0000001", "acct_1SimSeller0000002", "acct_1SimSeller0000003")


@dataclass(frozen=True)
class Truth:
    """What a payment is at its gateway. `amount_refunded` None: the provider's events do not carry it."""

    provider: str
    resource_id: str
    status: str
    amount_refunded: int | None

    @property
    def key(self) -> str:
        return f"{self.provider}#{self.resource_id}"


def mismatches(truths: Iterable[Truth], stored: Mapping[str, Payment | None]) -> list[dict[str, Any]]:
    """Every payment of `stored` whose state differs from its gateway's truth (empty when all match)."""
    found = []
    for truth in truths:
        if truth.key not in stored:
            continue
        payment = stored[truth.key]
        expected: dict[str, Any] = {"status": truth.status}
        observed: dict[str, Any] | None = None if payment is None else {"status": payment.status.value}
        if truth.amount_refunded is not None:
            expected["amount_refunded"] = truth.amount_refunded
            if observed is not None and payment is not None:
                observed["amount_refunded"] = payment.amount_refunded
        if observed != expected:
            found.append(
                {"provider": truth.provider, "resource_id": truth.resource_id, "gateway": expected, "inbox": observed}
            )
    return found


class SimulatorAdmin:
    """The simulator's admin API (`/_sim/...`), spoken over HTTP by the CLI."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(  # noqa: S310 - the local simulator
            f"{self.base_url}/_sim/{path}", data=data, method=method, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return json.loads(response.read())

    def create_payment(self, provider: str, amount: int, *, account: str | None = None) -> tuple[str, Webhooks]:
        payload: dict[str, Any] = {"provider": provider, "amount": amount}
        if account is not None:
            payload["account"] = account
        answer = self._call("POST", "payments", payload)
        return answer["id"], answer["webhooks"]

    def transition(self, provider: str, resource_id: str, status: str) -> Webhooks:
        answer = self._call("POST", f"payments/{provider}/{resource_id}/transition", {"status": status})
        webhooks: Webhooks = answer["webhooks"]
        return webhooks

    def truths(self) -> list[dict[str, Any]]:
        payments: list[dict[str, Any]] = self._call("GET", "payments")
        return payments

    def set_faults(self, **faults: Any) -> Any:
        return self._call("POST", "faults", faults)

    def make_all_known(self) -> int:
        """Every payment answers its fetches from now on; how many were still unknown."""
        return int(self._call("POST", "payments/known", {})["revealed"])

    def faults_by_provider(self) -> dict[str, dict[str, int]]:
        """The faults the simulator injected so far, per provider and kind (error, throttle, slow, unknown)."""
        counts: dict[str, dict[str, int]] = self._call("GET", "stats/providers")
        return counts


@dataclass
class _SentPayment:
    provider: str
    resource_id: str
    amount: int
    status: str
    last_event_at: int


class EventTimeSender:
    """The senders with no API: payments, their steps and the webhooks that announce them, in this process."""

    def __init__(self, seed: int, clock: Callable[[], float] = time.time, *, run_id: str | None = None) -> None:
        # The ids are new on every run (`run_id`, random unless a test fixes it): a second simulation on the same
        # stack with the same seed drew the first one's payment and event ids, so its events were absorbed as
        # duplicates of the first run's and its payments started from the first run's state. (The gateway
        # simulator draws its own ids; these senders have no server to remember them.)
        run = secrets.token_hex(8) if run_id is None else run_id
        self._rng = random.Random(f"event-time-sender:{seed}:{run}")  # noqa: S311 - unique ids, not secrets
        self._clock = clock
        self._lock = threading.Lock()
        self._payments: dict[tuple[str, str], _SentPayment] = {}

    def create_payment(self, provider: str, amount: int) -> tuple[str, Webhooks]:
        with self._lock:
            resource_id = self._new_id(provider)
            payment = _SentPayment(provider, resource_id, amount, "pending", int(self._clock()))
            self._payments[(provider, resource_id)] = payment
            return resource_id, self._announce(payment)

    def transition(self, provider: str, resource_id: str, status: str) -> Webhooks:
        with self._lock:
            payment = self._payments[(provider, resource_id)]
            payment.status = status
            payment.last_event_at += 1  # strictly after the payment's previous event
            return self._announce(payment)

    def truths(self) -> list[Truth]:
        with self._lock:
            return [Truth(p.provider, p.resource_id, p.status, None) for p in self._payments.values()]

    def _new_id(self, provider: str) -> str:
        # Digits: an id every one of these senders accepts (Shopify's order ids are integers).
        while True:
            resource_id = str(self._rng.randrange(10**11, 10**12))
            if (provider, resource_id) not in self._payments:
                return resource_id

    def _announce(self, payment: _SentPayment) -> Webhooks:
        event_id = "evt_" + "".join(self._rng.choices(string.ascii_lowercase + string.digits, k=24))
        try:
            body = wire.sample_body(
                payment.provider,
                event_id=event_id,
                resource_id=payment.resource_id,
                status=payment.status,
                amount=payment.amount,
                occurred_at=payment.last_event_at,
            )
        except ValueError:  # no sample for this status (an Adyen payment's creation): nothing is sent
            return []
        secret = signing_secret(payment.provider)
        event = wire.read_back(payment.provider, body, secret, now=payment.last_event_at)
        return [{"event_type": event.event_type, "body": body.decode("utf-8"), "occurred_at": payment.last_event_at}]


def connect_account(stripe_payment_number: int) -> str | None:
    """The connected account of the n-th (1-based) Stripe payment of a run, None for the platform's own."""
    if stripe_payment_number % CONNECT_EVERY:
        return None
    return CONNECT_ACCOUNTS[(stripe_payment_number // CONNECT_EVERY - 1) % len(CONNECT_ACCOUNTS)]


class Gateways:
    """Each provider's gateway, by provider: the simulator for the refetched ones, the sender for the others."""

    def __init__(self, simulator: SimulatorAdmin, senders: EventTimeSender) -> None:
        self.simulator = simulator
        self.senders = senders
        self._stripe_payments = 0

    def create_payment(self, provider: str, amount: int) -> tuple[str, Webhooks]:
        if provider == "stripe":
            self._stripe_payments += 1
            account = connect_account(self._stripe_payments)
            return self.simulator.create_payment(provider, amount, account=account)
        if refetched(provider):
            return self.simulator.create_payment(provider, amount)
        return self.senders.create_payment(provider, amount)

    def transition(self, provider: str, resource_id: str, status: str) -> Webhooks:
        if refetched(provider):
            return self.simulator.transition(provider, resource_id, status)
        return self.senders.transition(provider, resource_id, status)

    def truths(self) -> list[Truth]:
        from_simulator = [
            Truth(t["provider"], t["resource_id"], t["status"], int(t.get("amount_refunded", 0)))
            for t in self.simulator.truths()
        ]
        return [*from_simulator, *self.senders.truths()]
