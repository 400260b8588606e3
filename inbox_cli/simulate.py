"""`inbox simulate`: payments walk realistic lifecycles on the gateway simulator, and their webhooks reach the
stack the way gateways deliver them — late, out of order, more than once, sometimes twice at the same instant.
Then every payment is compared with the gateway's truth.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from inbox_local.senders import sender_for
from shared.inbox.model import EventStatus
from shared.inbox.store import InboxStore
from shared.payments.store import ProcessingStore

# Each lifecycle is the sequence of gateway steps after creation (which is `pending`).
LIFECYCLES: dict[str, dict[str, list[str]]] = {
    "stripe": {
        "paid": ["paid"],
        "authorized then captured": ["authorized", "paid"],
        "refunded": ["paid", "refunded"],
        "partially refunded twice, then fully": ["paid", "partially_refunded", "partially_refunded", "refunded"],
        "dispute won": ["paid", "disputed", "paid"],
        "dispute lost": ["paid", "disputed", "charged_back"],
        "failed, retried, paid": ["failed", "paid"],
        "refunded in nine parts": ["paid", *["partially_refunded"] * 8, "refunded"],
        "failed": ["failed"],
        "canceled": ["canceled"],
        "left pending": [],
    },
    "asaas": {
        "paid": ["paid"],
        "refunded": ["paid", "refunded"],
        "dispute won": ["paid", "disputed", "paid"],
        "dispute lost": ["paid", "disputed", "charged_back"],
        "canceled": ["canceled"],
        "left pending": [],
    },
}
LIFECYCLE_NAMES = sorted({name for lifecycles in LIFECYCLES.values() for name in lifecycles})


@dataclass(frozen=True)
class SimulationOptions:
    payments: int = 50
    providers: tuple[str, ...] = ("stripe", "asaas")
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


@dataclass
class Delivery:
    provider: str
    resource_id: str
    event_type: str
    body: bytes
    due_round: int
    copies: int
    concurrent: bool


@dataclass
class SimulationHooks:
    """Optional callbacks for a driver wrapped around a simulation (`inbox chaos` turns faults on and off)."""

    before_payment: Callable[[int], None] | None = None  # before the n-th payment is created
    before_round: Callable[[int], None] | None = None  # before each round of gateway steps and deliveries
    delivered: Callable[[Delivery, int], None] | None = None  # after each send, with its final HTTP status
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

    @property
    def ok(self) -> bool:
        return (
            not self.mismatches
            and self.statuses.get("failed", 0) == 0
            and self.statuses.get("pending", 0) == 0
            and self.delivery_failures == 0
        )


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

    def create_payment(self, provider: str, amount: int) -> tuple[str, list[dict[str, Any]]]:
        answer = self._call("POST", "payments", {"provider": provider, "amount": amount})
        return answer["id"], answer["webhooks"]

    def transition(self, provider: str, resource_id: str, status: str) -> list[dict[str, Any]]:
        answer = self._call("POST", f"payments/{provider}/{resource_id}/transition", {"status": status})
        webhooks: list[dict[str, Any]] = answer["webhooks"]
        return webhooks

    def truths(self) -> list[dict[str, Any]]:
        payments: list[dict[str, Any]] = self._call("GET", "payments")
        return payments

    def set_faults(self, **faults: Any) -> Any:
        return self._call("POST", "faults", faults)

    def make_all_known(self) -> int:
        """Every payment answers its fetches from now on; how many were still unknown."""
        return int(self._call("POST", "payments/known", {})["revealed"])


def _post(url: str, body: bytes, headers: dict[str, str], attempts: int = 5) -> int:
    """Deliver like a gateway: retry on 5xx and connection errors, give up after a few tries."""
    status = 0
    for attempt in range(attempts):
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the stack under test
                return int(response.status)
        except urllib.error.HTTPError as error:
            status = int(error.code)
            if status < 500:
                return status
        except OSError:
            status = 0
        time.sleep(0.2 * (attempt + 1))
    return status


def _parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Simulation:
    def __init__(
        self,
        options: SimulationOptions,
        *,
        api_url: str,
        admin: SimulatorAdmin,
        inbox: InboxStore,
        payments: ProcessingStore,
        secret_for: Any,
        hooks: SimulationHooks | None = None,
    ) -> None:
        self.options = options
        self.api_url = api_url
        self.admin = admin
        self.inbox = inbox
        self.payments = payments
        self.secret_for = secret_for
        self.rng = random.Random(options.seed)  # noqa: S311 - a reproducible schedule
        self._failures = 0
        self._deliveries = 0
        self._lock = threading.Lock()
        self.hooks = hooks or SimulationHooks()

    def _schedule(self, provider: str, resource_id: str, webhooks: list[dict[str, Any]], round_: int) -> list[Delivery]:
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
                )
            )
        return scheduled

    def deliver(self, delivery: Delivery) -> None:
        """POST one webhook as its gateway would (signed, retried on 5xx), and log it. Public: `inbox chaos`
        re-delivers what was never acknowledged, as a gateway's later retry."""
        sender = sender_for(delivery.provider)
        url = f"{self.api_url}/webhooks/{delivery.provider}"
        sends = 2 if delivery.concurrent else 1
        copies = [delivery] * max(delivery.copies, sends)

        def send_one(_: Delivery) -> None:
            # Each retry of a real gateway is freshly signed (a new timestamp); the body is the same.
            signed = sender.sign(delivery.body, self.secret_for(delivery.provider), now=int(time.time()))
            query = "?" + "&".join(f"{k}={v}" for k, v in signed.query.items()) if signed.query else ""
            status = _post(url + query, signed.body, {"content-type": "application/json", **signed.headers})
            with self._lock:
                self._deliveries += 1
                if not 200 <= status < 300:
                    self._failures += 1
            if self.hooks.delivered is not None:
                self.hooks.delivered(delivery, status)

        if delivery.concurrent:
            threads = [threading.Thread(target=send_one, args=(copy,)) for copy in copies[:2]]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            copies = copies[2:]
        for copy in copies:
            send_one(copy)

    def _drive(
        self, plans: list[tuple[str, str, list[str], str]], pending: list[Delivery], resource_ids: set[tuple[str, str]]
    ) -> int:
        """Round by round: the gateway takes each payment's next step, and the webhooks due are delivered. Returns
        how many webhooks the gateway's steps produced."""
        options = self.options
        webhooks_total = 0
        rounds = max((len(steps) for _, _, steps, _ in plans), default=0) + options.max_delay_rounds + 1
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
                for provider, resource_id, steps, _ in plans:
                    if round_ < len(steps):
                        webhooks = self.admin.transition(provider, resource_id, steps[round_])
                        webhooks_total += len(webhooks)
                        pending += self._schedule(provider, resource_id, webhooks, round_ + 1)
                if not options.settle_rounds:  # the gateway has moved on already: the refetch sees a later state
                    deliver_due(round_)
            list(pool.map(self.deliver, pending))
        return webhooks_total

    def run(self) -> SimulationReport:
        options = self.options
        started = time.monotonic()
        plans: list[tuple[str, str, list[str], str]] = []
        pending: list[Delivery] = []
        webhooks_total = 0
        for index in range(options.payments):
            if self.hooks.before_payment is not None:
                self.hooks.before_payment(index)
            provider = self.rng.choice(options.providers)
            choices = [
                (name, steps)
                for name, steps in sorted(LIFECYCLES[provider].items())
                if not options.lifecycles or name in options.lifecycles
            ]
            if not choices:
                raise ValueError(f"none of the lifecycles {options.lifecycles} exists for {provider}")
            name, steps = self.rng.choice(choices)
            amount = self.rng.choice([990, 1990, 4990, 10000, 25050])
            resource_id, created = self.admin.create_payment(provider, amount)
            plans.append((provider, resource_id, list(steps), name))
            pending += self._schedule(provider, resource_id, created, 0)
            webhooks_total += len(created)

        resource_ids = {(provider, resource_id) for provider, resource_id, _, _ in plans}
        webhooks_total += self._drive(plans, pending, resource_ids)
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

        mismatches = self.compare(resource_ids)
        lifecycles: dict[str, int] = {}
        for provider, _, _, name in plans:
            key = f"{provider}: {name}"
            lifecycles[key] = lifecycles.get(key, 0) + 1
        elapsed = settled_at - started
        return SimulationReport(
            payments=len(plans),
            webhooks=webhooks_total,
            deliveries=self._deliveries,
            statuses=statuses,
            matching=len(resource_ids) - len(mismatches),
            mismatches=mismatches,
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
            lifecycles=lifecycles,
        )

    def _events_of(self, resource_ids: set[tuple[str, str]]) -> list[dict[str, Any]]:
        return [item for item in self.inbox.scan() if (item.get("provider"), item.get("resource_id")) in resource_ids]

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

    def compare(self, resource_ids: set[tuple[str, str]]) -> list[dict[str, Any]]:
        """Every payment whose stored state differs from the simulator's truth (empty when all match)."""
        mismatches = []
        for truth in self.admin.truths():
            key = (truth["provider"], truth["resource_id"])
            if key not in resource_ids:
                continue
            stored = self.payments.load_payment(f"{key[0]}#{key[1]}")
            observed = (
                None if stored is None else {"status": stored.status.value, "amount_refunded": stored.amount_refunded}
            )
            expected = {"status": truth["status"], "amount_refunded": truth.get("amount_refunded", 0)}
            if observed != expected:
                mismatches.append({"provider": key[0], "resource_id": key[1], "gateway": expected, "inbox": observed})
        return mismatches


def render_report(report: SimulationReport) -> str:
    s = report.statuses
    lines = [
        "Simulation verdict",
        f"  payments                 {report.payments}",
        f"  webhooks sent by gateway {report.webhooks}   deliveries (with duplicates) {report.deliveries}",
        f"  events processed         {s.get('processed', 0)}",
        f"  events ignored           {s.get('ignored', 0)}   (late or repeated: nothing to change)",
        f"  events failed            {s.get('failed', 0)}",
        f"  events pending           {s.get('pending', 0)}",
        f"  payments matching truth  {report.matching}/{report.payments}",
        f"  deliveries not 2xx       {report.delivery_failures}",
        f"  throughput               {report.events_per_second} events/s over {report.elapsed_seconds} s",
        f"  receipt -> processed     p50 {report.latency_ms['p50']} ms, p99 {report.latency_ms['p99']} ms",
        f"  verdict                  {'OK' if report.ok else 'NOT OK'}",
    ]
    for mismatch in report.mismatches[:10]:
        lines.append(f"  MISMATCH {json.dumps(mismatch)}")
    return "\n".join(lines)
