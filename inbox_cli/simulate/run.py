"""The simulation itself: payments spread over the providers, their lifecycles taken round by round, each round's
webhooks delivered late, out of order, more than once, sometimes twice at the same instant; then every payment
compared with its gateway's truth."""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from inbox_cli.simulate import wire
from inbox_cli.simulate.gateways import Gateways, Webhooks, mismatches
from inbox_cli.simulate.lifecycles import lifecycles_for, refetched, simulated_providers
from shared.inbox.model import EventStatus
from shared.inbox.store import InboxStore
from shared.payments.model import Payment
from shared.payments.store import ProcessingStore

AMOUNTS = (990, 1990, 4990, 10000, 25050)
SCAN_PAGE_SIZE = 100


@dataclass(frozen=True)
class SimulationOptions:
    payments: int = 50
    providers: tuple[str, ...] = ()  # empty: every simulated provider
    seed: int = 7
    duplicate_rate: float = 0.3  # share of webhooks delivered more than once
    concurrent_duplicate_rate: float = 0.1  # share delivered twice at the same instant
    max_delay_rounds: int = 2  # a webhook may arrive up to this many gateway steps late (reordering)
    concurrency: int = 8
    settle_timeout_seconds: float = 300.0
    lifecycles: tuple[str, ...] = ()  # only these (by name); empty = all of the provider's
    # Wait for each round's deliveries to be processed before the gateway's next step. Otherwise the steps follow
    # each other within milliseconds and the processor's refetch mostly sees the final state: one transition per
    # payment. Settled rounds apply the intermediate states too (pending, paid, refunded ...), as when a gateway's
    # steps are minutes apart.
    settle_rounds: bool = False

    @property
    def chosen_providers(self) -> tuple[str, ...]:
        """The providers asked for; by default every simulated one that lives one of the lifecycles asked for."""
        if self.providers:
            return self.providers
        wanted = set(self.lifecycles)
        return tuple(p for p in simulated_providers() if not wanted or wanted & set(lifecycles_for(p)))


def spread(rng: random.Random, payments: int, providers: Sequence[str]) -> list[str]:
    """Which provider each payment is of: as even as the count allows (every provider once before any twice),
    in a seeded order."""
    if not providers:
        raise ValueError("no provider to simulate")
    order = list(providers)
    rng.shuffle(order)
    plan = [order[index % len(order)] for index in range(payments)]
    rng.shuffle(plan)
    return plan


@dataclass
class Delivery:
    provider: str
    resource_id: str
    event_type: str
    body: bytes
    due_round: int
    copies: int
    concurrent: bool
    occurred_at: int = 0  # epoch s: when the gateway says the event happened


@dataclass
class SimulationHooks:
    """Optional callbacks for a driver wrapped around a simulation (`inbox chaos` turns faults on and off)."""

    before_payment: Callable[[int], None] | None = None  # before the n-th payment is created
    before_round: Callable[[int], None] | None = None  # before each round of gateway steps and deliveries
    delivered: Callable[[Delivery, list[int]], None] | None = None  # after each send: every attempt's HTTP status
    after_delivery: Callable[[], None] | None = None  # every webhook sent, before waiting for them to settle


@dataclass
class SimulationReport:
    payments: int
    webhooks: int
    deliveries: int
    statuses: dict[str, int]
    matching: int
    mismatches: list[dict[str, Any]]
    delivery_failures: int
    elapsed_seconds: float
    events_per_second: float
    latency_ms: dict[str, float]
    lifecycles: dict[str, int] = field(default_factory=dict)
    # provider -> payments, webhooks, deliveries (with duplicates), matching
    providers: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (
            not self.mismatches
            and self.statuses.get("failed", 0) == 0
            and self.statuses.get("pending", 0) == 0
            and self.delivery_failures == 0
        )


def _parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class _Plan:
    provider: str
    resource_id: str
    steps: tuple[str, ...]
    lifecycle: str


class Simulation:
    def __init__(
        self,
        options: SimulationOptions,
        *,
        api_url: str,
        gateways: Gateways,
        inbox: InboxStore,
        payments: ProcessingStore,
        secret_for: Callable[[str], str],
        hooks: SimulationHooks | None = None,
    ) -> None:
        self.options = options
        self.api_url = api_url
        self.gateways = gateways
        self.inbox = inbox
        self.payments = payments
        self.secret_for = secret_for
        self.rng = random.Random(options.seed)  # noqa: S311 - a reproducible schedule
        self.providers_of_payments = spread(
            random.Random(f"spread:{options.seed}"),  # noqa: S311 - apart, so the schedule's draws stay as they were
            options.payments,
            options.chosen_providers,
        )
        self._failures = 0
        self._sends: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.hooks = hooks or SimulationHooks()

    def _schedule(self, provider: str, resource_id: str, webhooks: Webhooks, round_: int) -> list[Delivery]:
        scheduled = []
        for webhook in webhooks:
            duplicate = self.rng.random() < self.options.duplicate_rate
            scheduled.append(
                Delivery(
                    provider=provider,
                    resource_id=resource_id,
                    event_type=webhook["event_type"],
                    body=webhook["body"].encode("utf-8"),
                    due_round=round_ + self.rng.randint(0, self.options.max_delay_rounds),
                    copies=1 + (self.rng.randint(1, 3) if duplicate else 0),
                    concurrent=self.rng.random() < self.options.concurrent_duplicate_rate,
                    occurred_at=int(webhook.get("occurred_at") or 0),
                )
            )
        return scheduled

    def deliver(self, delivery: Delivery) -> None:
        """POST one webhook as its gateway would (signed, retried on 5xx), and log it. Public: `inbox chaos`
        re-delivers what was never acknowledged, as a gateway's later retry."""
        url = f"{self.api_url}/webhooks/{delivery.provider}"
        sends = 2 if delivery.concurrent else 1
        copies = [delivery] * max(delivery.copies, sends)
        ordered_by_event_time = not refetched(delivery.provider)

        def send_one(_: Delivery) -> None:
            request = wire.signed(
                delivery.provider,
                delivery.body,
                self.secret_for(delivery.provider),
                event_time=delivery.occurred_at,
                ordered_by_event_time=ordered_by_event_time,
            )
            attempts = wire.post(url, request)
            with self._lock:
                self._sends[delivery.provider] += 1
                if not 200 <= attempts[-1] < 300:
                    self._failures += 1
            if self.hooks.delivered is not None:
                self.hooks.delivered(delivery, attempts)

        if delivery.concurrent:
            threads = [threading.Thread(target=send_one, args=(copy,)) for copy in copies[:2]]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            copies = copies[2:]
        for copy in copies:
            send_one(copy)

    def _drive(self, plans: list[_Plan], pending: list[Delivery], resource_ids: set[tuple[str, str]]) -> Counter[str]:
        """Round by round: the gateway takes each payment's next step, and the webhooks due are delivered. Returns
        how many webhooks the gateways' steps produced, per provider."""
        options = self.options
        webhooks: Counter[str] = Counter()
        rounds = max((len(plan.steps) for plan in plans), default=0) + options.max_delay_rounds + 1
        with ThreadPoolExecutor(max_workers=options.concurrency) as pool:

            def deliver_due(round_: int) -> None:
                due = [d for d in pending if d.due_round <= round_]
                pending[:] = [d for d in pending if d.due_round > round_]
                self.rng.shuffle(due)
                list(pool.map(self.deliver, due))

            for round_ in range(rounds):
                if self.hooks.before_round is not None:
                    self.hooks.before_round(round_)
                if options.settle_rounds:  # delivered and processed before the gateway's next step
                    deliver_due(round_)
                    self._wait_until_nothing_pending(resource_ids, poll_seconds=0.25)
                for plan in plans:
                    if round_ < len(plan.steps):
                        sent = self.gateways.transition(plan.provider, plan.resource_id, plan.steps[round_])
                        webhooks[plan.provider] += len(sent)
                        pending += self._schedule(plan.provider, plan.resource_id, sent, round_ + 1)
                if not options.settle_rounds:  # the gateway has moved on already: the refetch sees a later state
                    deliver_due(round_)
            list(pool.map(self.deliver, pending))
        return webhooks

    def _plan(self, provider: str) -> tuple[str, tuple[str, ...]]:
        wanted = self.options.lifecycles
        choices = [
            (name, steps) for name, steps in sorted(lifecycles_for(provider).items()) if name in wanted or not wanted
        ]
        if not choices:
            raise ValueError(f"none of the lifecycles {wanted} exists for {provider}")
        return self.rng.choice(choices)

    def run(self) -> SimulationReport:
        started = time.monotonic()
        plans: list[_Plan] = []
        pending: list[Delivery] = []
        webhooks: Counter[str] = Counter()
        for index, provider in enumerate(self.providers_of_payments):
            if self.hooks.before_payment is not None:
                self.hooks.before_payment(index)
            name, steps = self._plan(provider)
            amount = self.rng.choice(AMOUNTS)
            resource_id, created = self.gateways.create_payment(provider, amount)
            plans.append(_Plan(provider, resource_id, steps, name))
            pending += self._schedule(provider, resource_id, created, 0)
            webhooks[provider] += len(created)

        resource_ids = {(plan.provider, plan.resource_id) for plan in plans}
        webhooks += self._drive(plans, pending, resource_ids)
        if self.hooks.after_delivery is not None:
            self.hooks.after_delivery()
        delivered_at = time.monotonic()

        items = self.wait_until_settled(resource_ids)
        settled_at = time.monotonic()
        statuses: dict[str, int] = {}
        latencies = []
        for item in items:
            statuses[item["status"]] = statuses.get(item["status"], 0) + 1
            if item.get("processed_at"):
                latencies.append((_parse_iso(item["processed_at"]) - _parse_iso(item["received_at"])) * 1000)

        found = self.compare(resource_ids)
        mismatched = Counter(m["provider"] for m in found)
        payments_of = Counter(plan.provider for plan in plans)
        elapsed = settled_at - started
        return SimulationReport(
            payments=len(plans),
            webhooks=sum(webhooks.values()),
            deliveries=sum(self._sends.values()),
            statuses=statuses,
            matching=len(resource_ids) - len(found),
            mismatches=found,
            delivery_failures=self._failures,
            elapsed_seconds=round(elapsed, 2),
            events_per_second=round(len(items) / elapsed, 1) if elapsed else 0.0,
            latency_ms={
                "p50": round(statistics.median(latencies), 1) if latencies else 0.0,
                # The standard library's linear interpolation between ranks (numpy's default, as bench/stats.py).
                "p99": round(statistics.quantiles(latencies, n=100, method="inclusive")[98], 1)
                if len(latencies) > 1
                else (latencies[0] if latencies else 0.0),
                "max": round(max(latencies), 1) if latencies else 0.0,
                "delivery_phase_s": round(delivered_at - started, 2),
            },
            lifecycles=dict(Counter(f"{plan.provider}: {plan.lifecycle}" for plan in plans)),
            providers={
                provider: {
                    "payments": count,
                    "webhooks": webhooks[provider],
                    "deliveries": self._sends[provider],
                    "matching": count - mismatched[provider],
                }
                for provider, count in sorted(payments_of.items())
            },
        )

    def _events_of(self, resource_ids: set[tuple[str, str]]) -> list[dict[str, Any]]:
        # Small pages: an item holds its raw body, and a page of 500 of them can outlast the client's 5 s read
        # timeout on a loaded machine's moto (a 300-payment chaos run died of it).
        items = self.inbox.scan(page_size=SCAN_PAGE_SIZE)
        return [item for item in items if (item.get("provider"), item.get("resource_id")) in resource_ids]

    def _wait_until_nothing_pending(self, resource_ids: set[tuple[str, str]], poll_seconds: float = 0.5) -> None:
        # Poll the sparse index of pending events (cheap), not the whole table.
        deadline = time.monotonic() + self.options.settle_timeout_seconds
        while time.monotonic() < deadline:
            still_pending = any(
                (item.get("provider"), item.get("resource_id")) in resource_ids
                for item in self.inbox.open_events(EventStatus.PENDING)
            )
            if not still_pending:
                return
            time.sleep(poll_seconds)

    def wait_until_settled(self, resource_ids: set[tuple[str, str]]) -> list[dict[str, Any]]:
        """Wait until none of these payments' events is pending, then return all their inbox items."""
        self._wait_until_nothing_pending(resource_ids)
        return self._events_of(resource_ids)  # read everything once, at the end

    def stored_payments(self, resource_ids: set[tuple[str, str]]) -> dict[str, Payment | None]:
        """Each payment as the inbox holds it (None: never stored), by payment key."""
        keys = (f"{provider}#{resource_id}" for provider, resource_id in sorted(resource_ids))
        return {key: self.payments.load_payment(key) for key in keys}

    def compare(self, resource_ids: set[tuple[str, str]]) -> list[dict[str, Any]]:
        """Every payment whose stored state differs from its gateway's truth (empty when all match)."""
        return mismatches(self.gateways.truths(), self.stored_payments(resource_ids))
