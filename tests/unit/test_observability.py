"""The custom metrics are a closed, declared set (shared/observability.METRICS): the emitters refuse anything else,
send only the declared dimensions, and do not send a trouble count of 0 (each metric sent in an hour is billed for
that hour); the cost model counts them from the same declaration."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from shared import definitions, ingest, observability
from shared.observability import Emitted, UndeclaredMetric

SHARED = Path(observability.__file__).resolve().parent
EMITTERS = {"count_for_provider", "count_by", "put_gauge"}


def _sent(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF documents printed since the last call: name, value and dimensions of each metric sent."""
    return [
        {"name": name, "value": values[0] if len(values) == 1 else values, "dimensions": dimensions}
        for dimensions, metrics in _blobs(capsys)
        for name, values in metrics.items()
    ]


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


def test_an_ignored_event_is_counted_by_its_source_and_reason_unless_routine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When events of the source stripe-br are ignored: one naming no payment, one stating nothing, one already
    # applied (routine) and one of a type nobody routes (routine)
    observability.count_ignored("stripe-br", "no_payment")
    observability.count_ignored("stripe-br", "nothing_to_apply")
    observability.count_ignored("stripe-br", "no_change")
    observability.count_ignored("stripe-br", "unrouted_type")
    # Then the first two are one EventsIgnored count each with the source and the reason as dimensions, and the
    # routine ones are not sent (EventsSettled's ignored share holds them)
    service = {"service": definitions.SERVICE_NAME}
    assert _sent(capsys) == [
        {
            "name": definitions.METRIC_EVENTS_IGNORED,
            "value": 1.0,
            "dimensions": {**service, "source": "stripe-br", "reason": "no_payment"},
        },
        {
            "name": definitions.METRIC_EVENTS_IGNORED,
            "value": 1.0,
            "dimensions": {**service, "source": "stripe-br", "reason": "nothing_to_apply"},
        },
    ]


def test_an_ignored_reason_outside_the_closed_set_is_refused() -> None:
    # Given a reason that is not one of definitions.IGNORED_REASONS (a free text would be a metric per value)
    # Then counting it is refused
    with pytest.raises(UndeclaredMetric, match="names no payment"):
        observability.count_ignored("stripe", "event names no payment")


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
    outcomes = {definitions.METRIC_EVENTS_SETTLED, "EventsFailed", "EventsSkipped", definitions.METRIC_EVENTS_IGNORED}
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
    # And the trouble counts grow with the sources only by the ignored reasons counted per source (closed sets
    # otherwise: three causes)
    counted = len(definitions.COUNTED_IGNORED_REASONS)
    assert observability.custom_metric_count(many, Emitted.ON_TROUBLE) - observability.custom_metric_count(
        one, Emitted.ON_TROUBLE
    ) == counted * (len(many) - 1)


class _Context:
    aws_request_id = "req-1"


def _blobs(capsys: pytest.CaptureFixture[str]) -> list[tuple[dict[str, str], dict[str, list[float]]]]:
    """Each EMF blob printed since the last call: its dimensions (values) and each metric's samples."""
    blobs = []
    for line in capsys.readouterr().out.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        (dimensions,) = directive["Dimensions"]
        names = [metric["Name"] for metric in directive["Metrics"]]
        blobs.append(({name: document[name] for name in dimensions}, {name: document[name] for name in names}))
    return blobs


def test_an_invocations_metrics_leave_once_one_blob_per_dimension_set(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a handler that settles three events of two providers, one of them on a thread of its own (the
    # processor's group pool), and fails one
    @observability.instrumented(adopts_threads=True)
    def handler(event: Any, context: Any) -> None:
        observability.count_outcome("processed", "stripe")
        observability.count_outcome("ignored", "stripe")
        worker = threading.Thread(target=observability.count_outcome, args=("processed", "asaas"))
        worker.start()
        worker.join()
        observability.count_outcome("failed", "stripe")
        assert _blobs(capsys) == []  # nothing is sent while the invocation runs

    # When it is invoked
    handler({}, _Context())
    # Then one EMF blob per dimension set leaves at its end, each metric's samples in one array
    service = {"service": definitions.SERVICE_NAME}
    blobs = _blobs(capsys)
    assert len(blobs) == 3
    assert sorted(map(repr, blobs)) == sorted(
        map(
            repr,
            [
                ({**service, "provider": "stripe"}, {definitions.METRIC_EVENTS_SETTLED: [0.0, 1.0]}),
                ({**service}, {definitions.METRIC_EVENTS_FAILED: [1.0]}),
                ({**service, "provider": "asaas"}, {definitions.METRIC_EVENTS_SETTLED: [0.0]}),
            ],
        )
    )


def test_metrics_leave_even_when_the_invocation_raises(capsys: pytest.CaptureFixture[str]) -> None:
    @observability.instrumented
    def handler(event: Any, context: Any) -> None:
        observability.count_for_provider(definitions.METRIC_STORAGE_FAILURES, "stripe")
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        handler({}, _Context())
    assert [metrics for _dimensions, metrics in _blobs(capsys)] == [{definitions.METRIC_STORAGE_FAILURES: [1.0]}]


def test_each_line_carries_the_request_id_and_the_trace_id_only_when_traced(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given two invocations, the second one sampled by X-Ray (Lambda sets the header on every invocation)
    lines: list[dict[str, Any]] = []

    @observability.instrumented
    def handler(event: Any, context: Any) -> None:
        observability.logger.info("webhook", extra={"pk": "stripe#evt_1"})

    caplog.set_level("INFO")
    for sampled in ("0", "1"):
        header = f"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f;Sampled={sampled}"
        monkeypatch.setenv("_X_AMZN_TRACE_ID", header)
        handler({}, _Context())
        formatter = observability.logger.registered_formatter  # the line as written, with this invocation's keys
        lines += [json.loads(formatter.format(r)) for r in caplog.records if r.name == observability.logger.name]
        caplog.clear()
    # Then each line has the request id, the trace id only when sampled, and none of the Lambda context keys
    # CloudWatch already has (the function, its ARN and memory, the code location, the service)
    assert [line.get("xray_trace_id") for line in lines] == [None, "1-5759e988-bd862e3fe1be46a994272793"]
    for line in lines:
        assert line["request_id"] == "req-1"
        assert set(line) - {"cold_start", "xray_trace_id"} == {"level", "message", "timestamp", "request_id", "pk"}
        assert line["timestamp"].endswith("+00:00") and "T" in line["timestamp"]  # RFC 3339, UTC
