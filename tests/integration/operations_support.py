"""Support for the sweeper, reconciliation and retention tests: the local Pipe and queue mapping in-process."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

from inbox_local.pipe import StreamPipe
from inbox_local.queue_mapping import QueueMapping, lambda_sqs_record
from shared.definitions import SourceSpec
from shared.inbox.model import StoredBody, build_item, event_key
from shared.inbox.store import InboxStore, to_attributes
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.app import QueueRecord, SqsRetryQueue, handle_record, process_batch
from shared.process.handlers import RefetchPaymentHandler, default_router
from shared.process.service import EventProcessor
from shared.providers.base import NormalizedEvent, WebhookRequest
from shared.sweeper import Sweeper, SweeperSettings, SweepStore
from tests.integration.processing_support import BASE_TIME, FakeGateway


def at(moment: datetime) -> float:
    return moment.timestamp()


def later(seconds: float) -> float:
    """Epoch seconds `seconds` after BASE_TIME (the processing support's events are received at BASE_TIME + 1 s)."""
    return at(BASE_TIME + timedelta(seconds=seconds))


def store_event_at(
    names, received_seconds: float, *, resource_id: str, event_id: str | None = None, source: str = "stripe"
) -> str:
    """A pending Stripe `paid` event of `source` received `received_seconds` after BASE_TIME."""
    event_id = event_id or f"evt_at_{resource_id}"
    received = BASE_TIME + timedelta(seconds=received_seconds)
    event = NormalizedEvent(event_id, "payment_intent.succeeded", resource_id, received, "paid", 1000, "BRL")
    item = build_item(
        provider="stripe",
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=b"{}", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0", size=2, inline=b"{}"),
        received_at=received,
        retention_days=30,
        source=source,
    )
    InboxStore(names.inbox_table).put_new(item)
    return event_key(source, event_id)


def lookup(gateway: FakeGateway):
    return lambda provider: gateway if provider in ("stripe", "asaas") else None


def real_processor(world, gateway: FakeGateway) -> EventProcessor:
    """The processor as deployed, on moto's queue (retries by visibility), refetching from the fake gateway."""
    return EventProcessor(
        ProcessingStore(world.names.inbox_table, world.names.payments_table),
        default_router(lookup(gateway)),
        SqsRetryQueue(world.resources["queue_url"], world.resources["dead_letter_url"]),
        max_attempts=3,
        retry_base_seconds=1,
        reconciler=RefetchPaymentHandler(lookup(gateway)),
    )


def pipe_for(world) -> StreamPipe:
    return StreamPipe(world.session, world.resources["stream_arn"], world.resources["queue_url"])


def mapping_for(world, processor: EventProcessor) -> QueueMapping:
    return QueueMapping(
        world.session,
        world.resources["queue_url"],
        lambda event, context: process_batch(event, context, processor),
        batch_size=10,
        concurrency=1,
    )


def drain(mapping: QueueMapping, rounds: int = 50) -> int:
    """Poll until the queue hands out nothing more. Returns how many messages were received in all."""
    received = 0
    for _ in range(rounds):
        got = mapping.poll_once()
        if got == 0:
            return received
        received += got
    raise AssertionError("the queue did not drain")


def sweeper_for(world, *, clock: float, max_items: int = 500, store: SweepStore | None = None, **settings: Any):
    config = SweeperSettings(
        world.names.inbox_table,
        world.names.payments_table,
        world.resources["queue_url"],
        max_items=max_items,
        **settings,
    )
    return Sweeper(
        config,
        store or SweepStore(world.names.inbox_table, world.names.payments_table),
        reconcile_sources=(SourceSpec("stripe", "stripe"), SourceSpec("asaas", "asaas")),
        clock=lambda: clock,
    )


def put_payment(world, payment: Payment) -> None:
    world.session.client("dynamodb").put_item(
        TableName=world.names.payments_table, Item=to_attributes(payment.to_item())
    )


def a_payment(
    provider: str = "stripe", resource_id: str = "pi_1", status: PaymentStatus = PaymentStatus.PENDING, **changes: Any
) -> Payment:
    payment = Payment(
        provider=provider,
        resource_id=resource_id,
        status=status,
        provider_status=status.value,
        amount=1000,
        currency="BRL",
        amount_refunded=0,
        version=1,
        transitions=1,
        last_event_at=None,
        last_event_id="evt_first",
        updated_at="2026-11-29T10:00:00.000000Z",
    )
    return payment.evolve(**changes) if changes else payment


def receive_all(world) -> list[dict[str, Any]]:
    sqs = world.session.client("sqs")
    messages: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=world.resources["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        if not batch:
            return messages
        messages.extend(batch)
        sqs.delete_message_batch(
            QueueUrl=world.resources["queue_url"],
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
        )


def handle_message(world, message: dict[str, Any], processor: EventProcessor) -> str:
    """One received SQS message through the processor Lambda's record handler."""
    return handle_record(QueueRecord(lambda_sqs_record(message, "arn:aws:sqs:us-east-1:123456789012:q")), processor)


class SerializedClient:
    """A DynamoDB client whose requests apply one at a time, as DynamoDB applies each request atomically (moto's
    in-process backend is not thread-safe; the local stack serializes the same way, see embedded_aws.py)."""

    def __init__(self, client: Any, lock: threading.Lock) -> None:
        self._client = client
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if name in ("update_item", "query", "get_item", "put_item"):

            def serialized(*args: Any, **kwargs: Any) -> Any:
                with self._lock:
                    return attribute(*args, **kwargs)

            return serialized
        return attribute
