"""A Black Friday burst against a rate-limited gateway: does the refetch stay within the gateway's limit, and does
everything still drain with nothing failed?

- A local stack of its own (bench/end_to_end.py's `own_stack`) whose `stripe` source is declared with
  `refetch_rate_per_second: LIMIT` (a sources.json of its own, INBOX_SOURCES_FILE), and whose gateway simulator
  answers 429 (with Retry-After) above LIMIT requests per second (`POST /_sim/faults {"rate_limit_per_second"}`).
- PAYMENTS Stripe payments created at the simulator (each taken to a status whose refetch is one GET: pending,
  authorized, failed or canceled), and EVENTS signed webhooks about them (EVENTS / PAYMENTS each, every one an
  event of its own, a payment's one after the other: TOGETHER), posted by SENDERS connections as fast as the stack
  answers.
- Reported: the requests the gateway saw per second (max and p99, over the seconds it saw any), the 429s it
  answered, the time from the first POST to the last event settled, the events failed (must be 0), the payments
  that differ from the simulator's truth (must be 0), the attempts per event, the refetches per event (below 1 when
  one refetch served several events of a payment in one batch: coalescing, shared/process/coalesce.py), and the
  limiter's own counts: slots taken (`admitted`) and the conditional writes that took them (`writes`: a batch's
  requests to the source gathered into one, shared/gateway/ratelimit.py `BatchSlots`).
- Baseline, same run: the drain time the limit allows at best, (requests the gateway saw) / LIMIT. The figure is
  the ratio; nothing asserts a wall-clock time.

`python -m bench refetch_burst` runs it alone (about two minutes at the defaults: 2,000 requests at 20/s is 100 s
of refetching by construction).
"""

from __future__ import annotations

import http.client
import json
import queue
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.end_to_end import Stack, own_stack
from bench.stats import percentile

PAYMENTS = 200
EVENTS = 2000
LIMIT = 20.0
SENDERS = 8
SEED = 12
SETTLE_TIMEOUT_SECONDS = 1800  # a loaded 2-core machine settles ~1 event/s: the run says ok false, not hang
STATUSES = ("pending", "authorized", "failed", "canceled")  # one GET each (a paid intent also reads its charge)
PROVIDER = "stripe"
# A payment's events posted one after the other. What SQS FIFO does with a backlog in AWS ("attempts to return as
# many messages with the same message group ID as possible", FIFO delivery logic page, docs/scale.md): a batch
# gathers a group's messages wherever they are in the queue. moto hands messages out in queue order, so here a
# payment's events reach one batch only when they were queued together.
TOGETHER = True


def _call(port: int, method: str, path: str, payload: Any = None) -> Any:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = None if payload is None else json.dumps(payload)
        connection.request(method, path, body, {"content-type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{method} {path} answered {response.status}: {data[:200]!r}")
        return json.loads(data)
    finally:
        connection.close()


def create_payments(stack: Stack, count: int, rng: random.Random) -> list[tuple[str, str, int]]:
    """(resource id, status, amount) of `count` new payments at the simulator."""
    created = []
    for _ in range(count):
        status, amount = rng.choice(STATUSES), rng.choice((990, 4990, 25050))
        answer = _call(
            stack.gateway_port, "POST", "/_sim/payments", {"provider": PROVIDER, "amount": amount, "status": status}
        )
        created.append((answer["id"], status, amount))
    return created


Delivery = Callable[[], tuple[bytes, dict[str, str]]]


def webhooks(
    payments: list[tuple[str, str, int]], events: int, run_id: str, *, together: bool = True
) -> list[Delivery]:
    """`events` Stripe deliveries, as many for each payment, each with an event id of its own: a payment's events one
    after the other (`together`), or each payment's `len(payments)` deliveries apart. Each is signed when it is
    sent, as a gateway does: signed all at once, the last ones of a slow run fell outside the signature's 300 s
    timestamp tolerance and were refused (401), which measured the machine's load, not the refetch."""
    from inbox_cli.simulate import wire  # noqa: PLC0415
    from inbox_local.config import signing_secret  # noqa: PLC0415

    secret, now = signing_secret(PROVIDER), int(time.time())

    def delivery(body: bytes) -> Delivery:
        def sign() -> tuple[bytes, dict[str, str]]:
            request = wire.signed(PROVIDER, body, secret, event_time=int(time.time()), ordered_by_event_time=False)
            return request.body, {"content-type": "application/json", **request.headers}

        return sign

    deliveries = []
    for index in range(events):
        payment = index * len(payments) // events if together else index % len(payments)
        resource_id, status, amount = payments[payment]
        body = wire.sample_body(
            PROVIDER,
            event_id=f"evt_{run_id}_{index}",
            resource_id=resource_id,
            status=status,
            amount=amount,
            occurred_at=now,
        )
        deliveries.append(delivery(body))
    return deliveries


def post_one(
    stack: Stack, connection: http.client.HTTPConnection, body: bytes, headers: dict[str, str]
) -> tuple[int, http.client.HTTPConnection]:
    """POST one delivery to the stack's front door, retried as a gateway would on a 5xx or a dropped connection;
    (the last answer's status, 0 for none; the connection to go on with, a new one after a dropped one)."""
    status = 0
    for _ in range(5):
        try:
            connection.request("POST", f"/webhooks/{PROVIDER}", body, headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=60)
            status = 0
        if 200 <= status < 500:
            break
        time.sleep(0.2)
    return status, connection


def post_all(stack: Stack, deliveries: list[Delivery], senders: int) -> Counter[int]:
    jobs: queue.Queue[Delivery | None] = queue.Queue()
    for job in deliveries:
        jobs.put(job)
    for _ in range(senders):
        jobs.put(None)
    answers: Counter[int] = Counter()
    lock = threading.Lock()

    def send() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=60)
        while (job := jobs.get()) is not None:
            body, headers = job()
            status, connection = post_one(stack, connection, body, headers)
            with lock:
                answers[status] += 1
        connection.close()

    threads = [threading.Thread(target=send, name=f"refetch-burst-send-{n}") for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def event_items(stack: Stack, run_id: str, events: int) -> list[dict[str, Any]]:
    return inbox_items(stack, PROVIDER, [f"evt_{run_id}_{index}" for index in range(events)])


def inbox_items(stack: Stack, source: str, event_ids: list[str]) -> list[dict[str, Any]]:
    """The inbox items (key, status, attempts) of a source's events, those stored so far."""
    from inbox_local.config import LocalNames  # noqa: PLC0415
    from shared.inbox.model import event_key  # noqa: PLC0415

    dynamodb, table, items = stack.dynamodb(), LocalNames().inbox_table, []
    keys = [event_key(source, event_id) for event_id in event_ids]
    for start in range(0, len(keys), 100):
        request: dict[str, Any] = {
            table: {
                "Keys": [{"pk": {"S": key}} for key in keys[start : start + 100]],
                "ConsistentRead": True,
                "ProjectionExpression": "pk, #s, attempts",
                "ExpressionAttributeNames": {"#s": "status"},
            }
        }
        while request:
            response = dynamodb.batch_get_item(RequestItems=request)
            items += response["Responses"].get(table, [])
            request = dict(response.get("UnprocessedKeys") or {})
    return items


def wait_until_settled(stack: Stack, run_id: str, events: int, timeout: float) -> tuple[float, list[dict[str, Any]]]:
    """Poll until every event is stored and none is pending; (when, the items)."""
    deadline = time.monotonic() + timeout
    while True:
        items = event_items(stack, run_id, events)
        settled = [i for i in items if i["status"]["S"] != "pending"]
        if len(settled) == events or time.monotonic() > deadline:
            return time.perf_counter(), items
        time.sleep(0.5)


def mismatches(stack: Stack, truths: list[dict[str, Any]], ids: set[str]) -> list[str]:
    from inbox_local.config import LocalNames  # noqa: PLC0415

    dynamodb, table, wrong = stack.dynamodb(), LocalNames().payments_table, []
    for truth in truths:
        if truth["provider"] != PROVIDER or truth["resource_id"] not in ids:
            continue
        item = dynamodb.get_item(
            TableName=table, Key={"pk": {"S": f"{PROVIDER}#{truth['resource_id']}"}}, ConsistentRead=True
        ).get("Item")
        seen = None if item is None else (item["status"]["S"], int(item["amount"]["N"]))
        if seen != (truth["status"], truth["amount"]):
            wrong.append(truth["resource_id"])
    return wrong


def limiter_item(stack: Stack) -> dict[str, Any]:
    from inbox_local.config import LocalNames  # noqa: PLC0415

    item = (
        stack.dynamodb()
        .get_item(TableName=LocalNames().control_table, Key={"pk": {"S": f"ratelimit#{PROVIDER}"}}, ConsistentRead=True)
        .get("Item")
        or {}
    )
    # admitted: slots taken; writes: the conditional writes that took them (a batch's requests gathered into one)
    return {name: float(item[name]["N"]) for name in ("admitted", "writes", "throttled") if name in item}


def figures(
    per_second: list[dict[str, Any]], items: list[dict[str, Any]], *, events: int, limit: float, seconds: float
) -> dict[str, Any]:
    """The section's figures from the simulator's per-second counts and the events' items."""
    counts = [s["requests"] for s in per_second if s["provider"] == PROVIDER]
    requests, throttled = sum(counts), sum(s["throttled"] for s in per_second if s["provider"] == PROVIDER)
    statuses = Counter(item["status"]["S"] for item in items)
    attempts = Counter(int(item.get("attempts", {}).get("N", 0)) for item in items)
    ideal = max(0.0, (requests - throttled) / limit)
    return {
        "gateway_requests": requests,
        "gateway_requests_per_event": round(requests / events, 3) if events else 0.0,
        # Each payment here is read with one GET (STATUSES): the answered requests are the refetches.
        "refetches_per_event": round((requests - throttled) / events, 3) if events else 0.0,
        "gateway_per_second_max": max(counts, default=0),
        "gateway_per_second_p99": round(percentile(counts, 99), 1) if counts else 0.0,
        "gateway_429s": throttled,
        "drain_seconds": round(seconds, 1),
        "ideal_drain_seconds": round(ideal, 1),
        "drain_vs_ideal": round(seconds / ideal, 3) if ideal else 0.0,
        "statuses": dict(statuses),
        "failed": statuses.get("failed", 0),
        "pending": statuses.get("pending", 0) + (events - len(items)),
        "attempts_per_event": {str(k): v for k, v in sorted(attempts.items())},
    }


def measure(
    payments: int = PAYMENTS, events: int = EVENTS, limit: float = LIMIT, *, together: bool = TOGETHER
) -> dict[str, Any]:
    rng = random.Random(SEED)
    run_id = f"{int(time.time())}{rng.randrange(10**6)}"
    with tempfile.TemporaryDirectory(prefix="inbox-refetch-burst-") as folder:
        sources = Path(folder) / "sources.json"
        sources.write_text(json.dumps([{"name": PROVIDER, "provider": PROVIDER, "refetch_rate_per_second": limit}]))
        with own_stack({"INBOX_SOURCES_FILE": str(sources)}) as stack:
            _call(stack.gateway_port, "POST", "/_sim/faults", {"rate_limit_per_second": limit})
            created = create_payments(stack, payments, rng)
            deliveries = webhooks(created, events, run_id, together=together)
            _call(stack.gateway_port, "POST", "/_sim/stats/rate/reset")
            started = time.perf_counter()
            answers = post_all(stack, deliveries, SENDERS)
            posted = time.perf_counter()
            settled_at, items = wait_until_settled(stack, run_id, events, SETTLE_TIMEOUT_SECONDS)
            per_second = _call(stack.gateway_port, "GET", "/_sim/stats/rate")["seconds"]
            wrong = mismatches(stack, _call(stack.gateway_port, "GET", "/_sim/payments"), {p[0] for p in created})
            limiter = limiter_item(stack)
    result = figures(per_second, items, events=events, limit=limit, seconds=settled_at - started)
    result |= {
        "payments": payments,
        "events": events,
        "limit_per_second": limit,
        "senders": SENDERS,
        "events_of_a_payment_together": together,
        "post_seconds": round(posted - started, 1),
        "answers": {str(k): v for k, v in sorted(answers.items())},
        "mismatched_payments": len(wrong),
        "limiter": limiter,
        "ok": result["failed"] == 0 and result["pending"] == 0 and not wrong,
    }
    return result
