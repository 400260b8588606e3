"""`inbox chaos`: `inbox simulate` while the local stack misbehaves, then proof that nothing was lost or doubled.

A seeded schedule turns the local stack's faults on and off round by round (`inbox_local/faults.py`, through
`POST /_local/faults`): DynamoDB throttling the ingest (503s the delivering side retries, like a gateway), the
processor dying before its transaction and after it (before the acknowledgement), the gateway's API answering
500, 429 or too slowly, or not knowing a payment yet, and the Pipe pausing. The deliveries are `inbox simulate`'s:
late, reordered, repeated, twice at the same instant. Then every fault is turned off and the system is left to
settle; the gateway's later retries deliver what was never acknowledged; failed events are replayed (`inbox
replay`: the replay workflow); the dead-letter queue is drained of what the replay recovered. And it checks:

1. every event acknowledged with a 2xx is processed or ignored (a failed one only after the replay recovered it);
2. no payment transition was applied twice: a payment's `transitions` equals the number of its processed events,
   and its `version` equals its `transitions` (every write of a refetched payment is one applied transition);
3. every payment equals the gateway's truth;
4. the dead-letter queue holds nothing of this run after the replay;
5. every webhook the gateway sent was acknowledged in the end;
6. every applied transition is in the transactional outbox exactly once (sequences 1..transitions per payment),
   when the stack has an outbox.

Same seed, same run: the schedule of faults, the lifecycles, the deliveries (order, copies, delays) and the keyed
fault decisions (which event's write is throttled, which settle crashes, on which occurrence) follow from it.
The gateway simulator's draws are one seeded sequence whose assignment to concurrent requests follows timing,
so its counts vary a little between runs; the verdict must not.

`python -m inbox_cli.chaos [options]` (what `make chaos` runs) starts a local stack of its own on free ports,
runs `inbox chaos` against it and stops it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from inbox_cli.simulate import LIFECYCLES, Delivery, Simulation, SimulationHooks, SimulationOptions, SimulatorAdmin
from inbox_cli.target import Target, resolve
from inbox_local.senders import sender_for
from shared.gateway.http import READ_TIMEOUT_SECONDS
from shared.inbox.model import EventStatus, event_key
from shared.inbox.store import InboxStore
from shared.payments.store import ProcessingStore
from shared.providers import get_driver

FAULTS_PATH = "/_local/faults"
SETTLED = frozenset({EventStatus.PROCESSED.value, EventStatus.IGNORED.value})
# Payments whose API stays unaware of them for all of an event's attempts are only scheduled when that is quick:
# with 8 attempts, the backoff alone is about two minutes. `make chaos` and the tests run the stack with 3.
MAX_ATTEMPTS_TO_EXHAUST = 4
REPLAY_ROUNDS = 3
DLQ_RECEIVE_LIMIT = 1000  # receive calls at most, while draining the dead-letter queue

# Base rates of the schedule; each round scales them by its mood (calm, normal, storm) and a little jitter.
BASE_RATES: dict[str, float] = {
    "ingest_throttle_rate": 0.2,
    "crash_before_commit_rate": 0.06,
    "crash_after_commit_rate": 0.06,
    "gateway_error_rate": 0.1,
    "gateway_throttle_rate": 0.08,
    "gateway_slow_rate": 0.04,
}
MOODS = (0.5, 1.0, 1.0, 1.5)
LATE_PAYMENT_SHARE = 0.3  # payments whose first fetch answers 404 (the webhook raced the API)
EXHAUSTING_PAYMENT_SHARE = 0.06  # ... whose fetches answer 404 until the harness reveals them, before the replay
# "Unknown for N fetches" with N = the attempts per event is not enough to make an event fail: a slow answer the
# client gave up on, or a retry inside one attempt, also consumes a 404. These stay unknown until revealed.
UNKNOWN_UNTIL_REVEALED = 1_000_000


# ------------------------------------------------------------------------------------------------- schedule


@dataclass(frozen=True)
class RoundFaults:
    ingest_throttle_rate: float
    crash_before_commit_rate: float
    crash_after_commit_rate: float
    gateway_error_rate: float
    gateway_throttle_rate: float
    gateway_slow_rate: float
    pipe_pause_seconds: float  # 0: the Pipe keeps pumping this round

    def knobs(self, slow_seconds: float) -> dict[str, Any]:
        """The `POST /_local/faults` document for this round."""
        document: dict[str, Any] = {
            "ingest_throttle_rate": self.ingest_throttle_rate,
            "crash_before_commit_rate": self.crash_before_commit_rate,
            "crash_after_commit_rate": self.crash_after_commit_rate,
            "gateway": {
                "error_rate": self.gateway_error_rate,
                "throttle_rate": self.gateway_throttle_rate,
                "slow_rate": self.gateway_slow_rate,
                "slow_seconds": slow_seconds,
            },
        }
        if self.pipe_pause_seconds:
            document["pipe_pause_seconds"] = self.pipe_pause_seconds
        return document


@dataclass(frozen=True)
class ChaosSchedule:
    seed: int
    rounds: list[RoundFaults]
    unknown_fetches: list[int]  # per payment, in creation order: 404s its API answers first
    slow_seconds: float  # beyond the refetch client's read timeout: a timeout, not a slow answer
    exhausting: bool  # whether some payments stay unknown for all of an event's attempts

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def rounds_for(providers: Iterable[str], max_delay_rounds: int) -> int:
    """How many delivery rounds a simulation of these providers may have (its longest lifecycle)."""
    longest = max((len(steps) for p in providers for steps in LIFECYCLES.get(p, {}).values()), default=0)
    return longest + max_delay_rounds + 1


def build_schedule(seed: int, *, payments: int, rounds: int, max_attempts: int) -> ChaosSchedule:
    """The faults of each round and of each payment, from the seed alone."""
    rng = random.Random(f"inbox-chaos-schedule:{seed}")  # noqa: S311 - a reproducible schedule
    timeline = []
    for _ in range(rounds):
        mood = rng.choice(MOODS)
        rates = {name: round(min(0.5, base * mood * rng.uniform(0.8, 1.2)), 4) for name, base in BASE_RATES.items()}
        timeline.append(rates)
    pauses = {r: round(rng.uniform(1.5, 4.0), 1) for r in rng.sample(range(rounds), k=max(1, rounds // 4))}
    exhausting = max_attempts <= MAX_ATTEMPTS_TO_EXHAUST
    unknown = []
    for _ in range(payments):
        draw = rng.random()
        if exhausting and draw < EXHAUSTING_PAYMENT_SHARE:
            unknown.append(UNKNOWN_UNTIL_REVEALED)
        elif draw < LATE_PAYMENT_SHARE:
            unknown.append(1)
        else:
            unknown.append(0)
    if exhausting and payments and UNKNOWN_UNTIL_REVEALED not in unknown:
        unknown[rng.randrange(payments)] = UNKNOWN_UNTIL_REVEALED  # at least one: the replay path is always exercised
    return ChaosSchedule(
        seed=seed,
        rounds=[RoundFaults(**rates, pipe_pause_seconds=pauses.get(r, 0.0)) for r, rates in enumerate(timeline)],
        unknown_fetches=unknown,
        slow_seconds=READ_TIMEOUT_SECONDS + 0.5,
        exhausting=exhausting,
    )


# ----------------------------------------------------------------------------------------------- the stack


class LocalFaults:
    """The local stack's fault knobs (`/_local/faults` on its API server)."""

    def __init__(self, api_url: str) -> None:
        self.url = api_url.rstrip("/") + FAULTS_PATH

    def _call(self, method: str, payload: Any = None) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(  # noqa: S310 - the local stack
            self.url, data=data, method=method, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                document: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise click.ClickException(
                    "this local stack has no fault injection (/_local/faults): restart it with the current code"
                ) from None
            raise click.ClickException(f"{method} {FAULTS_PATH} -> {error.code}: {error.read().decode()}") from None
        return document

    def get(self) -> dict[str, Any]:
        return self._call("GET")

    def set(self, **changes: Any) -> dict[str, Any]:
        return self._call("POST", changes)

    def off(self) -> dict[str, Any]:
        return self._call("DELETE")


@dataclass
class _Sent:
    provider: str
    resource_id: str
    event_type: str
    body: bytes
    statuses: list[int] = field(default_factory=list)

    @property
    def acknowledged(self) -> bool:
        return any(200 <= status < 300 for status in self.statuses)


class DeliveryLog:
    """What the delivering side saw: every send's final status, per webhook (body)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.webhooks: dict[bytes, _Sent] = {}
        self.concurrent_pairs = 0
        self.sends = 0
        self._concurrent_seen: set[int] = set()

    def delivered(self, delivery: Delivery, status: int) -> None:
        digest = hashlib.sha256(delivery.provider.encode() + b"\0" + delivery.body).digest()
        with self._lock:
            self.sends += 1
            sent = self.webhooks.setdefault(
                digest, _Sent(delivery.provider, delivery.resource_id, delivery.event_type, delivery.body)
            )
            sent.statuses.append(status)
            if delivery.concurrent and id(delivery) not in self._concurrent_seen:
                self._concurrent_seen.add(id(delivery))
                self.concurrent_pairs += 1

    def unacknowledged(self) -> list[_Sent]:
        with self._lock:
            return [sent for sent in self.webhooks.values() if not sent.acknowledged]

    def resource_ids(self) -> set[tuple[str, str]]:
        with self._lock:
            return {(sent.provider, sent.resource_id) for sent in self.webhooks.values()}

    def acknowledged(self) -> list[_Sent]:
        with self._lock:
            return [sent for sent in self.webhooks.values() if sent.acknowledged]


def _event_pk(sent: _Sent, secret: str) -> str:
    """The inbox key of a webhook, derived the way the ingest derives it (the driver parses the signed delivery)."""
    driver = get_driver(sent.provider)
    event = driver.parse(sender_for(sent.provider).sign(sent.body, secret, now=int(time.time())))
    return event_key(sent.provider, event.event_id)


# ------------------------------------------------------------------------------------------------ the report


@dataclass
class Invariant:
    name: str
    ok: bool
    detail: str
    examples: list[Any] = field(default_factory=list)


@dataclass
class ChaosReport:
    seed: int
    payments: int
    providers: list[str]
    schedule_fingerprint: str
    faults: dict[str, int]
    delivery: dict[str, int]
    recovery: dict[str, Any]
    statuses: dict[str, int]
    invariants: list[Invariant]
    elapsed_seconds: float
    notes: list[str] = field(default_factory=list)
    schedule: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(invariant.ok for invariant in self.invariants)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


FAULT_LABELS = {
    "ingest_throttle": "ingest: PutItem throttled (503, retried by the sender)",
    "crash_before_commit": "processor: died after the refetch, before the transaction",
    "crash_after_commit": "processor: died after the transaction, before the ack",
    "gateway_error": "gateway API: 500",
    "gateway_throttle": "gateway API: 429 with Retry-After",
    "gateway_slow": f"gateway API: slower than the {READ_TIMEOUT_SECONDS:g} s read timeout",
    "gateway_unknown": "gateway API: payment not known yet (404)",
    "pipe_pause": "pipe: paused",
}


def render_chaos(report: ChaosReport) -> str:
    r, d = report.recovery, report.delivery
    lines = [
        f"Chaos run  seed {report.seed}  payments {report.payments} ({', '.join(report.providers)})  "
        f"{report.elapsed_seconds} s  schedule {report.schedule_fingerprint}",
        "Faults injected",
    ]
    for kind, label in FAULT_LABELS.items():
        extra = f"   ({r['pipe_paused_seconds']} s in all)" if kind == "pipe_pause" else ""
        lines.append(f"  {label:<62} {report.faults.get(kind, 0):>6}{extra}")
    lines += [
        f"  {'delivery: sent twice at the same instant':<62} {d['concurrent_pairs']:>6}",
        f"  {'delivery: sends beyond the first of a webhook (repeats, retries)':<62} {d['repeat_sends']:>6}",
        "Recovery",
        f"  webhooks {d['webhooks']}, sends {d['sends']}; never acknowledged during the storm, delivered again "
        f"later: {r['redelivered']}",
        f"  events failed after the storm: {r['failed_before_replay']}; replayed: {r['replayed']}; "
        f"recovered: {r['recovered_by_replay']}",
        f"  dead-letter queue: {r['dead_lettered']} message(s) of this run drained, {r['dlq_left']} left"
        + (f" ({r['dlq_other']} of other runs left alone)" if r["dlq_other"] else ""),
        "  events: " + ", ".join(f"{name} {count}" for name, count in sorted(report.statuses.items())),
        f"  timing: delivery {r['delivery_seconds']} s, processing under faults "
        f"{r['processing_under_faults_seconds']} s, recovery and checks {r['recovery_seconds']} s ("
        + ", ".join(f"{name} {seconds}" for name, seconds in r.get("recovery_phases_seconds", {}).items())
        + ")",
        "Invariants",
    ]
    for invariant in report.invariants:
        lines.append(f"  {'PASS' if invariant.ok else 'FAIL'}  {invariant.name:<58} {invariant.detail}")
        lines += [f"        e.g. {json.dumps(example, default=str)}" for example in invariant.examples[:3]]
    lines += [f"  note: {note}" for note in report.notes]
    verdict = "PASS" if report.ok else "FAIL"
    lines.append(f"Verdict: {verdict}   (reproduce: inbox chaos --seed {report.seed} --payments {report.payments})")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class ChaosOptions:
    seed: int = 1
    payments: int = 40
    providers: tuple[str, ...] = ("stripe", "asaas")
    concurrency: int = 8
    duplicate_rate: float = 0.3
    concurrent_duplicate_rate: float = 0.15
    max_delay_rounds: int = 2
    settle_timeout_seconds: float = 300.0
    crash_redelivery_seconds: float = 1.0
    # After the last delivery the faults stay on while the storm's events are processed, at most this long.
    storm_tail_seconds: float = 120.0


class ChaosRun:
    def __init__(self, options: ChaosOptions, target: Target, gateway_url: str) -> None:
        self.options = options
        self.target = target
        self.faults = LocalFaults(target.api_url)
        self.log = DeliveryLog()
        self.inbox = InboxStore(target.inbox_table, target.body_bucket)
        self.notes: list[str] = []
        self.simulation = Simulation(
            SimulationOptions(
                payments=options.payments,
                providers=options.providers,
                seed=options.seed,
                duplicate_rate=options.duplicate_rate,
                concurrent_duplicate_rate=options.concurrent_duplicate_rate,
                max_delay_rounds=options.max_delay_rounds,
                concurrency=options.concurrency,
                settle_timeout_seconds=options.settle_timeout_seconds,
            ),
            api_url=target.api_url,
            admin=SimulatorAdmin(gateway_url),
            inbox=self.inbox,
            payments=ProcessingStore(target.inbox_table, target.payments_table),
            secret_for=target.signing_secret,
            hooks=SimulationHooks(
                before_payment=self._before_payment,
                before_round=self._before_round,
                delivered=self.log.delivered,
                after_delivery=self._storm_over,
            ),
        )
        self.schedule: ChaosSchedule | None = None
        self._unknown_set = 0
        self._storm_delivered = self._storm_ended = 0.0

    # ------------------------------------------------------------------------------------------- hooks

    def _before_payment(self, index: int) -> None:
        assert self.schedule is not None
        wanted = self.schedule.unknown_fetches[index]
        if wanted != self._unknown_set:
            self.faults.set(gateway={"unknown_fetches": wanted})
            self._unknown_set = wanted

    def _before_round(self, round_: int) -> None:
        assert self.schedule is not None
        if self._unknown_set:
            self.faults.set(gateway={"unknown_fetches": 0})
            self._unknown_set = 0
        faults = self.schedule.rounds[min(round_, len(self.schedule.rounds) - 1)]
        self.faults.set(**faults.knobs(self.schedule.slow_seconds))

    def _storm_over(self) -> None:
        # Processing lags delivery: keep the faults on while what was delivered is processed (bounded), so that
        # the processor's and the gateway's faults hit the bulk of the events, not only the first ones.
        self._storm_delivered = time.monotonic()
        self._wait_for_pending(self.log.resource_ids(), self.options.storm_tail_seconds)
        self.faults.off()
        self._storm_ended = time.monotonic()

    def _wait_for_pending(self, resource_ids: set[tuple[str, str]], timeout: float) -> bool:
        """Wait until none of these payments' events is pending (processed, ignored or failed). True if so."""
        deadline = time.monotonic() + timeout
        while True:
            pending = any(
                (item.get("provider"), item.get("resource_id")) in resource_ids
                for item in self.inbox.open_events(EventStatus.PENDING)
            )
            if not pending:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)

    # ------------------------------------------------------------------------------------------- the run

    def run(self) -> ChaosReport:
        options = self.options
        started = time.monotonic()
        before = self.faults.get()
        max_attempts = int(before["processor"]["max_attempts"] or 8)
        rounds = rounds_for(options.providers, options.max_delay_rounds)
        self.schedule = build_schedule(
            options.seed, payments=options.payments, rounds=rounds, max_attempts=max_attempts
        )
        if not self.schedule.exhausting:
            self.notes.append(
                f"the stack allows {max_attempts} attempts per event: no payment stays unknown for all of them "
                f"(start it with INBOX_MAX_ATTEMPTS=3 to exercise failed -> replay; `make chaos` does)"
            )
        self.faults.set(seed=options.seed, crash_redelivery_seconds=options.crash_redelivery_seconds)
        storm_started = time.monotonic()
        try:
            self.simulation.run()  # the storm; a hook turns the faults off once its events settled
        finally:
            self.faults.off()
        after = self.faults.get()
        faults = {kind: after["counters"].get(kind, 0) - before["counters"].get(kind, 0) for kind in FAULT_LABELS}
        paused_seconds = round(after["pipe_paused_seconds"] - before["pipe_paused_seconds"], 1)

        resource_ids = self.log.resource_ids()
        # The gateway's later retries: what was never acknowledged during the storm is delivered again.
        unacknowledged = self.log.unacknowledged()
        for sent in unacknowledged:
            self.simulation.deliver(
                Delivery(sent.provider, sent.resource_id, sent.event_type, sent.body, 0, copies=1, concurrent=False)
            )
        items = self.simulation.wait_until_settled(resource_ids)
        phases = {"settle": time.monotonic()}

        failed = {item["pk"] for item in items if item.get("status") == EventStatus.FAILED.value}
        self.simulation.admin.make_all_known()  # the gateway's API caught up: what failed can now be replayed
        replayed = 0
        for _ in range(REPLAY_ROUNDS):
            still_failed = [item for item in items if item.get("status") == EventStatus.FAILED.value]
            if not still_failed:
                break
            replayed += self._replay(still_failed)
            items = self.simulation.wait_until_settled(resource_ids)
        phases["replay"] = time.monotonic()
        by_pk = {item["pk"]: item for item in items}
        recovered = sum(1 for pk in failed if by_pk.get(pk, {}).get("status") in SETTLED)
        dlq = self._drain_dead_letters(set(by_pk))
        phases["dead-letter queue"] = time.monotonic()

        invariants = self._check(items, resource_ids, failed, dlq)
        phases["checks"] = time.monotonic()
        statuses = Counter(str(item.get("status")) for item in items)
        ended = self._storm_ended or time.monotonic()
        d = self.log
        return ChaosReport(
            seed=options.seed,
            payments=options.payments,
            providers=list(options.providers),
            schedule_fingerprint=self.schedule.fingerprint(),
            faults=faults,
            delivery={
                "webhooks": len(d.webhooks),
                "sends": d.sends,
                "repeat_sends": d.sends - len(d.webhooks),
                "concurrent_pairs": d.concurrent_pairs,
            },
            recovery={
                "pipe_paused_seconds": paused_seconds,
                "redelivered": len(unacknowledged),
                "failed_before_replay": len(failed),
                "replayed": replayed,
                "recovered_by_replay": recovered,
                "dead_lettered": dlq["drained"],
                "dlq_left": dlq["left"],
                "dlq_other": dlq["other"],
                "delivery_seconds": round((self._storm_delivered or ended) - storm_started, 1),
                "processing_under_faults_seconds": round(ended - (self._storm_delivered or ended), 1),
                "recovery_seconds": round(time.monotonic() - ended, 1),
                "recovery_phases_seconds": _durations(ended, phases),
            },
            statuses=dict(statuses),
            invariants=invariants,
            elapsed_seconds=round(time.monotonic() - started, 1),
            notes=self.notes,
            schedule=self.schedule.to_json(),
        )

    def _replay(self, failed_items: list[dict[str, Any]]) -> int:
        """`inbox replay` of these failed events (by id, per provider): the replay workflow sets them back to
        pending with a new dispatch, the Pipe and the queue take it from there."""
        import boto3  # noqa: PLC0415

        from inbox_cli.replay import ReplayRequest, run_replay  # noqa: PLC0415
        from inbox_local.replay import ensure_replay_state_machine  # noqa: PLC0415

        sfn = boto3.client("stepfunctions")
        arn = ensure_replay_state_machine(sfn, self.target.inbox_table)
        by_provider: dict[str, list[str]] = {}
        for item in failed_items:
            by_provider.setdefault(item["provider"], []).append(item["event_id"])
        replayed = 0
        for provider, event_ids in sorted(by_provider.items()):
            for start in range(0, len(event_ids), 100):
                request = ReplayRequest(
                    provider=provider, status="failed", event_ids=tuple(event_ids[start : start + 100]), wait_seconds=0
                )
                report = run_replay(sfn, arn, request, timeout_seconds=300, poll_seconds=0.25)
                replayed += report.counts.get("replayed", 0)
        return replayed

    def _drain_dead_letters(self, ours: set[str]) -> dict[str, Any]:
        """Receive every dead-lettered message: delete those of this run's events that are settled now (the
        replay recovered them), leave the rest in the queue (visible again) and say how many."""
        import boto3  # noqa: PLC0415

        from inbox_local.config import LocalNames  # noqa: PLC0415

        sqs = boto3.client("sqs")
        url = sqs.get_queue_url(QueueName=LocalNames().dead_letter_queue)["QueueUrl"]
        drained, unrecovered, other = 0, [], []
        seen: set[str] = set()
        for _ in range(DLQ_RECEIVE_LIMIT):
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=0
            ).get("Messages", [])
            fresh = [m for m in messages if m["MessageId"] not in seen]
            if not fresh:
                break
            for message in fresh:
                seen.add(message["MessageId"])
                try:
                    pk = json.loads(message["Body"]).get("pk")
                except (ValueError, AttributeError):
                    pk = None
                if pk not in ours:
                    other.append(message)
                    continue
                item = self.inbox.get(pk)
                if item is not None and item.get("status") in SETTLED:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                    drained += 1
                else:
                    unrecovered.append({"pk": pk, "status": None if item is None else item.get("status")})
                    other.append(message)
        for message in other:  # back to visible, for an operator to look at
            sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
        return {
            "drained": drained,
            "left": len(unrecovered),
            "other": len(other) - len(unrecovered),
            "unrecovered": unrecovered,
        }

    def _outbox_sequences(self, resource_ids: set[tuple[str, str]]) -> dict[str, list[int]] | None:
        """The outbox's `payment.status_changed` sequences of each payment (sorted), or None without an outbox."""
        import boto3  # noqa: PLC0415

        from inbox_local.config import LocalNames  # noqa: PLC0415

        table = getattr(LocalNames(), "outbox_table", None)
        if not table:
            return None
        dynamodb = boto3.client("dynamodb")
        sequences: dict[str, list[int]] = {}
        try:
            for provider, resource_id in sorted(resource_ids):
                key = f"{provider}#{resource_id}"
                pages = dynamodb.get_paginator("query").paginate(
                    TableName=table,
                    KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": key}},
                    ProjectionExpression="#sequence",
                    ExpressionAttributeNames={"#sequence": "sequence"},
                )
                sequences[key] = sorted(int(item["sequence"]["N"]) for page in pages for item in page["Items"])
        except dynamodb.exceptions.ResourceNotFoundException:
            return None
        return sequences

    def _check(
        self, items: list[dict[str, Any]], resource_ids: set[tuple[str, str]], failed: set[str], dlq: dict[str, Any]
    ) -> list[Invariant]:
        by_pk = {item["pk"]: item for item in items}
        invariants = []

        # 1. acknowledged -> processed or ignored
        acknowledged = {_event_pk(sent, self.target.signing_secret(sent.provider)) for sent in self.log.acknowledged()}
        unsettled = [
            {"pk": pk, "status": by_pk[pk].get("status") if pk in by_pk else "missing"}
            for pk in sorted(acknowledged)
            if by_pk.get(pk, {}).get("status") not in SETTLED
        ]
        recovered = len(acknowledged & failed)
        invariants.append(
            Invariant(
                "every acknowledged event is processed or ignored",
                not unsettled,
                f"{len(acknowledged) - len(unsettled)}/{len(acknowledged)}"
                + (f" ({recovered} after the replay)" if recovered else ""),
                unsettled,
            )
        )

        # 2. no transition applied twice
        processed: Counter[tuple[str, str]] = Counter(
            (item["provider"], item["resource_id"]) for item in items if item.get("status") == "processed"
        )
        doubled = []
        for provider, resource_id in sorted(resource_ids):
            payment = self.simulation.payments.load_payment(f"{provider}#{resource_id}")
            count = processed[(provider, resource_id)]
            if payment is None:
                if count:
                    doubled.append({"payment": f"{provider}#{resource_id}", "processed": count, "stored": None})
                continue
            if payment.transitions != count or payment.version != payment.transitions:
                doubled.append(
                    {
                        "payment": payment.key,
                        "processed_events": count,
                        "transitions": payment.transitions,
                        "version": payment.version,
                    }
                )
        invariants.append(
            Invariant(
                "no transition applied twice (transitions = processed = version)",
                not doubled,
                f"{len(resource_ids) - len(doubled)}/{len(resource_ids)} payments",
                doubled,
            )
        )

        # 2b. every applied transition published once: the outbox holds sequences 1..transitions per payment
        outbox = self._outbox_sequences(resource_ids)
        if outbox is None:
            self.notes.append("no outbox table in this stack: the one-record-per-transition check was skipped")
        else:
            unpublished = []
            for provider, resource_id in sorted(resource_ids):
                key = f"{provider}#{resource_id}"
                payment = self.simulation.payments.load_payment(key)
                expected = list(range(1, payment.transitions + 1)) if payment is not None else []
                if outbox.get(key, []) != expected:
                    unpublished.append({"payment": key, "outbox_sequences": outbox.get(key, []), "expected": expected})
            invariants.append(
                Invariant(
                    "every transition in the outbox once (sequences 1..transitions)",
                    not unpublished,
                    f"{len(resource_ids) - len(unpublished)}/{len(resource_ids)} payments",
                    unpublished,
                )
            )

        # 3. the truth
        mismatches = self.simulation.compare(resource_ids)
        invariants.append(
            Invariant(
                "every payment equals the gateway's truth",
                not mismatches,
                f"{len(resource_ids) - len(mismatches)}/{len(resource_ids)}",
                mismatches,
            )
        )

        # 4. the dead-letter queue
        invariants.append(
            Invariant(
                "the dead-letter queue is empty after the replay",
                dlq["left"] == 0,
                f"{dlq['drained']} drained, {dlq['left']} left",
                dlq["unrecovered"],
            )
        )

        # 5. every webhook acknowledged in the end
        never = [
            {"provider": sent.provider, "resource_id": sent.resource_id, "statuses": sent.statuses}
            for sent in self.log.unacknowledged()
        ]
        total = len(self.log.webhooks)
        invariants.append(
            Invariant(
                "every webhook sent was acknowledged in the end",
                not never,
                f"{total - len(never)}/{total}",
                never,
            )
        )
        return invariants


def _durations(start: float, marks: dict[str, float]) -> dict[str, float]:
    """Seconds spent in each phase, from consecutive time marks (in insertion order)."""
    durations, previous = {}, start
    for name, mark in marks.items():
        durations[name] = round(mark - previous, 1)
        previous = mark
    return durations


# ---------------------------------------------------------------------------------------------------- CLI


@click.command()
@click.option("--seed", default=1, show_default=True, help="Same seed, same faults and deliveries.")
@click.option("--payments", "payment_count", default=40, show_default=True, help="How many payments to drive.")
@click.option("--provider", "providers", multiple=True, type=click.Choice(["stripe", "asaas"]), help="Repeatable.")
@click.option("--concurrency", default=8, show_default=True, help="Parallel deliveries.")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait, each time, for events to settle.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_context
def chaos(
    ctx: click.Context,
    seed: int,
    payment_count: int,
    providers: tuple[str, ...],
    concurrency: int,
    timeout: float,
    as_json: bool,
) -> None:
    """Simulate payments while the local stack misbehaves (seeded faults), then check that nothing was lost,
    nothing applied twice, every payment matches the gateway, and the dead-letter queue is empty after a replay.

    Exits non-zero when any invariant fails. Local stack only (`make run`, or `make chaos` for a stack of its own).
    """
    from inbox_local.config import LocalEndpoints  # noqa: PLC0415

    target = resolve(ctx.find_root().obj)
    if not target.local:
        raise click.UsageError("chaos injects faults into the local stack: run it against `make run`")
    options = ChaosOptions(
        seed=seed,
        payments=payment_count,
        providers=providers or ("stripe", "asaas"),
        concurrency=concurrency,
        settle_timeout_seconds=timeout,
    )
    report = ChaosRun(options, target, LocalEndpoints.from_environ().gateway_url).run()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, sort_keys=True, default=str))
    else:
        click.echo(render_chaos(report))
    if not report.ok:
        raise SystemExit(1)


# ------------------------------------------------------------------------ `make chaos`: a stack of its own

ROOT = Path(__file__).resolve().parents[1]
STACK_START_SECONDS = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:  # noqa: S310 - loopback
            return int(response.status) == 200
    except OSError:
        return False


def run_on_own_stack(chaos_args: list[str], *, log_path: Path, max_attempts: str = "3") -> int:
    """Start a local stack on free loopback ports (its output to `log_path`), run `inbox chaos` against it, stop
    it. Returns the chaos run's exit status."""
    ports = {"INBOX_PORT": _free_port(), "INBOX_AWS_PORT": _free_port(), "INBOX_GATEWAY_PORT": _free_port()}
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "INBOX_SECRET_"))}
    env.update({name: str(port) for name, port in ports.items()})
    env.setdefault("INBOX_MAX_ATTEMPTS", max_attempts)
    env["INBOX_HOST"] = "127.0.0.1"
    env["PYTHONUNBUFFERED"] = "1"
    url = f"http://127.0.0.1:{ports['INBOX_PORT']}"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        stack = subprocess.Popen(
            [sys.executable, "-m", "inbox_local"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + STACK_START_SECONDS
            while not _healthy(url):
                if stack.poll() is not None or time.monotonic() > deadline:
                    print(f"the local stack did not start; its output is in {log_path}", file=sys.stderr)
                    return 2
                time.sleep(0.2)
            print(
                f"local stack on {url} (INBOX_MAX_ATTEMPTS={env['INBOX_MAX_ATTEMPTS']}; output in {log_path})",
                file=sys.stderr,
                flush=True,
            )
            return subprocess.call(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "inbox_cli.main", "chaos", *chaos_args], env=env, cwd=ROOT
            )
        finally:
            stack.send_signal(signal.SIGINT)
            try:
                stack.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stack.kill()
                stack.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """`python -m inbox_cli.chaos [inbox chaos options]`: the same run, on a local stack of its own."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_on_own_stack(args, log_path=ROOT / "build" / "chaos" / "stack.log")


if __name__ == "__main__":
    sys.exit(main())
