"""`inbox stats`: events by source (its provider beside it) and status, the oldest pending event, payments by
status. Each section also sums its sources by provider (`by_provider`): a merchant with two Stripe accounts sees
each account on its own row, and the two together.

Pending and failed counts come from the sparse open-events index (what the sweeper and the alarms see); processed
and ignored from a scan of the inbox (fine for an operator's command, never on a hot path).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any

from shared.definitions import OPEN_EVENTS_SHARDS, source_of
from shared.inbox.model import EventStatus, iso_utc
from shared.sweeper import SweepStore, parse_iso

EVENT_STATUSES = tuple(status.value for status in EventStatus)
_SETTLED = frozenset({EventStatus.PROCESSED.value, EventStatus.IGNORED.value})


def scan_attributes(dynamodb: Any, table: str, attributes: tuple[str, ...]) -> list[dict[str, str]]:
    names = {f"#a{index}": name for index, name in enumerate(attributes)}
    rows: list[dict[str, str]] = []
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table, ProjectionExpression=", ".join(names), ExpressionAttributeNames=names
    ):
        for item in page.get("Items", []):
            rows.append({name: str(next(iter(value.values()))) for name, value in item.items()})
    return rows


def _with_totals(counts: dict[tuple[str, str], Counter[str]], statuses: tuple[str, ...]) -> dict[str, Any]:
    """{by_source: {source: {provider, <status>: n, total}}, by_provider: the same summed per provider, totals}."""
    by_source = {
        source: {"provider": provider}
        | {status: counter.get(status, 0) for status in statuses}
        | {"total": sum(counter.values())}
        for (source, provider), counter in sorted(counts.items())
    }
    providers: dict[str, Counter[str]] = defaultdict(Counter)
    for (_, provider), counter in counts.items():
        providers[provider].update(counter)
    by_provider = {
        provider: {status: counter.get(status, 0) for status in statuses} | {"total": sum(counter.values())}
        for provider, counter in sorted(providers.items())
    }
    totals = {status: sum(row[status] for row in by_provider.values()) for status in statuses}
    totals["total"] = sum(totals.values())
    return {"by_source": by_source, "by_provider": by_provider, "totals": totals}


def _source_and_provider(item: dict[str, Any]) -> tuple[str, str]:
    provider = str(item.get("provider", "unknown"))
    return (source_of(item) if item.get("pk") or item.get("source") else provider), provider


def collect_stats(store: SweepStore, *, clock: Any = time.time) -> dict[str, Any]:
    now = datetime.fromtimestamp(clock(), tz=UTC)
    events: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for status in (EventStatus.PENDING, EventStatus.FAILED):
        for shard in range(OPEN_EVENTS_SHARDS):
            for item in store.open_shard(status, shard, attributes=("pk", "provider")):
                events[_source_and_provider(item)][status.value] += 1
    for row in scan_attributes(store.dynamodb, store.inbox_table, ("pk", "provider", "status")):
        if row.get("status") in _SETTLED:
            events[_source_and_provider(row)][row["status"]] += 1

    oldest = store.oldest_open(EventStatus.PENDING)
    oldest_summary = None
    if oldest is not None:
        age = max(0.0, (now - parse_iso(oldest["received_at"])).total_seconds())
        oldest_summary = {"pk": oldest["pk"], "received_at": oldest["received_at"], "age_seconds": round(age, 3)}

    payments: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    payment_statuses: set[str] = set()
    if store.payments_table:
        for row in scan_attributes(store.dynamodb, store.payments_table, ("pk", "source", "provider", "status")):
            payments[_source_and_provider(row)][row.get("status", "unknown")] += 1
            payment_statuses.add(row.get("status", "unknown"))

    event_summary = _with_totals(events, EVENT_STATUSES)
    return {
        "as_of": iso_utc(now),
        "events": event_summary,
        "pending": event_summary["totals"]["pending"],
        "failed": event_summary["totals"]["failed"],
        "oldest_pending": oldest_summary,
        "oldest_pending_age_seconds": oldest_summary["age_seconds"] if oldest_summary else None,
        "payments": _with_totals(payments, tuple(sorted(payment_statuses))),
    }


def render_stats(stats: dict[str, Any]) -> str:
    lines: list[str] = []

    def table(title: str, section: dict[str, Any]) -> None:
        statuses = [name for name in section["totals"] if name != "total"]
        columns = [title, "provider", *statuses, "total"]
        rows = [
            [source, row["provider"], *(str(row[c]) for c in [*statuses, "total"])]
            for source, row in section["by_source"].items()
        ]
        rows.append(["(all)", "", *(str(section["totals"][c]) for c in [*statuses, "total"])])
        widths = [max(len(columns[i]), *(len(row[i]) for row in rows)) for i in range(len(columns))]
        lines.append("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
        lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows)

    table("events", stats["events"])
    oldest = stats["oldest_pending"]
    if oldest:
        age = f"{oldest['age_seconds']:.0f} s ago"
        lines.append(f"oldest pending: {oldest['pk']}, received {oldest['received_at']} ({age})")
    else:
        lines.append("oldest pending: none")
    lines.append("")
    table("payments", stats["payments"])
    return "\n".join(lines)
