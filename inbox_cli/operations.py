"""What the operator's commands read and do, as plain functions of the target stack that return data.

The CLI (inbox_cli/main.py) and the console (inbox_cli/console/) are two ways of showing these: each command or
page parses its input, calls one of these, and renders the result. Neither reads a table or starts a replay by
itself, so the console can never show or do something other than what the CLI would.
"""

from __future__ import annotations

import base64
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from inbox_cli.replay import (
    ReplayProgress,
    ReplayReport,
    ReplayRequest,
    normalize_time,
    replay_progress,
    run_replay,
    start_replay,
)
from inbox_cli.stats import collect_stats, scan_attributes
from inbox_cli.target import Target
from shared import aws, definitions
from shared.definitions import source_of
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, EventStatus, event_key, fifo_group_id, resource_key
from shared.inbox.store import InboxStore, from_attributes
from shared.payments.store import ProcessingStore
from shared.sweeper import SweepStore

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

# What a listing shows of each event (the CLI's table columns and its --json keys).
EVENT_SUMMARY_COLUMNS = [
    "received_at",
    "source",
    "provider",
    "event_id",
    "event_type",
    "resource_id",
    "status",
    "attempts",
]
FAILED_EVENT_COLUMNS = [*EVENT_SUMMARY_COLUMNS, "last_error"]
IGNORED_EVENT_COLUMNS = [*EVENT_SUMMARY_COLUMNS, "ignored_reason"]  # definitions.IgnoredReason, the closed set
# The events of one payment a timeline reads (each is one GetItem after the index query).
TIMELINE_MAX_EVENTS = 200


class NotFound(LookupError):
    """The event or payment asked for is not in the stack; the message names it."""


class StackNotReady(RuntimeError):
    """The target stack lacks what the operation needs (an output of a newer version); the message says what."""


# ------------------------------------------------------------------------------------------------------ reads


@dataclass(frozen=True)
class EventFilter:
    """Which events a listing shows. `since`/`until` are ISO-8601 (UTC when no offset), on `received_at`.
    `provider` selects every source of that provider, `source` one source."""

    provider: str | None = None
    source: str | None = None
    status: str | None = None
    event_type: str | None = None
    since: str | None = None
    until: str | None = None

    def matches(self, item: dict[str, Any]) -> bool:
        received = str(item.get("received_at", ""))
        return (
            (self.provider is None or item.get("provider") == self.provider)
            and (self.source is None or source_of(item) == self.source)
            and (self.status is None or item.get("status") == self.status)
            and (self.event_type is None or item.get("event_type") == self.event_type)
            and (self.since is None or received >= normalize_time(self.since))
            and (self.until is None or received <= normalize_time(self.until))
        )


def inbox_store(target: Target) -> InboxStore:
    return InboxStore(target.inbox_table, target.body_bucket)


def list_events(
    target: Target,
    filters: EventFilter = EventFilter(),
    *,
    limit: int = 50,
    columns: list[str] = EVENT_SUMMARY_COLUMNS,
) -> list[dict[str, Any]]:
    """The events that match, newest first, at most `limit`, each reduced to `columns` (a scan: small tables)."""
    items = [item for item in inbox_store(target).scan() if filters.matches(item)]
    items.sort(key=lambda item: item.get("received_at", ""), reverse=True)
    return [
        {column: source_of(item) if column == "source" else item.get(column) for column in columns}
        for item in items[:limit]
    ]


def failed_events(
    target: Target, *, provider: str | None = None, source: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Failed events (of `source`, or of every source of `provider`), newest first, with the error that ended them."""
    return list_events(
        target,
        EventFilter(provider=provider, source=source, status=EventStatus.FAILED.value),
        limit=limit,
        columns=FAILED_EVENT_COLUMNS,
    )


def show_event(target: Target, source: str, event_id: str) -> dict[str, Any]:
    """The stored event of `source` with its raw body (bytes) under `body`. What is stored holds no secret: the
    ingest keeps only the headers and query parameters each driver names (signatures, ids, never a token) and
    redacts the secrets some providers repeat in the body."""
    store = inbox_store(target)
    item = store.get(event_key(source, event_id))
    if item is None:
        raise NotFound(f"no event {source}#{event_id}{target.not_found_hint(source)}")
    item["body"] = store.read_body(item)
    item.pop(BODY_ZLIB_ATTRIBUTE, None)  # the stored (compressed) form of the same body
    return item


def show_payment(target: Target, source: str, resource_id: str) -> dict[str, Any]:
    """The payment of `source` as the processor last applied it."""
    stored = ProcessingStore(target.inbox_table, target.payments_table).load_payment(resource_key(source, resource_id))
    if stored is None:
        raise NotFound(f"no payment {source}#{resource_id}{target.not_found_hint(source)}")
    return stored.to_item()


def stats(target: Target) -> dict[str, Any]:
    """Events by provider and status, the oldest pending event, payments by status (`inbox stats`)."""
    return collect_stats(SweepStore(target.inbox_table, target.payments_table))


def payment_timeline(target: Target, source: str, resource_id: str) -> dict[str, Any]:
    """One payment of `source`: the payment now, every event about it (oldest first) with what the processor
    decided (`note`, or the `last_error` that failed it), and the downstream events published from the outbox (its
    partition, the payment key: any source's)."""
    key = resource_key(source, resource_id)
    try:
        payment: dict[str, Any] | None = show_payment(target, source, resource_id)
    except NotFound:
        payment = None  # events may exist for a payment never applied (all of them failed): still a story
    dynamodb = aws.dynamodb()
    query: dict[str, Any] = {
        "TableName": target.inbox_table,
        "IndexName": definitions.RESOURCE_EVENTS_INDEX,
        "KeyConditionExpression": "#key = :key",
        "ExpressionAttributeNames": {"#key": definitions.RESOURCE_EVENTS_INDEX_PK},
        "ExpressionAttributeValues": {":key": {"S": fifo_group_id(key)}},  # the group id its events carry
        "PaginationConfig": {"MaxItems": TIMELINE_MAX_EVENTS},
    }
    store = inbox_store(target)
    events: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("query").paginate(**query):
        for attributes in page.get("Items", []):
            item = store.get(str(from_attributes(attributes)["pk"]), consistent=False)
            if item is not None:
                events.append({name: item.get(name) for name in _TIMELINE_EVENT_FIELDS} | {"source": source_of(item)})
    if payment is None and not events:
        raise NotFound(f"no payment {key} and no event about it{target.not_found_hint(source)}")
    events.sort(key=lambda event: (str(event.get("occurred_at") or ""), str(event.get("received_at") or "")))
    published: list[dict[str, Any]] = []
    if target.outbox_table:
        from inbox_cli.outbox import outbox_records  # noqa: PLC0415

        published = outbox_records(target.outbox_table, resource_id=resource_id, payment_sources=(source,))
    if target.forward_log_table and published:
        from shared.forwarding_log import ForwardLog  # noqa: PLC0415

        log = ForwardLog(dynamodb, target.forward_log_table)
        for record in published:  # a payment has a handful of transitions: one small Query each
            statuses = log.statuses(str(record["id"]))
            record["forward_attempts"] = len(statuses)
            record["forward_last_status"] = statuses[-1] if statuses else None
    for event in events:
        # The refetched status of an event the processor applied is the status its transition published (the
        # outbox record names the event); an ignored event changed nothing, and its note says what it saw.
        caused = [record for record in published if record.get("source_event_id") == event.get("event_id")]
        event["applied_status"] = caused[-1].get("new_status") if caused else None
        event["published_ids"] = [record.get("id") for record in caused]
    return {"payment": payment, "events": events, "published": published}


_TIMELINE_EVENT_FIELDS = (
    "pk",
    "provider",
    "event_id",
    "event_type",
    "occurred_at",
    "received_at",
    "processed_at",
    "status",
    "provider_status",
    "amount",
    "currency",
    "attempts",
    "note",
    "ignored_reason",
    "last_error",
)


def flow_over_time(target: Target, *, buckets: int = 12) -> dict[str, Any]:
    """Events per source, by when they were received (`buckets` equal slices from the first to the last) and
    where each is now (pending, processed, ignored, failed): the overview's charts. A scan of four attributes."""
    rows = scan_attributes(aws.dynamodb(), target.inbox_table, ("pk", "provider", "status", "received_at"))
    times = sorted(row["received_at"] for row in rows if row.get("received_at"))
    if not times:
        return {"labels": [], "sources": {}}
    first, last = _parse(times[0]), _parse(times[-1])
    width = max((last - first) / buckets, timedelta(seconds=1))
    starts = [first + width * index for index in range(buckets)]
    counts: dict[str, dict[str, Counter[int]]] = defaultdict(lambda: defaultdict(Counter))
    for row in rows:
        if not row.get("received_at"):
            continue
        index = min(int((_parse(row["received_at"]) - first) / width), buckets - 1)
        counts[source_of(row) if row.get("pk") else row.get("provider", "unknown")][row.get("status", "unknown")][
            index
        ] += 1
    statuses = [status.value for status in EventStatus]
    return {
        "labels": [start.strftime("%H:%M:%S") for start in starts],
        "bucket_seconds": width.total_seconds(),
        "first_received_at": times[0],
        "last_received_at": times[-1],
        "sources": {
            source: {status: [by_status[status][index] for index in range(buckets)] for status in statuses}
            for source, by_status in sorted(counts.items())
        },
    }


def dead_letter_depths(target: Target) -> list[dict[str, Any]]:
    """Messages in each of the stack's dead-letter queues (SQS's approximate counts)."""
    sqs = aws.sqs()
    depths = []
    for label, queue in target.dead_letter_queues.items():
        url = queue if queue.startswith(("https://", "http://")) else sqs.get_queue_url(QueueName=queue)["QueueUrl"]
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        depths.append(
            {
                "queue": label,
                "url": url,
                "messages": int(attributes.get("ApproximateNumberOfMessages", 0)),
                "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", 0)),
            }
        )
    return depths


def _parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")).astimezone(UTC)


def body_text(body: bytes) -> str:
    """A raw body for reading: its UTF-8 text, or (not text) its base64 marked as such."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(body).decode()


# ----------------------------------------------------------------------------------------------------- replay


def stepfunctions() -> SFNClient:
    import boto3  # noqa: PLC0415

    client: SFNClient = boto3.session.Session().client("stepfunctions")  # a session each: the console has threads
    return client


def replay_state_machine(target: Target, sfn: SFNClient) -> str:
    """The replay workflow's ARN: the deployed stack's output, or (locally) the one created in the embedded AWS."""
    if target.replay_state_machine_arn:
        return target.replay_state_machine_arn
    if target.local:
        from inbox_local.replay import ensure_replay_state_machine  # noqa: PLC0415

        return ensure_replay_state_machine(sfn, target.inbox_table)
    raise StackNotReady(
        f"the stack has no {definitions.OUTPUT_REPLAY_STATE_MACHINE} output: deploy the current version first"
    )


def replay(target: Target, request: ReplayRequest, *, timeout_seconds: float = 900) -> ReplayReport:
    """Run a replay (or, `request.dry_run`, its plan) to its end. Raises ReplayFailed when it does not succeed."""
    sfn = stepfunctions()
    return run_replay(
        sfn,
        replay_state_machine(target, sfn),
        request,
        timeout_seconds=timeout_seconds,
        poll_seconds=0.25 if target.local else 1.0,
    )


def begin_replay(target: Target, request: ReplayRequest) -> str:
    """Start a replay and return at once: the first execution's ARN, to follow with `replay_status`."""
    sfn = stepfunctions()
    return start_replay(sfn, replay_state_machine(target, sfn), request)


def replay_status(target: Target, execution_arn: str) -> ReplayProgress:
    """Where a started replay stands now (its executions so far; the report once it finished)."""
    del target  # the execution ARN names the stack's state machine; the credentials are the operator's
    return replay_progress(stepfunctions(), execution_arn)
