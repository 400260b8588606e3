"""The one Logger every function shares, and metrics.

Metrics are emitted one at a time with their own dimensions (`count_for_provider`), not through a shared
`Metrics` object flushed per invocation: each carries its own dimensions, and the local stack runs several
"invocations" at once in one process without their dimension sets mixing.

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
gateway's clock. Lambda's active tracing still records each invocation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from aws_lambda_powertools import Logger, single_metric
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from shared import definitions

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME", definitions.SERVICE_NAME)
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", definitions.METRICS_NAMESPACE)

logger = Logger(service=SERVICE_NAME)


class Emitted(StrEnum):
    """When a metric is sent, hence what it costs: CloudWatch bills a custom metric for each hour it is sent."""

    STEADY = "steady"  # every hour a working deployment runs (traffic, or every sweep): billed all month
    ON_TROUBLE = "on trouble"  # only when something fails or needs a look (a zero is not sent): ~free when healthy


@dataclass(frozen=True, slots=True)
class MetricDeclaration:
    name: str
    dimensions: tuple[str, ...]  # besides `service`: () service-wide, ("provider",), or one closed set's name
    emitted: Emitted
    why: str  # what reads it: an alarm, or the question it answers


# The closed sets a dimension may take (never a value a delivery chooses): "provider" is the declared sources'.
DIMENSION_VALUES: Final[dict[str, tuple[str, ...]]] = {
    "cause": definitions.REJECTION_NOT_RECORDED_CAUSES,
}

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
        MetricDeclaration("EventsSkipped", (), Emitted.ON_TROUBLE, "dashboard: redeliveries of settled events"),
        MetricDeclaration("ReconciliationsUnchanged", (), Emitted.ON_TROUBLE, "dashboard: stuck payments asked"),
        MetricDeclaration("PaymentsReconciled", (), Emitted.ON_TROUBLE, "dashboard: webhooks that never came"),
        MetricDeclaration("ReconciliationsDeferred", (), Emitted.ON_TROUBLE, "dashboard: the rate limit said later"),
        MetricDeclaration("ReconciliationsFailed", (), Emitted.ON_TROUBLE, "dashboard"),
        # Sweeper (shared/sweeper.py): the age is sent every sweep (its absence alarms); the counts when not zero.
        MetricDeclaration(
            definitions.METRIC_OLDEST_PENDING_AGE, (), Emitted.STEADY, "alarm oldest-pending (missing = breaching)"
        ),
        MetricDeclaration("StuckPendingEvents", (), Emitted.ON_TROUBLE, "dashboard"),
        MetricDeclaration("FailedEvents", (), Emitted.ON_TROUBLE, "dashboard: failed events not replayed yet"),
        MetricDeclaration("EventsRedispatched", (), Emitted.ON_TROUBLE, "dashboard"),
        MetricDeclaration("ReconciliationsRequested", (), Emitted.ON_TROUBLE, "dashboard"),
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
    """Every dimension set (besides `service`) the metric can be emitted with, for a deployment of `providers`:
    each is one custom metric."""
    sets: list[dict[str, str]] = [{}]
    for dimension in declaration.dimensions:
        values = tuple(providers) if dimension == "provider" else DIMENSION_VALUES[dimension]
        sets = [{**existing, dimension: value} for existing in sets for value in values]
    return sets


def custom_metric_count(providers: Sequence[str], emitted: Emitted) -> int:
    """The custom metrics a deployment of `providers` emits as `emitted` says (the cost model's count)."""
    return sum(
        len(metric_dimension_sets(declaration, providers))
        for declaration in METRICS.values()
        if declaration.emitted is emitted
    )


def count_for_provider(name: str, provider: str, value: float = 1) -> None:
    """One count, flushed at once: no dimension leaks between events (the shared `metrics` object keeps one
    dimension set per invocation). Its `provider` dimension only if the metric is declared with one."""
    declaration = declared(name)
    if is_metrics_disabled() or (declaration.emitted is Emitted.ON_TROUBLE and not value):
        return
    with single_metric(
        name=name,
        unit=MetricUnit.Count,
        value=value,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ) as metric:
        if "provider" in declaration.dimensions:
            metric.add_dimension(name="provider", value=provider)


def count_outcome(outcome: str, provider: str) -> None:
    """One settled event. Processed or ignored: one sample of EventsSettled with its provider, 1 if ignored and 0
    if processed, so that Sum is the ignored count, SampleCount the settled count and Average the ignored share (the
    ratio alarm's numerator and denominator from one custom metric per provider instead of two). Failed or skipped:
    Events<Outcome>, service-wide."""
    if outcome in ("processed", "ignored"):
        count_for_provider(definitions.METRIC_EVENTS_SETTLED, provider, 1.0 if outcome == "ignored" else 0.0)
    else:
        count_for_provider(f"Events{outcome.capitalize()}", provider)


def count_by(name: str, dimension: str, value: str, count: float = 1) -> None:
    """One count with one dimension of a closed set (a rejection's reason, why it was not recorded), flushed at
    once. Never a dimension an attacker chooses: each value is a metric of its own, billed as such. The dimension
    is added only if the metric is declared with it (and the value must be of its closed set)."""
    declaration = declared(name)
    keep = dimension in declaration.dimensions
    if keep and value not in DIMENSION_VALUES[dimension]:
        raise UndeclaredMetric(f"{value!r} is not a declared value of {name}'s dimension {dimension!r}")
    if is_metrics_disabled():
        return
    with single_metric(
        name=name,
        unit=MetricUnit.Count,
        value=count,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ) as metric:
        if keep:
            metric.add_dimension(name=dimension, value=value)


def put_gauge(name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
    """One service-wide measurement (no provider dimension), flushed at once: what the sweeper observes about
    the whole inbox (stuck events, the oldest pending age). A metric declared ON_TROUBLE is not sent as 0: an
    hour without it costs nothing, and a graph reads the gap as 0."""
    declaration = declared(name)
    if declaration.dimensions:
        raise UndeclaredMetric(f"metric {name!r} is declared with dimensions {declaration.dimensions}: not a gauge")
    if is_metrics_disabled() or (declaration.emitted is Emitted.ON_TROUBLE and not value):
        return
    with single_metric(
        name=name,
        unit=unit,
        value=value,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ):
        pass
