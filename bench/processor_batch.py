"""Processor time per event: the real processor (shared/process/app.py's `process_batch`: its groups, its
coalescing, the real Stripe client with its rate limiter and circuit breaker) on batches of several payments,
refetching over HTTP from the gateway simulator, which answers every API request after GATEWAY_LATENCY_SECONDS.

What is measured is how the processor's round trips add up and overlap, not how fast a round trip is: on this
machine (2 cores shared by other work) moto's CPU per DynamoDB request outweighs a real one's latency by far, so
DynamoDB is a store that keeps the items in memory and waits DYNAMODB_LATENCY_SECONDS per request (the inbox read,
the payment read, the settling transaction; the limiter's conditional write, per refetch before and per batch
after; the breaker's read, cached for a second). Both latencies are assumptions, stated in the result: no gateway
publishes its API's round trip.
The store's semantics are the few the processor relies on here (pending -> processed | ignored, the payment's
version); the real one is tested against moto (tests/integration).

Two ways through the same batch shapes, interleaved so both see the same noise:
- before: one FIFO group at a time, one refetch per event, a rate-limit write per request (the processor without
  concurrent groups, coalescing or batch slots);
- after: up to MAX_CONCURRENT_GROUPS groups at once, one refetch per payment per batch (coalescing), the batch's
  rate-limit slots in one write per source (shared/gateway/ratelimit.py `BatchSlots`).
Batch shapes: `typical`, 3 events of 3 payments (item_sizes measures 2.97 events per batch, each of its own
payment); `burst`, 10 events of 4 payments (4 + 3 + 2 + 1), a full batch drawn from a backlog, where SQS FIFO
returns as many messages of one group as it can.

Reported per shape and way: milliseconds per event (the median batch's wall time over its events: a processor
invocation's billed duration, beyond its fixed overhead) and refetches per event, and after / before.

And the CPU in it, which a Lambda runs at a fraction of a core below 1,769 MB (the wall times above are this
machine's full cores plus the assumed waits): `own_cpu_ms_per_event`, the CPU the processor's threads spent per event
of the "after" batches (each group's thread CPU time; the gateway simulator's threads are not counted, nor is the
latency store's, which stands in for the SDK), and `sdk_cpu_ms_per_dynamodb_call`, what the AWS SDK client spends
per DynamoDB request (building, signing, sending, parsing: a real boto3 client's thread CPU time against a local
endpoint that answers at once with a canned item), which the latency store does not spend.
`python -m bench processor_batch` runs it alone (well under a minute).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock

GATEWAY_LATENCY_SECONDS = 0.1  # assumed: a refetch across the internet
DYNAMODB_LATENCY_SECONDS = 0.008  # assumed: one DynamoDB request from Lambda in the same Region
ROUNDS = 15  # batches per shape and way
SDK_CALLS = 300  # DynamoDB requests timed for the SDK's CPU per request (after 50 to warm the client)
SHAPES: dict[str, tuple[int, ...]] = {"typical": (1, 1, 1), "burst": (4, 3, 2, 1)}  # events per payment
PROVIDER = "stripe"
AMOUNT = 4990


class LatencyControlTable:
    """The control table of the rate limiter and the breaker: each request waits the latency; a slot is always
    free (the burst bench measures the limit itself)."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def update_item(self, **request: Any) -> dict[str, Any]:
        time.sleep(self.latency)
        # the schedule just past the slots taken (a busy write's `tat + :slots`), so the slots are due now
        taken = float(request.get("ExpressionAttributeValues", {}).get(":slots", {}).get("N", 0))
        return {"Attributes": {"tat": {"N": f"{time.time() + taken:.4f}"}}}

    def get_item(self, **_: Any) -> dict[str, Any]:
        time.sleep(self.latency)
        return {}


class LatencyStore:
    """ProcessingStore's calls the processor makes, on items in memory, each waiting the latency."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.dynamodb = None
        self.events: dict[str, dict[str, Any]] = {}
        self.payments: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _wait(self) -> None:
        time.sleep(self.latency)

    def load_event(self, pk: str, *, consistent: bool = True) -> dict[str, Any] | None:
        self._wait()
        with self._lock:
            item = self.events.get(pk)
            return dict(item) if item else None

    def load_payment(self, key: str, *, consistent: bool = True) -> Any:
        self._wait()
        with self._lock:
            return self.payments.get(key)

    def settle(
        self,
        event_pk: str,
        outcome: Any,
        *,
        now: str,
        note: str,
        payment: Any = None,
        expected_version: int | None = None,
        ignored_reason: Any = None,
        verify_item: Any = None,  # a payload confirmation's (this bench's processor confirms none)
        confirms: bool = False,
    ) -> None:
        from shared.inbox.store import EventAlreadySettled  # noqa: PLC0415
        from shared.payments.store import VersionConflict  # noqa: PLC0415

        self._wait()
        with self._lock:
            if self.events[event_pk]["status"] != "pending":
                raise EventAlreadySettled(event_pk)
            if payment is not None:
                stored = self.payments.get(payment.key)
                if (stored.version if stored else None) != expected_version:
                    raise VersionConflict(payment.key)
                self.payments[payment.key] = payment
            self.events[event_pk] |= {"status": outcome.value, "note": note, "processed_at": now}
            if ignored_reason is not None:
                self.events[event_pk]["ignored_reason"] = str(ignored_reason)

    def record_attempt(self, event_pk: str, error: str, *, now: str | None = None) -> int:
        raise AssertionError(f"no retry expected here: {error}")

    def mark_failed(self, event_pk: str, error: str, *, now: str, count_attempt: bool) -> None:
        raise AssertionError(f"no failure expected here: {error}")


class NoQueue:
    def delay(self, delivery: Any, seconds: int) -> None:
        raise AssertionError("no retry expected here")

    def release(self, receipt_handle: str) -> None:
        raise AssertionError("nothing skipped here")

    def dead_letter(self, delivery: Any) -> None:
        raise AssertionError("nothing dead-lettered here")


def _item(resource_id: str, event_id: str) -> dict[str, Any]:
    from shared.inbox.model import StoredBody, build_item  # noqa: PLC0415
    from shared.providers.base import NormalizedEvent, WebhookRequest  # noqa: PLC0415

    now = datetime.now(UTC)
    event = NormalizedEvent(
        event_id=event_id,
        event_type="payment_intent.amount_capturable_updated",
        resource_id=resource_id,
        occurred_at=now,
        provider_status="requires_capture",
        amount=AMOUNT,
        currency="USD",
    )
    return build_item(
        provider=PROVIDER,
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=b"{}", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0" * 64, size=2, inline=b"{}"),
        received_at=now,
        retention_days=30,
    )


def _batch(pks_by_payment: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """The batch as Lambda hands it over: each payment's events in its group, the groups interleaved."""
    order: list[tuple[str, str]] = []
    for position in range(max(len(pks) for _, pks in pks_by_payment)):
        order += [(resource_id, pks[position]) for resource_id, pks in pks_by_payment if position < len(pks)]
    records = [
        {
            "messageId": f"m{index}",
            "receiptHandle": f"r{index}",
            "body": json.dumps({"pk": pk}),
            "attributes": {"MessageGroupId": f"{PROVIDER}#{resource_id}", "ApproximateReceiveCount": "1"},
        }
        for index, (resource_id, pk) in enumerate(order)
    ]
    return {"Records": records}


class _CannedDynamoDB(BaseHTTPRequestHandler):
    """A DynamoDB endpoint that answers every request at once: GetItem with an inbox-sized item, the rest `{}`."""

    ITEM = json.dumps(
        {"Item": {"pk": {"S": "stripe#evt_1"}, "status": {"S": "pending"}, "body_zlib": {"B": "A" * 480}}}
    ).encode()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = self.ITEM if self.headers.get("X-Amz-Target", "").endswith("GetItem") else b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/x-amz-json-1.0")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def sdk_cpu_ms_per_dynamodb_call(calls: int = SDK_CALLS) -> float:
    """The AWS SDK client's CPU per DynamoDB request (this thread's CPU time: building, signing, sending, reading
    and parsing), over the processor's mix: a GetItem, a conditional UpdateItem, a three-item TransactWriteItems."""
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    server = ThreadingHTTPServer(("127.0.0.1", 0), _CannedDynamoDB)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = boto3.session.Session().client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{server.server_port}",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",  # noqa: S106 - a local endpoint that checks nothing
            config=Config(retries={"mode": "standard", "max_attempts": 1}),
        )
        key = {"pk": {"S": "stripe#evt_1"}}
        requests: list[Callable[[], Any]] = [
            lambda: client.get_item(TableName="inbox", Key=key),
            lambda: client.update_item(
                TableName="inbox",
                Key=key,
                UpdateExpression="SET #s = :s",
                ConditionExpression="#s = :p",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": {"S": "processed"}, ":p": {"S": "pending"}},
            ),
            lambda: client.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": "payments", "Item": {"pk": {"S": "stripe#pi_1"}, "version": {"N": "2"}}}},
                    {"Update": {"TableName": "inbox", "Key": key, "UpdateExpression": "REMOVE open_status"}},
                    {"Put": {"TableName": "outbox", "Item": {"pk": {"S": "stripe#pi_1"}, "sk": {"S": "2"}}}},
                ]
            ),
        ]
        for index in range(50):
            requests[index % len(requests)]()
        started = time.thread_time()
        for index in range(calls):
            requests[index % len(requests)]()
        return round((time.thread_time() - started) * 1000 / calls, 2)
    finally:
        server.shutdown()
        server.server_close()


class _GroupCpu:
    """The CPU time of the processor's group threads (shared/process/app.py `run_group`, wrapped while measuring)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._lock = threading.Lock()

    def wrap(self, run_group: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return run_group(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds += time.thread_time() - started

        return timed


def _client(simulator: Any, control: LatencyControlTable) -> Any:
    from shared.gateway.breaker import CircuitBreaker, GuardedClient  # noqa: PLC0415
    from shared.gateway.http import JsonHttpClient  # noqa: PLC0415
    from shared.gateway.ratelimit import RateLimiter  # noqa: PLC0415
    from shared.gateway.registry import client_class  # noqa: PLC0415

    factory, _ = client_class(PROVIDER)
    limiter = RateLimiter("control", PROVIDER, 1000.0, dynamodb=control)  # type: ignore[arg-type]
    http = JsonHttpClient(simulator.url, provider=PROVIDER, throttle=limiter)
    breaker = CircuitBreaker("control", PROVIDER, dynamodb=control)  # type: ignore[arg-type]
    return GuardedClient(factory(http, lambda: simulator.api_keys[PROVIDER] or ""), breaker)


def measure(
    rounds: int = ROUNDS, latency: float = GATEWAY_LATENCY_SECONDS, dynamodb_latency: float = DYNAMODB_LATENCY_SECONDS
) -> dict[str, Any]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from inbox_local.gateway_simulator import running_simulator  # noqa: PLC0415
    from inbox_local.gateway_simulator.faults import Faults  # noqa: PLC0415
    from shared.payments.status import PaymentStatus  # noqa: PLC0415
    from shared.process import app  # noqa: PLC0415
    from shared.process.app import MAX_CONCURRENT_GROUPS, process_batch  # noqa: PLC0415
    from shared.process.handlers import default_router  # noqa: PLC0415
    from shared.process.service import EventProcessor  # noqa: PLC0415

    results: dict[str, Any] = {}
    with running_simulator(seed=3, faults=Faults(slow_rate=1.0, slow_seconds=latency)) as simulator:
        store, control = LatencyStore(dynamodb_latency), LatencyControlTable(dynamodb_latency)
        client = _client(simulator, control)
        processor = EventProcessor(
            store,  # type: ignore[arg-type]
            default_router(lambda source: client if source == PROVIDER else None),
            NoQueue(),
            max_attempts=3,
            retry_base_seconds=1,
        )
        ways: dict[str, dict[str, Any]] = {
            "before": {"max_concurrent_groups": 1, "coalesce": False, "batch_slots": False},
            "after": {"coalesce": True},
        }
        serial = iter(range(10**9))
        for shape, sizes in SHAPES.items():
            timings: dict[str, list[float]] = {way: [] for way in ways}
            requests = dict.fromkeys(ways, 0)
            group_cpu = _GroupCpu()
            events = sum(sizes)
            for _ in range(rounds):
                for way, options in ways.items():
                    batch = []
                    for size in sizes:
                        # authorized: the intent's refetch is one GET (a paid one also reads its charge)
                        resource_id = simulator.create_payment(PROVIDER, AMOUNT, "USD")
                        simulator.transition(PROVIDER, resource_id, PaymentStatus.AUTHORIZED)
                        pks = []
                        for _ in range(size):
                            item = _item(resource_id, f"evt_{next(serial)}")
                            store.events[item["pk"]] = item
                            pks.append(item["pk"])
                        batch.append((resource_id, pks))
                    sent = simulator.stats().get("requests", 0)
                    measuring = way == "after"
                    started = time.perf_counter()
                    with (
                        mock.patch.object(app, "run_group", group_cpu.wrap(app.run_group))
                        if measuring
                        else nullcontext()
                    ):
                        response = process_batch(_batch(batch), None, processor, **options)
                    timings[way].append(time.perf_counter() - started)
                    assert response == {"batchItemFailures": []}, response
                    requests[way] += simulator.stats().get("requests", 0) - sent
            figures: dict[str, Any] = {
                way: {
                    "ms_per_event": round(statistics.median(timings[way]) * 1000 / events, 1),
                    "refetches_per_event": round(requests[way] / (rounds * events), 3),
                }
                for way in ways
            }
            figures["after_vs_before"] = round(figures["after"]["ms_per_event"] / figures["before"]["ms_per_event"], 3)
            figures["after"]["own_cpu_ms_per_event"] = round(group_cpu.seconds * 1000 / (rounds * events), 2)
            results[shape] = {"events_per_batch": events, "payments_per_batch": len(sizes), **figures}
    results["sdk_cpu_ms_per_dynamodb_call"] = sdk_cpu_ms_per_dynamodb_call()
    # The bench process's peak resident memory: the processor with its clients and a batch's threads, and the gateway
    # simulator and the latency store beside them in the same process: an upper bound of what the processor needs.
    results["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    results["scenario"] = {
        "gateway_latency_ms_assumed": round(latency * 1000),
        "dynamodb_latency_ms_assumed": round(dynamodb_latency * 1000),
        "rounds": rounds,
        "max_concurrent_groups": MAX_CONCURRENT_GROUPS,
    }
    return results
