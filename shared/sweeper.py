"""The sweeper: the scheduled backstop for dispatches that got lost and payments whose webhooks never came.

Each run, bounded in items and time, and safe to run twice at once (every write is conditional):

1. Re-dispatch stale pending events. An event is stale when nothing happened to it for `stale_after_seconds`:
   no dispatching write (`dispatched_at`) and no processing attempt (`last_attempt_at`). It is found through the
   sparse open-events index and re-dispatched by the lifecycle's conditional UpdateItem (shared/inbox/lifecycle.py:
   new `dispatch_id`, `dispatch_reason = redispatch`): the Pipe enqueues it again under the new id (a fresh FIFO
   deduplication id).
   A stale event whose FIFO group shows recent activity (another pending event of the same payment is being
   retried ahead of it) is left alone: it is waiting its turn, not lost.
   An event that waits for its source (the processor's `wait_until`, written when an open circuit or the
   source's rate limit sends its message back to the queue without an attempt: Write.WAIT) is not stale until
   that wait is over plus the stale threshold, and neither is an event behind it in its FIFO group: its message is
   hidden, not lost, however long the outage. The open-events index does not project `wait_until`, so the marks
   of the events that look quiet are read from the table (BatchGetItem); the re-dispatch's condition checks it
   too, so an event that starts waiting between the read and the write is not re-dispatched either.
2. Measure: StuckPendingEvents (stale pending events seen, not those waiting for their source),
   OldestPendingAgeSeconds, FailedEvents.
3. Reconcile payments stuck in an intermediate status (pending, authorized), or still unverified (confirmed from a
   signed payload and never read back from the gateway: their verification item failed or expired), for
   `reconcile_after_seconds`: they
   are claimed (a conditional write of `checked_at`, so one sweeper claims each) and a `reconcile` message is sent
   to the FIFO queue in the payment's own group. The processor refetches the payment from the gateway and applies
   what changed through the same state machine and version check as a webhook.
"""

from __future__ import annotations

import heapq
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError

from shared import aws
from shared.backoff import MAX_BACKOFF_SECONDS
from shared.definitions import (
    DEFAULT_RECONCILE_AFTER_SECONDS,
    DEFAULT_STALE_AFTER_SECONDS,
    ENV_INBOX_TABLE,
    ENV_PAYMENTS_TABLE,
    ENV_QUEUE_URL,
    ENV_RECONCILE_AFTER,
    ENV_STALE_AFTER,
    ENV_SWEEP_MAX_ITEMS,
    OPEN_EVENTS_SHARDS,
    RECONCILE_INDEX,
    WAIT_UNTIL,
    SourceSpec,
    open_events_query,
    provider_entry,
    source_key,
)
from shared.definitions import DEFAULT_SWEEP_MAX_ITEMS as DEFAULT_MAX_ITEMS
from shared.definitions import RECONCILE_INDEX_PK as RECONCILE_KEY
from shared.definitions import RECONCILE_INDEX_SK as CHECKED_AT
from shared.inbox.lifecycle import EventStatus
from shared.inbox.model import fifo_group_id, iso_utc
from shared.inbox.store import InboxStore, from_attributes
from shared.observability import logger, put_gauge
from shared.payments.model import UNVERIFIED_PARTITION
from shared.payments.status import INTERMEDIATE_STATUSES
from shared.process.messages import ReconcileMessage
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, text, whole

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

MIN_REMAINING_MS = 10_000  # stop paging when the invocation has less than this left
# A run re-dispatches at most `max_items` stale events, and reads at most this many times as many old pending
# events to find them: old events that are busy (being retried) must not use up the budget of the stale ones.
READ_FACTOR = 10
# What the re-dispatch decision reads of each event (not the body).
_REDISPATCH_ATTRIBUTES = ("pk", "group_id", "received_at", "dispatched_at", "last_attempt_at", "dispatch_id")
_PAGE_SIZE = 100
_BATCH_GET_KEYS = 100  # BatchGetItem's limit per request
_BATCH_GET_ROUNDS = 4  # rounds for the keys DynamoDB left unprocessed (throttling); past them, unknown = not waiting
# The marks of a pending event that say it was worked on: received, (re-)dispatched, attempted.
_WORK_MARKS = ("received_at", "dispatched_at", "last_attempt_at")


@dataclass(frozen=True, slots=True)
class SweeperSettings(EnvironmentSettings):
    inbox_table: str = text(ENV_INBOX_TABLE)
    payments_table: str = text(ENV_PAYMENTS_TABLE)
    queue_url: str = text(ENV_QUEUE_URL)
    stale_after_seconds: int = whole(
        ENV_STALE_AFTER,
        DEFAULT_STALE_AFTER_SECONDS,
        low=MAX_BACKOFF_SECONDS + 1,
        why=f"above the processor's longest backoff, {MAX_BACKOFF_SECONDS} s: events that are only waiting "
        "would be re-dispatched",
    )
    reconcile_after_seconds: int = whole(ENV_RECONCILE_AFTER, DEFAULT_RECONCILE_AFTER_SECONDS, low=60)
    max_items: int = whole(ENV_SWEEP_MAX_ITEMS, DEFAULT_MAX_ITEMS, low=1)


@dataclass
class SweepSummary:
    redispatched: int = 0  # stale pending events re-dispatched by this run
    stuck: int = 0  # stale pending events seen (re-dispatched, or waiting behind a busy FIFO group)
    waiting: int = 0  # stale by themselves, but another event of their payment is being worked on
    # Quiet, but waiting for their source (an open circuit, its rate limit), or behind such an event in their
    # FIFO group: not stale, not stuck, not re-dispatched.
    waiting_for_source: int = 0
    oldest_age_s: float = 0.0  # age of the oldest pending event (0 when none is pending)
    failed: int = 0  # failed events in the open-events index (they wait for a replay)
    reconciled: int = 0  # reconciliation requests sent to the queue
    truncated: bool = False  # the item or time budget ran out: the next run carries on
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _latest(item: Mapping[str, Any], names: Iterable[str]) -> str:
    return max((mark for mark in (item.get(name) for name in names) if isinstance(mark, str)), default="")


def last_work(item: Mapping[str, Any]) -> str:
    """When a pending event was last worked on: received, (re-)dispatched or attempted."""
    return _latest(item, _WORK_MARKS)


def last_activity(item: Mapping[str, Any]) -> str:
    """When something last happened, or is due to happen, to a pending event: its work, or the end of a wait for
    its source (`wait_until`, a time that may be ahead: its message comes back then)."""
    return _latest(item, (*_WORK_MARKS, WAIT_UNTIL))


def dispatch_group(item: Mapping[str, Any]) -> str:
    """The FIFO group a re-dispatch of this event goes to: its stored `group_id` (the key itself for an event with
    none), made a valid SQS group id. Items stored before ids were derived may hold a raw key SQS refuses."""
    return fifo_group_id(str(item.get("group_id") or item["pk"]))


class Staleness(NamedTuple):
    """How a sweep's old pending events stand (`stale_events`)."""

    chosen: list[Mapping[str, Any]]  # to re-dispatch: quiet, in a quiet FIFO group
    waiting: int  # quiet, but another event of their FIFO group is being worked on (stuck behind it)
    waiting_for_source: int  # quiet, but they (or an event ahead in their group) wait for their source


def stale_events(items: Iterable[Mapping[str, Any]], cutoff: str) -> Staleness:
    """Which of these pending events to re-dispatch: each one quiet since before `cutoff`, in a FIFO group where
    nothing happened since `cutoff` either. A wait for the source (`wait_until`) that ends at or after `cutoff`
    keeps its event and its FIFO group from being stale: the group's messages are held by it, not lost."""
    items = list(items)
    group_work: dict[str, str] = {}
    group_wait: dict[str, str] = {}
    for item in items:
        group = dispatch_group(item)
        group_work[group] = max(group_work.get(group, ""), last_work(item))
        group_wait[group] = max(group_wait.get(group, ""), str(item.get(WAIT_UNTIL) or ""))
    chosen: list[Mapping[str, Any]] = []
    waiting = waiting_for_source = 0
    for item in items:
        group = dispatch_group(item)
        if last_work(item) >= cutoff:
            continue  # being worked on
        if group_wait[group] >= cutoff:
            waiting_for_source += 1  # it, or the event its group is held by, waits for the source
        elif group_work[group] >= cutoff:
            waiting += 1
        else:
            chosen.append(item)
    return Staleness(chosen, waiting, waiting_for_source)


class SweepStore:
    """The sweeper's reads and conditional writes on the inbox and payments tables."""

    def __init__(self, inbox_table: str, payments_table: str, *, dynamodb: DynamoDBClient | None = None) -> None:
        self.inbox_table = inbox_table
        self.payments_table = payments_table
        self._dynamodb = dynamodb

    @property
    def dynamodb(self) -> DynamoDBClient:
        return self._dynamodb or aws.dynamodb()

    def _open_query(
        self,
        status: EventStatus,
        shard: int,
        received_before: str | None,
        attributes: tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        query = open_events_query(self.inbox_table, status, shard, received_before=received_before)
        if attributes:
            names = {f"#a{index}": name for index, name in enumerate(attributes)}
            query["ProjectionExpression"] = ", ".join(names)
            query["ExpressionAttributeNames"] = names
        return query

    def open_shard(
        self,
        status: EventStatus,
        shard: int,
        *,
        received_before: str | None = None,
        attributes: tuple[str, ...] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """One shard of the sparse open-events index, oldest first, one page at a time (only `attributes`, when
        given)."""
        paginator = self.dynamodb.get_paginator("query")
        pages = paginator.paginate(
            **self._open_query(status, shard, received_before, attributes), PaginationConfig={"PageSize": _PAGE_SIZE}
        )
        for page in pages:
            for raw in page.get("Items", []):
                yield from_attributes(raw)

    def open_oldest_first(
        self,
        status: EventStatus,
        *,
        received_before: str | None = None,
        attributes: tuple[str, ...] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every shard merged, oldest first overall: a bounded run works on the oldest events of all shards."""
        shards = [
            self.open_shard(status, shard, received_before=received_before, attributes=attributes)
            for shard in range(OPEN_EVENTS_SHARDS)
        ]
        return heapq.merge(*shards, key=lambda item: str(item.get("received_at", "")))

    def oldest_open(self, status: EventStatus) -> dict[str, Any] | None:
        """The oldest open event of this status: one single-item query per shard."""
        oldest: dict[str, Any] | None = None
        for shard in range(OPEN_EVENTS_SHARDS):
            query = self._open_query(status, shard, None, ("pk", "received_at", "provider"))
            response = self.dynamodb.query(**query, Limit=1, ScanIndexForward=True)
            for attributes in response.get("Items", []):
                item = from_attributes(attributes)
                if oldest is None or item.get("received_at", "") < oldest.get("received_at", ""):
                    oldest = item
        return oldest

    def count_open(self, status: EventStatus) -> int:
        total = 0
        paginator = self.dynamodb.get_paginator("query")
        for shard in range(OPEN_EVENTS_SHARDS):
            for page in paginator.paginate(**self._open_query(status, shard, None), Select="COUNT"):
                total += int(page.get("Count", 0))
        return total

    def wait_marks(self, pks: list[str]) -> dict[str, str]:
        """`wait_until` of each of these events that has one (BatchGetItem, 100 keys a request, the keys DynamoDB
        left unprocessed asked again a few times). An event whose mark could not be read is missing: as if it did
        not wait (the re-dispatch's condition still refuses one that does)."""
        marks: dict[str, str] = {}
        for start in range(0, len(pks), _BATCH_GET_KEYS):
            request: dict[str, Any] = {
                self.inbox_table: {
                    "Keys": [{"pk": {"S": pk}} for pk in pks[start : start + _BATCH_GET_KEYS]],
                    "ProjectionExpression": "#pk, #wait",
                    "ExpressionAttributeNames": {"#pk": "pk", "#wait": WAIT_UNTIL},
                }
            }
            for _ in range(_BATCH_GET_ROUNDS):
                response = self.dynamodb.batch_get_item(RequestItems=request)
                for raw in response.get("Responses", {}).get(self.inbox_table, []):
                    if WAIT_UNTIL in raw:
                        marks[raw["pk"]["S"]] = raw[WAIT_UNTIL]["S"]
                request = dict(response.get("UnprocessedKeys") or {})
                if not request:
                    break
        return marks

    def redispatch(self, item: Mapping[str, Any], *, now: str, quiet_since: str) -> bool:
        """Dispatch a still-pending event again, unless anyone dispatched or attempted it since we read it (two
        sweepers at once re-dispatch it once). True when this call re-dispatched it."""
        return InboxStore(self.inbox_table, dynamodb=self.dynamodb).redispatch(
            str(item["pk"]),
            group_id=dispatch_group(item),
            seen_dispatch_id=str(item["dispatch_id"]) if item.get("dispatch_id") else None,
            now=now,
            quiet_since=quiet_since,
        )

    def due_for_reconcile(self, reconcile_key: str, checked_before: str) -> Iterator[tuple[str, str]]:
        """(payment pk, checked_at) of payments in one source#status partition not checked since then."""
        paginator = self.dynamodb.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.payments_table,
            IndexName=RECONCILE_INDEX,
            KeyConditionExpression="#key = :key AND #checked < :before",
            ExpressionAttributeNames={"#key": RECONCILE_KEY, "#checked": CHECKED_AT},
            ExpressionAttributeValues={":key": {"S": reconcile_key}, ":before": {"S": checked_before}},
            PaginationConfig={"PageSize": _PAGE_SIZE},
        )
        for page in pages:
            for attributes in page.get("Items", []):
                yield attributes["pk"]["S"], attributes[CHECKED_AT]["S"]

    def claim_reconcile(self, pk: str, reconcile_key: str, seen_checked_at: str, *, now: str) -> bool:
        """Move the payment's `checked_at` to now, if nobody (a sweeper, the processor) touched it since we read
        it. Exactly one sweeper wins, and the payment is not due again for another reconcile interval."""
        try:
            self.dynamodb.update_item(
                TableName=self.payments_table,
                Key={"pk": {"S": pk}},
                UpdateExpression="SET #checked = :now",
                ConditionExpression="#checked = :seen AND #key = :key",
                ExpressionAttributeNames={"#checked": CHECKED_AT, "#key": RECONCILE_KEY},
                ExpressionAttributeValues={
                    ":now": {"S": now},
                    ":seen": {"S": seen_checked_at},
                    ":key": {"S": reconcile_key},
                },
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True


class Sweeper:
    def __init__(
        self,
        settings: SweeperSettings,
        store: SweepStore,
        *,
        sqs: SQSClient | None = None,
        reconcile_sources: Iterable[SourceSpec] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self._sqs = sqs
        self.reconcile_sources = tuple(reconcile_sources)
        self.clock = clock

    @property
    def sqs(self) -> SQSClient:
        return self._sqs or aws.sqs()

    def run(self, *, remaining_ms: Callable[[], int] | None = None) -> SweepSummary:
        """One sweep. `remaining_ms` is the Lambda context's clock: work stops with MIN_REMAINING_MS to spare."""
        summary = SweepSummary()
        now = datetime.fromtimestamp(self.clock(), tz=UTC)

        def out_of_time() -> bool:
            return remaining_ms is not None and remaining_ms() < MIN_REMAINING_MS

        oldest = self.store.oldest_open(EventStatus.PENDING)
        if oldest is not None and oldest.get("received_at"):
            summary.oldest_age_s = max(0.0, (now - parse_iso(oldest["received_at"])).total_seconds())
        summary.failed = self.store.count_open(EventStatus.FAILED)
        self._redispatch_stale(summary, now, out_of_time)
        if self.reconcile_sources and not out_of_time():
            self._request_reconciliations(summary, now, out_of_time)
        elif self.reconcile_sources:
            summary.truncated = True

        put_gauge("StuckPendingEvents", summary.stuck)
        put_gauge("OldestPendingAgeSeconds", summary.oldest_age_s, MetricUnit.Seconds)
        put_gauge("FailedEvents", summary.failed)
        put_gauge("EventsRedispatched", summary.redispatched)
        put_gauge("ReconciliationsRequested", summary.reconciled)
        logger.info("sweep done", extra=summary.as_dict())
        return summary

    def _redispatch_stale(self, summary: SweepSummary, now: datetime, out_of_time: Callable[[], bool]) -> None:
        cutoff = iso_utc(now - timedelta(seconds=self.settings.stale_after_seconds))
        candidates: list[dict[str, Any]] = []
        # Only events received before the cutoff can be stale: the index's sort key bounds the read.
        old_pending = self.store.open_oldest_first(
            EventStatus.PENDING, received_before=cutoff, attributes=_REDISPATCH_ATTRIBUTES
        )
        for item in old_pending:
            if len(candidates) >= self.settings.max_items * READ_FACTOR or out_of_time():
                summary.truncated = True
                break
            candidates.append(item)
        self._read_waits(candidates, cutoff, summary)
        staleness = stale_events(candidates, cutoff)
        chosen, summary.waiting = staleness.chosen, staleness.waiting
        summary.waiting_for_source = staleness.waiting_for_source
        summary.stuck = len(chosen) + summary.waiting
        if len(chosen) > self.settings.max_items:
            chosen = chosen[: self.settings.max_items]  # the oldest first; the next run carries on
            summary.truncated = True
        stamp = iso_utc(now)
        for event in chosen:
            if out_of_time():
                summary.truncated = True
                break
            if self.store.redispatch(event, now=stamp, quiet_since=cutoff):
                summary.redispatched += 1
                logger.info("event re-dispatched", extra={"pk": event["pk"], "last_activity": last_activity(event)})

    def _read_waits(self, candidates: list[dict[str, Any]], cutoff: str, summary: SweepSummary) -> None:
        """Add `wait_until` to the candidates that look quiet by what the index projects (only those: an event
        worked on since the cutoff is not stale whatever it waits for)."""
        quiet = [str(item["pk"]) for item in candidates if last_work(item) < cutoff]
        if not quiet:
            return
        try:
            marks = self.store.wait_marks(quiet)
        except Exception as error:  # the write's condition still guards a waiting event against a re-dispatch
            logger.warning("wait marks not read", extra={"error": type(error).__name__})
            summary.errors.append(f"wait marks: {type(error).__name__}")
            return
        for item in candidates:
            mark = marks.get(str(item["pk"]))
            if mark is not None:
                item[WAIT_UNTIL] = mark

    def _due_payments(self, cutoff: str) -> Iterator[tuple[SourceSpec, str, str, str]]:
        """(source, reconcile key, payment pk, checked_at) of every payment due, one partition after another."""
        for source in self.reconcile_sources:
            partitions = [status.value for status in sorted(INTERMEDIATE_STATUSES)]
            if provider_entry(source.provider).confirms_from_payload:  # (even set to `never` since: its old ones)
                partitions.append(UNVERIFIED_PARTITION)
            for partition in partitions:
                reconcile_key = source_key(source.name, partition)
                for pk, checked_at in self.store.due_for_reconcile(reconcile_key, cutoff):
                    yield source, reconcile_key, pk, checked_at

    def _request_reconciliations(self, summary: SweepSummary, now: datetime, out_of_time: Callable[[], bool]) -> None:
        cutoff = iso_utc(now - timedelta(seconds=self.settings.reconcile_after_seconds))
        stamp = iso_utc(now)
        claimed: list[ReconcileMessage] = []
        for examined, (source, reconcile_key, pk, checked_at) in enumerate(self._due_payments(cutoff)):
            if examined >= self.settings.max_items or out_of_time():
                summary.truncated = True
                break
            if self.store.claim_reconcile(pk, reconcile_key, checked_at, now=stamp):
                claimed.append(ReconcileMessage(source.name, pk.split("#", 1)[1], source.provider))
            if len(claimed) == 10:
                summary.reconciled += self._send(claimed, summary)
                claimed = []
        if claimed:
            summary.reconciled += self._send(claimed, summary)

    def _send(self, messages: list[ReconcileMessage], summary: SweepSummary) -> int:
        """Send up to ten reconciliation requests; returns how many the queue took. One the queue refused is not
        retried here: its payment is due again after the reconcile interval."""
        entries: list[SendMessageBatchRequestEntryTypeDef] = [
            {
                "Id": str(index),
                "MessageBody": message.to_body(),
                # The payment's own group, derived as the inbox item's is: in order with its webhooks.
                "MessageGroupId": fifo_group_id(message.key),
                "MessageDeduplicationId": uuid.uuid4().hex,
            }
            for index, message in enumerate(messages)
        ]
        try:
            response = self.sqs.send_message_batch(QueueUrl=self.settings.queue_url, Entries=entries)
        except Exception as error:
            logger.warning("reconciliation requests not sent", extra={"error": type(error).__name__})
            summary.errors.append(f"send: {type(error).__name__}")
            return 0
        for failure in response.get("Failed", []):
            summary.errors.append(f"send {messages[int(failure['Id'])].key}: {failure.get('Code')}")
        return len(response.get("Successful", []))


def build_sweeper(
    settings: SweeperSettings,
    *,
    clients: AwsClients = SHARED_CLIENTS,
    reconcile_sources: Iterable[SourceSpec] | None = None,
    wrap: Wrap = unwrapped,
) -> Sweeper:
    """The sweeper's composition root: its store on the tables of `settings`, the queue it sends to, and the
    sources whose payments it reconciles (unless given: the declared sources whose provider has an API to refetch
    from, which gateway_client() has a client for). `wrap` is applied to the store."""
    if reconcile_sources is None:
        from shared.gateway.registry import supported_providers  # noqa: PLC0415 - keeps urllib3 off the import path
        from shared.sources import declared_sources  # noqa: PLC0415

        refetching = set(supported_providers())
        reconcile_sources = [s for s in declared_sources().by_name.values() if s.provider in refetching]
    store = SweepStore(settings.inbox_table, settings.payments_table, dynamodb=clients.dynamodb)
    return Sweeper(settings, wrap(store), sqs=clients.sqs, reconcile_sources=reconcile_sources)


def sweeper_from_environ(wrap: Wrap = unwrapped) -> Sweeper:
    """The sweeper's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_sweeper(SweeperSettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first run.
default_sweeper: Root[Sweeper] = Root(sweeper_from_environ)


def sweep(context: Any = None, sweeper: Sweeper | None = None) -> dict[str, Any]:
    """The sweeper Lambda's one call: a bounded sweep, its summary as a dict."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return (sweeper or default_sweeper()).run(remaining_ms=remaining).as_dict()
