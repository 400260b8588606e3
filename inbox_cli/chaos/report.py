"""The chaos run's report: faults injected, recovery, figures per provider, invariants, and how to reproduce."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from inbox_cli.chaos.invariants import Invariant
from shared.gateway.http import READ_TIMEOUT_SECONDS

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
# The gateway simulator's own fault names (`GET /_sim/stats/providers`) -> the report's kinds.
GATEWAY_FAULTS = {
    "error": "gateway_error",
    "throttle": "gateway_throttle",
    "slow": "gateway_slow",
    "unknown": "gateway_unknown",
}


@dataclass
class ProviderFigures:
    """One provider's share of the run. Processor crashes and Pipe pauses hit batches and the whole stream, not a
    provider: they are counted for the run only. `refused` are send attempts not answered 2xx (the ingest's
    throttling, as the sender saw it); `gateway_faults` the simulator's answers to this provider's refetches."""

    payments: int = 0
    webhooks: int = 0
    sends: int = 0
    refused: int = 0
    gateway_faults: dict[str, int] = field(default_factory=dict)
    failed_before_replay: int = 0
    recovered_by_replay: int = 0
    matching: int = 0


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
    by_provider: dict[str, ProviderFigures] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(invariant.ok for invariant in self.invariants)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _provider_lines(report: ChaosReport) -> list[str]:
    if not report.by_provider:
        return []
    lines = ["Per provider   payments webhooks  sends  refused  gateway 500/429/slow/404  failed->replayed  matching"]
    for provider, f in report.by_provider.items():
        gateway = "/".join(str(f.gateway_faults.get(kind, 0)) for kind in GATEWAY_FAULTS.values())
        lines.append(
            f"  {provider:<12} {f.payments:>8} {f.webhooks:>8} {f.sends:>6} {f.refused:>8}  {gateway:>24}  "
            f"{f.failed_before_replay:>7}->{f.recovered_by_replay:<8}  {f.matching:>4}/{f.payments}"
        )
    return lines


def render_chaos(report: ChaosReport) -> str:
    r, d = report.recovery, report.delivery
    lines = [
        f"Chaos run  seed {report.seed}  payments {report.payments} ({len(report.providers)} providers)  "
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
        *_provider_lines(report),
        "Invariants",
    ]
    for invariant in report.invariants:
        lines.append(f"  {'PASS' if invariant.ok else 'FAIL'}  {invariant.name:<58} {invariant.detail}")
        lines += [f"        e.g. {json.dumps(example, default=str)}" for example in invariant.examples[:3]]
    lines += [f"  note: {note}" for note in report.notes]
    verdict = "PASS" if report.ok else "FAIL"
    lines.append(f"Verdict: {verdict}   (reproduce: inbox chaos --seed {report.seed} --payments {report.payments})")
    return "\n".join(lines)
