"""Test support for the processor: an in-memory gateway, a recording queue, and event storage shortcuts."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from shared.gateway.base import GatewayUnavailable, PaymentSnapshot, ResourceNotFound
from shared.inbox.model import StoredBody, build_item, event_key
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.handlers import default_router
from shared.process.messages import Delivery, DispatchMessage
from shared.process.service import EventProcessor, Outcome
from shared.providers.base import NormalizedEvent, WebhookRequest
from shared.sub_account import SubAccount


class FakeGateway:
    """The gateway's truth, in memory, with switchable failures. Counts every fetch."""

    provider = "stripe"

    def __init__(self) -> None:
        self.truth: dict[str, PaymentSnapshot] = {}
        self.fetches = 0
        self.failure: Exception | None = None
        self._lock = threading.Lock()

    def set(self, resource_id: str, status: PaymentStatus, amount: int = 1000, refunded: int = 0) -> None:
        self.truth[resource_id] = PaymentSnapshot(resource_id, status, status.value, amount, "BRL", refunded)

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        with self._lock:
            self.fetches += 1
        if self.failure is not None:
            raise self.failure
        if resource_id not in self.truth:
            raise ResourceNotFound(resource_id)
        return self.truth[resource_id]


@dataclass
class RecordingQueue:
    delays: list[tuple[str, int]] = field(default_factory=list)
    dead_letters: list[str] = field(default_factory=list)

    def delay(self, delivery: Delivery, seconds: int) -> None:
        self.delays.append((delivery.body, seconds))

    def release(self, receipt_handle: str) -> None:
        self.delays.append((receipt_handle, 0))

    def dead_letter(self, delivery: Delivery) -> None:
        self.dead_letters.append(delivery.body)


_counter = itertools.count()
BASE_TIME = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def store_event(
    names,
    *,
    provider: str = "stripe",
    event_id: str | None = None,
    resource_id: str | None = "pi_1",
    event_type: str = "payment_intent.succeeded",
    status: str | None = "paid",
    amount: int | None = 1000,
    occurred_at: datetime | None = None,
    account: SubAccount | None = None,
) -> str:
    event_id = event_id or f"evt_{next(_counter)}"
    event = NormalizedEvent(
        event_id=event_id,
        event_type=event_type,
        resource_id=resource_id,
        occurred_at=occurred_at or BASE_TIME,
        provider_status=status,
        amount=amount,
        currency="BRL" if amount is not None else None,
        account=account,
    )
    item = build_item(
        provider=provider,
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=b"{}", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0", size=2, inline=b"{}"),
        received_at=BASE_TIME + timedelta(seconds=1),
        retention_days=30,
    )
    InboxStore(names.inbox_table).put_new(item)
    return event_key(provider, event_id)


def message_for(pk: str) -> tuple[DispatchMessage, Delivery]:
    body = f'{{"pk": "{pk}"}}'
    return DispatchMessage(pk=pk), Delivery(receipt_handle="r", message_group_id="g", receive_count=1, body=body)


def make_processor(names, gateway: FakeGateway, queue: RecordingQueue, *, max_attempts: int = 3) -> EventProcessor:
    return EventProcessor(
        ProcessingStore(names.inbox_table, names.payments_table),
        default_router(lambda provider: gateway if provider in ("stripe", "asaas") else None),
        queue,
        max_attempts=max_attempts,
        retry_base_seconds=1,
    )


def run(processor: EventProcessor, pk: str) -> Outcome:
    return processor.handle(*message_for(pk))


__all__ = ["GatewayUnavailable"]
