"""Wiring of the processor Lambda: settings from the environment, the SQS retry queue, the record handler."""

from __future__ import annotations

import importlib
import uuid
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response

from shared import aws
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
    RETRY_BASE_SECONDS,
)
from shared.inbox.model import fifo_group_id
from shared.observability import logger
from shared.payments.store import ProcessingStore
from shared.process.handlers import ClientLookup, RefetchPaymentHandler, default_router
from shared.process.router import Router
from shared.process.service import Delivery, EventProcessor, Outcome, ReconcileMessage, parse_message
from shared.settings import EnvironmentSettings, number, text, whole

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from mypy_boto3_sqs import SQSClient


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
    retry_base_seconds: float = number(ENV_RETRY_BASE_SECONDS, float(RETRY_BASE_SECONDS), high=600)
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


@cache
def default_processor() -> EventProcessor:
    from shared.gateway.registry import gateway_client  # noqa: PLC0415 - keeps urllib3 off the import path

    settings = ProcessorSettings.from_environ()
    return EventProcessor(
        ProcessingStore(settings.inbox_table, settings.payments_table, outbox_table=settings.outbox_table),
        build_router(gateway_client, settings.handler_modules),
        SqsRetryQueue(settings.queue_url, settings.dead_letter_queue_url),
        max_attempts=settings.max_attempts,
        retry_base_seconds=settings.retry_base_seconds,
        reconciler=RefetchPaymentHandler(gateway_client),
    )


def delivery_of(record: SQSRecord) -> Delivery:
    return Delivery(
        receipt_handle=record.receipt_handle,
        message_group_id=record.attributes.message_group_id or "",
        receive_count=int(record.attributes.approximate_receive_count),
        body=record.body,
    )


def process_batch(event: dict[str, Any], context: LambdaContext, processor: EventProcessor | None = None) -> Any:
    """One SQS FIFO batch, with a partial batch response.

    When a message of a payment fails, Powertools returns the later messages of that payment in the batch
    unprocessed (`skip_group_on_error`), so their order holds. Those skipped messages are then made visible
    again at once: SQS FIFO will not hand them out before the failed message ahead of them in their group, which
    is hidden for its own backoff, so nothing waits a full visibility timeout for no reason.
    """
    processor = processor or default_processor()
    seen: set[str] = set()

    def record_handler(record: SQSRecord) -> str:
        seen.add(record.message_id)
        return handle_record(record, processor)

    batch = SqsFifoPartialProcessor(skip_group_on_error=True)
    # A batch in which every message is being retried is a normal outcome, not an invocation error.
    batch.raise_on_entire_batch_failure = False
    response = process_partial_response(event=event, record_handler=record_handler, processor=batch, context=context)
    skipped = {failure["itemIdentifier"] for failure in response.get("batchItemFailures", [])} - seen
    for record in event.get("Records", []):
        if record["messageId"] in skipped:
            processor.queue.release(record["receiptHandle"])
    return response


def handle_record(record: SQSRecord, processor: EventProcessor | None = None) -> str:
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
    return processor.handle(message, delivery).value  # RetryLater propagates: the record is reported failed
