"""`inbox replay`: run the replay workflow (a Step Functions execution) and report what it selected and did.

The same state machine runs locally (moto's interpreter, created on first use) and in a deployed stack (its ARN
from the stack output ``ReplayStateMachineArn``). The workflow returns the selected events as a compact list;
the counts by provider, event type and status (the plan) are computed here, because the workflow's JSONPath
intrinsic functions cannot group (infra/replay_definition.py explains).

One replay may span several executions: an execution that did what its history budget allows starts its
successor and names it in its output (``next_execution``). This follows the chain to its end and reports the
executions as one replay: counts added up, events and plan over all of them, the last execution's ``complete``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from infra.replay_definition import DEFAULT_MAX_EVENTS, DEFAULT_PAGE_SIZE, DEFAULT_WAIT_SECONDS
from shared.inbox.model import iso_utc

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

FINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


class ReplayFailed(Exception):
    """The execution did not succeed (invalid input, a DynamoDB error, a timeout); the message says why."""


def normalize_time(value: str) -> str:
    """An operator's ISO-8601 date or date-time as the inbox writes `received_at` (UTC, microseconds, `Z`), so
    that the workflow's string comparison on the index's sort key is a time comparison. Naive values are UTC."""
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO-8601 date or date-time (e.g. 2026-01-31T12:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso_utc(moment)


@dataclass(frozen=True)
class ReplayRequest:
    provider: str
    status: str = "failed"
    source: str | None = None  # one source of the provider; None: its default source (named after it)
    since: str | None = None
    until: str | None = None
    event_ids: tuple[str, ...] = ()
    dry_run: bool = False
    page_size: int = DEFAULT_PAGE_SIZE
    wait_seconds: int = DEFAULT_WAIT_SECONDS
    max_events: int = DEFAULT_MAX_EVENTS

    def execution_input(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "provider": self.provider,
            "status": self.status,
            "dry_run": self.dry_run,
            **({"source": self.source} if self.source else {}),
            "page_size": self.page_size,
            "wait_seconds": self.wait_seconds,
            "max_events": self.max_events,
        }
        if self.since is not None:
            document["since"] = normalize_time(self.since)
        if self.until is not None:
            document["until"] = normalize_time(self.until)
        if self.event_ids:
            document["event_ids"] = list(self.event_ids)
        return document

    def execution_name(self) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        kind = "dry-run" if self.dry_run else "replay"
        return f"{kind}-{self.source or self.provider}-{stamp}-{uuid.uuid4().hex[:8]}"[:80]


@dataclass
class ReplayReport:
    execution_arn: str
    output: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    executions: list[str] = field(default_factory=list)
    counts_by_execution: list[dict[str, int]] = field(default_factory=list)

    @classmethod
    def from_output(cls, execution_arn: str, output: dict[str, Any]) -> ReplayReport:
        return cls.from_chain([(execution_arn, output)])

    @classmethod
    def from_chain(cls, chain: list[tuple[str, dict[str, Any]]]) -> ReplayReport:
        """One report of a chain of executions (first to last): what the replay did across all of them."""
        first_arn, first = chain[0]
        _last_arn, last = chain[-1]
        counts: Counter[str] = Counter()
        per_execution: list[dict[str, int]] = []
        events: list[dict[str, Any]] = []
        for _arn, output in chain:
            these = {name: int(value) for name, value in output.get("counts", {}).items()}
            per_execution.append(these)
            counts.update(these)
            events.extend(event for page in output.get("events", []) for event in page)
        merged = {**first, "complete": last.get("complete"), "counts": dict(counts)}
        merged.pop("next_execution", None)
        return cls(first_arn, merged, events, [arn for arn, _ in chain], per_execution)

    @property
    def dry_run(self) -> bool:
        return bool(self.output.get("dry_run"))

    @property
    def counts(self) -> dict[str, int]:
        return {name: int(value) for name, value in self.output.get("counts", {}).items()}

    @property
    def complete(self) -> bool:
        return bool(self.output.get("complete"))

    def plan(self) -> list[dict[str, Any]]:
        """Counts by source, event type, status (as selected) and outcome, largest first; each row names the
        provider too (one replay selects one provider's events)."""
        selected_status = self.output.get("status")
        tally: Counter[tuple[str, str, str, str]] = Counter()
        for event in self.events:
            source = str(event.get("pk", "")).partition("#")[0]  # the key is "{source}#{event_id}"
            tally[
                (
                    source,
                    str(event.get("event_type", "-")),
                    str(event.get("status", selected_status)),
                    str(event.get("outcome")),
                )
            ] += 1
        ordered = sorted(tally.items(), key=lambda entry: (-entry[1], entry[0]))
        provider = self.output.get("provider")
        return [
            {"source": src, "provider": provider or src, "event_type": t, "status": st, "outcome": o, "count": n}
            for (src, t, st, o), n in ordered
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "execution_arn": self.execution_arn,
            "executions": self.executions,
            "counts_by_execution": self.counts_by_execution,
            "provider": self.output.get("provider"),
            "source": self.output.get("source") or self.output.get("provider"),
            "status": self.output.get("status"),
            "dry_run": self.dry_run,
            "since": self.output.get("since"),
            "until": self.output.get("until"),
            "complete": self.complete,
            "counts": self.counts,
            "plan": self.plan(),
            "events": self.events,
        }

    def headline(self) -> str:
        counts = self.counts
        what = f"{self.output.get('status')} events of {self.output.get('source') or self.output.get('provider')}"
        if self.dry_run:
            line = f"Dry run: {counts.get('planned', 0)} {what} would be set back to pending; nothing was changed."
        else:
            line = (
                f"Replayed {counts.get('replayed', 0)} {what} (set back to pending, dispatched again); "
                f"{counts.get('skipped', 0)} skipped (no longer {self.output.get('status')})."
            )
        if counts.get("not_found") or counts.get("not_selected"):
            line += (
                f" {counts.get('not_found', 0)} id(s) not found, {counts.get('not_selected', 0)} not in status "
                f"{self.output.get('status')}."
            )
        if len(self.executions) > 1:
            line += f" It ran as {len(self.executions)} executions (each continues the previous one)."
        if not self.complete:
            line += " Stopped at --max-events: more events may match; run it again to continue."
        return line


def run_replay(
    sfn: SFNClient,
    state_machine_arn: str,
    request: ReplayRequest,
    *,
    timeout_seconds: float = 900,
    poll_seconds: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayReport:
    """Start an execution, then wait for it and for each successor it started (DescribeExecution polling)."""
    return wait_for_replay(
        sfn,
        start_replay(sfn, state_machine_arn, request),
        timeout_seconds=timeout_seconds,
        poll_seconds=poll_seconds,
        sleep=sleep,
    )


def start_replay(sfn: SFNClient, state_machine_arn: str, request: ReplayRequest) -> str:
    """Start the replay's first execution; returns its ARN (follow it with `wait_for_replay` or `replay_progress`)."""
    started = sfn.start_execution(
        stateMachineArn=state_machine_arn,
        name=request.execution_name(),
        input=json.dumps(request.execution_input()),
    )
    return started["executionArn"]


def wait_for_replay(
    sfn: SFNClient,
    first_execution_arn: str,
    *,
    timeout_seconds: float = 900,
    poll_seconds: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayReport:
    """Wait for a replay's execution and each successor it started; the report of the whole chain."""
    deadline = time.monotonic() + timeout_seconds
    chain: list[tuple[str, dict[str, Any]]] = []
    execution_arn: str | None = first_execution_arn
    while execution_arn is not None:
        output = _wait_for(sfn, execution_arn, deadline, timeout_seconds, poll_seconds, sleep)
        chain.append((execution_arn, output))
        execution_arn = output.get("next_execution")
    return ReplayReport.from_chain(chain)


def _wait_for(
    sfn: SFNClient,
    execution_arn: str,
    deadline: float,
    timeout_seconds: float,
    poll_seconds: float,
    sleep: Callable[[float], None],
) -> dict[str, Any]:
    while True:
        described = sfn.describe_execution(executionArn=execution_arn)
        status = described["status"]
        if status in FINAL_STATUSES:
            break
        if time.monotonic() >= deadline:
            raise ReplayFailed(
                f"execution {execution_arn} still {status} after {timeout_seconds:.0f} s; it goes on running: "
                "follow it in the Step Functions console (or raise --timeout)"
            )
        sleep(poll_seconds)
    if status != "SUCCEEDED":
        raise ReplayFailed(_failure(execution_arn, status, described))
    output: dict[str, Any] = json.loads(described.get("output") or "{}")
    return output


def _failure(execution_arn: str, status: str, described: Any) -> str:
    error = described.get("error", status)
    cause = described.get("cause", "")
    return f"execution {execution_arn} {status}: {error}: {cause}".rstrip(": ")


@dataclass(frozen=True)
class ReplayProgress:
    """Where a replay stands now, without waiting: each execution of its chain so far and, once the last one
    finished, the report (or why it failed)."""

    executions: list[dict[str, str]]  # [{"execution_arn", "status"}], first to last
    report: ReplayReport | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        return self.report is None and self.error is None

    def to_json(self) -> dict[str, Any]:
        return {
            "executions": self.executions,
            "running": self.running,
            "error": self.error,
            "headline": self.report.headline() if self.report else None,
            "report": self.report.to_json() if self.report else None,
        }


def replay_progress(sfn: SFNClient, first_execution_arn: str) -> ReplayProgress:
    """One look at a replay's chain of executions (DescribeExecution on each, first to last)."""
    executions: list[dict[str, str]] = []
    chain: list[tuple[str, dict[str, Any]]] = []
    execution_arn: str | None = first_execution_arn
    while execution_arn is not None:
        described = sfn.describe_execution(executionArn=execution_arn)
        status = described["status"]
        executions.append({"execution_arn": execution_arn, "status": status})
        if status not in FINAL_STATUSES:
            return ReplayProgress(executions)
        if status != "SUCCEEDED":
            return ReplayProgress(executions, error=_failure(execution_arn, status, described))
        output: dict[str, Any] = json.loads(described.get("output") or "{}")
        chain.append((execution_arn, output))
        execution_arn = output.get("next_execution")
    return ReplayProgress(executions, report=ReplayReport.from_chain(chain))
