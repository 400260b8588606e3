"""`inbox cost`: what the stack costs per month and per million webhooks, line by line.

A model, not a bill. Per-event resource use (write units per table and index, read units, stream records, Pipe
events, Lambda invocations, log bytes, SQS requests) comes from measurement when `make bench` has recorded one
(`bench/results/latest.json`, section `item_sizes`: realistic events through the local stack, each written item
billed by DynamoDB's documented sizing rules; bench/item_sizes.py). Without one, it falls back to `Assumptions`,
formulas from how the code writes, kept in agreement with the last measurement by
tests/unit/test_cost_model.py. The output says which was used and the scenario. Lambda durations are never
measured locally (a loaded laptop is not Lambda): they stay assumptions. Prices come from the dated table
`prices.json`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from infra.replay_definition import DEFAULT_MAX_EVENTS, DEFAULT_PAGE_SIZE, MAX_ITEMS_PER_EXECUTION
from shared import definitions
from shared.inbox.model import INLINE_BODY_BREAK_EVEN_BYTES

PRICES = Path(__file__).with_name("prices.json")
BENCH_RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "latest.json"


# The last item_sizes measurement's log bytes (bench/results/latest.json; test_cost_model keeps them in agreement):
# at INFO, a duplicate delivery's line (a stored event's is DEBUG: its item says it): 91 bytes over the scenario's
# 1.714 deliveries per event, so 218 per duplicate, priced at the model's own duplicate rate; and per processed event
# the batch's metrics (a processed or ignored event's line is DEBUG: its settled item says it).
LOG_BYTES_PER_DUPLICATE = 218
LOG_BYTES_PER_PROCESSED_EVENT = 82

# The API's access log (infra/constructs/ingest_api.py, ACCESS_LOG_FIELDS), one line per delivery in a log group of
# its own: rendered for a delivery answered 200 (an HTTP API request id, the access log's CLF time, a gateway's IPv4,
# "-" for an empty variable). tests/infra/test_stack.py holds its keys to the format the stack deploys.
ACCESS_LOG_EXAMPLE: dict[str, str] = {
    "requestId": "JDNNHgN6IAMEVvA=",
    "ip": "54.187.216.72",
    "method": "POST",
    "path": "/webhooks/stripe",
    "status": "200",
    "integrationLatency": "25",
    "integrationError": "-",
}
ACCESS_LOG_BYTES_PER_DELIVERY = len(json.dumps(ACCESS_LOG_EXAMPLE, separators=(",", ":"))) + 1  # and its newline

# X-Ray, when the stack traces (-c inbox_tracing=true): Lambda records "1 request per second and 5 percent of
# additional requests", a rate no one can configure (https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html),
# taken here per function. Spread evenly over the month (Poisson arrivals), a function invoked at rate r per second
# has (1 - e^-r) seconds in each with a request to take the reservoir's one, plus 5 % of the rest: at most, since
# real traffic bunches into fewer seconds. A trace is billed when recorded (prices.json).
XRAY_RESERVOIR_PER_SECOND = 1
XRAY_FIXED_RATE = 0.05
SECONDS_PER_MONTH = 30 * 24 * 3600


def xray_traces(invocations_per_month: float) -> float:
    """Traces Lambda records in a month for a function invoked this often (at most: evenly spread)."""
    rate = invocations_per_month / SECONDS_PER_MONTH
    reservoir = XRAY_RESERVOIR_PER_SECOND * (1 - math.exp(-rate / XRAY_RESERVOIR_PER_SECOND))
    return (reservoir + XRAY_FIXED_RATE * max(0.0, rate - reservoir)) * SECONDS_PER_MONTH


@dataclass(frozen=True)
class Assumptions:
    body_kb: float = (
        1.82  # average raw webhook body: Stripe's documented event example, 1,863 bytes (bench/item_sizes.py)
    )
    # Inline bodies are stored zlib-compressed (shared/inbox/model.py), Stripe's with its preset dictionary
    # (shared/inbox/dictionaries.py): Stripe's documented event example, 1,863 bytes, to ~300 (0.16; 671 without
    # the dictionary); the benchmark's bodies, grown with the documented fields, median 353 (0.19).
    compressed_body_ratio: float = 0.19
    deliveries_per_event: float = 1.25  # gateway retries and duplicates that reach the API
    # Billed durations on Lambda, at the functions' memory (without a measurement; `measured_assumptions` derives
    # them from the benchmarks with `lambda_ms`: the CPU measured here runs at memory / 1,769 MB of a vCPU).
    ingest_ms: float = 15.4  # per ingest invocation (the last measurement's, at 512 MB)
    processor_ms_per_event: float = 61.4  # per processed event (the last measurement's, at 384 MB)
    ingest_cpu_ms: float = 0.0  # of which CPU, at a full core (what the measurement found; 0: not measured)
    processor_cpu_ms_per_event: float = 0.0
    # FIFO groups keep batches small. Measured (item_sizes): 2.95 to 3.73 events per batch across runs, as the
    # machine's load times the batches (the write units are deterministic, the batching is not); 2.95 in the last.
    events_per_processor_batch: float = 3.2
    # Log bytes as CloudWatch ingests them at INFO (structured lines and EMF metric blobs), measured: see item_sizes.
    # A line per duplicate or refused delivery, per failed event, and the batch's metrics flushed once
    # (shared/observability.py); a stored event's and a settled event's lines are DEBUG.
    log_bytes_per_duplicate: int = LOG_BYTES_PER_DUPLICATE  # the ingest's line for a duplicate delivery
    log_bytes_per_processed_event: int = LOG_BYTES_PER_PROCESSED_EVENT  # the processor's
    retention_days: int = definitions.DEFAULT_RETENTION_DAYS
    tracing: bool = False  # X-Ray active tracing (context value inbox_tracing; off by default)
    dashboard: bool = False  # the CloudWatch dashboard (context value inbox_dashboard; off by default)
    # Downstream (the transactional outbox): share of events that change a payment's status, hence publish one
    # event (the rest are ignored: late, repeated, or not about payments), and whether forwarding is deployed.
    transitions_per_event: float = 0.6
    # Ignored events that still write their payment (a Touch: the event-time watermark of a provider with no API),
    # hence settle in a transaction; 0 for gateways whose events are refetched (Stripe: the measured scenario).
    touched_share: float = 0.0
    forwarding: bool = True
    publisher_ms_per_event: float = 15.0  # one PutEvents call per batch of up to ten
    forwarder_ms_per_event: float = 150.0  # one signed POST round trip to the customer
    forward_attempts_per_transition: float = 1.0  # a healthy endpoint: each event accepted on its first POST
    published_event_kb: float = 0.6
    # Requests each event sends to the gateway's API, each taking a slot of its source's rate limit
    # (shared/gateway/ratelimit.py). Stripe reads the intent (its charge expanded inline); 0 for senders ordered by
    # event time (no API): no request, no slot, no write.
    gateway_requests_per_event: float = 1.2
    # The rate limit's conditional writes to the control table per processor batch: a batch's requests to a source
    # are gathered into one write (`BatchSlots`; all of a batch's groups start together); a group's second request
    # (a disputed charge's dispute list), a retry, a wrong idle/busy guess or a refused write adds one. Measured
    # (item_sizes, Stripe): 0.536 writes per event at 0.304 batches per event, 1.76 per batch. Never more than one
    # per request.
    rate_limit_writes_per_batch: float = 1.8
    # The declared sources (sources.json; without one, one per provider): a signing secret each, and an API-key
    # secret each whose provider has a refetch API (infra/constructs/signing_secrets.py, gateway_api_keys.py).
    sources: int = len(definitions.default_sources())
    sources_with_api: int = sum(source.has_api for source in definitions.default_sources())
    # The declared sources' providers, in catalog order: the per-provider alarms and metrics are theirs.
    providers: tuple[str, ...] = definitions.declared_providers(definitions.default_sources())

    @property
    def secrets(self) -> int:
        """Secrets Manager secrets the stack holds: the sources', the rejected-delivery log's fingerprint key and,
        with forwarding, its signing secret."""
        return self.sources + self.sources_with_api + 1 + (1 if self.forwarding else 0)


def for_sources(assumptions: Assumptions, sources: tuple[definitions.SourceSpec, ...]) -> Assumptions:
    """The assumptions of a deployment of `sources` (what `inbox cost` prices: the declaration it reads)."""
    return replace(
        assumptions,
        sources=len(sources),
        sources_with_api=sum(source.has_api for source in sources),
        providers=definitions.declared_providers(sources),
    )


def deployment_assumptions(
    sources: tuple[definitions.SourceSpec, ...],
    *,
    dashboard: bool,
    tracing: bool,
    forwarding: bool | None = None,
    results_path: Path | None = None,
) -> Assumptions:
    """What `inbox cost` prices for a deployment of `sources` (the measured scenario when there is one), with its
    dashboard, tracing and (None: the scenario's) forwarding: the command and the deploy summary price the same."""
    chosen = replace(for_sources(measured_assumptions(results_path), sources), dashboard=dashboard, tracing=tracing)
    return chosen if forwarding is None else replace(chosen, forwarding=forwarding)


# ---------------------------------------------------------------------------------------------- the fixed side
# CloudWatch bills an alarm per metric it references, each hour it exists (a metric-math alarm pays for every
# metric of its expression); a custom metric (namespace + name + dimension set) per hour it is sent; a dashboard per
# month (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_billing.html; prices.json).
# The alarms of the stack (infra/constructs/monitoring.py) and the metrics each references, as the template has
# them: tests/infra/test_monitoring.py compares this with the synthesized templates (default and one source).
LAMBDA_ALARM_METRICS = 2  # AWS/Lambda Errors + Throttles of the function
# A function's failures another alarm pages on (monitoring.ALARMED_THROUGH; its tests compare the templates with
# this count): the ingest's errors and throttles are the API's 5xx, a throttled sweeper's missing gauge trips
# oldest-pending.
LAMBDA_FAILURES_ALARMED_ELSEWHERE: dict[str, tuple[str, ...]] = {
    "ingest": ("errors", "throttles"),
    "sweeper": ("throttles",),
}
PIPE_ALARM_METRICS = 1  # AWS/EventBridge/Pipes ExecutionFailed (monitoring.PIPE_ALARM_METRICS)
IGNORED_RATIO_ALARM_METRICS = 2  # EventsSettled of the provider: its Average and its SampleCount


def alarm_metrics(
    providers: tuple[str, ...], *, forwarding: bool, sources: tuple[str, ...] | None = None
) -> dict[str, int]:
    """Alarm name (without the stack's prefix) -> how many metrics it references, for a deployment of
    `providers` with or without forwarding; `sources`: the declared sources' names (default: one per provider,
    named after it)."""
    functions = ("ingest", "processor", "sweeper", "archiver", "publisher", *(("forwarder",) if forwarding else ()))
    pipes = ("dispatch", "publish", *(("forward",) if forwarding else ()))
    single = (
        "failed-events",
        "unparseable-events",
        "oldest-pending",
        "dead-letter-queue",
        "pipe-dead-letter-queue",
        "archive-failures",
        "archive-incomplete",
        "outbox-dead-letter-queue",
        *(("forward-dead-letter-queue",) if forwarding else ()),
        "signature-rejections",
        "api-5xx",
    )
    from shared.definitions import provider_entry  # noqa: PLC0415

    # Confirming from the payload (a declared provider that may): corrections and refused verifications, stack-wide.
    confirming = any(provider_entry(provider).confirms_from_payload for provider in providers)
    return {
        **dict.fromkeys(single, 1),
        **dict.fromkeys(("payments-corrected", "verifications-refused") if confirming else (), 1),
        **{f"ignored-ratio-{provider}": IGNORED_RATIO_ALARM_METRICS for provider in providers},
        **{f"ignored-no-payment-{source}": 1 for source in sources or providers},  # EventsIgnored, one reason
        # Errors and Throttles, less what another alarm pages on (monitoring.ALARMED_THROUGH: the ingest's, the
        # sweeper's throttles)
        **{
            f"lambda-{name}": LAMBDA_ALARM_METRICS - len(LAMBDA_FAILURES_ALARMED_ELSEWHERE.get(name, ()))
            for name in functions
            if len(LAMBDA_FAILURES_ALARMED_ELSEWHERE.get(name, ())) < LAMBDA_ALARM_METRICS
        },
        **{f"pipe-{name}": PIPE_ALARM_METRICS for name in pipes},
    }


def fixed_monitoring(a: Assumptions) -> dict[str, Any]:
    """What the fixed CloudWatch lines count: the alarms and their metrics, the custom metrics (those sent every
    hour, billed all month; and those sent only on trouble, free while healthy), the dashboard."""
    from shared.observability import Emitted, custom_metric_count  # noqa: PLC0415 (Powertools: only when priced)

    alarms = alarm_metrics(a.providers, forwarding=a.forwarding)
    return {
        "alarms": len(alarms),
        "alarm_metrics": sum(alarms.values()),
        "custom_metrics_steady": custom_metric_count(a.providers, Emitted.STEADY),
        "custom_metrics_on_trouble": custom_metric_count(a.providers, Emitted.ON_TROUBLE),
        "dashboard": a.dashboard,
    }


def _wru(kilobytes: float) -> int:
    return max(1, math.ceil(kilobytes))


# A per-item storage overhead DynamoDB bills for indexing, in the table and in each index copy
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
STORAGE_OVERHEAD_BYTES_PER_ITEM = 100
# The forwarding log's item of one attempt with a short answer (a 2xx, a few headers): ~0.4 KB by DynamoDB's sizing
# rules (tests/unit/test_forwarding_log.py sizes one), so one write unit per attempt.
FORWARD_LOG_ITEM_KB = 0.4
PAYMENT_ITEM_KB = 0.35  # a payment item: keys, status, amounts, version, times (measured: ~330 bytes)
# An inbox item's attributes besides its body: keys, lifecycle, times, the headers kept to re-verify it, the
# payment's fields, nothing derivable from the rest (measured, item_sizes: ~583 bytes after the ingest's put, ~569
# once settled: the settle's note and time replace the dispatch marks it clears).
ITEM_ATTRIBUTES_KB = 0.57
# An entry of the events-by-group index: the table's key, the group id and the occurred time (measured: 117 bytes).
KEYS_ONLY_ENTRY_KB = 0.12
# The circuit breaker's GetItems of its control item per event (cached per instance for a second: timing-dependent,
# 0.32 to 0.73 measured when they were consistent reads of one unit each).
CONTROL_READS_PER_EVENT = 0.5
# An eventually consistent read of an item up to 4 KB costs half a read unit, a strongly consistent one a unit
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
EVENTUALLY_CONSISTENT_READ_UNITS = 0.5

# ------------------------------------------------------------------------------------------- replay workflow
# Step Functions Standard bills one state transition per state entered; an Inline Map's iterations themselves are
# not billed, only the states they enter (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-transitions.html).
# The replay workflow (infra/replay_definition.py) enters no state per event replayed from the open-events index:
# a page's events are set back to pending by one Lambda task (functions/replay). Per page of the index it enters the
# Query, the page's mode Choice (dry run or replay, decided once per page), the page's task, the tally and its two
# choices, and the Wait after a page that wrote; per execution, the input checks and the end, or the four states
# that continue it in a new execution. Every one of the OPEN_EVENTS_SHARDS shards is read at least once, and each
# shard's last page is on average half full. Counted in moto's interpreter, which records the states AWS enters
# (tests/integration/test_replay_workflow.py holds this count to a run). The page function's own price (one
# invocation per page, a few hundred ms at 256 MB) is under a tenth of a cent per million webhooks: not a line.
REPLAY_TRANSITIONS_PER_EVENT = 0
REPLAY_TRANSITIONS_PER_PAGE = 7
REPLAY_TRANSITIONS_PER_EXECUTION = 15  # the last execution of a replay enters 4 fewer (it ends, not continues)
REPLAY_SHARE_OF_EVENTS = 0.01  # events replayed in a month (failed ones, after a fix)


def replay_pages(events: int, *, page_size: int = DEFAULT_PAGE_SIZE) -> int:
    """The pages of the open-events index one replay of `events` events reads (each shard's last page half full)."""
    shards = definitions.OPEN_EVENTS_SHARDS
    return max(shards, math.ceil(events / page_size + shards / 2))


def replay_transitions(events: int, *, page_size: int = DEFAULT_PAGE_SIZE, pages: int | None = None) -> int:
    """The state transitions one replay of `events` events (pages of `page_size`; `pages`: as many pages, where
    they were counted) costs."""
    executions = max(1, math.ceil(events / MAX_ITEMS_PER_EXECUTION))
    return (
        REPLAY_TRANSITIONS_PER_EVENT * events
        + REPLAY_TRANSITIONS_PER_PAGE * (replay_pages(events, page_size=page_size) if pages is None else pages)
        + REPLAY_TRANSITIONS_PER_EXECUTION * executions
    )


def replay_transitions_per_event(events_per_replay: int = DEFAULT_MAX_EVENTS) -> float:
    """Per replayed event, for replays of `events_per_replay` (default: the CLI's default `--max-events`)."""
    return replay_transitions(events_per_replay) / events_per_replay


# ----------------------------------------------------------------------------------- inline body or S3 object
def inline_body_break_even_bytes(region: str = "us-east-1", a: Assumptions | None = None) -> int:
    """The stored (compressed) body size above which an S3 object costs less than keeping it in the item.

    Each KB an inline body adds to the item is paid by every write of the item: the ingest's put, each duplicate
    delivery's refused put, the settle (twice in a transaction); and by its storage with PITR over the retention.
    An S3 body costs a PUT per delivery (the object is written before the dedup put, so duplicates put it again)
    and a GET when the archiver reads it at expiry; the item then keeps its key (S3 storage is a tenth of a cent)."""
    a = a or Assumptions()
    p = json.loads(PRICES.read_text())["regions"][region]
    wru = p["dynamodb_per_million_write_request_units"] / 1e6
    writes_per_kb = (
        1  # the ingest's put
        + (a.deliveries_per_event - 1)  # duplicates
        + 2 * a.transitions_per_event  # the settle in a transaction
        + (1 - a.transitions_per_event)  # the settle alone
    )
    storage_per_kb = (
        (p["dynamodb_storage_per_gb_month"] + p["dynamodb_pitr_per_gb_month"]) / 1024**2 * a.retention_days / 30
    )
    inline_per_kb = writes_per_kb * wru + storage_per_kb
    s3_per_event = (a.deliveries_per_event * p["s3_put_per_1000_requests"] + p["s3_get_per_1000_requests"]) / 1000
    return int(s3_per_event / inline_per_kb * 1024)


@dataclass(frozen=True)
class Usage:
    """What one webhook event uses: its first delivery and its processing; a duplicate delivery's extra cost;
    and what each published transition adds downstream."""

    source: str  # "measured ..." or "assumed ..."
    write_units_ingest: float  # the stored item and its index entries
    write_units_per_duplicate: float  # a duplicate delivery: the conditional put that fails (billed all the same)
    write_units_processing: float  # the processor's transaction (inbox item, payment) and its index writes
    write_units_outbox_per_transition: float  # the outbox record, inside the transaction
    write_units_forwarding_per_transition: float  # the forwarder's checkpoint in the control table
    # the refetch rate limit's conditional writes (control table, an item under 1 KB): one per batch's gathered
    # requests to a source; a refused or mis-guessed write is billed too, so a saturated source pays a little more
    write_units_rate_limit: float
    read_units_processing: float
    pipe_events: float  # events the dispatch Pipe passes (its filter drops the processor's own status changes)
    processor_invocations: float
    sqs_requests: float  # the Pipe's SendMessageBatch, the event source mapping's receive and delete
    log_bytes_per_duplicate: float  # the ingest's INFO bytes per duplicate delivery (a stored one's line is DEBUG)
    log_bytes_per_processed_event: float
    stored_bytes: float  # the processed inbox item and the index entries that stay, with DynamoDB's overhead


def assumed_usage(a: Assumptions) -> Usage:
    """The fallback: formulas from how the code writes, for any body size (tests keep them in agreement with the
    last measurement)."""
    stored_body_kb = a.body_kb * a.compressed_body_ratio  # what the item keeps (inline, compressed)
    if stored_body_kb * 1024 > INLINE_BODY_BREAK_EVEN_BYTES:
        stored_body_kb = 0.1  # in the body bucket: the item keeps its key
    item_kb = stored_body_kb + ITEM_ATTRIBUTES_KB
    indexes = len(definitions.INBOX_GLOBAL_INDEXES)
    projected_kb = 0.5  # an index entry: keys and a few small fields (INCLUDE or KEYS_ONLY), never the body
    # The settle's index writes: the open-events entry goes (its key `open_status` is removed); the events-by-group
    # index projects keys only, none of which the settle changes, so it writes nothing there.
    settle_index_writes = sum(
        1
        for name in definitions.INBOX_INDEX_PROJECTIONS
        if name == definitions.OPEN_EVENTS_INDEX or definitions.INBOX_INDEX_PROJECTIONS[name] != "KEYS_ONLY"
    )
    per_batch = 1 / a.events_per_processor_batch
    # The processor's settle: with a payment to write (a transition, or a touch of an ignored event), one
    # transaction (2x, the inbox item billed on its whole size, body included; the payment put); without one, a
    # plain conditional update of the item (shared/payments/store.py `settle`).
    transactional = a.transitions_per_event + a.touched_share
    return Usage(
        source=f"assumed (formulas from how the code writes, {a.body_kb} KB bodies; no measurement used)",
        write_units_ingest=_wru(item_kb) + indexes * _wru(projected_kb),
        write_units_per_duplicate=_wru(item_kb),
        write_units_processing=transactional * 2 * _wru(item_kb)
        + (1 - transactional) * _wru(item_kb)
        + transactional * 2 * _wru(PAYMENT_ITEM_KB)
        + settle_index_writes * _wru(projected_kb),
        write_units_outbox_per_transition=2 * _wru(a.published_event_kb),
        write_units_forwarding_per_transition=1,
        write_units_rate_limit=min(a.gateway_requests_per_event, a.rate_limit_writes_per_batch * per_batch),
        # eventually consistent reads of the item and the payment (a transition's outbox record is a put in the
        # transaction: no read); an event that writes no payment is decided again on a consistent read of it (an
        # Ignore is never taken from a copy that may be stale: docs/cost.md); the breaker's eventually consistent
        # reads of its control item
        read_units_processing=EVENTUALLY_CONSISTENT_READ_UNITS * (math.ceil(item_kb / 4) + 1 + CONTROL_READS_PER_EVENT)
        + (1 - transactional) * math.ceil(PAYMENT_ITEM_KB / 4),
        pipe_events=1.0,
        processor_invocations=per_batch,
        sqs_requests=3 * per_batch,
        log_bytes_per_duplicate=a.log_bytes_per_duplicate,
        log_bytes_per_processed_event=a.log_bytes_per_processed_event,
        # what stays: the settled item and its events-by-group entry (keys only); the open-events entry is gone
        stored_bytes=(item_kb + KEYS_ONLY_ENTRY_KB) * 1024 + 2 * STORAGE_OVERHEAD_BYTES_PER_ITEM,
    )


def measured_usage(results_path: Path | None = None) -> Usage | None:
    """The per-event figures of the last `item_sizes` measurement, or None when there is none."""
    results_path = results_path or BENCH_RESULTS
    if not results_path.exists():
        return None
    document = json.loads(results_path.read_text())
    section = document.get("item_sizes")
    if not section:
        return None
    per, scenario = section["per_event"], section["scenario"]
    transitions = per["transitions"] or 1.0
    sizes = section["item_bytes_median"]
    stored = (
        sizes.get("inbox item after processor Update", 0)
        + sizes.get(f"inbox/{definitions.RESOURCE_EVENTS_INDEX} entry", 0)
        + 2 * STORAGE_OVERHEAD_BYTES_PER_ITEM
    )
    return Usage(
        source=(
            f"measured ({results_path.name}, item_sizes, {section.get('measured_at', '?')}: "
            f"{scenario['events']} {scenario['provider']} events of {scenario['body_bytes']} bytes)"
        ),
        write_units_ingest=per["write_units_ingest"],
        write_units_per_duplicate=per["write_units_per_duplicate_delivery"],
        write_units_processing=per["write_units_processing"],
        write_units_outbox_per_transition=round(per["write_units_outbox"] / transitions, 3),
        write_units_forwarding_per_transition=round(per["write_units_forwarding_checkpoints"] / transitions, 3),
        # a measurement from before the rate limit has no such figure: the formula's
        write_units_rate_limit=per.get("write_units_rate_limit", Assumptions().gateway_requests_per_event),
        read_units_processing=per["read_units_processing"],
        pipe_events=per["pipe_events"],
        processor_invocations=per["processor_invocations"],
        sqs_requests=per["sqs_requests"],
        # measured over the scenario's deliveries, all of it the duplicates' lines: per duplicate
        log_bytes_per_duplicate=round(
            per["log_bytes_ingest_per_delivery"]
            * scenario["deliveries_per_event"]
            / max(scenario["deliveries_per_event"] - 1, 1e-9),
            1,
        ),
        log_bytes_per_processed_event=per["log_bytes_processor"],
        stored_bytes=stored,
    )


def monthly_cost(
    events: int, region: str, assumptions: Assumptions | None = None, usage: Usage | None = None
) -> dict[str, Any]:
    """The month's cost, line by line. `usage` (per-event figures) defaults to the formulas of `assumptions`."""
    table = json.loads(PRICES.read_text())
    if region not in table["regions"]:
        raise ValueError(f"no price table for {region!r}; known: {', '.join(sorted(table['regions']))}")
    p = table["regions"][region]
    a = assumptions or Assumptions()
    u = usage or assumed_usage(a)
    million = events / 1_000_000
    deliveries = events * a.deliveries_per_event
    duplicates = deliveries - events
    wru_price = p["dynamodb_per_million_write_request_units"]
    gb_ingest = definitions.INGEST_MEMORY_MB / 1024
    gb_processor = definitions.PROCESSOR_MEMORY_MB / 1024
    published = events * a.transitions_per_event
    forward_attempts = published * a.forward_attempts_per_transition
    outbox_readers = 2 if a.forwarding else 1  # Pipes on the outbox stream
    gb_publisher = definitions.PUBLISHER_MEMORY_MB / 1024
    gb_forwarder = definitions.FORWARDER_MEMORY_MB / 1024
    storage_gb = events * u.stored_bytes * a.retention_days / 30 / 1024**3
    monitoring = fixed_monitoring(a)
    lines = {
        "API Gateway HTTP API": deliveries / 1e6 * p["api_gateway_http_per_million_requests"],
        "Lambda ingest (requests)": deliveries / 1e6 * p["lambda_per_million_requests"],
        "Lambda ingest (GB-seconds)": deliveries * a.ingest_ms / 1000 * gb_ingest * p["lambda_arm64_per_gb_second"],
        "Lambda processor (requests)": events * u.processor_invocations / 1e6 * p["lambda_per_million_requests"],
        "Lambda processor (GB-seconds)": events
        * a.processor_ms_per_event
        / 1000
        * gb_processor
        * p["lambda_arm64_per_gb_second"],
        "DynamoDB writes (ingest)": (events * u.write_units_ingest + duplicates * u.write_units_per_duplicate)
        / 1e6
        * wru_price,
        "DynamoDB writes (processing, transactions)": events * u.write_units_processing / 1e6 * wru_price,
        "Refetch rate limit (control table)": events * u.write_units_rate_limit / 1e6 * wru_price,
        "DynamoDB reads": events * u.read_units_processing / 1e6 * p["dynamodb_per_million_read_request_units"],
        "DynamoDB Streams reads (Pipe)": events / 100 / 100_000 * p["dynamodb_streams_per_100k_read_requests"],
        "DynamoDB storage + PITR": storage_gb * (p["dynamodb_storage_per_gb_month"] + p["dynamodb_pitr_per_gb_month"]),
        "EventBridge Pipes": events * u.pipe_events / 1e6 * p["pipes_per_million_requests"],
        "SQS FIFO (send, receive, delete)": events * u.sqs_requests / 1e6 * p["sqs_fifo_per_million_requests"],
        "Step Functions (replay, ~1% of events)": events
        * REPLAY_SHARE_OF_EVENTS
        * replay_transitions_per_event()
        / 1000
        * p["step_functions_per_1000_state_transitions"],
        "S3 (archive puts, bodies past the inline break-even)": events / 1000 / 1000 * p["s3_put_per_1000_requests"]
        + events * a.body_kb / 1024 / 1024 * 0.3 * p["s3_standard_per_gb_month"],
        # the functions' lines and metrics (measured), and the API's access log line per delivery
        "CloudWatch Logs": (
            duplicates * u.log_bytes_per_duplicate
            + deliveries * ACCESS_LOG_BYTES_PER_DELIVERY
            + events * u.log_bytes_per_processed_event
        )
        / 1e9
        * (p["cloudwatch_logs_ingestion_per_gb"] + p["cloudwatch_logs_storage_per_gb_month"]),
        "CloudWatch alarms (fixed)": monitoring["alarm_metrics"] * p["cloudwatch_alarm_metric_per_month"],
        "CloudWatch custom metrics (fixed)": monitoring["custom_metrics_steady"]
        * p["cloudwatch_custom_metric_per_month"],
        "CloudWatch dashboard (fixed)": p["cloudwatch_dashboard_per_month"] if a.dashboard else 0.0,
        "Secrets Manager (fixed)": a.secrets * p["secrets_manager_per_secret_month"],
        # Off by default; on, every function's invocations are sampled (the sweeper's schedule included).
        "X-Ray traces": (
            sum(
                xray_traces(invocations)
                for invocations in (
                    deliveries,
                    events * u.processor_invocations,
                    published / definitions.OUTBOX_PIPE_BATCH_SIZE * outbox_readers,
                    SECONDS_PER_MONTH / 60 / definitions.SWEEP_SCHEDULE_MINUTES,
                )
            )
            / 1e6
            * p["xray_per_million_traces_recorded"]
            if a.tracing
            else 0.0
        ),
        # Downstream: each transition's outbox Put rides in the processor's transaction.
        "Outbox writes (in the transaction)": published * u.write_units_outbox_per_transition / 1e6 * wru_price,
        "Outbox stream reads + Pipes": published
        * outbox_readers
        * (p["pipes_per_million_requests"] / 1e6 + p["dynamodb_streams_per_100k_read_requests"] / 100 / 100_000),
        "Lambda publisher + forwarder": published
        / definitions.OUTBOX_PIPE_BATCH_SIZE
        * outbox_readers
        / 1e6
        * p["lambda_per_million_requests"]
        + published
        * (
            a.publisher_ms_per_event / 1000 * gb_publisher
            + (a.forwarder_ms_per_event / 1000 * gb_forwarder if a.forwarding else 0.0)
        )
        * p["lambda_arm64_per_gb_second"],
        "Forwarding checkpoints (control table)": (
            published * u.write_units_forwarding_per_transition / 1e6 * wru_price if a.forwarding else 0.0
        ),
        # One item per attempt, kept DEFAULT_FORWARD_LOG_RETENTION_DAYS (with PITR, like every table).
        "Forwarding log (one item per attempt)": (
            forward_attempts * _wru(FORWARD_LOG_ITEM_KB) / 1e6 * wru_price
            + forward_attempts
            * (FORWARD_LOG_ITEM_KB * 1024 + STORAGE_OVERHEAD_BYTES_PER_ITEM)
            * definitions.DEFAULT_FORWARD_LOG_RETENTION_DAYS
            / 30
            / 1024**3
            * (p["dynamodb_storage_per_gb_month"] + p["dynamodb_pitr_per_gb_month"])
            if a.forwarding
            else 0.0
        ),
        "EventBridge bus events + archive": published / 1e6 * p["eventbridge_custom_events_per_million"]
        + published * a.published_event_kb / 1024 / 1024 * p["eventbridge_archive_per_gb"],
    }
    total = sum(lines.values())
    fixed = sum(value for name, value in lines.items() if name in FIXED_LINES)
    return {
        "region": region,
        "prices_as_of": table["as_of"],
        "custom_metric_price": p["cloudwatch_custom_metric_per_month"],
        "events_per_month": events,
        "lines": {name: round(value, 4) for name, value in lines.items()},
        "total_per_month": round(total, 2),
        "variable_per_million_events": round((total - fixed) / million, 2) if events else 0.0,
        "fixed_per_month": round(fixed, 2),
        "write_units_per_event": {
            "ingest": u.write_units_ingest,
            "per_duplicate_delivery": u.write_units_per_duplicate,
            "processing": u.write_units_processing,
            "outbox_per_transition": u.write_units_outbox_per_transition,
            "rate_limit": u.write_units_rate_limit,
        },
        "per_event_figures": u.source,
        "usage": asdict(u),
        "scenario": {
            "body_kb": a.body_kb,
            "deliveries_per_event": a.deliveries_per_event,
            "transitions_per_event": a.transitions_per_event,
            "forwarding": a.forwarding,
            "tracing": a.tracing,
            "sources": a.sources,
            "secrets": {
                "signing": a.sources,
                "api_key": a.sources_with_api,
                "forwarding": 1 if a.forwarding else 0,
                "fingerprint_key": 1,
                "total": a.secrets,
            },
            "monitoring": monitoring,
        },
        "assumptions": asdict(a),
        "index_projection": ", ".join(f"{name} {kind}" for name, kind in definitions.INBOX_INDEX_PROJECTIONS.items()),
    }


# The lines that do not depend on the volume (what `fixed_per_month` adds up).
FIXED_LINES = (
    "CloudWatch alarms (fixed)",
    "CloudWatch custom metrics (fixed)",
    "CloudWatch dashboard (fixed)",
    "Secrets Manager (fixed)",
)


# Lambda allots CPU in proportion to memory: "At 1,769 MB, a function has the equivalent of one vCPU"
# (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
LAMBDA_ONE_VCPU_MB = 1769


def lambda_ms(wait_ms: float, cpu_ms: float, memory_mb: int, *, concurrent: float = 1.0) -> float:
    """A Lambda's time for work that waits `wait_ms` and computes `cpu_ms` at a full core, at `memory_mb` (its CPU
    slowed to memory / LAMBDA_ONE_VCPU_MB of a vCPU). With `concurrent` units of such work in threads (a batch's
    groups), one unit's CPU overlaps the others' waits, but the instance's CPU is shared: per unit, the longer of its
    own wait plus its share of the CPU, and its CPU alone."""
    slowdown = max(1.0, LAMBDA_ONE_VCPU_MB / memory_mb)
    return max(wait_ms + cpu_ms * slowdown / concurrent, cpu_ms * slowdown)


def measured_assumptions(results_path: Path | None = None) -> Assumptions:
    """Defaults, with what the latest benchmark measured: the ingest's and the processor's billed durations on Lambda
    (`lambda_ms`: their CPU measured here, at the functions' share of a vCPU, and their waits: the ingest's one
    DynamoDB round trip, the processor's time per event of a typical batch beyond its CPU, bench/processor_batch.py,
    both at its assumed latencies), and the measured scenario's body size and
    transitions per event (the share of events that change a payment, as `inbox simulate` drove them)."""
    results_path = results_path or BENCH_RESULTS
    if not results_path.exists():
        return Assumptions()
    results = json.loads(results_path.read_text())
    measured: dict[str, Any] = {}
    batch = results.get("processor_batch", {})
    sdk_ms = batch.get("sdk_cpu_ms_per_dynamodb_call")
    dynamodb_ms = batch.get("scenario", {}).get("dynamodb_latency_ms_assumed")
    ingest = results.get("ingest_cost", {}).get("2 KB", {})
    if sdk_ms and dynamodb_ms and ingest.get("handler_median_ms"):
        # the handler's own CPU (its time beyond a bare put on the same in-process backend) and the SDK's for its
        # one PutItem; one assumed DynamoDB round trip
        own = max(0.0, ingest["handler_median_ms"] - ingest["bare_putitem_median_ms"])
        measured["ingest_cpu_ms"] = round(own + sdk_ms, 2)
        measured["ingest_ms"] = round(lambda_ms(dynamodb_ms, own + sdk_ms, definitions.INGEST_MEMORY_MB), 1)
    typical = batch.get("typical", {})
    requests = results.get("item_sizes", {}).get("detail_per_event", {}).get("requests", {})
    own_cpu = typical.get("after", {}).get("own_cpu_ms_per_event")
    if sdk_ms and own_cpu is not None and requests:
        # the processor's own CPU per event and the SDK's for its DynamoDB requests (item_sizes counts them); what
        # the batch's wall time was beyond its own CPU is waiting (the assumed round trips)
        calls = sum(count for name, count in requests.items() if name.startswith("processor: dynamodb."))
        cpu = own_cpu + calls * sdk_ms
        wait = typical["after"]["ms_per_event"] - own_cpu
        measured["processor_cpu_ms_per_event"] = round(cpu, 2)
        measured["processor_ms_per_event"] = round(
            lambda_ms(wait, cpu, definitions.PROCESSOR_MEMORY_MB, concurrent=typical["payments_per_batch"]), 1
        )
    scenario = results.get("item_sizes", {}).get("scenario")
    if scenario:
        measured["body_kb"] = round(scenario["body_bytes"] / 1024, 2)
        measured["transitions_per_event"] = scenario["transitions_per_event"]
    return Assumptions(**measured)


def _render_monitoring(monitoring: dict[str, Any], metric_price: float) -> str:
    return (
        f"monitoring: {monitoring['alarms']} alarms on {monitoring['alarm_metrics']} alarm metrics, "
        f"{monitoring['custom_metrics_steady']} custom metrics sent every hour "
        f"(+{monitoring['custom_metrics_on_trouble']} sent only on trouble: ${metric_price:.2f} for each month one is "
        "sent every hour), "
        f"dashboard {'on' if monitoring['dashboard'] else 'off'} (inbox_dashboard)"
    )


def render(report: dict[str, Any]) -> str:
    width = max(len(name) for name in report["lines"])
    scenario = report["scenario"]
    rows = [
        f"AWS cost model, {report['region']}, prices as of {report['prices_as_of']}",
        f"{report['events_per_month']:,} webhooks per month (index projection {report['index_projection']})",
        f"scenario: {scenario['body_kb']} KB bodies, {scenario['deliveries_per_event']} deliveries per event, "
        f"{scenario['transitions_per_event']} transitions per event, "
        f"forwarding {'on' if scenario['forwarding'] else 'off'}, "
        f"X-Ray tracing {'on' if scenario['tracing'] else 'off'} (inbox_tracing)",
        f"{scenario['sources']} source(s) declared: {scenario['secrets']['total']} secrets "
        f"({scenario['secrets']['signing']} signing, {scenario['secrets']['api_key']} API key, "
        f"{scenario['secrets']['forwarding']} forwarding, {scenario['secrets']['fingerprint_key']} fingerprint key)",
        _render_monitoring(scenario["monitoring"], report["custom_metric_price"]),
        f"per-event figures: {report['per_event_figures']}",
        "",
    ]
    rows += [f"  {name:<{width}}  ${value:>10,.2f}" for name, value in report["lines"].items()]
    rows += [
        "",
        f"  {'total per month':<{width}}  ${report['total_per_month']:>10,.2f}",
        f"  {'variable cost per million webhooks':<{width}}  ${report['variable_per_million_events']:>10,.2f}",
        f"  {'fixed per month':<{width}}  ${report['fixed_per_month']:>10,.2f}",
    ]
    for key in ("with_forwarding_off", "with_forwarding_on"):
        if key in report:
            rows.append(
                f"  {key.replace('_', ' ')}: ${report[key]['variable_per_million_events']:,.2f} per million, "
                f"${report[key]['fixed_per_month']:,.2f} fixed"
            )
    rows += [
        "",
        f"  write units per event: {report['write_units_per_event']}",
        f"  usage per event: {report['usage']}",
        f"  assumptions: {report['assumptions']}",
    ]
    return "\n".join(rows)
