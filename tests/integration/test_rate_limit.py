"""The refetch rate limit shared through the control table (moto), with real threads and the real clock: two
processor instances (each its own limiter and HTTP client, as two Lambda instances) refetching from the gateway
simulator never exceed the source's rate over any second, spend no attempt waiting, and every payment matches;
a batch takes its slots in one write (shared/gateway/ratelimit.py `BatchSlots`), two instances' batches at once
stay within the rate all the same."""

from __future__ import annotations

import json
import threading
import time
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
import urllib3
from moto.dynamodb.models import DynamoDBBackend

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from shared.gateway.http import JsonHttpClient
from shared.gateway.ratelimit import RateLimiter, Slot
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.app import process_batch
from shared.process.handlers import default_router
from shared.process.service import EventProcessor, Outcome, RetryLater
from shared.providers.stripe.client import StripeClient
from tests.integration.processing_support import RecordingQueue, run, store_event
from tests.integration.test_coalescing import record

RATE = 20.0
BURST = 2
# Above burst + rate in one second: the limiter's busy write admits "at the price of at most one request early"
# (shared/gateway/ratelimit.py: the idle and busy writes overlap by one interval).
ONE_EARLY = 1
# A request released more than this after its slot's last moment (`Slot.not_after`) went out late: its thread was
# not scheduled in time (the two cores of `make check` shared by eight such threads, moto and the other worker).
LATE_SECONDS = 0.01
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


@dataclass(frozen=True)
class Released:
    slot: Slot
    at: float  # epoch seconds, when its request was let go (after the sleep for its turn)


class SlotLog:
    """Every slot the instances' limiters handed to a request, and when the request was let go: what the limiter
    decides, apart from when the machine got round to sending."""

    def __init__(self) -> None:
        self.released: list[Released] = []
        self._lock = threading.Lock()

    def watch(self, limiter: RateLimiter) -> None:
        wait_for = limiter.wait_for

        def recorded(slot: Slot) -> float:
            slept = wait_for(slot)
            with self._lock:
                self.released.append(Released(slot, limiter.now()))
            return slept

        limiter.wait_for = recorded  # type: ignore[method-assign]

    def late(self) -> list[Released]:
        return [r for r in self.released if r.at > r.slot.not_after + LATE_SECONDS]


def most_in_one_second(times: list[float]) -> int:
    """The most of `times` in any window [t, t + 1 s) (times stored to 0.1 ms: the window's end is kept clear)."""
    ordered = sorted(times)
    return max((bisect_left(ordered, t + 1 - 1e-3) - index for index, t in enumerate(ordered)), default=0)


def assert_within_the_rate(log: SlotLog, simulator: GatewaySimulator) -> None:
    """The shared schedule never handed out more than burst + rate (+ one early) slots in any second, every request
    the gateway saw had one, and the gateway counted no more than that in its worst second, but for requests sent
    late (their threads starved of CPU: a client-side limiter cannot send on time for a machine that does not run it).
    """
    bound = RATE + BURST + ONE_EARLY
    assert most_in_one_second([r.slot.not_before for r in log.released]) <= bound
    seconds = simulator.rate_stats()["seconds"]
    assert sum(s["requests"] for s in seconds) == len(log.released)
    late = log.late()
    worst = max(s["requests"] for s in seconds)
    assert worst <= bound + len(late), f"{worst} in one second, {len(late)} of {len(log.released)} sent late"


def instance(world: Any, simulator: GatewaySimulator, log: SlotLog) -> tuple[EventProcessor, RecordingQueue]:
    """One processor instance: its own limiter object, HTTP pool and client, sharing only the control table."""
    dynamodb = boto3.client("dynamodb")
    limiter = RateLimiter(world.names.control_table, "stripe", RATE, burst=BURST, dynamodb=dynamodb)
    log.watch(limiter)
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
    log = SlotLog()
    first, first_queue = instance(aws_world, gateway, log)
    second, second_queue = instance(aws_world, gateway, log)

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

    # And neither the shared schedule nor the gateway saw more than the burst plus one second's rate in any second
    assert_within_the_rate(log, gateway)
    requests = len(log.released)
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


def paid_events(world: Any, simulator: GatewaySimulator, count: int) -> list[dict[str, Any]]:
    """`count` paid payments at the gateway, each with its webhook in the inbox: their queue records."""
    records = []
    for _ in range(count):
        resource_id = simulator.create_payment("stripe", 1000, "BRL")
        simulator.advance_to("stripe", resource_id, PaymentStatus.PAID)
        pk = store_event(world.names, resource_id=resource_id, status="paid", amount=1000)
        records.append(record(pk, f"stripe#{resource_id}"))
    return records


def limiter_counts(world: Any) -> tuple[int, int]:
    item = boto3.client("dynamodb").get_item(
        TableName=world.names.control_table, Key={"pk": {"S": "ratelimit#stripe"}}
    )["Item"]
    return int(item["admitted"]["N"]), int(item["writes"]["N"])


def test_a_batch_of_several_payments_takes_its_slots_in_one_write(aws_world, gateway, atomic_writes):
    # Given four paid payments of one source, a webhook each, in one FIFO batch (a group per payment)
    records = paid_events(aws_world, gateway, 4)
    processor, _ = instance(aws_world, gateway, SlotLog())

    # When the processor handles the batch (every group at once)
    response = process_batch({"Records": records}, None, processor)

    # Then every event is processed, with one request each to the gateway and one control-table write in all
    assert response == {"batchItemFailures": []}
    assert sum(s["requests"] for s in gateway.rate_stats()["seconds"]) == 4
    assert limiter_counts(aws_world) == (4, 1)
    # And a batch of five payments, all five groups at once, takes its five slots in one write too
    records = paid_events(aws_world, gateway, 5)
    assert process_batch({"Records": records}, None, processor) == {"batchItemFailures": []}
    assert limiter_counts(aws_world) == (9, 2)
    # And with fewer workers than groups, a fifth payment started when one of the first four finished gathers
    # again: two writes for five
    records = paid_events(aws_world, gateway, 5)
    assert process_batch({"Records": records}, None, processor, max_concurrent_groups=4) == {"batchItemFailures": []}
    assert limiter_counts(aws_world) == (14, 4)


def test_two_instances_processing_batches_at_once_keep_the_source_within_its_rate(aws_world, gateway, atomic_writes):
    # Given 40 paid payments, a webhook each, in batches of five payments
    records = paid_events(aws_world, gateway, 40)
    batches = [records[start : start + 5] for start in range(0, len(records), 5)]
    log = SlotLog()
    instances = [instance(aws_world, gateway, log), instance(aws_world, gateway, log)]
    lock = threading.Lock()
    rounds = 0

    def work(processor: EventProcessor) -> None:
        nonlocal rounds
        while True:
            with lock:
                if not batches or rounds > 200:
                    return
                batch, rounds = batches.pop(0), rounds + 1
            failed = {
                f["itemIdentifier"] for f in process_batch({"Records": batch}, None, processor)["batchItemFailures"]
            }
            if failed:  # told to wait (the visibility delay, shortened: the test is about the rate, not the queue)
                time.sleep(0.1)
                with lock:
                    batches.append([r for r in batch if r["messageId"] in failed])

    # When two processor instances, two batches at a time each, process them all
    threads = [threading.Thread(target=work, args=(processor,)) for processor, _ in instances for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    # Then every event is processed in one attempt (waiting was never an attempt)
    inbox = InboxStore(aws_world.names.inbox_table)
    items = [inbox.get(json.loads(r["body"])["pk"]) or {} for r in records]
    assert {(item.get("status"), item.get("attempts")) for item in items} == {("processed", 1)}
    # And neither the shared schedule nor the gateway saw more than the burst plus one second's rate in any second
    assert_within_the_rate(log, gateway)  # which holds that the gateway saw one request for each slot released
    # And the slots took fewer writes than requests
    admitted, writes = limiter_counts(aws_world)
    assert admitted >= len(log.released) > writes
