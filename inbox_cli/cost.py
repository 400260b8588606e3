"""`inbox cost`: what the stack costs per month and per million webhooks, line by line.

A model, not a bill: per-event resource use is derived from how the code writes (item sizes, index projection,
transactions, batching) and from measured durations (`bench/results/latest.json` when present); prices come from
the dated table `prices.json`. Every assumption is a parameter with its default printed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shared import definitions

PRICES = Path(__file__).with_name("prices.json")
BENCH_RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results" / "latest.json"


@dataclass(frozen=True)
class Assumptions:
    body_kb: float = 2.0  # average raw webhook body
    deliveries_per_event: float = 1.25  # gateway retries and duplicates that reach the API
    ingest_ms: float = 25.0  # billed duration per ingest invocation (Lambda, not the local benchmark)
    processor_ms_per_event: float = 120.0  # refetch round trip dominates
    events_per_processor_batch: float = 2.0  # FIFO groups keep batches small
    log_bytes_per_event: int = 1200  # two structured lines (ingest + processor)
    retention_days: int = definitions.DEFAULT_RETENTION_DAYS
    xray_sampled_share: float = 0.05
    fixed_custom_metrics: int = 40  # metric x dimension combinations (per provider)
    alarms: int = 10  # eight of the flow + the outbox's and the forwarding's dead-letter queues
    # Downstream (the transactional outbox): share of events that change a payment's status, hence publish one
    # event (the rest are ignored: late, repeated, or not about payments), and whether forwarding is deployed.
    transitions_per_event: float = 0.6
    forwarding: bool = True
    publisher_ms_per_event: float = 15.0  # one PutEvents call per batch of up to ten
    forwarder_ms_per_event: float = 150.0  # one signed POST round trip to the customer
    published_event_kb: float = 0.6
    secrets: int = len(definitions.PROVIDERS) + len(definitions.REFETCH_PROVIDERS) + 1  # + the forwarding secret


def _wru(kilobytes: float) -> int:
    return max(1, math.ceil(kilobytes))


def monthly_cost(events: int, region: str, assumptions: Assumptions | None = None) -> dict[str, Any]:
    table = json.loads(PRICES.read_text())
    if region not in table["regions"]:
        raise ValueError(f"no price table for {region!r}; known: {', '.join(sorted(table['regions']))}")
    p = table["regions"][region]
    a = assumptions or Assumptions()
    million = events / 1_000_000
    deliveries = events * a.deliveries_per_event
    item_kb = a.body_kb + 1.0  # the body plus ~1 KB of attributes and stored headers
    projected_kb = item_kb if str(definitions.INBOX_INDEX_PROJECTION) == "ALL" else 0.5  # INCLUDE: a few small fields
    indexes = len(definitions.INBOX_GLOBAL_INDEXES)
    # Writes per event: the ingest's put (table + each index it lands in); the processor's transaction (2x for
    # transactional writes) updating the inbox item and putting the payment, plus the index changes it causes.
    wru_ingest = _wru(item_kb) + indexes * _wru(projected_kb)
    wru_processing = 2 * _wru(item_kb) + 2 * _wru(1.0) + indexes * _wru(projected_kb)
    rru_processing = 1 * math.ceil(item_kb / 4) + 1  # strongly consistent reads: the item and the payment
    gb_ingest = definitions.INGEST_MEMORY_MB / 1024
    gb_processor = definitions.PROCESSOR_MEMORY_MB / 1024
    published = events * a.transitions_per_event
    outbox_readers = 2 if a.forwarding else 1  # Pipes on the outbox stream
    gb_publisher = definitions.PUBLISHER_MEMORY_MB / 1024
    gb_forwarder = definitions.FORWARDER_MEMORY_MB / 1024
    storage_gb = events * item_kb * a.retention_days / 30 / 1024 / 1024 * (1 + indexes * projected_kb / item_kb)
    lines = {
        "API Gateway HTTP API": deliveries / 1e6 * p["api_gateway_http_per_million_requests"],
        "Lambda ingest (requests)": deliveries / 1e6 * p["lambda_per_million_requests"],
        "Lambda ingest (GB-seconds)": deliveries * a.ingest_ms / 1000 * gb_ingest * p["lambda_arm64_per_gb_second"],
        "Lambda processor (requests)": events / a.events_per_processor_batch / 1e6 * p["lambda_per_million_requests"],
        "Lambda processor (GB-seconds)": events
        * a.processor_ms_per_event
        / 1000
        * gb_processor
        * p["lambda_arm64_per_gb_second"],
        "DynamoDB writes (ingest)": events * wru_ingest / 1e6 * p["dynamodb_per_million_write_request_units"],
        "DynamoDB writes (processing, transactions)": events
        * wru_processing
        / 1e6
        * p["dynamodb_per_million_write_request_units"],
        "DynamoDB reads": events * rru_processing / 1e6 * p["dynamodb_per_million_read_request_units"],
        "DynamoDB Streams reads (Pipe)": events / 100 / 100_000 * p["dynamodb_streams_per_100k_read_requests"],
        "DynamoDB storage + PITR": storage_gb * (p["dynamodb_storage_per_gb_month"] + p["dynamodb_pitr_per_gb_month"]),
        "EventBridge Pipes": events / 1e6 * p["pipes_per_million_requests"],
        "SQS FIFO (send, receive, delete)": events * 2.2 / 1e6 * p["sqs_fifo_per_million_requests"],
        "Step Functions (replay, ~1% of events)": events
        * 0.01
        * 6
        / 1000
        * p["step_functions_per_1000_state_transitions"],
        "S3 (archive puts, bodies > 256 KB)": events / 1000 / 1000 * p["s3_put_per_1000_requests"]
        + events * a.body_kb / 1024 / 1024 * 0.3 * p["s3_standard_per_gb_month"],
        "CloudWatch Logs": events
        * a.log_bytes_per_event
        / 1e9
        * (p["cloudwatch_logs_ingestion_per_gb"] + p["cloudwatch_logs_storage_per_gb_month"]),
        "CloudWatch metrics, alarms, dashboard (fixed)": a.fixed_custom_metrics
        * p["cloudwatch_custom_metric_per_month"]
        + a.alarms * p["cloudwatch_alarm_per_month"]
        + p["cloudwatch_dashboard_per_month"],
        "Secrets Manager (fixed)": a.secrets * p["secrets_manager_per_secret_month"],
        "X-Ray traces": deliveries * a.xray_sampled_share / 1e6 * p["xray_per_million_traces_recorded"],
        # Downstream: each transition's outbox Put rides in the processor's transaction (2 WRU for 1 KB).
        "Outbox writes (in the transaction)": published * 2 / 1e6 * p["dynamodb_per_million_write_request_units"],
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
        "EventBridge bus events + archive": published / 1e6 * p["eventbridge_custom_events_per_million"]
        + published * a.published_event_kb / 1024 / 1024 * p["eventbridge_archive_per_gb"],
    }
    total = sum(lines.values())
    fixed = lines["CloudWatch metrics, alarms, dashboard (fixed)"] + lines["Secrets Manager (fixed)"]
    return {
        "region": region,
        "prices_as_of": table["as_of"],
        "events_per_month": events,
        "lines": {name: round(value, 4) for name, value in lines.items()},
        "total_per_month": round(total, 2),
        "variable_per_million_events": round((total - fixed) / million, 2) if events else 0.0,
        "fixed_per_month": round(fixed, 2),
        "write_units_per_event": {"ingest": wru_ingest, "processing": wru_processing},
        "assumptions": asdict(a),
        "index_projection": definitions.INBOX_INDEX_PROJECTION,
    }


def measured_assumptions() -> Assumptions:
    """Defaults, with the ingest duration taken from the latest benchmark when one was run (scaled for the
    network round trip to DynamoDB that the in-process benchmark does not pay)."""
    if not BENCH_RESULTS.exists():
        return Assumptions()
    results = json.loads(BENCH_RESULTS.read_text())
    handler_ms = results.get("ingest_cost", {}).get("2 KB", {}).get("handler_median_ms")
    return Assumptions(ingest_ms=round(handler_ms + 20.0, 1)) if handler_ms else Assumptions()


def render(report: dict[str, Any]) -> str:
    width = max(len(name) for name in report["lines"])
    rows = [
        f"AWS cost model, {report['region']}, prices as of {report['prices_as_of']}",
        f"{report['events_per_month']:,} webhooks per month (index projection {report['index_projection']})",
        "",
    ]
    rows += [f"  {name:<{width}}  ${value:>10,.2f}" for name, value in report["lines"].items()]
    rows += [
        "",
        f"  {'total per month':<{width}}  ${report['total_per_month']:>10,.2f}",
        f"  {'variable cost per million webhooks':<{width}}  ${report['variable_per_million_events']:>10,.2f}",
        f"  {'fixed per month':<{width}}  ${report['fixed_per_month']:>10,.2f}",
        "",
        f"  write units per event: {report['write_units_per_event']}; assumptions: {report['assumptions']}",
    ]
    return "\n".join(rows)
