"""The sweeper, the payments' reconcile index and retention (archive bucket, archiver), as synthesized: wired to
what the definitions say, holding exactly the permissions their code uses, and packaged to run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.config import ARCHIVE_GLACIER_AFTER_DAYS, ARCHIVE_INFREQUENT_ACCESS_AFTER_DAYS
from shared import definitions

from .conftest import Synthesized
from .test_packaging import RUNTIME_ENVIRONMENT, UNREACHABLE_ENDPOINT, _asset, _run_in_lambda_like_interpreter

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _get_att(logical_id: str, attribute: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def _index_arn(table_id: str, index: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [_get_att(table_id, "Arn"), f"/index/{index}"]]}


def _grants(synthesized: Synthesized, role: Any) -> dict[str, list[str]]:
    """action -> the resources it is granted on (rendered as JSON), every statement an Allow."""
    grants: dict[str, list[str]] = {}
    for statement in synthesized.role_statements(role):
        assert statement["Effect"] == "Allow"
        assert "NotAction" not in statement and "NotResource" not in statement
        for action in statement["Action"]:
            grants.setdefault(action, []).extend(json.dumps(r, sort_keys=True) for r in statement["Resource"])
    return {action: sorted(resources) for action, resources in grants.items()}


def _rendered(*resources: Any) -> list[str]:
    return sorted(json.dumps(resource, sort_keys=True) for resource in resources)


def _ids(synthesized: Synthesized) -> dict[str, str]:
    stack = synthesized.stack
    return {
        "inbox": synthesized.logical_id(stack.storage.table),
        "payments": synthesized.logical_id(stack.payments.payments_table),
        "queue": synthesized.logical_id(stack.queues.queue),
        "body_bucket": synthesized.logical_id(stack.storage.body_bucket),
        "access_logs": synthesized.logical_id(stack.storage.access_logs_bucket),
        "archive_bucket": synthesized.logical_id(stack.archive.bucket),
        "failure_queue": synthesized.logical_id(stack.archive.failure_queue),
        "sweeper": synthesized.logical_id(stack.sweeper.function),
        "archiver": synthesized.logical_id(stack.archive.function),
    }


XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


# ------------------------------------------------------------------------------------------- payments index
def test_the_payments_table_has_the_sparse_reconcile_index(synthesized: Synthesized) -> None:
    _id, table = synthesized.resource(synthesized.stack.payments.payments_table)
    (index,) = table["Properties"]["GlobalSecondaryIndexes"]
    assert index == {
        "IndexName": definitions.RECONCILE_INDEX,
        "KeySchema": [
            {"AttributeName": definitions.RECONCILE_INDEX_PK, "KeyType": "HASH"},
            {"AttributeName": definitions.RECONCILE_INDEX_SK, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": definitions.RECONCILE_INDEX_PROJECTION},
    }
    attributes = {a["AttributeName"]: a["AttributeType"] for a in table["Properties"]["AttributeDefinitions"]}
    assert attributes == {
        definitions.PAYMENTS_PARTITION_KEY: "S",
        definitions.RECONCILE_INDEX_PK: "S",
        definitions.RECONCILE_INDEX_SK: "S",
    }


# ---------------------------------------------------------------------------------------------------- sweeper
def test_the_sweeper_runs_on_a_schedule_every_five_minutes(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    _rule_id, rule = synthesized.resource(synthesized.stack.sweeper.schedule)
    properties = rule["Properties"]
    assert properties["ScheduleExpression"] == f"rate({definitions.SWEEP_SCHEDULE_MINUTES} minutes)"
    assert properties["State"] == "ENABLED"
    (target,) = properties["Targets"]
    assert target["Arn"] == _get_att(ids["sweeper"], "Arn")
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 0}
    permissions = [
        p["Properties"]
        for p in synthesized.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == _get_att(ids["sweeper"], "Arn")
    ]
    assert [(p["Principal"], p["SourceArn"]) for p in permissions] == [
        ("events.amazonaws.com", _get_att(_rule_id, "Arn"))
    ]
    (invoke_config,) = synthesized.resources("AWS::Lambda::EventInvokeConfig").values()
    assert invoke_config["Properties"]["MaximumRetryAttempts"] == 0
    assert invoke_config["Properties"]["MaximumEventAgeInSeconds"] == definitions.SWEEP_SCHEDULE_MINUTES * 60


def test_the_sweeper_environment(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    _id, function = synthesized.resource(synthesized.stack.sweeper.function)
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables == {
        "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
        definitions.ENV_INBOX_TABLE: {"Ref": ids["inbox"]},
        definitions.ENV_PAYMENTS_TABLE: {"Ref": ids["payments"]},
        definitions.ENV_QUEUE_URL: {"Ref": ids["queue"]},
        definitions.ENV_STALE_AFTER: str(definitions.DEFAULT_STALE_AFTER_SECONDS),
        definitions.ENV_RECONCILE_AFTER: str(definitions.DEFAULT_RECONCILE_AFTER_SECONDS),
        definitions.ENV_SWEEP_MAX_ITEMS: str(definitions.DEFAULT_SWEEP_MAX_ITEMS),
        definitions.ENV_SOURCES: definitions.sources_json(definitions.default_sources()),  # test_sources.py
    }
    assert function["Properties"]["Timeout"] == definitions.SWEEPER_TIMEOUT_SECONDS
    assert function["Properties"]["TracingConfig"] == {"Mode": "Active"}


def test_the_sweeper_role_is_least_privilege(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    grants = _grants(synthesized, synthesized.stack.sweeper.role)
    log_group = synthesized.logical_id(synthesized.stack.sweeper.function.node.scope.node.find_child("LogGroup"))  # type: ignore[union-attr]
    assert grants == {
        "dynamodb:Query": _rendered(
            _index_arn(ids["inbox"], definitions.OPEN_EVENTS_INDEX),
            _index_arn(ids["payments"], definitions.RECONCILE_INDEX),
        ),
        "dynamodb:UpdateItem": _rendered(_get_att(ids["inbox"], "Arn"), _get_att(ids["payments"], "Arn")),
        "dynamodb:BatchGetItem": _rendered(_get_att(ids["inbox"], "Arn")),
        "sqs:SendMessage": _rendered(_get_att(ids["queue"], "Arn")),
        "logs:CreateLogStream": _rendered(_get_att(log_group, "Arn")),
        "logs:PutLogEvents": _rendered(_get_att(log_group, "Arn")),
        **{action: ['"*"'] for action in XRAY},
    }


# ---------------------------------------------------------------------------------------------------- archive
def test_the_archive_bucket_is_private_encrypted_versioned_logged_and_tiered(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    _id, bucket = synthesized.resource(synthesized.stack.archive.bucket)
    properties = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert properties["BucketEncryption"] == {
        "ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    }
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert properties["VersioningConfiguration"] == {"Status": "Enabled"}
    assert properties["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": ids["access_logs"]},
        "LogFilePrefix": "archive-bucket/",
    }
    rules = {rule["Id"]: rule for rule in properties["LifecycleConfiguration"]["Rules"]}
    tiers = rules["archive-storage-classes"]
    assert tiers["Transitions"] == [
        {"StorageClass": "STANDARD_IA", "TransitionInDays": ARCHIVE_INFREQUENT_ACCESS_AFTER_DAYS},
        {"StorageClass": "GLACIER_IR", "TransitionInDays": ARCHIVE_GLACIER_AFTER_DAYS},
    ]
    assert "ExpirationInDays" not in tiers  # kept unless archive_expiration_days says otherwise
    # TLS only: the bucket policy refuses plain HTTP
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.resources("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": ids["archive_bucket"]}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    )


def test_the_archiver_reads_ttl_deletions_from_the_inbox_stream(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    mapping_id, mapping = synthesized.resource(synthesized.stack.archive.mapping)
    properties = mapping["Properties"]
    assert properties["EventSourceArn"] == _get_att(ids["inbox"], "StreamArn")
    assert properties["FunctionName"] == {"Ref": ids["archiver"]}
    assert properties["StartingPosition"] == definitions.ARCHIVER_STARTING_POSITION
    assert properties["BatchSize"] == definitions.ARCHIVER_BATCH_SIZE
    assert properties["MaximumBatchingWindowInSeconds"] == definitions.ARCHIVER_MAX_BATCHING_WINDOW_SECONDS
    assert properties["BisectBatchOnFunctionError"] is True
    assert properties["DestinationConfig"] == {"OnFailure": {"Destination": _get_att(ids["failure_queue"], "Arn")}}
    (only_filter,) = properties["FilterCriteria"]["Filters"]
    assert json.loads(only_filter["Pattern"]) == definitions.ARCHIVE_FILTER_PATTERN
    # Retried until it succeeds or the record leaves the stream: the item is already gone
    assert "MaximumRetryAttempts" not in properties and "MaximumRecordAgeInSeconds" not in properties
    # Created once the role may read the stream (Lambda checks it when the mapping is created)
    role_policy = synthesized.stack.archive.role.node.find_child("DefaultPolicy")
    assert synthesized.logical_id(role_policy) in mapping["DependsOn"], mapping_id


def test_the_archiver_environment(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    _id, function = synthesized.resource(synthesized.stack.archive.function)
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables[definitions.ENV_ARCHIVE_BUCKET] == {"Ref": ids["archive_bucket"]}
    assert variables[definitions.ENV_BODY_BUCKET] == {"Ref": ids["body_bucket"]}
    assert variables[definitions.ENV_REDACT_FIELDS] == ""
    assert function["Properties"]["Timeout"] == definitions.ARCHIVER_TIMEOUT_SECONDS
    assert function["Properties"]["MemorySize"] == definitions.ARCHIVER_MEMORY_MB


def test_the_archiver_role_is_least_privilege(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    grants = _grants(synthesized, synthesized.stack.archive.role)
    stream = _get_att(ids["inbox"], "StreamArn")
    log_group = synthesized.logical_id(synthesized.stack.archive.function.node.scope.node.find_child("LogGroup"))  # type: ignore[union-attr]
    failure_queue = _get_att(ids["failure_queue"], "Arn")
    assert grants == {
        **{action: _rendered(stream) for action in ("dynamodb:DescribeStream", "dynamodb:GetRecords")},
        "dynamodb:GetShardIterator": _rendered(stream),
        "dynamodb:ListStreams": _rendered("*"),  # no resource type: "*" is the only resource it takes
        "s3:PutObject": _rendered(
            {"Fn::Join": ["", [_get_att(ids["archive_bucket"], "Arn"), f"/{definitions.ARCHIVE_KEY_PREFIX}*"]]}
        ),
        "s3:GetObject": _rendered({"Fn::Join": ["", [_get_att(ids["body_bucket"], "Arn"), "/*"]]}),
        # on the body bucket itself: a body already gone answers NoSuchKey, not AccessDenied
        "s3:ListBucket": _rendered(_get_att(ids["body_bucket"], "Arn")),
        # the on-failure destination (what the mapping's SqsDlq grants)
        "sqs:SendMessage": _rendered(failure_queue),
        "sqs:GetQueueAttributes": _rendered(failure_queue),
        "sqs:GetQueueUrl": _rendered(failure_queue),
        "logs:CreateLogStream": _rendered(_get_att(log_group, "Arn")),
        "logs:PutLogEvents": _rendered(_get_att(log_group, "Arn")),
        **{action: ['"*"'] for action in XRAY},
    }


def test_the_failure_queue_is_encrypted_and_tls_only(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    queue = synthesized.template_json["Resources"][ids["failure_queue"]]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == definitions.QUEUE_RETENTION_DAYS * 86_400
    assert "FifoQueue" not in queue  # stream sources report failures to standard queues


def test_outputs(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    outputs = synthesized.template_json["Outputs"]
    assert outputs[definitions.OUTPUT_SWEEPER_FUNCTION]["Value"] == {"Ref": ids["sweeper"]}
    assert outputs[definitions.OUTPUT_ARCHIVER_FUNCTION]["Value"] == {"Ref": ids["archiver"]}
    assert outputs[definitions.OUTPUT_ARCHIVE_BUCKET]["Value"] == {"Ref": ids["archive_bucket"]}


# -------------------------------------------------------------------------------------------------- packaging
def _environment(synthesized: Synthesized, function: Any, name: str) -> dict[str, str]:
    """The function's environment as the stack sets it, references replaced by sample values."""
    _id, resource = synthesized.resource(function)
    samples = {definitions.ENV_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/dispatch.fifo"}
    variables = {
        key: value if isinstance(value, str) else samples.get(key, f"sample-{key.lower().replace('_', '-')}")
        for key, value in resource["Properties"]["Environment"]["Variables"].items()
    }
    return {
        **RUNTIME_ENVIRONMENT,
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_ENDPOINT_URL": UNREACHABLE_ENDPOINT,
        **variables,
    }


def test_sweeper_asset_loads_its_settings_from_the_stacks_environment(synthesized: Synthesized) -> None:
    asset = _asset(synthesized, synthesized.stack.sweeper.function)
    output = _run_in_lambda_like_interpreter(
        synthesized,
        asset,
        _environment(synthesized, synthesized.stack.sweeper.function, "sweeper"),
        [],
        probes=("shared.sweeper:default_sweeper",),
    )
    assert output["probes"] == {"shared.sweeper:default_sweeper": "Sweeper"}


def test_archiver_asset_runs_in_a_lambda_like_interpreter(synthesized: Synthesized) -> None:
    asset = _asset(synthesized, synthesized.stack.archive.function)
    output = _run_in_lambda_like_interpreter(
        synthesized,
        asset,
        _environment(synthesized, synthesized.stack.archive.function, "archiver"),
        [{"Records": []}],
        probes=("shared.retention:default_archiver",),
    )
    assert output["results"] == [{"archived": 0, "skipped": 0, "objects": []}]
    assert output["probes"] == {"shared.retention:default_archiver": "Archiver"}
