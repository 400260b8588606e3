"""The one Logger every function shares, and metrics.

Metrics are emitted one at a time with their own dimensions (`count_for_provider`), not through a shared
`Metrics` object flushed per invocation: each carries its provider, and the local stack runs several
"invocations" at once in one process without their dimension sets mixing.

Tracer is left out on purpose: the X-Ray SDK cost ~170 ms of import on a cold start (one ad-hoc
measurement over boto3 + a client; `make bench` times the whole ingest init) and the ingest answers on the
gateway's clock. Lambda's active tracing still records each invocation.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, single_metric
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from shared import definitions

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME", definitions.SERVICE_NAME)
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", definitions.METRICS_NAMESPACE)

logger = Logger(service=SERVICE_NAME)


def count_for_provider(name: str, provider: str, value: float = 1) -> None:
    """One metric with its own `provider` dimension, flushed at once: no dimension leaks between events
    (the shared `metrics` object keeps one dimension set per invocation)."""
    if is_metrics_disabled():
        return
    with single_metric(
        name=name,
        unit=MetricUnit.Count,
        value=value,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ) as metric:
        metric.add_dimension(name="provider", value=provider)


def count_by(name: str, dimension: str, value: str, count: float = 1) -> None:
    """One count with one dimension of a closed set (a rejection's reason, why it was not recorded), flushed at
    once. Never a dimension an attacker chooses: each value is a metric of its own, billed as such."""
    if is_metrics_disabled():
        return
    with single_metric(
        name=name,
        unit=MetricUnit.Count,
        value=count,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ) as metric:
        metric.add_dimension(name=dimension, value=value)


def put_gauge(name: str, value: float, unit: MetricUnit = MetricUnit.Count) -> None:
    """One service-wide measurement (no provider dimension), flushed at once: what the sweeper observes about
    the whole inbox (stuck events, the oldest pending age), one alarm per metric."""
    if is_metrics_disabled():
        return
    with single_metric(
        name=name,
        unit=unit,
        value=value,
        namespace=METRICS_NAMESPACE,
        default_dimensions={"service": SERVICE_NAME},
    ):
        pass
