"""The one Logger every function shares, its per-invocation context, and metrics.

Log bytes are CloudWatch Logs ingestion, billed per GB (the EMF blobs of the metrics too: they are log lines), so
each line carries what an operator needs and nothing CloudWatch already knows (docs/operations.md, "Logs"):
- the context `instrumented` adds per invocation is `request_id`, `cold_start` only on a cold start, and
  `xray_trace_id` only when the invocation is traced (X-Ray sampled it: Sampled=1 in `_X_AMZN_TRACE_ID`). Not the
  function's name, ARN or memory (the log group and stream are the function's), not the code location, not the
  service (one service per stack);
- the timestamp is RFC 3339 in UTC: Lambda's JSON log filtering reads the `level` and `timestamp` keys of a JSON
  line, and a line without a valid RFC 3339 timestamp gets the level INFO and a timestamp Lambda adds ("Log-level
  filtering", https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html).

Metrics are buffered for the invocation and flushed once when it ends (`instrumented`): one EMF blob per dimension
set, each metric's samples as one array, instead of a blob per sample. An invocation's metrics never mix with
another's dimension set (each set is its own blob). Outside an invocation (tests, the CLI) a metric is sent at
once. Threads an invocation starts (the processor runs a batch's payments on a pool) do not carry its context:
what they record is held for, and flushed by, the invocations declared `instrumented(adopts_threads=True)`; in
AWS an execution environment runs one invocation at a time, so that is this invocation's.

Every custom metric is declared once, in `METRICS`: its name, the dimensions it carries besides `service`, and
when it is emitted. The emitters refuse an undeclared name, and add only the declared dimensions (a provider or a
reason passed for a metric declared without one is dropped): each unique namespace + name + dimension set is a
custom metric CloudWatch bills by the hour while it is emitted ("All custom metrics are prorated by the hour.
They're metered only when they're sent to CloudWatch", CloudWatch user guide, "Analyzing, optimizing, and reducing
CloudWatch costs": https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_billing.html). The
cost model (inbox_cli/cost.py) counts them from this declaration, and the alarms (infra/constructs/monitoring.py)
read them with these dimensions.

Tracer is left out on purpose: the X-Ray SDK cost ~170 ms of import on a cold start (one ad-hoc
measurement over boto3 + a client; `make bench` times the whole ingest init) and the ingest answers on the
gateway's clock. Lambda's active tracing, when the stack turns it on (context value `inbox_tracing`), records each
sampled invocation.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Final, NamedTuple, TypeVar, overload

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from shared import definitions

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME", definitions.SERVICE_NAME)
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", definitions.METRICS_NAMESPACE)

# No code location, no automatic trace id (added per invocation, only when traced: `instrumented`), RFC 3339 UTC.
logger = Logger(service=SERVICE_NAME, use_rfc3339=True, utc=True, location=None, xray_trace_id=None)
logger.remove_keys(["service"])  # one service per stack, and the log group is the function's


class Emitted(StrEnum):
    """When a metric is sent, hence what it costs: CloudWatch bills a custom metric for each hour it is sent."""

    STEADY = "steady"  # every hour a working deployment runs (traffic, or every sweep): billed all month
    ON_TROUBLE = "on trouble"  # only when something fails or needs a look (a zero is not sent): ~free when healthy


class MetricDeclaration(NamedTuple):
    name: str
    dimensions: tuple[str, ...]  # besides `service`: () service-wide, ("provider",), or one closed set's name
    emitted: Emitted
    why: str  # what reads it: an alarm, or the question it answers


# The closed sets a dimension may take (never a value a delivery chooses): "provider" is the declared sources'
# providers, "source" the declared sources (a deployment's configuration, never a delivery's).
DIMENSION_VALUES: Final[dict[str, tuple[str, ...]]] = {
    "cause": definitions.REJECTION_NOT_RECORDED_CAUSES,
    "reason": definitions.COUNTED_IGNORED_REASONS,
}
# Dimensions whose values are the deployment's own (its sources, its providers), not a closed set of the code.
DEPLOYMENT_DIMENSIONS: Final = frozenset({"provider", "source"})

METRICS: Final[dict[str, MetricDeclaration]] = {
    declaration.name: declaration
    for declaration in (
        # Ingest (shared/ingest.py). Deliveries are API Gateway's `Count` (free); stored vs duplicate is the ingest
        # log's `outcome` (Logs Insights): neither is a custom metric any more.
        MetricDeclaration(definitions.METRIC_EVENTS_UNPARSEABLE, (), Emitted.ON_TROUBLE, "alarm unparseable-events"),
        MetricDeclaration(definitions.METRIC_SIGNATURES_REJECTED, (), Emitted.ON_TROUBLE, "alarm signature-rejections"),
        MetricDeclaration(
            definitions.METRIC_STORAGE_FAILURES, (), Emitted.ON_TROUBLE, "dashboard; api-5xx alarms on the 503s"
        ),
        # The rejected-delivery log (shared/rejections.py): the reason of each refusal is in the log itself.
        MetricDeclaration(
            definitions.METRIC_DELIVERIES_REJECTED, (), Emitted.ON_TROUBLE, "dashboard (`inbox rejected list`)"
        ),
        MetricDeclaration(definitions.METRIC_REJECTIONS_RECORDED, (), Emitted.ON_TROUBLE, "dashboard"),
        MetricDeclaration(
            definitions.METRIC_REJECTIONS_NOT_RECORDED, ("cause",), Emitted.ON_TROUBLE, "dashboard: why not logged"
        ),
        # Processor (shared/process/service.py): per provider only what the ignored-ratio alarms divide, as one
        # metric (count_outcome).
        MetricDeclaration(
            definitions.METRIC_EVENTS_SETTLED, ("provider",), Emitted.STEADY, "alarm ignored-ratio-<provider>"
        ),
        MetricDeclaration(definitions.METRIC_EVENTS_FAILED, (), Emitted.ON_TROUBLE, "alarm failed-events"),
        # Why events were ignored, per source, for the reasons that are not routine (count_ignored).
        MetricDeclaration(
            definitions.METRIC_EVENTS_IGNORED,
            ("reason", "source"),
            Emitted.ON_TROUBLE,
            "alarm ignored-no-payment-<source>",
        ),
        MetricDeclaration("EventsSkipped", (), Emitted.ON_TROUBLE, "dashboard: redeliveries of settled events"),
        MetricDeclaration("ReconciliationsUnchanged", (), Emitted.ON_TROUBLE, "dashboard: stuck payments asked"),
        MetricDeclaration("PaymentsReconciled", (), Emitted.ON_TROUBLE, "dashboard: webhooks that never came"),
        MetricDeclaration("ReconciliationsDeferred", (), Emitted.ON_TROUBLE, "dashboard: the rate limit said later"),
        MetricDeclaration("ReconciliationsFailed", (), Emitted.ON_TROUBLE, "dashboard"),
        # A payment confirmed from its payload that the gateway's API then contradicted (shared/process/confirm.py).
        MetricDeclaration(definitions.METRIC_PAYMENTS_CORRECTED, (), Emitted.ON_TROUBLE, "alarm payments-corrected"),
        MetricDeclaration(
            definitions.METRIC_VERIFICATIONS_REFUSED, (), Emitted.ON_TROUBLE, "alarm verifications-refused"
        ),
        # Sweeper (shared/sweeper.py): the age is sent every sweep (its absence alarms); the counts when not zero.
        MetricDeclaration(
            definitions.METRIC_OLDEST_PENDING_AGE, (), Emitted.STEADY, "alarm oldest-pending (missing = breaching)"
        ),
        MetricDeclaration("StuckPendingEvents", (), Emitted.ON_TROUBLE, "dashboard"),
        MetricDeclaration("FailedEvents", (), Emitted.ON_TROUBLE, "dashboard: failed events not replayed yet"),
        MetricDeclaration("EventsRedispatched", (), Emitted.ON_TROUBLE, "dashboard"),
        MetricDeclaration("ReconciliationsRequested", (), Emitted.ON_TROUBLE, "dashboard"),
        # Archiver (shared/retention.py)
        MetricDeclaration(definitions.METRIC_ARCHIVED_INCOMPLETE, (), Emitted.ON_TROUBLE, "alarm archive-incomplete"),
    )
}


class UndeclaredMetric(ValueError):
    """A metric name (or a dimension value) outside `METRICS`: declare it, so that it is counted and billed."""


def declared(name: str) -> MetricDeclaration:
    try:
        return METRICS[name]
    except KeyError:
        raise UndeclaredMetric(f"metric {name!r} is not declared in shared/observability.METRICS") from None


def metric_dimension_sets(declaration: MetricDeclaration, providers: Sequence[str]) -> list[dict[str, str]]:
    """Every dimension set (besides `service`) the metric can be emitted with, for a deployment of `providers`
    (one default source each, named after it): each is one custom metric."""
    sets: list[dict[str, str]] = [{}]
    for dimension in declaration.dimensions:
        values = tuple(providers) if dimension in DEPLOYMENT_DIMENSIONS else DIMENSION_VALUES[dimension]
        sets = [{**existing, dimension: value} for existing in sets for value in values]
    return sets


def custom_metric_count(providers: Sequence[str], emitted: Emitted) -> int:
    """The custom metrics a deployment of `providers` emits as `emitted` says (the cost model's count)."""
    return sum(
        len(metric_dimension_sets(declaration, providers))
        for declaration in METRICS.values()
        if declaration.emitted is emitted
    )


# ----------------------------------------------------------------------------------- metrics, flushed once


class _MetricBuffer:
    """The samples recorded since the last flush, by dimension set (besides `service`)."""

    __slots__ = ("lock", "samples")

    def __init__(self) -> None:
        self.samples: dict[tuple[tuple[str, str], ...], list[tuple[str, MetricUnit, float]]] = {}
        self.lock = threading.Lock()

    def add(self, name: str, unit: MetricUnit, value: float, dimensions: dict[str, str]) -> None:
        with self.lock:
            self.samples.setdefault(tuple(sorted(dimensions.items())), []).append((name, unit, value))

    def flush(self) -> None:
        """One EMF blob per dimension set, each metric's values as one array (Powertools publishes a blob early
        past 100 metrics or 100 values of one, the EMF limits)."""
        with self.lock:
            samples, self.samples = self.samples, {}
        for dimensions, recorded in samples.items():
            provider = AmazonCloudWatchEMFProvider(
                namespace=METRICS_NAMESPACE, default_dimensions={"service": SERVICE_NAME, **dict(dimensions)}
            )
            for name, unit, value in recorded:
                provider.add_metric(name=name, unit=unit, value=value)
            provider.flush_metrics()


_invocation_metrics: contextvars.ContextVar[_MetricBuffer | None] = contextvars.ContextVar(
    "invocation_metrics", default=None
)


class _Process:
    """This execution environment's state across invocations."""

    __slots__ = ("adopting", "cold_start", "lock", "thread_metrics")

    def __init__(self) -> None:
        self.cold_start = True
        self.adopting = 0  # adopting invocations in flight
        self.thread_metrics = _MetricBuffer()  # recorded on their threads
        self.lock = threading.Lock()

    def first_invocation(self) -> bool:
        with self.lock:
            cold, self.cold_start = self.cold_start, False
        return cold

    def adopt(self, delta: int) -> None:
        with self.lock:
            self.adopting += delta


_process = _Process()


def _emit(name: str, unit: MetricUnit, value: float, dimensions: dict[str, str]) -> None:
    if is_metrics_disabled():
        return
    buffer = _invocation_metrics.get()
    if buffer is None and _process.adopting:
        buffer = _process.thread_metrics
    if buffer is not None:
        buffer.add(name, unit, value, dimensions)
        return
    alone = _MetricBuffer()  # outside an invocation: sent at once
    alone.add(name, unit, value, dimensions)
    alone.flush()


Handler = TypeVar("Handler", bound=Callable[..., Any])


def _sampled_trace_id() -> str | None:
    """The X-Ray trace id of this invocation when X-Ray records it, else None: Lambda sets `_X_AMZN_TRACE_ID`
    (`Root=...;Parent=...;Sampled=0|1`) on every invocation, traced or not."""
    header = os.environ.get("_X_AMZN_TRACE_ID", "")
    fields = dict(part.split("=", 1) for part in header.split(";") if "=" in part)
    return fields.get("Root") if fields.get("Sampled") == "1" else None


@overload
def instrumented(handler: Handler, *, adopts_threads: bool = False) -> Handler: ...


@overload
def instrumented(handler: None = None, *, adopts_threads: bool = False) -> Callable[[Handler], Handler]: ...


def instrumented(handler: Handler | None = None, *, adopts_threads: bool = False) -> Any:
    """A Lambda handler's logging context and metrics: `request_id` (and `cold_start` on a cold start,
    `xray_trace_id` when traced) on every line of the invocation, and its metrics flushed once when it ends, even
    when it raises. `adopts_threads`: the handler runs work on threads of its own (the processor's group pool),
    whose metrics it flushes too."""
    if handler is None:
        return functools.partial(instrumented, adopts_threads=adopts_threads)

    @functools.wraps(handler)
    def invoke(event: Any, context: Any) -> Any:
        logger.append_keys(
            request_id=getattr(context, "aws_request_id", None),
            cold_start=True if _process.first_invocation() else None,
            xray_trace_id=_sampled_trace_id(),
        )
        buffer = _MetricBuffer()
        token = _invocation_metrics.set(buffer)
        if adopts_threads:
            _process.adopt(+1)
        try:
            return handler(event, context)
        finally:
            _invocation_metrics.reset(token)
            buffer.flush()
            if adopts_threads:
                _process.adopt(-1)
                _process.thread_metrics.flush()

    return invoke


def count_for_provider(name: str, provider: str, value: float = 1) -> None:
    """One count, with its `provider` dimension only if the metric is declared with one (and a trouble count of
    0 is not sent)."""
    declaration = declared(name)
    if declaration.emitted is Emitted.ON_TROUBLE and not value:
        return
    dimensions = {"provider": provider} if "provider" in declaration.dimensions else {}
    _emit(name, MetricUnit.Count, value, dimensions)


def count_outcome(outcome: str, provider: str) -> None:
    """One settled event. Processed or ignored: one sample of EventsSettled with its provider, 1 if ignored and 0
    if processed, so that Sum is the ignored count, SampleCount the settled count and Average the ignored share (the
    ratio alarm's numerator and denominator from one custom metric per provider instead of two). Failed or skipped:
    Events<Outcome>, service-wide."""
    if outcome in ("processed", "ignored"):
        count_for_provider(definitions.METRIC_EVENTS_SETTLED, provider, 1.0 if outcome == "ignored" else 0.0)
    else:
        count_for_provider(f"Events{outcome.capitalize()}", provider)


def count_ignored(source: str, reason: str) -> None:
    """One ignored event of `source`, by its reason (a closed set; the source is a declared one, resolved by the
    ingest before anything was stored). A routine reason (definitions.ROUTINE_IGNORED_REASONS) is not sent: the
    settled count's ignored share already holds it, and a metric sent every hour is billed every hour."""
    declaration = declared(definitions.METRIC_EVENTS_IGNORED)
    if reason in definitions.ROUTINE_IGNORED_REASONS:
        return
    if reason not in DIMENSION_VALUES["reason"]:
        raise UndeclaredMetric(f"{reason!r} is not a declared value of {declaration.name}'s dimension 'reason'")
    _emit(declaration.name, MetricUnit.Count, 1, {"source": source, "reason": reason})


def count_by(name: str, dimension: str, value: str, count: float = 1) -> None:
    """One count with one dimension of a closed set (a rejection's reason, why it was not recorded). Never a
    dimension an attacker chooses: each value is a metric of its own, billed as such. The dimension is added only
    if the metric is declared with it (and the value must be of its closed set)."""
    declaration = declared(name)
    keep = dimension in declaration.dimensions
    if keep and value not in DIMENSION_VALUES[dimension]:
        raise UndeclaredMetric(f"{value!r} is not a declared value of {name}'s dimension {dimension!r}")
    _emit(name, MetricUnit.Count, count, {dimension: value} if keep else {})


def put_gauge(name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
    """One service-wide measurement (no provider dimension): what the sweeper observes about the whole inbox
    (stuck events, the oldest pending age). A metric declared ON_TROUBLE is not sent as 0: an hour without it
    costs nothing, and a graph reads the gap as 0."""
    declaration = declared(name)
    if declaration.dimensions:
        raise UndeclaredMetric(f"metric {name!r} is declared with dimensions {declaration.dimensions}: not a gauge")
    if declaration.emitted is Emitted.ON_TROUBLE and not value:
        return
    _emit(name, unit, value, {})
