"""The refetch rate limit shared through the control table (moto), with real threads and the real clock: two
processor instances (each its own limiter and HTTP client, as two Lambda instances) refetching from the gateway
simulator never exceed the source's rate over any second, spend no attempt waiting, and every payment matches."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import urllib3
from moto.dynamodb.models import DynamoDBBackend

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.http import JsonHttpClient
from shared.gateway.ratelimit import RateLimiter
from shared.gateway.stripe import StripeClient
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.handlers import default_router
from shared.process.service import EventProcessor, Outcome, RetryLater
from tests.integration.processing_support import RecordingQueue, run, store_event

RATE = 20.0
BURST = 2
EVENTS = 60
THREADS_PER_INSTANCE = 4

_WRITES = threading.Lock()
_moto_update_item = DynamoDBBackend.update_item


def _atomic_update_item(self: DynamoDBBackend, *args: Any, **kwargs: Any) -> Any:
    """DynamoDB applies a conditional write to one item atomically; moto checks and writes without a lock, so two
    threads could both pass one condition. Serialized here, as the local stack's embedded AWS does."""
    with _WRITES:
        return _moto_update_item(self, *args, **kwargs)


@pytest.fixture
def atomic_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DynamoDBBackend, "update_item", _atomic_update_item)


@pytest.fixture
def gateway() -> Iterator[GatewaySimulator]:
    with running_simulator(seed=5) as simulator:
        yield simulator


def instance(world: Any, simulator: GatewaySimulator) -> tuple[EventProcessor, RecordingQueue]:
    """One processor instance: its own limiter object, HTTP pool and client, sharing only the control table."""
    dynamodb = boto3.client("dynamodb")
    limiter = RateLimiter(world.names.control_table, "stripe", RATE, burst=BURST, dynamodb=dynamodb)
    http = JsonHttpClient(
        simulator.url, provider="stripe", pool=urllib3.PoolManager(maxsize=8, retries=False), throttle=limiter
    )
    key = simulator.api_keys["stripe"] or ""
    client = StripeClient(http, lambda: key)
    queue = RecordingQueue()
    processor = EventProcessor(
        ProcessingStore(world.names.inbox_table, world.names.payments_table),
        default_router(lambda provider: client if provider == "stripe" else None),
        queue,
        max_attempts=2,  # a wait counted by mistake would fail events quickly
        retry_base_seconds=1,
    )
    return processor, queue


def drain(processors: list[EventProcessor], pks: list[str]) -> dict[str, Outcome]:
    """Every event through the processors, THREADS_PER_INSTANCE threads each; a RetryLater comes back after a
    short pause (the visibility delay, shortened: the test is about the rate, not the queue)."""
    todo = list(pks)
    outcomes: dict[str, Outcome] = {}
    lock = threading.Lock()

    def work(processor: EventProcessor) -> None:
        while True:
            with lock:
                if not todo:
                    return
                pk = todo.pop(0)
            try:
                outcome = run(processor, pk)
            except RetryLater:
                time.sleep(0.1)
                with lock:
                    todo.append(pk)
                continue
            with lock:
                outcomes[pk] = outcome

    threads = [
        threading.Thread(target=work, args=(processor,))
        for processor in processors
        for _ in range(THREADS_PER_INSTANCE)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def test_two_instances_sharing_the_control_table_keep_the_source_within_its_rate(aws_world, gateway, atomic_writes):
    # Given 60 paid payments at the gateway, each with its webhook in the inbox
    pks = []
    for _ in range(EVENTS):
        resource_id = gateway.create_payment("stripe", 1000, "BRL")
        gateway.advance_to("stripe", resource_id, PaymentStatus.PAID)
        pks.append(store_event(aws_world.names, resource_id=resource_id, status="paid", amount=1000))
    first, first_queue = instance(aws_world, gateway)
    second, second_queue = instance(aws_world, gateway)

    # When two processor instances with four threads each refetch them all at once
    started = time.monotonic()
    outcomes = drain([first, second], pks)
    elapsed = time.monotonic() - started

    # Then every event is processed in one attempt (none was spent waiting), and every payment matches the gateway
    assert len(outcomes) == EVENTS and set(outcomes.values()) == {Outcome.PROCESSED}
    inbox = InboxStore(aws_world.names.inbox_table)
    attempts = {pk: (inbox.get(pk) or {}).get("attempts") for pk in pks}
    assert attempts == dict.fromkeys(pks, 1)  # the one that applied it
    store = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    for truth in gateway.payments():
        stored = store.load_payment(f"stripe#{truth['resource_id']}")
        assert stored is not None and stored.status.value == truth["status"]

    # And the gateway never saw more than the burst plus one second's rate in any second
    seconds = gateway.rate_stats()["seconds"]
    requests = sum(s["requests"] for s in seconds)
    assert max(s["requests"] for s in seconds) <= RATE + BURST
    # And the whole run took at least what the rate allows (the limit was really in force)
    assert elapsed >= (requests - BURST) / RATE * 0.95
    # And every request took a slot of the shared schedule, one conditional write each (a slot is taken before
    # connecting, so a request that never reached the gateway used one too: at least as many slots as requests)
    item = boto3.client("dynamodb").get_item(
        TableName=aws_world.names.control_table, Key={"pk": {"S": "ratelimit#stripe"}}
    )["Item"]
    assert int(item["admitted"]["N"]) >= requests
    # And with 8 requesters and a second of reservations (20 slots) they took turns in process: at most a few were
    # sent back to the queue (only when the schedule moved under a slow write several times in a row)
    assert len(first_queue.delays) + len(second_queue.delays) <= EVENTS // 10
