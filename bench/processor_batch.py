"""Processor time per event: the real processor (shared/process/app.py's `process_batch`, the real Stripe client
with its rate limiter and circuit breaker on the control table) on in-process moto, refetching from the gateway
simulator, which answers every API request only after GATEWAY_LATENCY_SECONDS.

The latency is an assumption, not a measurement: no gateway publishes its API's round trip, and a local simulator
has none; 100 ms stands for a refetch across the internet. DynamoDB is in-process moto (its calls cost CPU here, not
a network round trip), so the figure is the gateway-bound part of a processor invocation's billed duration.

Two ways through the same batches, interleaved so both see the same noise:
- before: one FIFO group at a time, one refetch per event (what the processor did before issue 15's cut);
- after: up to MAX_CONCURRENT_GROUPS groups at once, one refetch per payment per batch (coalescing).
Batch shapes:
- `typical`: 3 events of 3 payments (the cost model's 2.97 events per batch, measured by item_sizes, are events of
  different payments: the local stack's batches rarely hold two of one payment);
- `burst`: 10 events of 4 payments (4 + 3 + 2 + 1), a full batch out of a backlog, where SQS FIFO returns as many
  messages of one group as it can.

Reported per shape and way: the median batch's milliseconds per event, refetches per event, and after/before.
`python -m bench processor_batch` runs it alone (about a minute).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

GATEWAY_LATENCY_SECONDS = 0.1
ROUNDS = 12  # batches per shape and way
SHAPES: dict[str, tuple[int, ...]] = {"typical": (1, 1, 1), "burst": (4, 3, 2, 1)}  # events per payment
PROVIDER = "stripe"
AMOUNT = 4990
REFETCH_RATE = 1000.0  # the source's refetch rate here: high enough never to wait (the burst bench measures that)


def _stored_event(names: Any, resource_id: str, event_id: str) -> str:
    from shared.inbox.model import StoredBody, build_item, event_key  # noqa: PLC0415
    from shared.inbox.store import InboxStore  # noqa: PLC0415
    from shared.providers import NormalizedEvent, WebhookRequest  # noqa: PLC0415

    now = datetime.now(UTC)
    event = NormalizedEvent(
        event_id=event_id,
        event_type="payment_intent.succeeded",
        resource_id=resource_id,
        occurred_at=now,
        provider_status="succeeded",
        amount=AMOUNT,
        currency="USD",
    )
    item = build_item(
        provider=PROVIDER,
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=b"{}", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0" * 64, size=2, inline=b"{}"),
        received_at=now,
        retention_days=30,
    )
    InboxStore(names.inbox_table).put_new(item)
    return event_key(PROVIDER, event_id)


def _batch(pks_by_payment: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """The batch as Lambda hands it over: each payment's events in its group, the groups interleaved."""
    records, order = [], []
    longest = max(len(pks) for _, pks in pks_by_payment)
    for position in range(longest):
        order += [(resource_id, pks[position]) for resource_id, pks in pks_by_payment if position < len(pks)]
    for index, (resource_id, pk) in enumerate(order):
        records.append(
            {
                "messageId": f"m{index}-{pk}",
                "receiptHandle": f"r-{pk}",
                "body": json.dumps({"pk": pk}),
                "attributes": {"MessageGroupId": f"{PROVIDER}#{resource_id}", "ApproximateReceiveCount": "1"},
            }
        )
    return {"Records": records}


def measure(rounds: int = ROUNDS, latency: float = GATEWAY_LATENCY_SECONDS) -> dict[str, Any]:
    os.environ.update(
        {
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "b",
            "AWS_SECRET_ACCESS_KEY": "b",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
    )
    from moto import mock_aws  # noqa: PLC0415
    from moto.dynamodb.responses import DynamoHandler  # noqa: PLC0415

    from inbox_local.config import LocalNames, function_environment  # noqa: PLC0415
    from inbox_local.gateway_simulator import running_simulator  # noqa: PLC0415
    from inbox_local.gateway_simulator.faults import Faults  # noqa: PLC0415
    from inbox_local.resources import provision  # noqa: PLC0415
    from shared.definitions import ENV_SOURCES  # noqa: PLC0415

    names = LocalNames()
    os.environ.update(function_environment(names))
    os.environ[ENV_SOURCES] = json.dumps(
        [{"name": PROVIDER, "provider": PROVIDER, "refetch_rate_per_second": REFETCH_RATE}]
    )
    results: dict[str, Any] = {}
    # One DynamoDB request at a time, as DynamoDB applies each atomically and as the local stack's embedded AWS
    # serializes them (inbox_local/embedded_aws.py): moto's backend is not thread-safe, the processor's groups are.
    lock, call_action = threading.RLock(), DynamoHandler.call_action

    def atomic(handler: Any) -> Any:
        with lock:
            return call_action(handler)

    DynamoHandler.call_action = atomic  # type: ignore[method-assign]
    with mock_aws(), running_simulator(seed=3, faults=Faults(slow_rate=1.0, slow_seconds=latency)) as simulator:
        import boto3  # noqa: PLC0415

        from shared import aws  # noqa: PLC0415
        from shared.gateway.registry import reset_gateway_clients  # noqa: PLC0415
        from shared.payments.status import PaymentStatus  # noqa: PLC0415
        from shared.process.app import MAX_CONCURRENT_GROUPS, default_processor, process_batch  # noqa: PLC0415

        resources = provision(boto3.session.Session(), names)
        os.environ.update(simulator.environment())
        os.environ["INBOX_QUEUE_URL"], os.environ["INBOX_DLQ_URL"] = (
            resources["queue_url"],
            resources["dead_letter_url"],
        )
        aws.reset_clients()
        reset_gateway_clients()
        default_processor.cache_clear()
        processor = default_processor()
        ways = {"before": {"max_concurrent_groups": 1, "coalesce": False}, "after": {"coalesce": True}}
        serial = iter(range(10**9))
        for shape, sizes in SHAPES.items():
            timings: dict[str, list[float]] = {way: [] for way in ways}
            requests: dict[str, int] = dict.fromkeys(ways, 0)
            events = sum(sizes)
            for _ in range(rounds):
                for way, options in ways.items():
                    batch = []
                    for size in sizes:
                        # A payment whose refetch is one GET (authorized: no charge to read), its events about it
                        resource_id = simulator.create_payment(PROVIDER, AMOUNT, "USD")
                        simulator.transition(PROVIDER, resource_id, PaymentStatus.AUTHORIZED)
                        pks = [_stored_event(names, resource_id, f"evt_{next(serial)}") for _ in range(size)]
                        batch.append((resource_id, pks))
                    before = simulator.stats().get("requests", 0)
                    started = time.perf_counter()
                    response = process_batch(_batch(batch), None, processor, **options)  # type: ignore[arg-type]
                    timings[way].append(time.perf_counter() - started)
                    assert response == {"batchItemFailures": []}, response
                    requests[way] += simulator.stats().get("requests", 0) - before
            figures = {
                way: {
                    "ms_per_event": round(statistics.median(timings[way]) * 1000 / events, 1),
                    "refetches_per_event": round(requests[way] / (rounds * events), 3),
                }
                for way in ways
            }
            figures["after_vs_before"] = round(figures["after"]["ms_per_event"] / figures["before"]["ms_per_event"], 3)
            results[shape] = {"events_per_batch": events, "payments_per_batch": len(sizes), **figures}
        results["scenario"] = {
            "gateway_latency_ms": round(latency * 1000),
            "rounds": rounds,
            "max_concurrent_groups": MAX_CONCURRENT_GROUPS,
            "dynamodb": "in-process moto, one request at a time (CPU, no network round trip)",
        }
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    return results
