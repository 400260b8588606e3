"""The run: the schedule's faults turned on and off round by round around `inbox simulate`, then the faults off,
the gateway's later retries, the replay, the dead-letter queue, and the data the invariants are checked on."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from inbox_cli.chaos import invariants, recovery
from inbox_cli.chaos.deliveries import DeliveryLog
from inbox_cli.chaos.invariants import SETTLED, Invariant
from inbox_cli.chaos.local_faults import LocalFaults
from inbox_cli.chaos.report import FAULT_LABELS, GATEWAY_FAULTS, ChaosReport, ProviderFigures
from inbox_cli.chaos.schedule import ChaosSchedule, build_schedule, rounds_for
from inbox_cli.simulate import (
    Delivery,
    EventTimeSender,
    Gateways,
    Simulation,
    SimulationHooks,
    SimulationOptions,
    SimulatorAdmin,
    Truth,
    mismatches,
    refetched,
    wire,
)
from inbox_cli.target import Target
from shared.definitions import REFETCH_VERIFIED_PROVIDERS, VERIFY_EVENT_TYPE, provider_entry
from shared.inbox.model import EventStatus
from shared.inbox.store import InboxStore
from shared.payments.model import Payment
from shared.payments.store import ProcessingStore

REPLAY_ROUNDS = 3


@dataclass(frozen=True)
class ChaosOptions:
    seed: int = 1
    payments: int = 40
    providers: tuple[str, ...] = ()  # empty: every simulated provider
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
        self.simulator = SimulatorAdmin(gateway_url)
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
            gateways=Gateways(self.simulator, EventTimeSender(options.seed)),
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
        gateway_before = self.simulator.faults_by_provider()
        max_attempts = int(before["processor"]["max_attempts"] or 8)
        providers = self.simulation.options.chosen_providers
        self.schedule = build_schedule(
            options.seed,
            payments=options.payments,
            rounds=rounds_for(providers, options.max_delay_rounds),
            max_attempts=max_attempts,
            refetched=[refetched(p) for p in self.simulation.providers_of_payments],
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
                Delivery(sent.provider, sent.resource_id, sent.event_type, sent.body, 0, 1, False, sent.occurred_at)
            )
        items = self.simulation.wait_until_settled(resource_ids)
        phases = {"settle": time.monotonic()}

        failed = {item["pk"] for item in items if item.get("status") == EventStatus.FAILED.value}
        self.simulator.make_all_known()  # the gateway's API caught up: what failed can now be replayed
        replayed = 0
        for _ in range(REPLAY_ROUNDS):
            still_failed = [item for item in items if item.get("status") == EventStatus.FAILED.value]
            if not still_failed:
                break
            replayed += recovery.replay_failed(self.target.inbox_table, still_failed)
            items = self.simulation.wait_until_settled(resource_ids)
        phases["replay"] = time.monotonic()
        by_pk = {item["pk"]: item for item in items}
        recovered = {pk for pk in failed if by_pk.get(pk, {}).get("status") in SETTLED}
        dlq = recovery.drain_dead_letters(self.inbox, set(by_pk))
        phases["dead-letter queue"] = time.monotonic()

        checks, figures = self._check(items, resource_ids, failed, recovered, dlq, gateway_before)
        phases["checks"] = time.monotonic()
        statuses = Counter(str(item.get("status")) for item in items)
        ended = self._storm_ended or time.monotonic()
        d = self.log
        return ChaosReport(
            seed=options.seed,
            payments=options.payments,
            providers=list(providers),
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
                "recovered_by_replay": len(recovered),
                "dead_lettered": dlq["drained"],
                "dlq_left": dlq["left"],
                "dlq_other": dlq["other"],
                "delivery_seconds": round((self._storm_delivered or ended) - storm_started, 1),
                "processing_under_faults_seconds": round(ended - (self._storm_delivered or ended), 1),
                "recovery_seconds": round(time.monotonic() - ended, 1),
                "recovery_phases_seconds": _durations(ended, phases),
            },
            statuses=dict(statuses),
            invariants=checks,
            elapsed_seconds=round(time.monotonic() - started, 1),
            notes=self.notes,
            schedule=self.schedule.to_json(),
            by_provider=figures,
        )

    # ------------------------------------------------------------------------------------------- the checks

    def _check(
        self,
        items: list[dict[str, Any]],
        resource_ids: set[tuple[str, str]],
        failed: set[str],
        recovered: set[str],
        dlq: dict[str, Any],
        gateway_before: dict[str, dict[str, int]],
    ) -> tuple[list[Invariant], dict[str, ProviderFigures]]:
        """Collect what the invariants look at (the inbox, the payments, the outbox, the gateways' truth), and
        check them; plus the figures per provider."""
        payments = self.simulation.stored_payments(resource_ids)
        statuses = {item["pk"]: str(item.get("status")) for item in items}
        sent_and_acknowledged = self.log.acknowledged()
        acknowledged = {
            wire.stored_key(sent.provider, sent.body, self.target.signing_secret(sent.provider))
            for sent in sent_and_acknowledged
            if sent.provider not in REFETCH_VERIFIED_PROVIDERS
        }
        # A refetch-verified provider's delivery is stored under a key of its own, not one its body derives: every
        # stored delivery of a payment it notified counts as acknowledged (and must settle).
        hinted = {
            (sent.provider, sent.resource_id)
            for sent in sent_and_acknowledged
            if sent.provider in REFETCH_VERIFIED_PROVIDERS
        }
        stored = {(str(item.get("provider")), str(item.get("resource_id"))) for item in items}
        acknowledged |= {item["pk"] for item in items if (item.get("provider"), item.get("resource_id")) in hinted}
        processed: Counter[str] = Counter()
        ignored: Counter[str] = Counter()
        verifications: Counter[str] = Counter()  # the inbox's own verification items (confirmed from a payload)
        for item in items:
            key = f"{item['provider']}#{item['resource_id']}"
            if item.get("event_type") == VERIFY_EVENT_TYPE:
                verifications[key] += item.get("status") in (EventStatus.PROCESSED.value, EventStatus.IGNORED.value)
            elif item.get("status") == EventStatus.PROCESSED.value:
                processed[key] += 1
            elif item.get("status") == EventStatus.IGNORED.value:
                ignored[key] += 1
        # Applied by event time: a provider without an API, and a payment a signed payload may confirm (its source
        # at the default `when_behind`: a payload confirmation follows the event-time rules, watermark included)
        by_event_time = {
            f"{p}#{r}" for p, r in resource_ids if not refetched(p) or provider_entry(p).confirms_from_payload
        }
        truths = self.simulation.gateways.truths()

        checks = [
            invariants.acknowledged_events_settled(acknowledged, statuses, failed, hinted=hinted, stored=stored),
            invariants.no_transition_applied_twice(payments, processed, ignored, by_event_time, verifications),
        ]
        outbox = recovery.outbox_sequences(list(payments))
        if outbox is None:
            self.notes.append("no outbox table in this stack: the one-record-per-transition check was skipped")
        else:
            checks.append(invariants.every_transition_in_the_outbox_once(payments, outbox))
        checks += [
            invariants.matches_the_gateway(truths, payments),
            invariants.dead_letter_queue_empty(dlq["drained"], dlq["unrecovered"]),
            invariants.every_webhook_acknowledged(list(self.log.webhooks.values())),
        ]
        return checks, self._figures(items, payments, truths, failed, recovered, gateway_before)

    def _figures(
        self,
        items: list[dict[str, Any]],
        payments: dict[str, Payment | None],
        truths: list[Truth],
        failed: set[str],
        recovered: set[str],
        gateway_before: dict[str, dict[str, int]],
    ) -> dict[str, ProviderFigures]:
        gateway_after = self.simulator.faults_by_provider()
        mismatched = Counter(m["provider"] for m in mismatches(truths, payments))
        provider_of = {item["pk"]: item["provider"] for item in items}
        webhooks = self.log.webhooks_by_provider()
        figures: dict[str, ProviderFigures] = {}
        for provider, count in sorted(Counter(self.simulation.providers_of_payments).items()):
            before, after = gateway_before.get(provider, {}), gateway_after.get(provider, {})
            figures[provider] = ProviderFigures(
                payments=count,
                webhooks=webhooks[provider],
                sends=self.log.sends_by_provider[provider],
                refused=self.log.refused_by_provider[provider],
                gateway_faults={
                    kind: after.get(name, 0) - before.get(name, 0) for name, kind in GATEWAY_FAULTS.items()
                },
                failed_before_replay=sum(1 for pk in failed if provider_of.get(pk) == provider),
                recovered_by_replay=sum(1 for pk in recovered if provider_of.get(pk) == provider),
                matching=count - mismatched[provider],
            )
        return figures


def _durations(start: float, marks: dict[str, float]) -> dict[str, float]:
    """Seconds spent in each phase, from consecutive time marks (in insertion order)."""
    durations, previous = {}, start
    for name, mark in marks.items():
        durations[name] = round(mark - previous, 1)
        previous = mark
    return durations
