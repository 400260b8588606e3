"""The custom metrics are a closed, declared set (shared/observability.METRICS): the emitters refuse anything else,
send only the declared dimensions, and do not send a trouble count of 0 (each metric sent in an hour is billed for
that hour); the cost model counts them from the same declaration."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from shared import definitions, ingest, observability
from shared.observability import Emitted, UndeclaredMetric

SHARED = Path(observability.__file__).resolve().parent
EMITTERS = {"count_for_provider", "count_by", "put_gauge"}


def _sent(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF documents printed since the last call: name, value and dimensions of each metric sent."""
    sent = []
    for line in capsys.readouterr().out.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        (metric,) = directive["Metrics"]
        (dimensions,) = directive["Dimensions"]
        value = document[metric["Name"]]
        sent.append(
            {
                "name": metric["Name"],
                "value": value[0] if isinstance(value, list) and len(value) == 1 else value,
                "dimensions": {name: document[name] for name in dimensions},
            }
        )
    return sent


@pytest.fixture(autouse=True)
def _metrics_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.setenv("POWERTOOLS_DEV", "false")


def test_an_undeclared_metric_is_refused_by_every_emitter() -> None:
    with pytest.raises(UndeclaredMetric, match="NotDeclared"):
        observability.count_for_provider("NotDeclared", "stripe")
    with pytest.raises(UndeclaredMetric, match="NotDeclared"):
        observability.count_by("NotDeclared", "cause", "rate_limited")
    with pytest.raises(UndeclaredMetric, match="NotDeclared"):
        observability.put_gauge("NotDeclared", 1)
    # and a value outside a declared dimension's closed set
    with pytest.raises(UndeclaredMetric, match="anything"):
        observability.count_by(definitions.METRIC_REJECTIONS_NOT_RECORDED, "cause", "anything")


def test_a_provider_is_sent_only_where_it_is_declared(capsys: pytest.CaptureFixture[str]) -> None:
    # When an ingest failure (service-wide) and a settled event (per provider) are counted for stripe
    observability.count_for_provider(definitions.METRIC_SIGNATURES_REJECTED, "stripe")
    observability.count_outcome("ignored", "stripe")
    observability.count_outcome("processed", "stripe")
    observability.count_outcome("failed", "stripe")
    # Then only EventsSettled carries the provider: 1 for the ignored event, 0 for the processed one
    service = {"service": definitions.SERVICE_NAME}
    assert _sent(capsys) == [
        {"name": definitions.METRIC_SIGNATURES_REJECTED, "value": 1.0, "dimensions": service},
        {"name": definitions.METRIC_EVENTS_SETTLED, "value": 1.0, "dimensions": {**service, "provider": "stripe"}},
        {"name": definitions.METRIC_EVENTS_SETTLED, "value": 0.0, "dimensions": {**service, "provider": "stripe"}},
        {"name": definitions.METRIC_EVENTS_FAILED, "value": 1.0, "dimensions": service},
    ]


def test_a_refusal_is_counted_without_its_reason_and_not_recorded_by_cause(capsys: pytest.CaptureFixture[str]) -> None:
    observability.count_by(definitions.METRIC_DELIVERIES_REJECTED, "reason", "signature_invalid")
    observability.count_by(definitions.METRIC_REJECTIONS_NOT_RECORDED, "cause", "rate_limited")
    service = {"service": definitions.SERVICE_NAME}
    assert [(m["name"], m["dimensions"]) for m in _sent(capsys)] == [
        (definitions.METRIC_DELIVERIES_REJECTED, service),
        (definitions.METRIC_REJECTIONS_NOT_RECORDED, {**service, "cause": "rate_limited"}),
    ]


def test_a_trouble_gauge_of_zero_is_not_sent_but_the_oldest_pending_age_always_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a healthy sweep: nothing stuck, nothing failed, nothing pending
    observability.put_gauge("StuckPendingEvents", 0)
    observability.put_gauge("FailedEvents", 0)
    observability.put_gauge(definitions.METRIC_OLDEST_PENDING_AGE, 0)
    observability.put_gauge("FailedEvents", 2)
    # Then only the age (its absence alarms) and a non-zero count are sent
    assert [(m["name"], m["value"]) for m in _sent(capsys)] == [
        (definitions.METRIC_OLDEST_PENDING_AGE, 0.0),
        ("FailedEvents", 2.0),
    ]


def _emitted_names() -> set[str]:
    """Every metric name the code under shared/ passes to an emitter (a literal, or a definitions constant)."""
    names: set[str] = set()
    for path in SHARED.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in EMITTERS):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name):
                assert first.value.id == "definitions", f"{path}: metric name {ast.unparse(first)}"
                names.add(getattr(definitions, first.attr))
            elif not (path.name == "observability.py" or (path.name == "ingest.py" and ast.unparse(first) == "metric")):
                # count_outcome builds Events<Outcome>, the ingest maps outcomes to names: both read below
                pytest.fail(f"{path}:{node.lineno}: a metric name the test cannot read: {ast.unparse(first)}")
    return names


def test_every_metric_the_code_emits_is_declared() -> None:
    # Given every emitter call under shared/, the processor's outcomes (processed, ignored, failed, skipped) and the
    # ingest's outcome -> metric map
    outcomes = {definitions.METRIC_EVENTS_SETTLED, "EventsFailed", "EventsSkipped"}
    emitted = _emitted_names() | outcomes | set(ingest._METRIC_BY_OUTCOME.values())
    # Then each is declared, and nothing is declared that nothing emits
    assert emitted == set(observability.METRICS)


def test_the_custom_metrics_follow_the_providers_only_where_declared() -> None:
    # Given one provider, then sixteen
    one, many = ("stripe",), tuple(definitions.PROVIDERS)
    per_provider = [m for m in observability.METRICS.values() if "provider" in m.dimensions]
    # Then only the ratio alarm's metric is per provider, and only it and the oldest-pending age are sent every hour
    assert [m.name for m in per_provider] == [definitions.METRIC_EVENTS_SETTLED]
    assert observability.custom_metric_count(one, Emitted.STEADY) == 2
    assert observability.custom_metric_count(many, Emitted.STEADY) == 1 + len(many)
    # And the trouble counts do not grow with the sources (closed sets only: three causes)
    assert observability.custom_metric_count(one, Emitted.ON_TROUBLE) == observability.custom_metric_count(
        many, Emitted.ON_TROUBLE
    )
