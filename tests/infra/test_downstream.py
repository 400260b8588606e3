"""Downstream, as synthesized: the outbox table and its stream, the event bus and its archive, the publishing Pipe
and Lambda, and (forwarding configured) the signed forwarding Pipe, Lambda, secret and dead-letter queue; every
role holds exactly what its code calls."""

from __future__ import annotations

import fnmatch
import json
import tempfile
from typing import Any

import pytest

from inbox_local.resources import forward_log_table_spec
from infra.application import build_app
from infra.config import SettingsError
from shared import definitions, forwarding
from shared.gateway import breaker, ratelimit

from .conftest import FORWARD_URL, Synthesized
from .test_dispatch import _get_att, _grants, _rendered

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

STREAM_READ = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")


def _properties(synthesized: Synthesized, construct: Any) -> dict[str, Any]:
    _logical_id, resource = synthesized.resource(construct)
    properties: dict[str, Any] = resource["Properties"]
    return properties


def _function_log_group(synthesized: Synthesized, function: Any) -> set[str]:
    return _rendered(_get_att(_properties(synthesized, function)["LoggingConfig"]["LogGroup"]["Ref"], "Arn"))


# ------------------------------------------------------------------------------------------------ outbox table
def test_the_outbox_table_orders_each_payment_and_streams_new_records(synthesized: Synthesized) -> None:
    table = _properties(synthesized, synthesized.stack.outbox.table)
    # Then one partition per payment, sorted by its sequence number (so its stream shard hands records in order)
    assert table["KeySchema"] == [
        {"AttributeName": definitions.OUTBOX_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": definitions.OUTBOX_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert {"AttributeName": definitions.OUTBOX_SORT_KEY, "AttributeType": "N"} in table["AttributeDefinitions"]
    assert table["StreamSpecification"] == {"StreamViewType": definitions.OUTBOX_STREAM_VIEW_TYPE}
    assert table["TimeToLiveSpecification"] == {"AttributeName": definitions.OUTBOX_TTL_ATTRIBUTE, "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["DeletionProtectionEnabled"] is True
    logical_id = synthesized.logical_id(synthesized.stack.outbox.table)
    assert synthesized.template_json["Resources"][logical_id]["DeletionPolicy"] == "Retain"


# -------------------------------------------------------------------------------------------------- event bus
def test_the_stack_owns_an_event_bus_with_an_archive_of_what_it_published(synthesized: Synthesized) -> None:
    bus_id = synthesized.logical_id(synthesized.stack.outbox.bus)
    _archive_id, archive = synthesized.only("AWS::Events::Archive")
    assert archive["Properties"]["SourceArn"] == _get_att(bus_id, "Arn")
    assert archive["Properties"]["RetentionDays"] == definitions.EVENT_BUS_ARCHIVE_RETENTION_DAYS
    assert archive["Properties"]["EventPattern"] == {"source": [definitions.OUTBOX_EVENT_SOURCE]}


# ---------------------------------------------------------------------------------------------------- the Pipes
@pytest.mark.parametrize(
    ("pipe_name", "function_name", "retries", "max_age"),
    [
        ("publish_pipe", "publisher", definitions.OUTBOX_PIPE_MAXIMUM_RETRY_ATTEMPTS, None),
        (
            "forward_pipe",
            "forwarder",
            definitions.FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS,
            definitions.FORWARD_PIPE_MAXIMUM_RECORD_AGE_SECONDS,
        ),
    ],
)
def test_each_pipe_feeds_its_function_new_outbox_records_with_retries_and_a_dead_letter_queue(
    synthesized: Synthesized, pipe_name: str, function_name: str, retries: int, max_age: int | None
) -> None:
    outbox = synthesized.stack.outbox
    built = getattr(outbox, pipe_name)
    function = getattr(outbox, function_name)
    pipe = _properties(synthesized, built.pipe)
    table_id = synthesized.logical_id(outbox.table)
    dlq_id = synthesized.logical_id(built.dead_letter_queue)
    # Then it reads the outbox stream, INSERT records only, into its function, synchronously
    assert pipe["Source"] == _get_att(table_id, "StreamArn")
    assert pipe["Target"] == _get_att(synthesized.logical_id(function), "Arn")
    assert pipe["TargetParameters"] == {"LambdaFunctionParameters": {"InvocationType": "REQUEST_RESPONSE"}}
    (only_filter,) = pipe["SourceParameters"]["FilterCriteria"]["Filters"]
    assert json.loads(only_filter["Pattern"]) == definitions.OUTBOX_PIPE_FILTER_PATTERN
    stream = pipe["SourceParameters"]["DynamoDBStreamParameters"]
    assert stream["StartingPosition"] == "TRIM_HORIZON"
    assert stream["MaximumRetryAttempts"] == retries
    assert stream.get("MaximumRecordAgeInSeconds") == max_age
    assert stream["DeadLetterConfig"] == {"Arn": _get_att(dlq_id, "Arn")}
    assert pipe["LogConfiguration"]["Level"] == "ERROR" and "IncludeExecutionData" not in pipe["LogConfiguration"]
    # And its role may read that stream, invoke that function and send to that queue, nothing else
    grants = _grants(synthesized.role_statements(built.role))
    log_group = _rendered(_get_att(synthesized.logical_id(built.log_group), "Arn"))
    assert grants == {
        **{action: _rendered(_get_att(table_id, "StreamArn")) for action in STREAM_READ},
        "dynamodb:ListStreams": _rendered("*"),  # no resource type: "*" is the only resource it takes
        "lambda:InvokeFunction": _rendered(_get_att(synthesized.logical_id(function), "Arn")),
        "sqs:SendMessage": _rendered(_get_att(dlq_id, "Arn")),
        "logs:CreateLogStream": log_group,
        "logs:PutLogEvents": log_group,
    }
    role = synthesized.resource(built.role)[1]["Properties"]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pipes.amazonaws.com"}
    assert "aws:SourceAccount" in statement["Condition"]["StringEquals"]


# ------------------------------------------------------------------------------------------------ the functions
def test_the_publisher_may_put_events_on_its_bus_only(synthesized: Synthesized) -> None:
    outbox = synthesized.stack.outbox
    function = _properties(synthesized, outbox.publisher)
    bus_id = synthesized.logical_id(outbox.bus)
    assert function["Environment"]["Variables"][definitions.ENV_EVENT_BUS_NAME] == {"Ref": bus_id}
    role = outbox.publisher.role
    assert role is not None
    assert _grants(synthesized.role_statements(role)) == {
        "events:PutEvents": _rendered(_get_att(bus_id, "Arn")),
        "logs:CreateLogStream": _function_log_group(synthesized, outbox.publisher),
        "logs:PutLogEvents": _function_log_group(synthesized, outbox.publisher),
        "xray:PutTraceSegments": _rendered("*"),
        "xray:PutTelemetryRecords": _rendered("*"),
    }


def test_the_forwarder_signs_with_its_secret_and_checkpoints_in_the_control_table(
    synthesized: Synthesized,
) -> None:
    outbox = synthesized.stack.outbox
    assert outbox.forwarder is not None and outbox.forward_secret is not None
    function = _properties(synthesized, outbox.forwarder)
    secret_id = synthesized.logical_id(outbox.forward_secret)
    control_id = synthesized.logical_id(synthesized.stack.payments.control_table)
    assert outbox.forward_log is not None
    log_id = synthesized.logical_id(outbox.forward_log)
    assert function["Environment"]["Variables"] | {"POWERTOOLS_SERVICE_NAME": "-"} == {
        "POWERTOOLS_SERVICE_NAME": "-",
        "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
        definitions.ENV_FORWARD_URL: FORWARD_URL,
        definitions.ENV_FORWARD_SECRET_NAME: {"Ref": secret_id},  # the secret's ARN: CloudFormation names it
        definitions.ENV_CONTROL_TABLE: {"Ref": control_id},
        definitions.ENV_FORWARD_LOG_TABLE: {"Ref": log_id},
        definitions.ENV_FORWARD_LOG_RETENTION_DAYS: str(definitions.DEFAULT_FORWARD_LOG_RETENTION_DAYS),
    }
    assert "ReservedConcurrentExecutions" not in function  # opt-in only: test_deploy_again.py
    assert function["Timeout"] == definitions.FORWARDER_TIMEOUT_SECONDS
    # The Lambda never starts a delivery it cannot finish, and one delivery fits the function's timeout
    # (each attempt's log write included, at its bounded worst)
    forwarder = forwarding.Forwarder(
        url=FORWARD_URL,
        secrets=("whsec_MDEyMzQ1Njc4OWFiY2RlZg==",),
        max_attempts=forwarding.FORWARDER_ATTEMPTS,
        timeout_seconds=forwarding.FORWARDER_POST_TIMEOUT_SECONDS,
        record=lambda *_: None,
    )
    assert forwarding.worst_delivery_seconds(forwarder) + forwarding.FORWARDER_START_MARGIN_SECONDS < (
        definitions.FORWARDER_TIMEOUT_SECONDS
    )
    role = outbox.forwarder.role
    assert role is not None
    secret = _rendered({"Ref": secret_id})
    assert _grants(synthesized.role_statements(role)) == {
        "secretsmanager:GetSecretValue": secret,
        "secretsmanager:DescribeSecret": secret,
        "dynamodb:GetItem": _rendered(_get_att(control_id, "Arn")),
        # the checkpoints, and the forwarding log's new items (PutItem only: it never reads or changes one)
        "dynamodb:PutItem": _rendered(_get_att(control_id, "Arn"), _get_att(log_id, "Arn")),
        "logs:CreateLogStream": _function_log_group(synthesized, outbox.forwarder),
        "logs:PutLogEvents": _function_log_group(synthesized, outbox.forwarder),
        "xray:PutTraceSegments": _rendered("*"),
        "xray:PutTelemetryRecords": _rendered("*"),
    }
    # And the secret is a generated current/previous pair
    generated = synthesized.resource(outbox.forward_secret)[1]["Properties"]["GenerateSecretString"]
    assert generated["GenerateStringKey"] == "current"
    assert json.loads(generated["SecretStringTemplate"]) == {"previous": ""}


def test_the_forwarder_reaches_only_the_checkpoint_items_of_the_control_table(synthesized: Synthesized) -> None:
    # Given the forwarder's statements on the control table (keyed by `pk` alone)
    outbox = synthesized.stack.outbox
    assert outbox.forwarder is not None and outbox.forwarder.role is not None
    control_arn = _get_att(synthesized.logical_id(synthesized.stack.payments.control_table), "Arn")
    assert synthesized.resource(synthesized.stack.payments.control_table)[1]["Properties"]["KeySchema"] == [
        {"AttributeName": definitions.CONTROL_PARTITION_KEY, "KeyType": "HASH"}
    ]
    on_control = [s for s in synthesized.role_statements(outbox.forwarder.role) if control_arn in s["Resource"]]
    # Then one statement, GetItem and PutItem, whose every key must start with the checkpoints' prefix
    assert len(on_control) == 1
    (statement,) = on_control
    assert sorted(statement["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert statement["Resource"] == [control_arn]
    condition = statement["Condition"]
    assert condition == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{definitions.FORWARD_CHECKPOINT_PREFIX}*"]}
    }
    # And that pattern admits the keys ForwardCheckpoints writes, and neither a breaker's nor a rate limit's
    (pattern,) = condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    checkpoints = forwarding.ForwardCheckpoints(dynamodb=None, control_table="control")  # type: ignore[arg-type]
    assert fnmatch.fnmatchcase(checkpoints._key("stripe-br#pi_1")["pk"]["S"], pattern)
    for other in (f"{breaker.KEY_PREFIX}stripe-br", f"{ratelimit.KEY_PREFIX}stripe-br"):
        assert not fnmatch.fnmatchcase(other, pattern)


def test_the_forwarding_log_is_keyed_by_webhook_id_and_time_and_expires(synthesized: Synthesized) -> None:
    # Given the stack with forwarding: its forwarding log table
    log = synthesized.stack.outbox.forward_log
    assert log is not None
    table = _properties(synthesized, log)
    # Then one partition per published event, its attempts sorted by time, gone by TTL, from the shared definitions
    assert table["KeySchema"] == [
        {"AttributeName": definitions.FORWARD_LOG_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": definitions.FORWARD_LOG_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert table["TimeToLiveSpecification"] == {
        "AttributeName": definitions.FORWARD_LOG_TTL_ATTRIBUTE,
        "Enabled": True,
    }
    assert "StreamSpecification" not in table  # nothing consumes the log's changes
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    # And it is disposable: it explains deliveries, it decides none
    assert table["DeletionProtectionEnabled"] is False
    assert synthesized.template_json["Resources"][synthesized.logical_id(log)]["DeletionPolicy"] == "Delete"
    # And the CLI finds it by its output
    assert definitions.OUTPUT_FORWARD_LOG_TABLE in synthesized.template_json["Outputs"]
    # And the local stack's table has the same keys (both from shared/definitions/)
    local = forward_log_table_spec("local")
    assert local["KeySchema"] == table["KeySchema"]
    assert sorted(local["AttributeDefinitions"], key=str) == sorted(table["AttributeDefinitions"], key=str)


def test_the_forwarding_log_retention_is_a_context_value_within_bounds() -> None:
    # Given the app deployed with forward_log_retention_days=3
    with tempfile.TemporaryDirectory() as outdir:
        app, stack = build_app(outdir=outdir, context={"forward_url": FORWARD_URL, "forward_log_retention_days": 3})
        assembly = app.synth()
        with open(f"{assembly.directory}/{stack.template_file}") as file:
            resources = list(json.load(file)["Resources"].values())
    # Then the forwarder writes its attempts with that TTL
    variables = [
        r["Properties"]["Environment"]["Variables"]
        for r in resources
        if r["Type"] == "AWS::Lambda::Function"
        and definitions.ENV_FORWARD_LOG_TABLE in r["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert [v[definitions.ENV_FORWARD_LOG_RETENTION_DAYS] for v in variables] == ["3"]
    # And a value out of bounds stops the synth
    for days in (0, definitions.MAXIMUM_FORWARD_LOG_RETENTION_DAYS + 1):
        with pytest.raises(SettingsError, match="forward_log_retention_days"):
            build_app(context={"forward_url": FORWARD_URL, "forward_log_retention_days": days})


def test_the_forwarding_dead_letter_queue_raises_an_alarm(synthesized: Synthesized) -> None:
    alarms = synthesized.stack.monitoring.alarms
    assert "forward-dead-letter-queue" in alarms and "outbox-dead-letter-queue" in alarms


def test_outputs_name_the_bus_the_outbox_and_the_forwarding_secret(synthesized: Synthesized) -> None:
    outputs = synthesized.template_json["Outputs"]
    for key in (
        definitions.OUTPUT_EVENT_BUS,
        definitions.OUTPUT_OUTBOX_TABLE,
        definitions.OUTPUT_FORWARD_SECRET,
        definitions.OUTPUT_OUTBOX_DEAD_LETTER_QUEUE_URL,
        definitions.OUTPUT_FORWARD_DEAD_LETTER_QUEUE_URL,
    ):
        assert key in outputs, key


# ------------------------------------------------------------------------------------- forwarding not configured
def test_without_a_forward_url_there_is_no_forwarding_but_the_bus_still_gets_everything(
    one_source: Synthesized,
) -> None:
    # Given the app without the forward_url context value (the session's one-source synth: the default settings;
    # which sources are declared changes nothing in forwarding, and a synth of its own cost seconds of jsii)
    stack = one_source.stack
    resources = list(one_source.template_json["Resources"].values())
    # Then only the publishing Pipe exists besides dispatch, and no forwarding secret or function
    assert stack.outbox.forwarder is None and stack.outbox.forward_pipe is None and stack.outbox.forward_secret is None
    assert stack.outbox.forward_log is None  # nothing would write there
    assert sum(1 for r in resources if r["Type"] == "AWS::Pipes::Pipe") == 2
    assert not [r for r in resources if r["Type"] == "AWS::Lambda::Function" and "forward" in json.dumps(r).lower()]


@pytest.mark.parametrize("url", ["http://receiver.example.com/hook", "https://", "ftp://x", "https://a b"])
def test_a_forward_url_that_is_not_https_stops_the_synth(url: str) -> None:
    with pytest.raises(SettingsError, match="forward_url"):
        build_app(context={"forward_url": url})
