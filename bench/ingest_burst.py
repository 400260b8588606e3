"""The ingest path alone under a burst: how many deliveries per second the local stack absorbs with nothing lost,
against a bare PutItem on the same stack in the same run.

- A local stack of its own (bench/end_to_end.py's `own_stack`), its dispatch Pipe paused for the whole burst
  (`POST /_local/faults {"pipe_pause_seconds": ...}`): nothing downstream competes with the ingest for the CPU.
- The burst: every delivery (a signed 1 KB Standard Webhooks event, each an event of its own) queued at once and
  posted by SENDERS concurrent keep-alive connections, as fast as the stack answers.
- Absorbed = deliveries answered 200 `stored` / (first POST -> last answer). Nothing lost = every delivery
  answered 200 and one stored item per delivery (a scan of the run's keys afterwards). A 429 (the stage throttle
  the local front door enforces, definitions.API_THROTTLE_*) or a 5xx would be a gateway retry, not a loss; they
  are counted and reported, and the run says `nothing_lost: false` if any delivery is not stored.
- Baseline: bench/end_to_end.py's `putitem_baseline`, a bare conditional PutItem of a 1 KB item on the same
  embedded AWS, with as many clients as senders.
The machine is shared: the ratio is the figure, not the rate.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from collections import Counter
from typing import Any

from bench.end_to_end import (
    BODY_BYTES,
    PROVIDER,
    Stack,
    _answer_kind,
    event_ids,
    own_stack,
    putitem_baseline,
    signed_webhook,
)

SENDERS = 8
DELIVERIES = 600
PIPE_PAUSE_SECONDS = 600


def _pause_pipe(stack: Stack, seconds: float) -> None:
    from inbox_local.faults import ADMIN_PATH  # noqa: PLC0415

    connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=30)
    try:
        connection.request(
            "POST", ADMIN_PATH, json.dumps({"pipe_pause_seconds": seconds}), {"content-type": "application/json"}
        )
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"pausing the Pipe answered {response.status}")
    finally:
        connection.close()


def burst(stack: Stack, events: list[str], *, senders: int = SENDERS) -> dict[str, Any]:
    """Every delivery queued at once, `senders` connections posting them; answers and timings."""
    now = int(time.time())
    jobs: queue.Queue[tuple[bytes, dict[str, str]] | None] = queue.Queue()
    for index, event_id in enumerate(events):
        jobs.put(signed_webhook(event_id, f"pay_{event_id}_{index}", now=now))
    for _ in range(senders):
        jobs.put(None)
    answers: Counter[str] = Counter()
    lock = threading.Lock()
    first_sent: list[float] = []
    last_answer: list[float] = []

    def send() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=60)
        while (job := jobs.get()) is not None:
            body, headers = job
            sent = time.perf_counter()
            try:
                connection.request("POST", f"/webhooks/{PROVIDER}", body, headers)
                response = connection.getresponse()
                kind = _answer_kind(response.status, response.read())
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=60)
                kind = f"error_{type(error).__name__}"
            with lock:
                answers[kind] += 1
                first_sent.append(sent)
                last_answer.append(time.perf_counter())
        connection.close()

    threads = [threading.Thread(target=send, name=f"burst-send-{n}") for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = max(last_answer) - min(first_sent)
    return {"answers": dict(answers), "seconds": round(seconds, 2)}


def stored_items(stack: Stack, events: list[str]) -> int:
    from inbox_local.config import LocalNames  # noqa: PLC0415
    from shared.inbox.model import event_key  # noqa: PLC0415

    dynamodb, table, stored = stack.dynamodb(), LocalNames().inbox_table, 0
    for start in range(0, len(events), 100):
        response = dynamodb.batch_get_item(
            RequestItems={
                table: {
                    "Keys": [{"pk": {"S": event_key(PROVIDER, e)}} for e in events[start : start + 100]],
                    "ConsistentRead": True,
                    "ProjectionExpression": "pk",
                }
            }
        )
        stored += len(response["Responses"].get(table, []))
    return stored


def figures(deliveries: int, answers: dict[str, int], seconds: float, stored: int) -> dict[str, Any]:
    """The burst's figures: absorbed per second counts only deliveries stored at their first attempt."""
    absorbed = answers.get("stored", 0)
    return {
        "deliveries": deliveries,
        "answers": answers,
        "seconds": seconds,
        "absorbed_per_s": round(absorbed / seconds, 1) if seconds else 0.0,
        "stored_items": stored,
        "nothing_lost": stored == deliveries and absorbed == deliveries,
    }


def measure(deliveries: int = DELIVERIES, senders: int = SENDERS) -> dict[str, Any]:
    with own_stack() as stack:
        _pause_pipe(stack, PIPE_PAUSE_SECONDS)
        warmup = event_ids("burst_warmup", 20)
        burst(stack, warmup, senders=senders)  # clients, caches, secrets
        baseline = putitem_baseline(stack, count=deliveries // senders * senders, clients=senders)
        events = event_ids("burst", deliveries)
        run = burst(stack, events, senders=senders)
        result = figures(deliveries, run["answers"], run["seconds"], stored_items(stack, events))
    result |= {"provider": PROVIDER, "body_bytes": BODY_BYTES, "senders": senders, "baseline_putitem": baseline}
    result["ratios"] = {
        "absorbed_per_s_vs_putitem_per_s": round(result["absorbed_per_s"] / baseline["puts_per_s"], 3)
        if baseline["puts_per_s"]
        else 0.0
    }
    return result
