"""`inbox outbox list`: what the service published (or is about to), read from the outbox table; with
`--undelivered`, only what has not reached the endpoint.
`inbox outbox attempts`: one event's forwarding attempts and the endpoint's answers (shared/forwarding_log.py).
`inbox outbox resend`: forward what the forwarding has not delivered yet (after its dead-letter queue), or a
period of it (`--since`/`--until`), from there."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from shared import aws
from shared.forwarding import ForwardCheckpoints, Forwarder
from shared.forwarding_log import ForwardLog, reached_endpoint
from shared.inbox.model import resource_key
from shared.inbox.store import from_attributes
from shared.payments.events import check_published
from shared.payments.outbox import PAYMENT_VERIFIED, VERIFIED_PREFIX, published_event

_RELATIVE = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def period_bound(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO-8601 date or date-time (UTC when it has no offset) or a time ago: `90s`, `15m`, `1h`, `2d`."""
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2)
        return (now or datetime.now(UTC)) - timedelta(seconds=amount * _UNIT_SECONDS[unit])
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is neither an ISO-8601 time (2026-01-31T12:00:00Z) nor a time ago (90s, 15m, 1h, 2d)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def in_period(record: dict[str, Any], since: datetime | None, until: datetime | None) -> bool:
    """Whether the record was published (its `created_at`) at or after `since` and before `until`."""
    if since is None and until is None:
        return True
    created = datetime.fromisoformat(str(record["created_at"]))
    created = created if created.tzinfo else created.replace(tzinfo=UTC)
    return (since is None or created >= since) and (until is None or created < until)


def outbox_records(
    table: str,
    *,
    source: str | None = None,
    provider: str | None = None,
    resource_id: str | None = None,
    payment_sources: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Outbox records as published events (plus their `pk`), by partition then sequence: those of `source` (one
    source), of `provider` (every source of it), of the payment `resource_id`. With `resource_id` and
    `payment_sources` (the sources it may belong to: `Target.selected_sources`) each is one Query of the payment's
    partition (`{source}#{resource_id}`, the payment key); otherwise a scan, filtered."""
    dynamodb = aws.dynamodb()
    items: list[dict[str, Any]] = []
    if resource_id and payment_sources is not None:
        partitions = [resource_key(payment_source, resource_id) for payment_source in payment_sources]
        # ... and its `payment.verified` records (the API confirmed a status a payload applied)
        partitions += [VERIFIED_PREFIX + partition for partition in partitions]
        for partition in partitions:
            kwargs: dict[str, Any] = {
                "TableName": table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": partition}},
            }
            while True:
                page = dynamodb.query(**kwargs)
                items += page.get("Items", [])
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    else:
        scan: dict[str, Any] = {"TableName": table}
        while True:
            page = dynamodb.scan(**scan)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    records = []
    for raw in items:
        item = from_attributes(raw)
        event = {"pk": item["pk"], **published_event(item)}
        if source and record_source(event) != source:
            continue
        if provider and event.get("provider") != provider:
            continue
        if resource_id and event.get("resource_id") != resource_id:
            continue
        records.append(event)
    return sorted(records, key=lambda e: (str(e["pk"]), int(e["sequence"])))


def record_source(record: dict[str, Any]) -> str:
    """The source a published event belongs to: its `source`, else (a record from before sources) its provider's
    default source, named after the provider."""
    return str(record.get("source") or record.get("provider") or "")


def change_of(record: dict[str, Any]) -> str:
    """What a published event says, in a few words (the `change` column)."""
    if record.get("type") == "payment.status_changed":
        unverified = "" if record.get("verified", True) else " (unverified)"
        return f"{record.get('previous_status') or '-'} -> {record.get('new_status')}{unverified}"
    if record.get("type") == PAYMENT_VERIFIED:
        return f"verified: {record.get('status')}"
    return str(record.get("last_error", ""))[:60]


def show(records: list[dict[str, Any]], table: Any) -> None:
    rows = [
        {
            **record,
            "change": change_of(record),
        }
        for record in records
    ]
    if not rows:
        click.echo("(none)")
        return
    table(rows, ["type", "source", "provider", "resource_id", "sequence", "change", "id", "created_at"])


def delivered(record: dict[str, Any], checkpoints: ForwardCheckpoints, log: ForwardLog | None) -> bool:
    """Whether the endpoint acknowledged the record (`reached_endpoint`: a recorded 2xx, or its checkpoint when
    no attempt of it is recorded; the checkpoint alone on a stack without the log)."""
    statuses = log.statuses(str(record["id"])) if log is not None else []
    return reached_endpoint(int(record["sequence"]), checkpoints.delivered(str(record["pk"])), statuses)


def undelivered(
    records: list[dict[str, Any]], checkpoints: ForwardCheckpoints, log: ForwardLog | None
) -> list[dict[str, Any]]:
    """The records that have not reached the endpoint, each with its attempts' count and last answer."""
    rows = []
    for record in records:
        if delivered(record, checkpoints, log):
            continue
        attempts = log.attempts(str(record["id"])) if log is not None else []
        last = attempts[-1] if attempts else {}
        rows.append(
            {
                **record,
                "attempts": len(attempts),
                "last_status": last.get("status"),
                "last_error": last.get("error"),
                "last_attempt_at": last.get("attempted_at"),
            }
        )
    return rows


def show_undelivered(rows: list[dict[str, Any]], table: Any) -> None:
    if not rows:
        click.echo("(none: every published event reached the endpoint)")
        return
    table(
        rows, ["type", "source", "provider", "resource_id", "sequence", "id", "created_at", "attempts", "last_status"]
    )


def show_attempts(attempts: list[dict[str, Any]], table: Any) -> None:
    if not attempts:
        click.echo("(no attempt recorded)")
        return
    rows = [
        {
            **attempt,
            "answer": attempt.get("error") or _one_line(str(attempt.get("response_body", "")))[:60],
        }
        for attempt in attempts
    ]
    table(rows, ["attempted_at", "sender", "status", "latency_ms", "answer", "endpoint"])


def _one_line(text: str) -> str:
    return " ".join(text.split())


def attempt_view(item: dict[str, Any]) -> dict[str, Any]:
    """An attempt as `inbox outbox attempts --json` gives it (the log item without its storage attributes)."""
    view = {name: value for name, value in item.items() if name != "expires_at"}
    view.setdefault("error", None)
    view.setdefault("response_headers", {})
    view.setdefault("response_body", "")
    return view


def resend(
    records: list[dict[str, Any]],
    forwarder: Forwarder,
    checkpoints: ForwardCheckpoints,
    *,
    log: ForwardLog | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    force: bool = False,
    on_delivered: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Deliver, in order per payment, the records (with their `pk`, as `outbox_records` returns them, sorted by
    payment and sequence) published within [since, until) that the endpoint has not acknowledged (`delivered`):
    what the forwarder gave up on (its dead-letter queue) or has not reached yet; with `force`, every record of
    the period. Each delivery moves its payment's checkpoint forward (never back), the forwarder's own, so the
    forwarder skips what this sent. DeliveryFailed stops at the first event the endpoint refuses: nothing after
    it goes first. Returns the events sent (without `pk`)."""
    for record in records:
        check_published(record)
    chosen = [record for record in records if in_period(record, since, until)]
    sent: list[dict[str, Any]] = []
    for record in chosen:
        if not force and delivered(record, checkpoints, log):
            continue
        event = dict(record)
        pk = str(event.pop("pk"))
        forwarder.deliver(event)
        checkpoints.advance(pk, int(event["sequence"]))
        sent.append(event)
        if on_delivered is not None:
            on_delivered(event)
    return sent
