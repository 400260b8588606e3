"""Monitoring as synthesized: every alarm watches the metric it is meant to, with its threshold, and notifies the
encrypted, TLS-only SNS topic; the dashboard (optional) shows the flow end to end; and the cost model counts the
alarms, the metrics they reference and the custom metrics as the templates and the code have them.

The AWS metric names and dimensions asserted here are the documented ones (the URLs are in docs/aws-limits.md and
docs/replay-and-monitoring.md): an HTTP API's ``5xx`` by ApiId and Stage, Lambda's ``Errors``/``Throttles`` by
FunctionName, and the Pipes' failure counts by PipeName. They are spelled out as literals, not read back from the
construct, so that a renamed metric fails here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inbox_cli.cost import alarm_metrics
from infra.constructs import monitoring
from shared import definitions, observability

from .conftest import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _get_att(logical_id: str, attribute: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def _alarm(synthesized: Synthesized, name: str) -> dict[str, Any]:
    _id, resource = synthesized.resource(synthesized.stack.monitoring.alarms[name])
    properties: dict[str, Any] = resource["Properties"]
    return properties


def _topic_id(synthesized: Synthesized) -> str:
    return synthesized.logical_id(synthesized.stack.monitoring.topic)


def _metric_stats(properties: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """id -> MetricStat of an alarm on metric math."""
    return {m["Id"]: m["MetricStat"] for m in properties["Metrics"] if "MetricStat" in m}


def _expression(properties: dict[str, Any]) -> str:
    (expression,) = [m for m in properties["Metrics"] if "Expression" in m]
    assert expression["ReturnData"] is True
    return str(expression["Expression"])


def _single_metric(properties: dict[str, Any]) -> dict[str, Any]:
    """An alarm on one metric, in either of the shapes CDK renders (plain, or one labelled MetricStat)."""
    if "Metrics" not in properties:
        return {key: properties[key] for key in ("Namespace", "MetricName", "Dimensions", "Statistic", "Period")}
    (only,) = properties["Metrics"]
    assert only["ReturnData"] is True
    stat = only["MetricStat"]
    return {**stat["Metric"], "Statistic": stat["Stat"], "Period": stat["Period"]}


def _provider_dimensions(provider: str) -> list[dict[str, str]]:
    return [{"Name": "provider", "Value": provider}, {"Name": "service", "Value": definitions.SERVICE_NAME}]


def _sorted_dimensions(stat: dict[str, Any]) -> list[dict[str, str]]:
    return sorted(stat["Metric"]["Dimensions"], key=lambda d: d["Name"])


def _assert_notifies_the_topic(synthesized: Synthesized, properties: dict[str, Any]) -> None:
    topic = {"Ref": _topic_id(synthesized)}
    assert properties["AlarmActions"] == [topic]
    assert properties["OKActions"] == [topic]
    assert properties.get("ActionsEnabled", True) is True


def test_every_alarm_is_named_after_the_stack_and_notifies_the_topic(synthesized: Synthesized) -> None:
    alarms = synthesized.stack.monitoring.alarms
    expected = {
        "failed-events",
        "unparseable-events",
        "oldest-pending",
        "dead-letter-queue",
        "pipe-dead-letter-queue",
        "archive-failures",
        "archive-incomplete",
        "outbox-dead-letter-queue",
        "forward-dead-letter-queue",
        "signature-rejections",
        "payments-corrected",  # Stripe may confirm a payment from its payload
        "verifications-refused",
        *(f"ignored-ratio-{provider}" for provider in definitions.PROVIDERS),
        *(f"ignored-no-payment-{provider}" for provider in definitions.PROVIDERS),  # the default sources
        "api-5xx",
        *(f"lambda-{name}" for name in FUNCTIONS if monitoring.alarmed_failures(name)),
        *(f"pipe-{name}" for name in PIPES),
    }
    assert set(alarms) == expected
    assert len(synthesized.resources("AWS::CloudWatch::Alarm")) == len(expected)
    for name in expected:
        properties = _alarm(synthesized, name)
        assert properties["AlarmName"] == f"{synthesized.stack.stack_name}-{name}"
        assert len(properties["AlarmDescription"]) > 40
        _assert_notifies_the_topic(synthesized, properties)


# Short name -> where the stack keeps the resource (the synthesized fixture has forwarding configured).
FUNCTIONS = {
    "ingest": "ingest.function",
    "processor": "processor.function",
    "sweeper": "sweeper.function",
    "archiver": "archive.function",
    "publisher": "outbox.publisher",
    "forwarder": "outbox.forwarder",
}
PIPES = {
    "dispatch": "pipe.pipe",
    "publish": "outbox.publish_pipe.pipe",
    "forward": "outbox.forward_pipe.pipe",
}
# EventBridge user guide, "Logging and monitoring Amazon EventBridge Pipes": counts by PipeName. The alarm watches
# ExecutionFailed (each Pipe's dead-letter queue alarms for whatever retries do not cure); the dashboard all five.
PIPE_ALARM_METRICS = {"ExecutionFailed"}
PIPE_FAILURE_METRICS = {
    "ExecutionFailed",
    "ExecutionPartiallyFailed",
    "ExecutionTimeout",
    "ExecutionThrottled",
    "TargetStageFailed",
}


def _construct(synthesized: Synthesized, path: str) -> Any:
    construct: Any = synthesized.stack
    for attribute in path.split("."):
        construct = getattr(construct, attribute)
    return construct


def _assert_any_occurrence_in_five_minutes_alarms(properties: dict[str, Any]) -> None:
    assert properties["Threshold"] == 1
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (1, 1)
    # No data means nothing failed (Lambda and Pipes report counts only while they run)
    assert properties["TreatMissingData"] == "notBreaching"


def _service_count(metric: str) -> dict[str, Any]:
    """A service-wide count as shared/observability emits it (dimension `service` only), summed over 5 minutes."""
    return {
        "Namespace": definitions.METRICS_NAMESPACE,
        "MetricName": metric,
        "Dimensions": [{"Name": "service", "Value": definitions.SERVICE_NAME}],
        "Statistic": "Sum",
        "Period": 300,
    }


@pytest.mark.parametrize(
    ("name", "metric"),
    [
        ("failed-events", definitions.METRIC_EVENTS_FAILED),
        ("unparseable-events", definitions.METRIC_EVENTS_UNPARSEABLE),
    ],
)
def test_any_failed_event_alarms(synthesized: Synthesized, name: str, metric: str) -> None:
    # One service-wide metric (whichever source: the event names it), one alarm metric to pay for
    properties = _alarm(synthesized, name)
    assert _single_metric(properties) == _service_count(metric)
    assert observability.METRICS[metric].dimensions == ()
    assert properties["Threshold"] == 1
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (1, 1)
    assert properties["TreatMissingData"] == "notBreaching"


@pytest.mark.parametrize(
    ("name", "metric", "threshold", "period"),
    [
        ("payments-corrected", definitions.METRIC_PAYMENTS_CORRECTED, monitoring.PAYMENTS_CORRECTED_THRESHOLD, 900),
        ("verifications-refused", definitions.METRIC_VERIFICATIONS_REFUSED, 1, 300),
    ],
)
def test_corrected_and_refused_verifications_alarm_stack_wide(
    synthesized: Synthesized, name: str, metric: str, threshold: int, period: int
) -> None:
    # Given a declaration with a provider that confirms from the payload (Stripe)
    properties = _alarm(synthesized, name)
    # Then one service-wide metric each (whichever source: the log names it), one alarm metric to pay for
    assert _single_metric(properties) == {**_service_count(metric), "Period": period}
    assert observability.METRICS[metric].dimensions == ()
    assert properties["Threshold"] == threshold
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["TreatMissingData"] == "notBreaching"


def test_an_old_pending_event_or_a_silent_sweeper_alarms(synthesized: Synthesized) -> None:
    properties = _alarm(synthesized, "oldest-pending")
    assert _single_metric(properties) == {
        "Namespace": definitions.METRICS_NAMESPACE,
        "MetricName": definitions.METRIC_OLDEST_PENDING_AGE,
        "Dimensions": [{"Name": "service", "Value": definitions.SERVICE_NAME}],
        "Statistic": "Maximum",
        "Period": 300,
    }
    assert properties["Threshold"] == monitoring.OLDEST_PENDING_THRESHOLD_SECONDS
    assert properties["Threshold"] > definitions.DEFAULT_STALE_AFTER_SECONDS  # past what the sweeper re-dispatches
    assert properties["ComparisonOperator"] == "GreaterThanThreshold"
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (2, 2)
    assert properties["TreatMissingData"] == "breaching"


@pytest.mark.parametrize(
    ("name", "queue"),
    [
        ("dead-letter-queue", "queues.dead_letter_queue"),
        ("pipe-dead-letter-queue", "pipe.dead_letter_queue"),
        ("archive-failures", "archive.failure_queue"),
    ],
)
def test_a_message_in_a_dead_letter_queue_alarms(synthesized: Synthesized, name: str, queue: str) -> None:
    construct: Any = synthesized.stack
    for attribute in queue.split("."):
        construct = getattr(construct, attribute)
    properties = _alarm(synthesized, name)
    assert _single_metric(properties) == {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": _get_att(synthesized.logical_id(construct), "QueueName")}],
        "Statistic": "Maximum",
        "Period": 300,
    }
    assert properties["Threshold"] == 1
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["TreatMissingData"] == "notBreaching"


def test_a_spike_of_signature_rejections_alarms(synthesized: Synthesized) -> None:
    properties = _alarm(synthesized, "signature-rejections")
    assert _single_metric(properties) == _service_count(definitions.METRIC_SIGNATURES_REJECTED)
    assert properties["Threshold"] == monitoring.SIGNATURE_REJECTIONS_THRESHOLD
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["TreatMissingData"] == "notBreaching"


@pytest.mark.parametrize("provider", definitions.PROVIDERS)
def test_a_jump_in_a_providers_ignored_ratio_alarms(synthesized: Synthesized, provider: str) -> None:
    # Given the provider's EventsSettled samples (1 if ignored, 0 if processed: shared/observability.count_outcome)
    properties = _alarm(synthesized, f"ignored-ratio-{provider}")
    stats = _metric_stats(properties)
    # Then the share is their Average, and the settled count their SampleCount, over 15 minutes
    assert {key: (s["Metric"]["MetricName"], s["Stat"]) for key, s in stats.items()} == {
        "share": (definitions.METRIC_EVENTS_SETTLED, "Average"),
        "settled": (definitions.METRIC_EVENTS_SETTLED, "SampleCount"),
    }
    for stat in stats.values():
        assert _sorted_dimensions(stat) == _provider_dimensions(provider)
        assert stat["Period"] == 900
    assert _expression(properties) == (
        f"IF(FILL(settled, 0) >= {monitoring.IGNORED_RATIO_MIN_EVENTS}, FILL(share, 0), 0)"
    )
    assert properties["Threshold"] == monitoring.IGNORED_RATIO_THRESHOLD
    assert properties["ComparisonOperator"] == "GreaterThanThreshold"


@pytest.mark.parametrize("source", definitions.PROVIDERS)
def test_payment_events_naming_no_payment_on_one_source_alarm(synthesized: Synthesized, source: str) -> None:
    # Given a source (the default declaration: one per provider, named after it) whose ignored events are counted by
    # reason (shared/observability.count_ignored)
    properties = _alarm(synthesized, f"ignored-no-payment-{source}")
    metric = _single_metric(properties)
    # Then its alarm reads EventsIgnored of that source with the reason no_payment, summed over 15 minutes
    assert metric["MetricName"] == definitions.METRIC_EVENTS_IGNORED
    assert metric["Namespace"] == definitions.METRICS_NAMESPACE
    assert sorted(metric["Dimensions"], key=lambda d: d["Name"]) == [
        {"Name": "reason", "Value": definitions.ALARMED_IGNORED_REASON},
        {"Name": "service", "Value": definitions.SERVICE_NAME},
        {"Name": "source", "Value": source},
    ]
    assert metric["Statistic"] == "Sum"
    assert metric["Period"] == 900
    # And it fires from IGNORED_REASON_THRESHOLD such events in one period, no data meaning nothing was ignored
    assert properties["Threshold"] == monitoring.IGNORED_REASON_THRESHOLD
    assert properties["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert properties["TreatMissingData"] == "notBreaching"
    _assert_notifies_the_topic(synthesized, properties)


def test_a_one_source_declaration_has_its_no_payment_alarm_named_after_the_source(one_source: Synthesized) -> None:
    # Given one declared source, stripe-br (a source name, not the provider's)
    alarms = one_source.stack.monitoring.alarms
    # Then its no-payment alarm is the source's, and the provider's default source has none
    assert "ignored-no-payment-stripe-br" in alarms
    assert "ignored-no-payment-stripe" not in alarms
    properties = _alarm(one_source, "ignored-no-payment-stripe-br")
    assert {"Name": "source", "Value": "stripe-br"} in _single_metric(properties)["Dimensions"]


def test_a_5xx_answered_by_the_webhook_api_alarms(synthesized: Synthesized) -> None:
    # Given the HTTP API and its stage, as synthesized
    api_id = synthesized.logical_id(synthesized.stack.api.http_api)
    _stage_id, stage = synthesized.resource(synthesized.stack.api.stage)
    # When the front-door alarm is read
    properties = _alarm(synthesized, "api-5xx")
    # Then it counts the API's own 5xx answers (the ingest need not run for them to be counted) on that stage
    assert _single_metric(properties) == {
        "Namespace": "AWS/ApiGateway",
        "MetricName": "5xx",
        "Dimensions": [
            {"Name": "ApiId", "Value": {"Ref": api_id}},
            {"Name": "Stage", "Value": stage["Properties"]["StageName"]},
        ],
        "Statistic": "Sum",
        "Period": 300,
    }
    assert stage["Properties"]["ApiId"] == {"Ref": api_id}
    _assert_any_occurrence_in_five_minutes_alarms(properties)
    _assert_notifies_the_topic(synthesized, properties)


@pytest.mark.parametrize(
    ("name", "function"),
    [(name, function) for name, function in FUNCTIONS.items() if name not in monitoring.ALARMED_THROUGH],
)
def test_a_function_error_or_throttle_alarms(synthesized: Synthesized, name: str, function: str) -> None:
    # Given a function of the stack whose failures no other alarm pages on
    function_id = synthesized.logical_id(_construct(synthesized, function))
    # When its alarm is read
    properties = _alarm(synthesized, f"lambda-{name}")
    # Then it adds Lambda's own Errors and Throttles of that function (reported even when the code never ran)
    stats = _metric_stats(properties)
    assert {key: stat["Metric"]["MetricName"] for key, stat in stats.items()} == {
        "errors": "Errors",
        "throttles": "Throttles",
    }
    for stat in stats.values():
        assert stat["Metric"]["Namespace"] == "AWS/Lambda"
        assert stat["Metric"]["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
        assert (stat["Stat"], stat["Period"]) == ("Sum", 300)
    assert _expression(properties) == "FILL(errors, 0) + FILL(throttles, 0)"
    _assert_any_occurrence_in_five_minutes_alarms(properties)
    _assert_notifies_the_topic(synthesized, properties)


def test_the_ingest_pages_through_the_api_and_a_throttled_sweeper_through_its_missing_gauge(
    synthesized: Synthesized,
) -> None:
    # Given the ingest, invoked by the API only, and the sweeper, which sends the oldest-pending gauge every run
    sweeper_id = synthesized.logical_id(_construct(synthesized, FUNCTIONS["sweeper"]))
    alarms = synthesized.stack.monitoring.alarms
    # When their alarms are read
    # Then the ingest has none of its own: each of its errors, timeouts and throttles is an API 5xx, which alarms
    assert "lambda-ingest" not in alarms
    assert _alarm(synthesized, "api-5xx")["Threshold"] == 1
    # And the sweeper's alarm is its errors alone: a throttled sweeper sends no gauge, and oldest-pending treats a
    # missing gauge as breaching
    stats = _metric_stats(_alarm(synthesized, "lambda-sweeper"))
    assert {key: stat["Metric"]["MetricName"] for key, stat in stats.items()} == {"errors": "Errors"}
    assert stats["errors"]["Metric"]["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": sweeper_id}}]
    assert _alarm(synthesized, "oldest-pending")["TreatMissingData"] == "breaching"


def test_every_function_of_the_template_has_its_alarm(synthesized: Synthesized) -> None:
    # Given every Lambda function the template deploys (none is left out, custom-resource handlers included)
    functions = set(synthesized.resources("AWS::Lambda::Function"))
    # When the functions the Lambda alarms watch are collected
    watched = [
        stat["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for name in FUNCTIONS
        if monitoring.alarmed_failures(name)
        for stat in _metric_stats(_alarm(synthesized, f"lambda-{name}")).values()
        if stat["Metric"]["MetricName"] == "Errors"
    ]
    # Then each function is watched exactly once, the ingest through the API it alone serves (api-5xx), the
    # replay's page function by the replay execution that invokes it, which reports its failures to whoever
    # started the replay
    ingest = synthesized.logical_id(_construct(synthesized, FUNCTIONS["ingest"]))
    replay_page = synthesized.logical_id(synthesized.stack.replay.page_function.function)
    assert set(monitoring.REPORTED_TO_CALLER) == {"replay-page"}
    assert sorted([*watched, ingest, replay_page]) == sorted(functions)
    assert not any(name.startswith("lambda-replay") for name in synthesized.stack.monitoring.alarms)


@pytest.mark.parametrize(("name", "pipe"), PIPES.items())
def test_a_pipe_failure_alarms(synthesized: Synthesized, name: str, pipe: str) -> None:
    # Given a Pipe of the stack (Ref of an AWS::Pipes::Pipe is its name, the PipeName dimension)
    pipe_id = synthesized.logical_id(_construct(synthesized, pipe))
    # When its alarm is read
    properties = _alarm(synthesized, f"pipe-{name}")
    # Then it sums the Pipe's own failure counts, each read from AWS/EventBridge/Pipes for that Pipe
    stats = _metric_stats(properties)
    assert {stat["Metric"]["MetricName"] for stat in stats.values()} == PIPE_ALARM_METRICS
    assert len(stats) == len(PIPE_ALARM_METRICS)
    for stat in stats.values():
        assert stat["Metric"]["Namespace"] == "AWS/EventBridge/Pipes"
        assert stat["Metric"]["Dimensions"] == [{"Name": "PipeName", "Value": {"Ref": pipe_id}}]
        assert (stat["Stat"], stat["Period"]) == ("Sum", 300)
    assert sorted(_expression(properties).split(" + ")) == sorted(f"FILL({key}, 0)" for key in stats)
    _assert_any_occurrence_in_five_minutes_alarms(properties)
    _assert_notifies_the_topic(synthesized, properties)


def test_every_pipe_of_the_template_has_its_alarm(synthesized: Synthesized) -> None:
    # Given every Pipe the template deploys
    pipes = set(synthesized.resources("AWS::Pipes::Pipe"))
    # When the Pipes the Pipe alarms watch are collected
    watched = [
        stat["Metric"]["Dimensions"][0]["Value"]["Ref"]
        for name in PIPES
        for stat in _metric_stats(_alarm(synthesized, f"pipe-{name}")).values()
        if stat["Metric"]["MetricName"] == "ExecutionFailed"
    ]
    # Then each Pipe is watched exactly once
    assert sorted(watched) == sorted(pipes)


def test_the_topic_is_encrypted_with_a_rotated_key_cloudwatch_may_use(synthesized: Synthesized) -> None:
    key_id = synthesized.logical_id(synthesized.stack.monitoring.key)
    _id, topic = synthesized.resource(synthesized.stack.monitoring.topic)
    assert topic["Properties"]["KmsMasterKeyId"] == _get_att(key_id, "Arn")
    key = synthesized.template_json["Resources"][key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    (cloudwatch,) = [s for s in key["KeyPolicy"]["Statement"] if s.get("Sid") == "CloudWatchAlarmsPublish"]
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert sorted(cloudwatch["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert cloudwatch["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_the_topic_refuses_plain_http_and_lets_cloudwatch_of_this_account_publish(synthesized: Synthesized) -> None:
    topic = {"Ref": _topic_id(synthesized)}
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.resources("AWS::SNS::TopicPolicy").values()
        if p["Properties"]["Topics"] == [topic]
    ]
    (deny,) = [s for s in policy if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (publish,) = [s for s in policy if s.get("Sid") == "CloudWatchAlarmsPublish"]
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert publish["Action"] == "sns:Publish"
    assert publish["Resource"] == topic
    assert publish["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    output = synthesized.template_json["Outputs"][definitions.OUTPUT_ALARM_TOPIC]
    assert output["Value"] == topic
    assert not synthesized.resources("AWS::SNS::Subscription")  # none unless alarm_email is set


def _dashboard_body(synthesized: Synthesized) -> dict[str, Any]:
    """The dashboard's JSON, with CloudFormation references replaced by placeholders."""
    (dashboard,) = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    rendered: dict[str, Any] = json.loads("".join(p if isinstance(p, str) else "REF" for p in parts))
    return rendered


def test_the_dashboard_shows_the_flow(synthesized: Synthesized) -> None:
    body = _dashboard_body(synthesized)
    widgets = {w["properties"].get("title"): w for w in body["widgets"] if w["type"] in {"metric", "alarm"}}
    assert {
        "Deliveries, rejected signatures, storage failures",
        "Settled, ignored (per provider), failed",
        "Oldest pending (s), stuck and failed events",
        "Dispatch queue: depth and age of the oldest message",
        "Dead-letter queues",
        "Lambda errors",
        "Lambda duration p99 (ms)",
        "Webhook API: requests, 4xx, 5xx",
        "Lambda throttles",
        "Pipe failures",
        "Alarms",
    } <= set(widgets)

    def namespaces_and_names(title: str) -> set[tuple[str, str]]:
        return {(metric[0], metric[1]) for metric in widgets[title]["properties"]["metrics"]}

    def search_for(metric: str, statistic: str) -> str:
        return (
            f'SEARCH(\'{{{definitions.METRICS_NAMESPACE},provider,service}} MetricName="{metric}" '
            f"service=\"{definitions.SERVICE_NAME}\"', '{statistic}', 300)"
        )

    # Deliveries are the API's own count; the ingest's refusals and storage failures are service-wide
    assert namespaces_and_names("Deliveries, rejected signatures, storage failures") == {
        ("AWS/ApiGateway", "Count"),
        (definitions.METRICS_NAMESPACE, definitions.METRIC_SIGNATURES_REJECTED),
        (definitions.METRICS_NAMESPACE, definitions.METRIC_STORAGE_FAILURES),
    }
    # Settled and ignored: one line per provider, whichever providers emit (EventsSettled's SampleCount and Sum)
    settled = widgets["Settled, ignored (per provider), failed"]["properties"]["metrics"]
    assert [line[0]["expression"] for line in settled if isinstance(line[0], dict)] == [
        search_for(definitions.METRIC_EVENTS_SETTLED, "SampleCount"),
        search_for(definitions.METRIC_EVENTS_SETTLED, "Sum"),
    ]
    assert {(line[0], line[1]) for line in settled if isinstance(line[0], str)} == {
        (definitions.METRICS_NAMESPACE, definitions.METRIC_EVENTS_FAILED),
        (definitions.METRICS_NAMESPACE, definitions.METRIC_EVENTS_UNPARSEABLE),
    }
    assert (definitions.METRICS_NAMESPACE, definitions.METRIC_OLDEST_PENDING_AGE) in namespaces_and_names(
        "Oldest pending (s), stuck and failed events"
    )
    assert namespaces_and_names("Dispatch queue: depth and age of the oldest message") == {
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible"),
        ("AWS/SQS", "ApproximateAgeOfOldestMessage"),
    }
    assert len(widgets["Dead-letter queues"]["properties"]["metrics"]) == 5  # + the outbox Pipes' two
    assert namespaces_and_names("Lambda errors") == {("AWS/Lambda", "Errors")}
    # ingest, processor, sweeper, archiver, publisher, forwarder
    assert len(widgets["Lambda errors"]["properties"]["metrics"]) == 6
    assert namespaces_and_names("Lambda duration p99 (ms)") == {("AWS/Lambda", "Duration")}
    # The front door and the plumbing, from the services' own metrics
    assert namespaces_and_names("Webhook API: requests, 4xx, 5xx") == {
        ("AWS/ApiGateway", "Count"),
        ("AWS/ApiGateway", "4xx"),
        ("AWS/ApiGateway", "5xx"),
    }
    assert namespaces_and_names("Lambda throttles") == {("AWS/Lambda", "Throttles")}
    assert len(widgets["Lambda throttles"]["properties"]["metrics"]) == len(FUNCTIONS)
    pipe_lines = widgets["Pipe failures"]["properties"]["metrics"]
    assert [line[0]["label"] for line in pipe_lines if isinstance(line[0], dict)] == [
        f"{name} Pipe failures" for name in PIPES
    ]
    assert {(line[0], line[1]) for line in pipe_lines if isinstance(line[0], str)} == {
        ("AWS/EventBridge/Pipes", metric) for metric in PIPE_FAILURE_METRICS
    }
    assert len(widgets["Alarms"]["properties"]["alarms"]) == len(synthesized.stack.monitoring.alarms)


# ------------------------------------------------------------------------------------------ what it costs
def _metrics_referenced(properties: dict[str, Any]) -> int:
    """How many metrics an alarm references, as CloudWatch bills it: one for an alarm on one metric, one per metric
    of its math (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_billing.html)."""
    assert not any(
        "Metrics Insights" in str(m) or "SELECT" in str(m.get("Expression", "")) for m in properties.get("Metrics", [])
    ), "a Metrics Insights alarm is billed per metric its query analyzes: the model does not count those"
    return len(_metric_stats(properties)) if "Metrics" in properties else 1


def _template_alarms(synthesized: Synthesized) -> dict[str, int]:
    prefix = f"{synthesized.stack.stack_name}-"
    return {
        resource["Properties"]["AlarmName"].removeprefix(prefix): _metrics_referenced(resource["Properties"])
        for resource in synthesized.resources("AWS::CloudWatch::Alarm").values()
    }


def test_the_cost_model_counts_the_alarms_and_their_metrics_of_the_default_template(synthesized: Synthesized) -> None:
    # Given the default declaration with forwarding (the shared synth)
    # When the template's alarms and the metrics each references are counted
    # Then the cost model (inbox_cli/cost.py) counts the same alarms with the same metrics
    assert _template_alarms(synthesized) == alarm_metrics(tuple(definitions.PROVIDERS), forwarding=True)


def test_the_cost_model_counts_the_alarms_and_their_metrics_of_a_one_source_template(one_source: Synthesized) -> None:
    # Given one Stripe source with the default settings (no forwarding, no dashboard)
    template = _template_alarms(one_source)
    # Then the model agrees alarm by alarm
    assert template == alarm_metrics(("stripe",), forwarding=False, sources=("stripe-br",))
    # And what the one-source fixed cost counts today: 20 alarms on 24 metrics (Stripe confirms from the payload:
    # its corrections and refused verifications have one alarm each)
    assert (len(template), sum(template.values())) == (20, 24)


def test_the_dashboard_is_deployed_only_when_asked_for(synthesized: Synthesized, one_source: Synthesized) -> None:
    # Given the shared synth (-c inbox_dashboard=true) and the one-source synth (default settings)
    # Then the first has the dashboard, the second none (nor any alarm less)
    assert len(synthesized.resources("AWS::CloudWatch::Dashboard")) == 1
    assert synthesized.stack.monitoring.dashboard is not None
    assert one_source.resources("AWS::CloudWatch::Dashboard") == {}
    assert one_source.stack.monitoring.dashboard is None


def _custom_metrics_read(template: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
    """(metric name, dimension names) of every metric of our namespace the template's alarms read."""
    found = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = resource["Properties"]
        metrics = [m["MetricStat"]["Metric"] for m in properties.get("Metrics", []) if "MetricStat" in m]
        if "MetricName" in properties:
            metrics.append(properties)
        for metric in metrics:
            if metric["Namespace"] == definitions.METRICS_NAMESPACE:
                names = tuple(sorted(d["Name"] for d in metric["Dimensions"] if d["Name"] != "service"))
                found.add((metric["MetricName"], names))
    return found


def test_every_custom_metric_an_alarm_reads_is_declared_with_those_dimensions(synthesized: Synthesized) -> None:
    # Given the custom metrics the alarms read (name and dimensions)
    read = _custom_metrics_read(synthesized.template_json)
    # Then each is declared in shared/observability.METRICS with exactly those dimensions (what the functions emit)
    assert read
    for name, dimensions in read:
        assert observability.METRICS[name].dimensions == dimensions, name
    # And every metric sent every hour (billed all month) is read by an alarm: nothing steady only for a graph
    steady = {m.name for m in observability.METRICS.values() if m.emitted is observability.Emitted.STEADY}
    assert steady <= {name for name, _ in read}
