"""Measured, not assumed: what one webhook costs in DynamoDB write units, stream records, Lambda invocations, log
bytes and requests, read from what the local stack actually does with realistic events.

How:
- A local stack runs in a child process of its own (`python -m bench.item_sizes --child`), with the functions'
  log level and metrics as deployed (Powertools' default INFO, metrics on: their EMF lines are log bytes too).
- Every AWS call the stack makes goes through a recorder (botocore's `_make_api_call`, patched in that process
  only). For each DynamoDB write (PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems) it reads
  the item before and after (consistent GetItem, not recorded), so each write is billed from the items actually
  written with DynamoDB's documented rules (bench/item_size.py): the table write on the larger of before/after,
  doubled in a transaction; each index write on the projected entry, a key change as delete + put. Calls are
  attributed to the function that made them (the handler wrappers mark their thread; the local plumbing's threads
  by name: the Pipe, the queue mapping, the outbox publisher).
- The events: `inbox simulate` (inbox_cli/simulate.py) on the gateway simulator, Stripe only, settled rounds (the
  gateway's steps minutes apart, so each step is a transition), its default duplicate and reordering rates. The
  simulator's Stripe bodies are smaller than Stripe's own documented example, so each is padded (inside
  `data.object.metadata`, re-serialized with Stripe's two-space indentation) to STRIPE_DOCUMENTED_EVENT_BYTES.
- Per event = divided by the webhooks the gateway sent; a duplicate delivery's cost is reported apart (per extra
  delivery) so that the cost model can scale it to any duplicate rate.

Lambda durations here are wall times on a shared, loaded machine and are not AWS's billed durations: they are
recorded, not used by the cost model. Sizes, write units, records, invocations and log bytes are deterministic
for a given scenario and seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.item_size import IndexShape, index_write_units, item_bytes, item_write_units, read_units

ROOT = Path(__file__).resolve().parents[1]

# Stripe's documented examples (docs.stripe.com/api): "The PaymentIntent object" example (1,343 bytes as printed)
# inside "The Event object" example's envelope (id, object, api_version, created, livemode, pending_webhooks,
# request, type), printed with two-space indentation as the API reference prints it: 1,863 bytes. A webhook for
# a PaymentIntent carries exactly that object; a charge's (payment_method_details, outcome, billing_details)
# is larger, so this is the smaller end of what Stripe sends for a payment.
STRIPE_DOCUMENTED_EVENT_BYTES = 1863
PAYMENTS = 24
SEED = 7
CHILD_TIMEOUT_SECONDS = 900
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
# The local plumbing's threads (inbox_local/runtime.py names them), as the AWS component they stand for.
THREAD_FUNCTIONS = {
    "local-pipe": "dispatch pipe",
    "local-processor-": "queue mapping",
    "local-outbox": "outbox pipe",
    "local-archiver": "archiver",
    "lambda-archiver": "archiver",  # its invocations' own threads (inbox_local/invocation.py `invoke`)
    "local-sweeper": "sweeper",
}


@dataclass(frozen=True)
class Scenario:
    provider: str = "stripe"
    body_bytes: int = STRIPE_DOCUMENTED_EVENT_BYTES
    payments: int = PAYMENTS
    seed: int = SEED
    forwarding: bool = False  # INBOX_FORWARD_URL unset: the outbox is published, not forwarded


# ------------------------------------------------------------------------------------------------ the recorder


@dataclass
class WriteRecord:
    function: str
    table: str
    operation: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    transactional: bool
    succeeded: bool


@dataclass
class Recorder:
    """Every AWS call the stack's functions make, and each DynamoDB write's item before and after."""

    writes: list[WriteRecord] = field(default_factory=list)
    read_units: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # function -> units
    calls: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (function, service, operation)
    pipe_events: int = 0
    log_bytes: Counter[str] = field(default_factory=Counter)
    invocations: Counter[str] = field(default_factory=Counter)
    durations: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)
    local: threading.local = field(default_factory=threading.local)
    tables: dict[str, tuple[tuple[str, ...], tuple[IndexShape, ...]]] = field(default_factory=dict)
    # Thread-name prefixes of the processor's own worker threads (a batch's groups, shared/process/app.py
    # `run_groups`), set once the functions are imported (`_install`).
    processor_threads: tuple[str, ...] = ()

    def handler(self) -> str | None:
        """The function whose handler the current thread runs: the thread it marked, or a worker thread of the
        processor's (its batch's groups run in a pool of their own, shared/process/app.py `run_groups`)."""
        marked = getattr(self.local, "function", None)
        if marked:
            return str(marked)
        if self.processor_threads and threading.current_thread().name.startswith(self.processor_threads):
            return "processor"
        return None

    def function(self) -> str:
        marked = self.handler()
        if marked:
            return marked
        name = threading.current_thread().name
        for prefix, function in THREAD_FUNCTIONS.items():
            if name.startswith(prefix):
                return function
        return "driver" if name == "MainThread" else f"other ({name})"

    # -------------------------------------------------------------------------------------- table shapes

    def shape(
        self, client: Any, original: Callable[..., Any], table: str
    ) -> tuple[tuple[str, ...], tuple[IndexShape, ...]]:
        if table not in self.tables:
            description = original(client, "DescribeTable", {"TableName": table})["Table"]
            keys = tuple(k["AttributeName"] for k in description["KeySchema"])
            indexes = tuple(
                IndexShape(
                    name=index["IndexName"],
                    keys=tuple(k["AttributeName"] for k in index["KeySchema"]),
                    projection=index["Projection"]["ProjectionType"],
                    included=tuple(index["Projection"].get("NonKeyAttributes", ())),
                )
                for index in description.get("GlobalSecondaryIndexes", ())
            )
            self.tables[table] = (keys, indexes)
        return self.tables[table]

    def _get(self, client: Any, original: Callable[..., Any], table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = original(client, "GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get("Item")
        return dict(item) if item else None

    def _key(self, client: Any, original: Callable[..., Any], table: str, item: dict[str, Any]) -> dict[str, Any]:
        keys, _ = self.shape(client, original, table)
        return {name: item[name] for name in keys}

    # ------------------------------------------------------------------------------------------ the call

    def call(self, client: Any, original: Callable[..., Any], operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        function = self.function()
        with self.lock:
            self.calls[(function, service, operation)] += 1
        if service == "sqs" and operation == "SendMessageBatch" and function == "dispatch pipe":
            with self.lock:
                self.pipe_events += len(params.get("Entries", ()))
        if service != "dynamodb" or function == "driver":
            return original(client, operation, params)
        if operation in WRITE_OPERATIONS:
            return self._write(client, original, operation, params, function)
        response = original(client, operation, params)
        self._read(operation, params, response, function)
        return response

    def _targets(
        self, client: Any, original: Callable[..., Any], operation: str, params: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any], str]]:
        """(table, key, kind) of every item a write touches."""
        if operation == "PutItem":
            return [(params["TableName"], self._key(client, original, params["TableName"], params["Item"]), "Put")]
        if operation in ("UpdateItem", "DeleteItem"):
            return [(params["TableName"], params["Key"], operation.removesuffix("Item"))]
        if operation == "BatchWriteItem":
            targets = []
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        targets.append(
                            (table, self._key(client, original, table, request["PutRequest"]["Item"]), "Put")
                        )
                    else:
                        targets.append((table, request["DeleteRequest"]["Key"], "Delete"))
            return targets
        targets = []
        for entry in params["TransactItems"]:
            ((kind, body),) = entry.items()
            key = body["Key"] if "Key" in body else self._key(client, original, body["TableName"], body["Item"])
            targets.append((body["TableName"], key, kind))
        return targets

    def _write(
        self, client: Any, original: Callable[..., Any], operation: str, params: dict[str, Any], function: str
    ) -> Any:
        targets = self._targets(client, original, operation, params)
        for table, _, _ in targets:
            self.shape(client, original, table)  # its keys and indexes, for billing (an update names no item)
        before = [self._get(client, original, table, key) for table, key, _ in targets]
        succeeded = True
        try:
            return original(client, operation, params)
        except Exception:
            succeeded = False  # a failed condition or a cancelled transaction is billed too (on the item before)
            raise
        finally:
            after = [self._get(client, original, table, key) for table, key, _ in targets]
            with self.lock:
                for (table, _, kind), old, new in zip(targets, before, after, strict=True):
                    self.writes.append(
                        WriteRecord(
                            function=function,
                            table=table,
                            operation=f"{operation}:{kind}",
                            before=old,
                            after=new,
                            transactional=operation == "TransactWriteItems",
                            succeeded=succeeded,
                        )
                    )

    def _read(self, operation: str, params: dict[str, Any], response: dict[str, Any], function: str) -> None:
        consistent = bool(params.get("ConsistentRead"))
        units = 0.0
        if operation == "GetItem":
            units = read_units(item_bytes(response.get("Item")), consistent=consistent)
        elif operation == "BatchGetItem":
            for table, items in response.get("Responses", {}).items():
                table_consistent = bool(params["RequestItems"][table].get("ConsistentRead"))
                units += sum(read_units(item_bytes(item), consistent=table_consistent) for item in items)
        elif operation in ("Query", "Scan"):
            units = read_units(sum(item_bytes(item) for item in response.get("Items", ())), consistent=consistent)
        elif operation == "TransactGetItems":
            units = sum(
                2 * read_units(item_bytes(r.get("Item")), consistent=True) for r in response.get("Responses", ())
            )
        with self.lock:
            self.read_units[function] += units

    # ------------------------------------------------------------------------------------------ billing

    def billed(self) -> list[dict[str, Any]]:
        """Each write with its table and index write units."""
        rows = []
        for write in self.writes:
            keys, indexes = self.tables[write.table]
            # A failed write changed nothing: `after` is the item as it stands (for a failed conditional put, the
            # existing item it was billed against), and no index entry moved.
            after = write.after if write.succeeded else write.before
            row: dict[str, Any] = {
                "function": write.function,
                "table": write.table,
                "operation": write.operation,
                "succeeded": write.succeeded,
                "transactional": write.transactional,
                "bytes_before": item_bytes(write.before),
                "bytes_after": item_bytes(write.after),
                # A ConditionCheck writes nothing; it is billed as a transactional write of the item it checks.
                "table_write_units": item_write_units(write.before, write.after, transactional=write.transactional),
                "stream_record": write.succeeded and write.before != write.after,
                "indexes": {},
            }
            for index in indexes:
                writes, units = index_write_units(index, keys, write.before, after)
                row["indexes"][index.name] = {
                    "writes": writes,
                    "write_units": units,
                    "entry_bytes": item_bytes(index.entry(after, keys) or index.entry(write.before, keys)),
                }
            rows.append(row)
        return rows


class CountingStdout:
    """sys.stdout for the functions: counts the bytes each function's log lines (and EMF metric blobs) take,
    as CloudWatch Logs would ingest them; drops them (the bench's own output goes to stderr)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def write(self, text: str) -> int:
        function = self.recorder.handler()  # inside a handler only: not the plumbing's
        if function:
            with self.recorder.lock:
                self.recorder.log_bytes[function] += len(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


# ------------------------------------------------------------------------------------------------------ child


def _install(recorder: Recorder) -> None:
    import botocore.client  # noqa: PLC0415

    original = botocore.client.BaseClient._make_api_call  # type: ignore[attr-defined]

    def recorded(client: Any, operation: str, params: dict[str, Any]) -> Any:
        return recorder.call(client, original, operation, params)

    botocore.client.BaseClient._make_api_call = recorded  # type: ignore[attr-defined]

    import functions.ingest.handler as ingest  # noqa: PLC0415
    import functions.process.handler as process  # noqa: PLC0415
    import functions.sweeper.handler as sweeper  # noqa: PLC0415
    from shared.process.app import GROUP_THREAD_PREFIX  # noqa: PLC0415

    recorder.processor_threads = (f"{GROUP_THREAD_PREFIX}_",)  # ThreadPoolExecutor names them `{prefix}_{n}`

    for module, name in ((ingest, "ingest"), (process, "processor"), (sweeper, "sweeper")):
        module.lambda_handler = _counted(recorder, name, module.lambda_handler)  # type: ignore[attr-defined]


def _counted(recorder: Recorder, name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    def invoke(event: Any, context: Any) -> Any:
        recorder.local.function = name
        started = time.perf_counter()
        try:
            return handler(event, context)
        finally:
            recorder.local.function = None
            with recorder.lock:
                recorder.invocations[name] += 1
                recorder.durations[name].append(time.perf_counter() - started)

    return invoke


# Stripe's documented PaymentIntent example (docs.stripe.com/api/payment_intents/object), the fields the simulator's
# objects leave out: a padded body is made of what Stripe sends (JSON of that shape compresses as Stripe's does).
STRIPE_DOCUMENTED_INTENT_FIELDS: dict[str, Any] = {
    "amount_details": {"tip": {}},
    "application": None,
    "application_fee_amount": None,
    "automatic_payment_methods": {"enabled": True},
    "canceled_at": None,
    "cancellation_reason": None,
    "client_secret": "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH",
    "confirmation_method": "automatic",
    "customer": None,
    "description": None,
    "last_payment_error": None,
    "next_action": None,
    "on_behalf_of": None,
    "payment_method": None,
    "payment_method_options": {
        "card": {"installments": None, "mandate_options": None, "network": None, "request_three_d_secure": "automatic"},
        "link": {"persistent_token": None},
    },
    "processing": None,
    "receipt_email": None,
    "review": None,
    "setup_future_usage": None,
    "shipping": None,
    "source": None,
    "statement_descriptor": None,
    "statement_descriptor_suffix": None,
    "transfer_data": None,
    "transfer_group": None,
}


def pad_stripe_body(body: bytes, size: int) -> bytes:
    """A Stripe event body re-serialized as Stripe prints it (two-space indentation), grown towards `size` bytes
    with the documented PaymentIntent example's fields the object lacks (in order, while they fit), then up to
    `size` exactly inside `data.object.metadata` (free-form, read by no driver) with hexadecimal digests: random
    text compresses worse than JSON, so the padding never flatters the stored, compressed size. A body already
    that large is kept as it is."""
    document = json.loads(body)
    obj = document.setdefault("data", {}).setdefault("object", {})
    obj.setdefault("metadata", {})

    def printed() -> bytes:
        return json.dumps(document, indent=2).encode()

    if len(printed()) >= size:
        return printed()
    obj["metadata"]["padding"] = ""
    for name, value in STRIPE_DOCUMENTED_INTENT_FIELDS.items():
        if name in obj:
            continue
        obj[name] = value
        if len(printed()) > size:
            del obj[name]
            break
    room = size - len(printed())
    filler = "".join(hashlib.sha256(f"{document.get('id')}#{n}".encode()).hexdigest() for n in range(room // 64 + 1))
    obj["metadata"]["padding"] = filler[: max(0, room)]
    return printed()


def _run_child(scenario: Scenario) -> dict[str, Any]:
    recorder = Recorder()
    sys.stdout = CountingStdout(recorder)  # before any Logger is built
    os.environ.update({"POWERTOOLS_LOG_LEVEL": "INFO", "POWERTOOLS_METRICS_DISABLED": "false"})
    _install(recorder)

    from inbox_cli.simulate import EventTimeSender, Gateways, Simulation, SimulationOptions, SimulatorAdmin  # noqa: PLC0415
    from inbox_local.config import signing_secret  # noqa: PLC0415
    from inbox_local.runtime import LocalStack  # noqa: PLC0415
    from shared.inbox.store import InboxStore  # noqa: PLC0415
    from shared.payments.store import ProcessingStore  # noqa: PLC0415

    class PaddedSimulation(Simulation):
        def _schedule(self, provider: str, resource_id: str, webhooks: Any, round_: int) -> Any:
            deliveries = super()._schedule(provider, resource_id, webhooks, round_)
            for delivery in deliveries:
                delivery.body = pad_stripe_body(delivery.body, scenario.body_bytes)
            return deliveries

    stack = LocalStack(access_log=False)
    stack.start()
    try:
        options = SimulationOptions(
            payments=scenario.payments, providers=(scenario.provider,), seed=scenario.seed, settle_rounds=True
        )
        simulation = PaddedSimulation(
            options,
            api_url=stack.endpoints.api_url,
            gateways=Gateways(SimulatorAdmin(stack.endpoints.gateway_url), EventTimeSender(scenario.seed)),
            inbox=InboxStore(stack.names.inbox_table, stack.names.body_bucket),
            payments=ProcessingStore(stack.names.inbox_table, stack.names.payments_table),
            secret_for=signing_secret,
        )
        report = simulation.run()
        time.sleep(2.0)  # the outbox publisher's last poll
    finally:
        stack.stop()
    return _figures(recorder, report, scenario, stack.names)


def _per(value: float, count: int) -> float:
    return round(value / count, 3) if count else 0.0


def _figures(recorder: Recorder, report: Any, scenario: Scenario, names: Any) -> dict[str, Any]:
    events, deliveries = report.webhooks, report.deliveries
    duplicates = max(0, deliveries - events)
    rows = recorder.billed()
    table_names = {
        names.inbox_table: "inbox",
        names.payments_table: "payments",
        names.outbox_table: "outbox",
        names.control_table: "control",
    }
    per_event: dict[str, dict[str, float]] = defaultdict(dict)
    write_units: Counter[str] = Counter()
    index_units: Counter[str] = Counter()
    duplicate_units = 0
    stream_records: Counter[str] = Counter()
    sizes: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        table = table_names.get(row["table"], row["table"])
        function = row["function"]
        if not row["succeeded"] and function == "ingest" and row["operation"] == "PutItem:Put":
            duplicate_units += row["table_write_units"]  # a duplicate delivery: the conditional put that failed
            continue
        write_units[f"{function}: {table}"] += row["table_write_units"]
        for index, figures in row["indexes"].items():
            index_units[f"{function}: {table}/{index}"] += figures["write_units"]
            if figures["writes"] and figures["entry_bytes"]:
                sizes[f"{table}/{index} entry"].append(figures["entry_bytes"])
        if row["stream_record"] and table in ("inbox", "outbox"):
            stream_records[table] += 1
        if row["succeeded"] and row["bytes_after"]:
            sizes[f"{table} item after {function} {row['operation'].split(':')[1]}"].append(row["bytes_after"])
    per_event["table_write_units"] = {name: _per(units, events) for name, units in sorted(write_units.items())}
    per_event["index_write_units"] = {name: _per(units, events) for name, units in sorted(index_units.items())}
    per_event["stream_records"] = {name: _per(count, events) for name, count in sorted(stream_records.items())}
    per_event["lambda_invocations"] = {
        name: _per(count, events) for name, count in sorted(recorder.invocations.items()) if name != "sweeper"
    }
    per_event["log_bytes"] = {
        name: _per(count, events) for name, count in sorted(recorder.log_bytes.items()) if name != "sweeper"
    }
    per_event["read_units"] = {
        name: _per(units, events) for name, units in sorted(recorder.read_units.items()) if name != "sweeper"
    }
    requests: dict[str, float] = {}
    for (function, service, operation), count in sorted(recorder.calls.items()):
        if function in ("driver", "sweeper", "archiver") or function.startswith("other"):
            continue
        if service == "dynamodb" and operation in ("DescribeTable",):
            continue
        requests[f"{function}: {service}.{operation}"] = _per(count, events)
    per_event["requests"] = requests
    outbox_records = sum(
        1 for row in rows if table_names.get(row["table"]) == "outbox" and row["succeeded"] and not row["bytes_before"]
    )
    totals = {
        "write_units_ingest": _per(
            sum(v for k, v in write_units.items() if k.startswith("ingest:"))
            + sum(v for k, v in index_units.items() if k.startswith("ingest:")),
            events,
        ),
        "write_units_processing": _per(
            sum(
                v
                for k, v in write_units.items()
                if k.startswith("processor:") and not k.endswith((": outbox", ": control"))
            )
            + sum(v for k, v in index_units.items() if k.startswith("processor:")),
            events,
        ),
        "write_units_outbox": _per(sum(v for k, v in write_units.items() if k == "processor: outbox"), events),
        # locally the outbox publisher keeps the forwarder's checkpoints whether or not forwarding is on; in AWS
        # the forwarder Lambda writes them, only when forwarding is deployed
        "write_units_forwarding_checkpoints": _per(
            sum(v for k, v in write_units.items() if k.startswith("outbox pipe:")), events
        ),
        # the refetch rate limit's slot per gateway request (and the breaker's rare writes): the control table
        "write_units_rate_limit": _per(write_units.get("processor: control", 0), events),
        "write_units_per_duplicate_delivery": _per(duplicate_units, duplicates),
        "read_units_processing": _per(recorder.read_units.get("processor", 0.0), events),
        "read_units_ingest": _per(recorder.read_units.get("ingest", 0.0), events),
        "stream_records_inbox": _per(stream_records.get("inbox", 0), events),
        "stream_records_outbox": _per(stream_records.get("outbox", 0), events),
        "pipe_events": _per(recorder.pipe_events, events),
        "ingest_invocations_per_delivery": _per(recorder.invocations.get("ingest", 0), deliveries),
        "processor_invocations": _per(recorder.invocations.get("processor", 0), events),
        "log_bytes_ingest_per_delivery": _per(recorder.log_bytes.get("ingest", 0), deliveries),
        "log_bytes_processor": _per(recorder.log_bytes.get("processor", 0), events),
        "sqs_requests": _per(
            recorder.invocations.get("processor", 0)  # each batch: one ReceiveMessage that returned messages
            + sum(
                count
                for (function, service, operation), count in recorder.calls.items()
                if service == "sqs"
                and function in ("dispatch pipe", "queue mapping", "processor")
                and operation
                in (
                    "SendMessage",
                    "SendMessageBatch",
                    "DeleteMessage",
                    "DeleteMessageBatch",
                    "ChangeMessageVisibility",
                    "ChangeMessageVisibilityBatch",
                )
            ),
            events,
        ),
        "transitions": _per(outbox_records, events),
    }
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "scenario": asdict(scenario)
        | {
            "events": events,
            "deliveries": deliveries,
            "deliveries_per_event": _per(deliveries, events),
            "transitions_per_event": totals["transitions"],
            "payments": report.payments,
            "lifecycles": report.lifecycles,
            "simulation_ok": report.ok,
            "statuses": report.statuses,
            "body_bytes_note": (
                "Stripe's documented PaymentIntent object inside its documented Event envelope, two-space "
                "indented: the simulator's bodies padded to that size"
            ),
        },
        "per_event": totals,
        "detail_per_event": dict(per_event),
        "item_bytes_median": {name: sorted(values)[len(values) // 2] for name, values in sorted(sizes.items())},
        "lambda_wall_ms_median_noisy": {
            name: round(sorted(values)[len(values) // 2] * 1000, 1)
            for name, values in sorted(recorder.durations.items())
        },
        "not_counted": [
            "the Lambda platform's own START/END/REPORT log lines",
            "the sweeper, archiver and retention (scheduled, not per event)",
            "the queue mapping's empty polls (AWS's event source mapping long-polls: a fixed cost)",
            "in detail_per_event.requests, the local plumbing's stream and queue polls (dispatch pipe, queue "
            "mapping, outbox pipe) are the emulation's, idle polls included: in AWS the services poll themselves",
        ],
    }


# ------------------------------------------------------------------------------------------------------- run


def measure(scenario: Scenario | None = None) -> dict[str, Any]:
    """The scenario through a local stack in a child process (its environment and patches stay there)."""
    scenario = scenario or Scenario()
    from bench.end_to_end import _free_port  # noqa: PLC0415

    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "INBOX_", "POWERTOOLS_"))}
    env |= {
        "INBOX_HOST": "127.0.0.1",
        "INBOX_PORT": str(_free_port()),
        "INBOX_AWS_PORT": str(_free_port()),
        "INBOX_GATEWAY_PORT": str(_free_port()),
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }
    with tempfile.TemporaryDirectory(prefix="inbox-item-sizes-") as directory:
        out = Path(directory) / "figures.json"
        completed = subprocess.run(
            [sys.executable, "-m", "bench.item_sizes", "--child", json.dumps(asdict(scenario)), str(out)],
            cwd=ROOT,
            env=env,
            timeout=CHILD_TIMEOUT_SECONDS,
            check=False,
            capture_output=True,
            text=True,
        )
        if completed.returncode != 0 or not out.exists():
            raise RuntimeError(f"item_sizes child failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
        figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.item_sizes")
    parser.add_argument("--child", nargs=2, metavar=("SCENARIO_JSON", "OUT"), required=True)
    scenario_json, out = parser.parse_args(argv).child
    figures = _run_child(Scenario(**json.loads(scenario_json)))
    Path(out).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
