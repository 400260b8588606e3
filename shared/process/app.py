"""The processor Lambda: its composition root (`build_processor`: settings, store, routes, SQS retry queue) and
its batch handling (FIFO groups, partial batch responses)."""

from __future__ import annotations

import contextvars
import importlib
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import aws
from shared.backoff import MAX_BACKOFF_SECONDS
from shared.definitions import (
    ENV_CONTROL_TABLE,
    ENV_DLQ_URL,
    ENV_INBOX_TABLE,
    ENV_MAX_ATTEMPTS,
    ENV_OUTBOX_TABLE,
    ENV_PAYMENTS_TABLE,
    ENV_QUEUE_URL,
    ENV_RETRY_BASE_SECONDS,
    MAX_PROCESSING_ATTEMPTS,
    PROCESSOR_BATCH_SIZE,
    RETRY_BASE_SECONDS,
    source_of,
)
from shared.gateway.batch_slots import BatchSlots
from shared.inbox.model import fifo_group_id
from shared.observability import logger
from shared.payments.store import ProcessingStore
from shared.process.coalesce import Refetches
from shared.process.handlers import ClientLookup, RefetchPaymentHandler, default_router
from shared.process.messages import Delivery, DispatchMessage, ReconcileMessage, parse_message
from shared.process.router import Router
from shared.process.service import EventProcessor, Outcome, RetryLater
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, number, text, whole

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_sqs import SQSClient

    from shared.process.confirm import PayloadConfirmation

# FIFO groups of one batch processed at once: all of them (a batch holds at most PROCESSOR_BATCH_SIZE messages, so
# at most that many groups). Each group's time is the gateway's round trip and DynamoDB's, so threads overlap them,
# and the groups that run together reach their refetch together: their rate-limit slots are taken in one write
# (`BatchSlots` gathers the running groups only: a group started when another finished would gather, and write,
# again). Bounded: the
# gateway connection pool keeps 10 connections (shared/gateway/http.py) and botocore's 10 (its default
# max_pool_connections), one per group; the source's rate limit and circuit breaker are shared by the threads (both
# thread-safe, shared/gateway/ratelimit.py and breaker.py) as by instances.
MAX_CONCURRENT_GROUPS = PROCESSOR_BATCH_SIZE
# Time kept for one message's DynamoDB writes (the settle's transaction, with the client's retries of a throttled
# write), on top of its refetch: see message_reserve_seconds. A DynamoDB that stops answering is bounded by
# shared/aws.py's own timeouts, not by this.
WRITES_ALLOWANCE_SECONDS = 3.0
GROUP_THREAD_PREFIX = "group"  # the groups' threads are named `group_{n}` (bench/item_sizes.py attributes by it)


@dataclass(frozen=True, slots=True)
class ProcessorSettings(EnvironmentSettings):
    """The processor's configuration, read from the environment once (at the first batch) and validated.

    A dataclass read by shared/settings.py's helper (as every function's settings are), not a pydantic model:
    importing pydantic and building the model's schema was ~200 ms of the processor's cold start (`python -X
    importtime`), for seven values. Required strings non-blank, numbers within their ranges, unknown variables
    ignored (tests/unit/process/test_processor_settings.py)."""

    inbox_table: str = text(ENV_INBOX_TABLE)
    payments_table: str = text(ENV_PAYMENTS_TABLE)
    queue_url: str = text(ENV_QUEUE_URL)
    dead_letter_queue_url: str = text(ENV_DLQ_URL)
    control_table: str | None = text(ENV_CONTROL_TABLE, None)
    outbox_table: str | None = text(ENV_OUTBOX_TABLE, None)  # none: nothing is published (shared/payments/outbox.py)
    max_attempts: int = whole(ENV_MAX_ATTEMPTS, MAX_PROCESSING_ATTEMPTS, low=1, high=50)
    retry_base_seconds: float = number(ENV_RETRY_BASE_SECONDS, float(RETRY_BASE_SECONDS), high=MAX_BACKOFF_SECONDS)
    # Modules of the user's own handlers, comma-separated; each has `register(router)`. The extension point:
    # handlers of one's own event types (or replacements for ours) without touching the core.
    handler_modules: str = text("INBOX_HANDLER_MODULES", "")


class SqsRetryQueue:
    """Retries by hiding the message for the backoff (its FIFO group waits, other payments do not)."""

    def __init__(self, queue_url: str, dead_letter_queue_url: str, *, sqs: SQSClient | None = None) -> None:
        self.queue_url = queue_url
        self.dead_letter_queue_url = dead_letter_queue_url
        self._sqs = sqs

    @property
    def sqs(self) -> SQSClient:
        return self._sqs or aws.sqs()

    def delay(self, delivery: Delivery, seconds: int) -> None:
        self.sqs.change_message_visibility(
            QueueUrl=self.queue_url, ReceiptHandle=delivery.receipt_handle, VisibilityTimeout=min(seconds, 43_200)
        )

    def release(self, receipt_handle: str) -> None:
        """Make a message visible again now (it was not processed in this batch)."""
        try:
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=0
            )
        except Exception as error:  # it comes back after its visibility timeout anyway
            logger.warning("could not release a skipped message", extra={"error": type(error).__name__})

    def dead_letter(self, delivery: Delivery) -> None:
        self.sqs.send_message(
            QueueUrl=self.dead_letter_queue_url,
            MessageBody=delivery.body,
            # The group it came from (already valid), or one derived for a record that carried none.
            MessageGroupId=fifo_group_id(delivery.message_group_id),
            MessageDeduplicationId=uuid.uuid4().hex,
        )


def build_router(clients: ClientLookup, handler_modules: str = "") -> Router:
    """The built-in routes, then each user module's `register(router)`: a later registration of the same
    (provider, event type) replaces ours."""
    router = default_router(clients)
    for module_name in filter(None, (name.strip() for name in handler_modules.split(","))):
        importlib.import_module(module_name).register(router)
    return router


def build_processor(
    settings: ProcessorSettings,
    *,
    clients: AwsClients = SHARED_CLIENTS,
    gateway_client: ClientLookup | None = None,
    confirmation: PayloadConfirmation | None = None,
    wrap: Wrap = unwrapped,
) -> EventProcessor:
    """The processor's composition root: its store on the tables of `settings`, the routes (ours, then the user's
    handler modules), the SQS retry queue, and the gateway clients its routes and reconciliations refetch with (the
    declared sources' registry, unless `gateway_client` is given), which confirm events from their payload as the
    declared sources say (unless `confirmation` is given). `wrap` is applied to the store and the queue."""
    if gateway_client is None:
        from shared.gateway.registry import gateway_client as registry  # noqa: PLC0415 - urllib3 off the import path

        gateway_client = registry
    if confirmation is None:
        from shared.process.confirm import declared_confirmation  # noqa: PLC0415

        confirmation = declared_confirmation()
    store = ProcessingStore(
        settings.inbox_table, settings.payments_table, dynamodb=clients.dynamodb, outbox_table=settings.outbox_table
    )
    queue = SqsRetryQueue(settings.queue_url, settings.dead_letter_queue_url, sqs=clients.sqs)
    return EventProcessor(
        wrap(store),
        build_router(gateway_client, settings.handler_modules),
        wrap(queue),
        max_attempts=settings.max_attempts,
        retry_base_seconds=settings.retry_base_seconds,
        reconciler=RefetchPaymentHandler(gateway_client),
        confirmation=confirmation,
    )


def processor_from_environ(wrap: Wrap = unwrapped) -> EventProcessor:
    """The processor's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_processor(ProcessorSettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first batch.
default_processor: Root[EventProcessor] = Root(processor_from_environ)


class QueueRecord:
    """One SQS record as the event source mapping hands it over, read as the processor needs it. Not Powertools'
    SQSRecord: importing it imports every event class of its package, ~80 ms of the processor's cold start
    (`python -X importtime`, bench/cold_start.py)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw

    @property
    def message_id(self) -> str:
        return str(self.raw["messageId"])

    @property
    def receipt_handle(self) -> str:
        return str(self.raw["receiptHandle"])

    @property
    def body(self) -> str:
        return str(self.raw.get("body") or "")

    @property
    def message_group_id(self) -> str:
        return str((self.raw.get("attributes") or {}).get("MessageGroupId") or "")

    @property
    def receive_count(self) -> int:
        return int(self.raw["attributes"]["ApproximateReceiveCount"])


def delivery_of(record: QueueRecord) -> Delivery:
    return Delivery(
        receipt_handle=record.receipt_handle,
        message_group_id=record.message_group_id,
        receive_count=record.receive_count,
        body=record.body,
    )


class GroupRun:
    """How one FIFO group's messages of a batch ended: the ids to report failed (the one that raised, then every
    later one of its group, which were not attempted and are released at once) and its refetches."""

    __slots__ = ("failed", "refetches", "skipped")

    def __init__(self, *, skipped: list[str] | None = None, refetches: Refetches | None = None) -> None:
        self.failed: list[str] = []
        self.skipped = skipped if skipped is not None else []
        self.refetches = refetches if refetches is not None else Refetches()


def message_groups(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The batch's records by FIFO group, each group in the batch's order (which is the queue's order within a
    group). A record without a group id (not from a FIFO queue) is a group of its own."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        group = (record.get("attributes") or {}).get("MessageGroupId") or f"message:{record['messageId']}"
        groups.setdefault(group, []).append(record)
    return list(groups.values())


def group_source(records: list[dict[str, Any]]) -> str | None:
    """The source a FIFO group's messages refetch from (one group is one payment of one source): an event's key
    starts with its source, a reconciliation names it. None when no message of the group can be read."""
    for record in records:
        try:
            message = parse_message(record.get("body") or "")
        except (ValueError, TypeError):
            continue
        if isinstance(message, DispatchMessage):
            return source_of({"pk": message.pk}) if "#" in message.pk else None  # a key always has one
        return message.source
    return None


def run_group(
    records: list[dict[str, Any]],
    handle: Callable[[dict[str, Any], Refetches], object],
    *,
    coalesce: bool = True,
    has_time: Callable[[], bool] = lambda: True,
) -> GroupRun:
    """One group's messages, one after the other. The first that raises is reported failed, and so is every later
    one of its group, unattempted: SQS FIFO hands them out again only after it, so the group's order holds (what
    Powertools' SqsFifoPartialProcessor calls skip_group_on_error). Other groups are not affected.

    A message is started only while `has_time()`: the rest of the group is then returned unattempted (skipped),
    as after a failure, rather than run into the function's timeout."""
    run = GroupRun(refetches=Refetches(reuse=coalesce))
    for index, record in enumerate(records):
        if not has_time():
            run.skipped = [later["messageId"] for later in records[index:]]
            break
        try:
            handle(record, run.refetches)
        except Exception as error:
            if not isinstance(error, RetryLater):
                logger.exception("queue record failed", extra={"message_id": record["messageId"]})
            run.failed.append(record["messageId"])
            run.skipped = [later["messageId"] for later in records[index + 1 :]]
            break
    return run


def run_groups(
    groups: list[list[dict[str, Any]]], run: Callable[[list[dict[str, Any]]], GroupRun], *, workers: int
) -> list[GroupRun]:
    """Each group's run, up to `workers` groups at once (threads: a group's time is the gateway's and DynamoDB's
    round trips, not CPU); one group runs in the calling thread."""
    if workers <= 1 or len(groups) <= 1:
        return [run(group) for group in groups]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(groups)), thread_name_prefix=GROUP_THREAD_PREFIX)
    try:
        # Each group in a copy of the invocation's context (its context variables: the invocation's metrics, and
        # locally the invocation whose deadline its AWS calls are held to, inbox_local/invocation.py).
        runs = [pool.submit(contextvars.copy_context().run, run, group) for group in groups]
        return [future.result() for future in runs]
    finally:
        # A BaseException out of one group (a dying invocation: the chaos harness's InjectedCrash) starts no group
        # that had not started yet, as a Lambda that dies runs nothing more.
        pool.shutdown(wait=True, cancel_futures=True)


def message_reserve_seconds() -> float:
    """The time a message may need, at worst, once started: its refetch (shared/gateway/http.py: no attempt starts
    later than BUDGET_SECONDS after the first, and an attempt lasts at most its connect and read timeouts) and its
    DynamoDB writes (WRITES_ALLOWANCE_SECONDS). A message is not started with less than this left of the
    invocation."""
    from shared.gateway import http  # noqa: PLC0415 - already imported by the processor's gateway clients

    return http.BUDGET_SECONDS + http.CONNECT_TIMEOUT_SECONDS + http.READ_TIMEOUT_SECONDS + WRITES_ALLOWANCE_SECONDS


def time_left(context: LambdaContext | None, reserve_seconds: float) -> Callable[[], bool]:
    """Whether the invocation still has `reserve_seconds` before its timeout (always, without a context)."""
    if context is None:
        return lambda: True
    return lambda: context.get_remaining_time_in_millis() >= reserve_seconds * 1000


def process_batch(
    event: dict[str, Any],
    context: LambdaContext | None,
    processor: EventProcessor | None = None,
    *,
    max_concurrent_groups: int = MAX_CONCURRENT_GROUPS,
    coalesce: bool = True,
    batch_slots: bool = True,
) -> dict[str, Any]:
    """One SQS FIFO batch, with a partial batch response (`batchItemFailures`, ReportBatchItemFailures).

    The batch's FIFO groups (one per payment) run concurrently, up to `max_concurrent_groups`; within a group the
    messages run in order, and when one fails the later ones of its group are reported failed unattempted (so
    their order holds) while the other groups go on. Those skipped messages are then made visible again at once:
    SQS FIFO will not hand them out before the failed message ahead of them in their group, which is hidden for its
    own backoff, so nothing waits a full visibility timeout for no reason. Within a group, one refetch serves the
    group's events in this batch (`coalesce`, shared/process/coalesce.py).

    The batch takes its refetch rate-limit slots together (`batch_slots`, shared/gateway/batch_slots.py
    `BatchSlots`): the requests its running groups are about to make to a source are gathered into one
    conditional write of the source's schedule, instead of one write per request.

    No message is started with less than `message_reserve_seconds()` left before the function's timeout (the
    context's remaining time): two waves of refetches against a gateway that hangs would outlast the invocation,
    which Lambda would then stop, failing the whole batch. The messages not started are reported failed and
    released, as skipped ones are: they come back at once, their attempts not spent.
    """
    processor = processor or default_processor()
    has_time = time_left(context, message_reserve_seconds())
    records: list[dict[str, Any]] = event.get("Records", [])
    groups = message_groups(records)
    if len(groups) > 1:
        processor.store.dynamodb  # noqa: B018 - the client is made once, not by every thread at once on a cold start

    def handle(record: dict[str, Any], refetches: Refetches) -> object:
        return handle_record(QueueRecord(record), processor, refetches)

    slots = None
    if batch_slots:
        at_once = max_concurrent_groups if len(groups) > 1 else 1  # as run_groups starts them
        slots = BatchSlots(
            {group[0]["messageId"]: group_source(group) for group in groups},
            starting=[group[0]["messageId"] for group in groups[: max(1, at_once)]],
        )

    def run_one(group: list[dict[str, Any]]) -> GroupRun:
        if not has_time():  # not started: no rate-limit slot taken for it either
            return GroupRun(skipped=[record["messageId"] for record in group])
        if slots is None:
            return run_group(group, handle, coalesce=coalesce, has_time=has_time)
        with slots.group(group[0]["messageId"]):
            return run_group(group, handle, coalesce=coalesce, has_time=has_time)

    runs = run_groups(groups, run_one, workers=max_concurrent_groups)
    failed = {message_id for run in runs for message_id in (*run.failed, *run.skipped)}
    skipped = {message_id for run in runs for message_id in run.skipped}
    for record in records:
        if record["messageId"] in skipped:
            processor.queue.release(record["receiptHandle"])
    fetched, reused = sum(run.refetches.fetched for run in runs), sum(run.refetches.reused for run in runs)
    (logger.info if failed else logger.debug)(  # DEBUG when all went well: each event has its own line
        "batch processed",
        extra={
            "messages": len(records),
            "groups": len(groups),
            "failed": len(failed),
            "refetches": fetched,
            "refetches_reused": reused,
        },
    )
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records if r["messageId"] in failed]}


def handle_record(
    record: QueueRecord, processor: EventProcessor | None = None, refetches: Refetches | None = None
) -> str:
    """One queue record. Raising marks it failed in the partial batch response (it will come back)."""
    processor = processor or default_processor()
    delivery = delivery_of(record)
    try:
        message = parse_message(record.body)
    except ValueError as error:
        # Nothing can ever process it: park it in the dead-letter queue for an operator and acknowledge.
        logger.error("malformed queue message", extra={"message_id": record.message_id, "error": str(error)})
        processor.queue.dead_letter(delivery)
        return Outcome.FAILED.value
    if isinstance(message, ReconcileMessage):
        return processor.reconcile(message).value  # never raises: a reconciliation is not retried in the queue
    return processor.handle(message, delivery, refetches).value  # RetryLater propagates: reported failed
