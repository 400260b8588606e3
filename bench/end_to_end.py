"""End to end on a local stack of its own: events/s and POST -> processed latency, a duplicate storm, and where
the CPU goes.

- The stack is `python -m inbox_local` (what `make run` starts) on free ports, its console in a temporary file,
  stopped with SIGINT (then killed if it hangs) whatever happens.
- Each event is a Standard Webhooks delivery (`standard`: verified, stored, ordered by occurred_at, no refetch
  from a gateway API) of a 1 KB body, a payment of its own, signed with the stack's development secret.
- Closed loop: at most WINDOW events are in flight (posted, not yet settled), so the queue stays shallow; a few
  concurrent senders on keep-alive connections post them.
- Latency = the item's `processed_at` (stamped by the processor for the transaction that settles the event)
  minus the producer's timestamp taken just before the event's first POST. Same machine, same clock. A checker
  reads the in-flight items (BatchGetItem, consistent) every POLL_SECONDS only to free window slots: its polling
  period does not enter the latencies.
- Throughput = events / (last processed_at - first POST).
- Baselines, on the same stack in the same run, before the load: a bare conditional PutItem of a 1 KB item on the
  same embedded AWS (round trip one at a time, and puts/s with WINDOW clients at once), and GET /health through the
  same front door (requests/s with the same senders: the front door is not what limits).
- Duplicate storm: every event delivered five times, the copies queued back to back so that concurrent senders
  race them; deliveries/s against the single-delivery run's; then checked: one stored item per event, every
  copy answered 200 (one `stored`, four `duplicate`), each event settled by one attempt, each payment written once.
- CPU: the two processes' CPU clocks (/proc) over the timed run; the stack process's share by code from a second
  stack run with INBOX_PROFILE (inbox_local/profiling.py) under the same load, attributed by bench/cpu_split.py.
  Profiling slows the stack, so no timing comes from that second run.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import cpu_split
from bench.stats import latency_summary, percentile

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
HISTOGRAM = RESULTS / "e2e_latency.png"
PROFILES = ROOT / "build" / "bench"  # the last run's CPU profile of the stack process (pstats)

PROVIDER = "standard"
BODY_BYTES = 1024
COPIES_IN_STORM = 5
SENDERS = 5
# Events in flight (posted, not yet settled) at most: as many as the local stack has processor workers
# (inbox_local.runtime.LOCAL_PROCESSOR_CONCURRENCY), so the queue never holds more than one batch's worth.
WINDOW = 4
POLL_SECONDS = 0.05
SETTLED = frozenset({"processed", "ignored", "failed"})
STACK_START_SECONDS = 90


# --------------------------------------------------------------------------------------------------- the stack


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Stack:
    api_port: int
    aws_port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    gateway_port: int = 0  # the gateway simulator's (its admin API is under /_sim/)

    @property
    def aws_url(self) -> str:
        return f"http://127.0.0.1:{self.aws_port}"

    def embedded_aws_pid(self) -> int | None:
        children = child_pids(self.process.pid)
        return children[0] if len(children) == 1 else None

    def dynamodb(self) -> DynamoDBClient:
        """A DynamoDB client of the stack's embedded AWS, with the local stack's own (dummy) credentials."""
        import boto3  # noqa: PLC0415

        from inbox_local.config import LocalEndpoints, aws_environment  # noqa: PLC0415

        env = aws_environment(LocalEndpoints("127.0.0.1", self.api_port, self.aws_port, self.api_port + 2))
        session = boto3.session.Session(
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            region_name=env["AWS_DEFAULT_REGION"],
        )
        return session.client("dynamodb", endpoint_url=env["AWS_ENDPOINT_URL"])

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def _healthy(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@contextmanager
def own_stack(extra_env: dict[str, str] | None = None) -> Iterator[Stack]:
    """A local stack on free loopback ports, never the defaults; stopped (SIGINT, then kill) on the way out."""
    ports = {"INBOX_PORT": _free_port(), "INBOX_AWS_PORT": _free_port(), "INBOX_GATEWAY_PORT": _free_port()}
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "INBOX_"))}
    env.update({name: str(port) for name, port in ports.items()})
    env.update({"INBOX_HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1"} | (extra_env or {}))
    # The console goes to a file, never to an unread pipe (a full pipe blocks the stack's writes).
    log = tempfile.NamedTemporaryFile(prefix="inbox-bench-", suffix=".log", delete=False)  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "inbox_local"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    log.close()
    stack = Stack(ports["INBOX_PORT"], ports["INBOX_AWS_PORT"], process, Path(log.name), ports["INBOX_GATEWAY_PORT"])
    try:
        deadline = time.monotonic() + STACK_START_SECONDS
        while not _healthy(stack.api_port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the local stack did not start ({stack.log_path}):\n{stack.log_tail()}")
            time.sleep(0.2)
        yield stack
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        stack.log_path.unlink(missing_ok=True)


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc), empty where /proc is not available."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), None if unknown."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------- the events


def signed_webhook(event_id: str, resource_id: str, *, now: int) -> tuple[bytes, dict[str, str]]:
    """A Standard Webhooks `payment.paid` delivery with a body of exactly BODY_BYTES, signed as the gateway would."""
    from inbox_local.config import signing_secret  # noqa: PLC0415
    from inbox_local.senders import sender_for  # noqa: PLC0415

    sender = sender_for(PROVIDER)
    sample = json.loads(
        sender.sample_body(event_id=event_id, resource_id=resource_id, status="paid", amount=1990, occurred_at=now)
    )
    sample["data"]["description"] = ""
    padding = BODY_BYTES - len(json.dumps(sample, separators=(",", ":")))
    sample["data"]["description"] = "x" * max(0, padding)
    body = json.dumps(sample, separators=(",", ":")).encode()
    signed = sender.sign(body, signing_secret(PROVIDER), now=now, event_id=event_id)
    return body, {"content-type": "application/json", **signed.headers}


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@dataclass
class Run:
    """One closed-loop run: what was sent, what came back, when each event settled."""

    events: list[str]
    copies: int
    first_sent: dict[str, float] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)  # last answer per event
    answers: Counter[str] = field(default_factory=Counter)
    acks: list[float] = field(default_factory=list)
    settled: dict[str, tuple[str, float]] = field(default_factory=dict)  # event -> (status, processed_at epoch)
    max_in_flight: int = 0
    wall_seconds: float = 0.0

    @property
    def latencies(self) -> list[float]:
        return [self.settled[e][1] - self.first_sent[e] for e in self.events if e in self.settled]

    @property
    def duration(self) -> float:
        """First POST to the last event processed (or the last answer, if a copy came back later)."""
        end = max([at for _, at in self.settled.values()] + list(self.answered.values()))
        return end - min(self.first_sent.values())

    def figures(self) -> dict[str, Any]:
        duration = self.duration
        return {
            "events": len(self.events),
            "deliveries": len(self.events) * self.copies,
            "settled": len(self.settled),
            "statuses": dict(Counter(status for status, _ in self.settled.values())),
            "answers": dict(self.answers),
            "seconds": round(duration, 2),
            "events_per_s": round(len(self.settled) / duration, 1),
            "deliveries_per_s": round(len(self.events) * self.copies / duration, 1),
            "post_to_processed": latency_summary(self.latencies),
            "post_answered_p50_ms": round(percentile(self.acks, 50) * 1000, 1),
            "max_events_in_flight": self.max_in_flight,
        }


def _answer_kind(status: int, payload: bytes) -> str:
    if status != 200:
        return f"http_{status}"
    try:
        document = json.loads(payload)
    except ValueError:
        return "http_200_unreadable"
    return "duplicate" if document.get("duplicate") else "stored"


class _ClosedLoop:
    """A dispatcher that lets at most `window` events be in flight, senders that post their copies, and a
    checker that frees an event's slot once the inbox shows it settled."""

    def __init__(self, stack: Stack, run: Run, *, senders: int, window: int, timeout: float) -> None:
        from inbox_local.config import LocalNames  # noqa: PLC0415

        self.stack, self.run, self.senders = stack, run, senders
        self.table = LocalNames().inbox_table
        self.dynamodb = stack.dynamodb()
        self.jobs: queue.Queue[tuple[str, bytes, dict[str, str]] | None] = queue.Queue()
        self.slots = threading.Semaphore(window)
        self.lock = threading.Lock()
        self.in_flight: set[str] = set()
        self.deadline = time.monotonic() + timeout

    def dispatch(self) -> None:
        for index, event_id in enumerate(self.run.events):
            while not self.slots.acquire(timeout=1):
                if time.monotonic() > self.deadline:
                    break
            else:
                with self.lock:
                    self.in_flight.add(event_id)
                body, headers = signed_webhook(event_id, f"pay_{event_id}_{index}", now=int(time.time()))
                for _ in range(self.run.copies):  # back to back: concurrent senders take the copies at once
                    self.jobs.put((event_id, body, headers))
                continue
            break  # out of time: what was dispatched is checked, the rest never sent
        for _ in range(self.senders):
            self.jobs.put(None)

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.stack.api_port, timeout=30)

    def send(self) -> None:
        run, connection = self.run, self._connect()
        while (job := self.jobs.get()) is not None:
            event_id, body, headers = job
            sent = time.time()
            with self.lock:
                run.first_sent[event_id] = min(run.first_sent.get(event_id, sent), sent)
            try:
                connection.request("POST", f"/webhooks/{PROVIDER}", body, headers)
                response = connection.getresponse()
                kind = _answer_kind(response.status, response.read())
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                connection = self._connect()
                kind = f"error_{type(error).__name__}"
            answered = time.time()
            with self.lock:
                run.answers[kind] += 1
                run.acks.append(answered - sent)
                run.answered[event_id] = max(run.answered.get(event_id, answered), answered)
        connection.close()

    def _settled_items(self, event_ids: list[str]) -> list[dict[str, Any]]:
        from shared.inbox.model import event_key  # noqa: PLC0415

        items: list[dict[str, Any]] = []
        for start in range(0, len(event_ids), 100):
            response = self.dynamodb.batch_get_item(
                RequestItems={
                    self.table: {
                        "Keys": [{"pk": {"S": event_key(PROVIDER, e)}} for e in event_ids[start : start + 100]],
                        "ConsistentRead": True,
                        "ProjectionExpression": "event_id, #status, processed_at, failed_at",
                        "ExpressionAttributeNames": {"#status": "status"},
                    }
                }
            )
            items += [item for item in response["Responses"].get(self.table, []) if item["status"]["S"] in SETTLED]
        return items

    def check(self) -> None:
        run = self.run
        while len(run.settled) < len(run.events) and time.monotonic() < self.deadline:
            with self.lock:
                looking = sorted(self.in_flight)
                run.max_in_flight = max(run.max_in_flight, len(looking))
            for item in self._settled_items(looking):
                stamp = (item.get("processed_at") or item.get("failed_at") or {}).get("S")
                event_id = item["event_id"]["S"]
                with self.lock:
                    if event_id in self.in_flight and stamp:
                        self.in_flight.discard(event_id)
                        run.settled[event_id] = (item["status"]["S"], _epoch(stamp))
                        self.slots.release()
            time.sleep(POLL_SECONDS)


def deliver(
    stack: Stack,
    events: list[str],
    *,
    copies: int = 1,
    senders: int = SENDERS,
    window: int = WINDOW,
    timeout: float = 180.0,
) -> Run:
    """Post every event `copies` times through `senders` keep-alive connections, at most `window` events in
    flight, and wait until every event is settled (or `timeout`)."""
    run = Run(events=events, copies=copies)
    loop = _ClosedLoop(stack, run, senders=senders, window=window, timeout=timeout)
    threads = [threading.Thread(target=loop.dispatch, name="bench-dispatch")]
    threads += [threading.Thread(target=loop.send, name=f"bench-send-{n}") for n in range(senders)]
    threads.append(threading.Thread(target=loop.check, name="bench-check"))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.wall_seconds = time.monotonic() - started
    return run


def event_ids(label: str, count: int) -> list[str]:
    run_id = uuid.uuid4().hex[:8]
    return [f"msg_bench_{label}_{run_id}_{index:05d}" for index in range(count)]


# ---------------------------------------------------------------------------------------------------- baselines


def health_baseline(stack: Stack, *, senders: int = SENDERS, requests: int = 150) -> dict[str, Any]:
    """GET /health through the same front door, `senders` keep-alive connections at once."""
    round_trips: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=30)
        mine = []
        for _ in range(requests):
            started = time.perf_counter()
            connection.request("GET", "/health")
            response = connection.getresponse()
            response.read()
            mine.append(time.perf_counter() - started)
            if response.status != 200:
                raise RuntimeError(f"GET /health answered {response.status}")
        connection.close()
        with lock:
            round_trips.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(senders)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {
        "requests": len(round_trips),
        "senders": senders,
        "requests_per_s": round(len(round_trips) / elapsed, 1),
        "round_trip": latency_summary(round_trips),
    }


def putitem_baseline(stack: Stack, *, count: int = 200, clients: int = WINDOW) -> dict[str, Any]:
    """A bare conditional PutItem of a 1 KB item to a table of its own on the same embedded AWS: round trips one
    at a time (latency), then `clients` clients at once (rate)."""
    table = "bench-baseline"
    stack.dynamodb().create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    body = b"x" * BODY_BYTES

    def put_many(prefix: str, puts: int) -> list[float]:
        dynamodb, round_trips = stack.dynamodb(), []
        for index in range(puts):
            started = time.perf_counter()
            dynamodb.put_item(
                TableName=table,
                Item={"pk": {"S": f"{prefix}#{index}"}, "status": {"S": "pending"}, "body": {"B": body}},
                ConditionExpression="attribute_not_exists(pk)",
            )
            round_trips.append(time.perf_counter() - started)
        return round_trips

    sequential = put_many("sequential", count)
    threads = [threading.Thread(target=put_many, args=(f"concurrent-{n}", count // clients)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rate = clients * (count // clients) / (time.perf_counter() - started)
    return {"puts": count, "round_trip": latency_summary(sequential), "clients": clients, "puts_per_s": round(rate, 1)}


# ------------------------------------------------------------------------------------------------------ checks


def storm_check(stack: Stack, run: Run) -> dict[str, Any]:
    """Every duplicate absorbed: one stored item per event, answered once `stored` and otherwise `duplicate`,
    settled by one attempt, its payment written once."""
    from inbox_local.config import LocalNames  # noqa: PLC0415
    from shared.inbox.model import event_key  # noqa: PLC0415

    names = LocalNames()
    dynamodb = stack.dynamodb()
    prefix = event_key(PROVIDER, run.events[0].rsplit("_", 1)[0])
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=names.inbox_table,
        FilterExpression="begins_with(pk, :prefix)",
        ExpressionAttributeValues={":prefix": {"S": prefix}},
        ProjectionExpression="pk, #status, attempts, resource_id",
        ExpressionAttributeNames={"#status": "status"},
    ):
        items.extend(page["Items"])
    payment_versions: list[int] = []
    keys = [{"pk": {"S": f"{PROVIDER}#{item['resource_id']['S']}"}} for item in items if "resource_id" in item]
    for start in range(0, len(keys), 100):
        response = dynamodb.batch_get_item(
            RequestItems={names.payments_table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
        )
        payment_versions += [int(p["version"]["N"]) for p in response["Responses"].get(names.payments_table, [])]
    events = len(run.events)
    checks = {
        "one_item_per_event": len(items) == events and len({item["pk"]["S"] for item in items}) == events,
        "answers_one_stored_rest_duplicate": run.answers.get("stored") == events
        and run.answers.get("duplicate") == events * (run.copies - 1),
        "every_event_processed_once": all(
            item["status"]["S"] == "processed" and item.get("attempts", {}).get("N") == "1" for item in items
        ),
        "every_payment_written_once": len(payment_versions) == events and set(payment_versions) == {1},
    }
    return {"items": len(items), "payments": len(payment_versions), **checks, "all_absorbed": all(checks.values())}


# --------------------------------------------------------------------------------------------------- histogram


def write_histogram(single: list[float], storm: list[float], path: Path, *, title: str) -> Path:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=110)
    single_ms = [value * 1000 for value in single]
    storm_ms = [value * 1000 for value in storm]
    top = percentile(single_ms + storm_ms, 99.5)
    bins = [top * step / 60 for step in range(61)]
    axes.hist(single_ms, bins=bins, alpha=0.75, label=f"single delivery ({len(single_ms)} events)")
    if storm_ms:
        axes.hist(storm_ms, bins=bins, alpha=0.45, label=f"duplicate storm x{COPIES_IN_STORM} ({len(storm_ms)} events)")
    for q, style in ((50, "-"), (95, "--"), (99, ":")):
        value = percentile(single_ms, q)
        axes.axvline(value, color="black", linestyle=style, linewidth=1, label=f"p{q} {value:.0f} ms (single)")
    axes.set_xlabel("POST -> processed (ms)")
    axes.set_ylabel("events")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


# --------------------------------------------------------------------------------------------------------- run


def measure(events: int = 600, storm_events: int = 200, profiled_events: int = 300) -> dict[str, Any]:
    """Baselines, the timed single-delivery run and the duplicate storm on one stack; the same single-delivery
    load on a second, profiled, stack for the CPU split."""
    results: dict[str, Any] = {"provider": PROVIDER, "body_bytes": BODY_BYTES, "senders": SENDERS, "window": WINDOW}
    with own_stack() as stack:
        deliver(stack, event_ids("warmup", 30))  # first invocations: clients, caches, secrets
        results["baseline_health"] = health_baseline(stack)
        results["baseline_putitem"] = putitem_baseline(stack)
        pids = (stack.process.pid, stack.embedded_aws_pid())
        cpu_before = [process_cpu_seconds(pid) for pid in pids]
        client_before = time.process_time()
        single = deliver(stack, event_ids("single", events))
        client_cpu = time.process_time() - client_before
        cpu_after = [process_cpu_seconds(pid) for pid in pids]
        storm = deliver(stack, event_ids("storm", storm_events), copies=COPIES_IN_STORM)
        results["storm_check"] = storm_check(stack, storm)
    results["single"] = single.figures()
    results["storm"] = storm.figures()

    health = results["baseline_health"]
    put = results["baseline_putitem"]["round_trip"]
    latency = results["single"]["post_to_processed"]
    results["ratios"] = {
        "events_per_s_vs_putitem_per_s": round(
            results["single"]["events_per_s"] / results["baseline_putitem"]["puts_per_s"], 3
        ),
        "events_per_s_vs_health_requests_per_s": round(results["single"]["events_per_s"] / health["requests_per_s"], 4),
        "p50_vs_putitem_p50": round(latency["p50_ms"] / put["p50_ms"], 1),
        "p95_vs_putitem_p95": round(latency["p95_ms"] / put["p95_ms"], 1),
        "p99_vs_putitem_p99": round(latency["p99_ms"] / put["p99_ms"], 1),
        "storm_deliveries_per_s_vs_single": round(
            results["storm"]["deliveries_per_s"] / results["single"]["deliveries_per_s"], 2
        ),
    }
    histogram = write_histogram(
        single.latencies,
        storm.latencies,
        HISTOGRAM,
        title=(
            f"Local stack, POST -> processed, 1 KB {PROVIDER} webhooks, <= {WINDOW} in flight: "
            f"{results['single']['events_per_s']} events/s"
        ),
    )
    results["histogram"] = str(histogram.relative_to(ROOT))

    process_cpu: dict[str, Any] = {"bench_client_s": round(client_cpu, 2)}
    if None not in cpu_before and None not in cpu_after:
        stack_cpu, aws_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))  # type: ignore[operator]
        process_cpu |= {
            "stack_process_s": round(stack_cpu, 2),
            "embedded_aws_process_s": round(aws_cpu, 2),
            "stack_plus_aws_ms_per_event": round(1000 * (stack_cpu + aws_cpu) / len(single.events), 1),
            "cores_busy": round((stack_cpu + aws_cpu) / single.wall_seconds, 2),
        }
        results["cpu_split"] = profiled_split(profiled_events, stack_cpu, aws_cpu, timed_events=len(single.events))
    results["process_cpu"] = process_cpu
    return results


def profiled_split(events: int, stack_cpu: float, aws_cpu: float, *, timed_events: int) -> dict[str, Any]:
    """The same single-delivery load on a stack with INBOX_PROFILE; its profile's shares, scaled to the timed
    run's process CPU. Profiling inflates the profiled process's CPU, and unevenly: cProfile's cost is per call,
    so code making many small calls (botocore) is inflated more than code making few (ours); the inflation is
    reported (`stack_profile_inflation`: profiled CPU per event over the timed run's)."""
    from inbox_local.profiling import ENV_PROFILE, PROFILE_NAME, RESTART_SIGNAL, WRITE_SIGNAL  # noqa: PLC0415

    PROFILES.mkdir(parents=True, exist_ok=True)
    profile = PROFILES / PROFILE_NAME
    profile.unlink(missing_ok=True)
    with own_stack({ENV_PROFILE: str(PROFILES)}) as stack:
        deliver(stack, event_ids("warmup", 30))
        os.kill(stack.process.pid, RESTART_SIGNAL)  # start-up and warm-up left out
        run = deliver(stack, event_ids("profiled", events))
        os.kill(stack.process.pid, WRITE_SIGNAL)
        deadline = time.monotonic() + 60
        while not profile.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the profiled stack wrote no profile ({stack.log_path}):\n{stack.log_tail()}")
            time.sleep(0.2)
    split = cpu_split.from_profile(profile, stack_cpu, aws_cpu, ROOT)
    split["profiled_events"] = len(run.settled)
    unprofiled = stack_cpu / timed_events * len(run.settled)
    split["stack_profile_inflation"] = round(split["stack_process_profiled_cpu_seconds"] / unprofiled, 1)
    split["profile"] = str(profile.relative_to(ROOT))
    return split
