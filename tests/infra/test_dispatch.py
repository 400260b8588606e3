"""Dispatch and processing, as synthesized: the Pipe says what the definitions say (the values the local runtime
emulates), the queue is a high-throughput FIFO with a dead-letter queue, the processor is wired to it, and every
role holds exactly what its code calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from shared import definitions

from .conftest import Synthesized

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _get_att(logical_id: str, attribute: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def _pipe(synthesized: Synthesized) -> dict[str, Any]:
    _pipe_id, pipe = synthesized.resource(synthesized.stack.pipe.pipe)
    properties: dict[str, Any] = pipe["Properties"]
    return properties


def _processor(synthesized: Synthesized) -> dict[str, Any]:
    _function_id, function = synthesized.resource(synthesized.stack.processor.function)
    properties: dict[str, Any] = function["Properties"]
    return properties


def _ids(synthesized: Synthesized) -> dict[str, str]:
    stack = synthesized.stack
    return {
        "inbox": synthesized.logical_id(stack.storage.table),
        "payments": synthesized.logical_id(stack.payments.payments_table),
        "control": synthesized.logical_id(stack.payments.control_table),
        "outbox": synthesized.logical_id(stack.outbox.table),
        "queue": synthesized.logical_id(stack.queues.queue),
        "dlq": synthesized.logical_id(stack.queues.dead_letter_queue),
        "pipe_dlq": synthesized.logical_id(stack.pipe.dead_letter_queue),
        "pipe_log_group": synthesized.logical_id(stack.pipe.log_group),
    }


def _grants(statements: list[dict[str, Any]]) -> dict[str, set[str]]:
    """action -> every resource it is granted on, rendered as JSON strings."""
    grants: dict[str, set[str]] = {}
    for statement in statements:
        assert statement["Effect"] == "Allow"
        assert "NotAction" not in statement and "NotResource" not in statement
        for action in statement["Action"]:
            grants.setdefault(action, set()).update(json.dumps(r, sort_keys=True) for r in statement["Resource"])
    return grants


def _rendered(*resources: Any) -> set[str]:
    return {json.dumps(resource, sort_keys=True) for resource in resources}


# --------------------------------------------------------------------------------------------- definitions
def test_definitions_fit_what_aws_accepts() -> None:
    # AWS: a queue feeding a Lambda event source mapping needs a visibility timeout of 6 x the function timeout.
    assert definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS >= 6 * definitions.PROCESSOR_TIMEOUT_SECONDS
    assert definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS <= 12 * 60 * 60
    assert 1 <= definitions.PROCESSOR_BATCH_SIZE <= 10  # the maximum for a FIFO event source
    assert 2 <= definitions.PROCESSOR_MAX_CONCURRENCY <= 1000  # ScalingConfig.MaximumConcurrency range
    assert 1 <= definitions.QUEUE_MAX_RECEIVE_COUNT <= 1000
    assert 1 <= definitions.QUEUE_RETENTION_DAYS <= 14
    assert 1 <= definitions.PIPE_BATCH_SIZE <= 10_000
    assert 0 <= definitions.PIPE_MAXIMUM_RETRY_ATTEMPTS <= 10_000
    assert definitions.PIPE_STARTING_POSITION in {"TRIM_HORIZON", "LATEST"}
    assert set(definitions.REFETCH_PROVIDERS) <= set(definitions.PROVIDERS)


# ---------------------------------------------------------------------------------------------------- pipe
def test_pipe_reads_the_inbox_stream_and_targets_the_fifo_queue(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    pipe = _pipe(synthesized)
    assert pipe["Source"] == _get_att(ids["inbox"], "StreamArn")
    assert pipe["Target"] == _get_att(ids["queue"], "Arn")
    assert synthesized.template_json["Resources"][ids["queue"]]["Properties"]["FifoQueue"] is True
    assert pipe["RoleArn"] == _get_att(synthesized.logical_id(synthesized.stack.pipe.role), "Arn")
    assert pipe.get("DesiredState", "RUNNING") == "RUNNING"
    assert "Enrichment" not in pipe


def test_pipe_filter_is_the_shared_definition(synthesized: Synthesized) -> None:
    (only_filter,) = _pipe(synthesized)["SourceParameters"]["FilterCriteria"]["Filters"]
    assert json.loads(only_filter["Pattern"]) == definitions.PIPE_FILTER_PATTERN


def test_pipe_target_parameters_are_the_shared_definitions(synthesized: Synthesized) -> None:
    target = _pipe(synthesized)["TargetParameters"]
    assert target == {
        "InputTemplate": definitions.PIPE_INPUT_TEMPLATE,
        "SqsQueueParameters": {
            "MessageGroupId": definitions.PIPE_MESSAGE_GROUP_ID_PATH,
            "MessageDeduplicationId": definitions.PIPE_DEDUPLICATION_ID_PATH,
        },
    }


def test_pipe_stream_parameters(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    assert _pipe(synthesized)["SourceParameters"]["DynamoDBStreamParameters"] == {
        "StartingPosition": definitions.PIPE_STARTING_POSITION,
        "BatchSize": definitions.PIPE_BATCH_SIZE,
        "MaximumRetryAttempts": definitions.PIPE_MAXIMUM_RETRY_ATTEMPTS,
        "OnPartialBatchItemFailure": "AUTOMATIC_BISECT",
        "DeadLetterConfig": {"Arn": _get_att(ids["pipe_dlq"], "Arn")},
    }
    # Stream sources cannot dead-letter to FIFO: the Pipe's dead-letter queue is a standard one.
    pipe_dlq = synthesized.template_json["Resources"][ids["pipe_dlq"]]["Properties"]
    assert "FifoQueue" not in pipe_dlq
    assert pipe_dlq["SqsManagedSseEnabled"] is True


def test_pipe_logs_errors_without_payloads_to_a_retained_log_group(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    assert _pipe(synthesized)["LogConfiguration"] == {
        "CloudwatchLogsLogDestination": {"LogGroupArn": _get_att(ids["pipe_log_group"], "Arn")},
        "Level": "ERROR",
    }  # no IncludeExecutionData: the stream record holds the raw webhook body and headers
    log_group = synthesized.template_json["Resources"][ids["pipe_log_group"]]["Properties"]
    assert log_group["RetentionInDays"] == 30


def test_pipe_is_created_after_its_role_policy(synthesized: Synthesized) -> None:
    pipe_id, pipe = synthesized.resource(synthesized.stack.pipe.pipe)
    role_policy = synthesized.stack.pipe.role.node.find_child("DefaultPolicy")
    assert synthesized.logical_id(role_policy) in pipe["DependsOn"], pipe_id


def test_pipe_role_is_least_privilege(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    grants = _grants(synthesized.role_statements(synthesized.stack.pipe.role))
    stream = _rendered(_get_att(ids["inbox"], "StreamArn"))
    assert grants == {
        "dynamodb:DescribeStream": stream,
        "dynamodb:GetRecords": stream,
        "dynamodb:GetShardIterator": stream,
        "dynamodb:ListStreams": _rendered("*"),  # no resource type: "*" is the only resource it takes
        "sqs:SendMessage": _rendered(_get_att(ids["queue"], "Arn"), _get_att(ids["pipe_dlq"], "Arn")),
        "logs:CreateLogStream": _rendered(_get_att(ids["pipe_log_group"], "Arn")),
        "logs:PutLogEvents": _rendered(_get_att(ids["pipe_log_group"], "Arn")),
    }


def test_only_the_pipes_service_of_this_account_assumes_the_pipe_role(synthesized: Synthesized) -> None:
    _role_id, role = synthesized.resource(synthesized.stack.pipe.role)
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pipes.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole"
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    assert "ManagedPolicyArns" not in role["Properties"]


# -------------------------------------------------------------------------------------------------- queues
def test_dispatch_queue_is_high_throughput_fifo_with_a_dead_letter_queue(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    resources = synthesized.template_json["Resources"]
    queue = resources[ids["queue"]]["Properties"]
    dead_letter = resources[ids["dlq"]]["Properties"]
    for properties in (queue, dead_letter):
        assert properties["FifoQueue"] is True
        assert properties["ContentBasedDeduplication"] is False
        assert properties["DeduplicationScope"] == "messageGroup"
        assert properties["FifoThroughputLimit"] == "perMessageGroupId"
        assert properties["VisibilityTimeout"] == definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS
        assert properties["MessageRetentionPeriod"] == definitions.QUEUE_RETENTION_DAYS * 86_400
        assert properties["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": _get_att(ids["dlq"], "Arn"),
        "maxReceiveCount": definitions.QUEUE_MAX_RECEIVE_COUNT,
    }
    assert "RedrivePolicy" not in dead_letter


def test_every_queue_refuses_plain_http(synthesized: Synthesized) -> None:
    queues = synthesized.resources("AWS::SQS::Queue")
    # dispatch, its dead-letter queue, the Pipe's dead-letter queue, archive failures, the outbox Pipes' two
    assert len(queues) == 6
    policies = synthesized.resources("AWS::SQS::QueuePolicy").values()
    for logical_id in queues:
        statements = [
            statement
            for policy in policies
            if {"Ref": logical_id} in policy["Properties"]["Queues"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]
        assert any(
            statement["Effect"] == "Deny"
            and statement.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
            for statement in statements
        ), f"{logical_id} accepts plain HTTP"


# ---------------------------------------------------------------------------------------------- processor
def test_processor_function_runtime_and_limits(synthesized: Synthesized) -> None:
    ingest = synthesized.resource(synthesized.stack.ingest.function)[1]["Properties"]
    processor = _processor(synthesized)
    assert processor["Handler"] == "handler.lambda_handler"
    for key in ("Runtime", "Architectures", "Layers", "TracingConfig"):
        assert processor[key] == ingest[key], key  # same runtime, architecture, Powertools layer and tracing
    assert processor["Timeout"] == definitions.PROCESSOR_TIMEOUT_SECONDS
    assert processor["MemorySize"] == definitions.PROCESSOR_MEMORY_MB
    assert processor["LoggingConfig"]["LogFormat"] == "JSON"
    log_group_id = processor["LoggingConfig"]["LogGroup"]["Ref"]
    assert synthesized.template_json["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30


def test_processor_environment(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    variables = _processor(synthesized)["Environment"]["Variables"]
    assert variables == {
        "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
        definitions.ENV_INBOX_TABLE: {"Ref": ids["inbox"]},
        definitions.ENV_PAYMENTS_TABLE: {"Ref": ids["payments"]},
        definitions.ENV_CONTROL_TABLE: {"Ref": ids["control"]},
        definitions.ENV_OUTBOX_TABLE: {"Ref": ids["outbox"]},
        definitions.ENV_QUEUE_URL: {"Ref": ids["queue"]},
        definitions.ENV_DLQ_URL: {"Ref": ids["dlq"]},
        definitions.ENV_MAX_ATTEMPTS: str(definitions.MAX_PROCESSING_ATTEMPTS),
        definitions.ENV_RETRY_BASE_SECONDS: str(definitions.RETRY_BASE_SECONDS),
        definitions.ENV_API_KEY_SECRETS: variables[definitions.ENV_API_KEY_SECRETS],  # test_deploy_again.py
        definitions.ENV_SOURCES: definitions.sources_json(definitions.default_sources()),  # test_sources.py
    }


def test_processor_is_fed_by_the_dispatch_queue(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    function_id = synthesized.logical_id(synthesized.stack.processor.function)
    (mapping,) = [
        m
        for m in synthesized.resources("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": function_id}
    ]  # (the archiver has its own mapping, on the inbox stream: test_operations.py)
    properties = mapping["Properties"]
    assert properties["EventSourceArn"] == _get_att(ids["queue"], "Arn")
    assert properties["BatchSize"] == definitions.PROCESSOR_BATCH_SIZE
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["ScalingConfig"] == {"MaximumConcurrency": definitions.PROCESSOR_MAX_CONCURRENCY}
    assert "MaximumBatchingWindowInSeconds" not in properties  # FIFO event sources support none
    assert properties.get("Enabled", True) is True


def test_processor_role_is_least_privilege(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    grants = _grants(synthesized.role_statements(synthesized.stack.processor.role))
    inbox, payments, control = (_rendered(_get_att(ids[table], "Arn")) for table in ("inbox", "payments", "control"))
    queue = _rendered(_get_att(ids["queue"], "Arn"))
    api_keys = _rendered(*({"Ref": synthesized.logical_id(s)} for s in synthesized.stack.api_keys.secrets.values()))
    log_group = _rendered(_get_att(_processor(synthesized)["LoggingConfig"]["LogGroup"]["Ref"], "Arn"))
    assert grants == {
        "dynamodb:GetItem": inbox | payments | control,
        "dynamodb:UpdateItem": inbox | control,
        # the payment, the outbox record, and a payload-confirmed payment's verification item in the inbox
        "dynamodb:PutItem": payments | _rendered(_get_att(ids["outbox"], "Arn")) | inbox,
        "sqs:ReceiveMessage": queue,
        "sqs:DeleteMessage": queue,
        "sqs:ChangeMessageVisibility": queue,  # the processor's retry backoff
        "sqs:GetQueueAttributes": queue,
        "sqs:GetQueueUrl": queue,
        "sqs:SendMessage": _rendered(_get_att(ids["dlq"], "Arn")),
        "secretsmanager:GetSecretValue": api_keys,
        "secretsmanager:DescribeSecret": api_keys,
        "logs:CreateLogStream": log_group,
        "logs:PutLogEvents": log_group,
        "xray:PutTraceSegments": _rendered("*"),
        "xray:PutTelemetryRecords": _rendered("*"),
    }


@pytest.mark.parametrize(
    "forbidden",
    [
        "dynamodb:Scan",
        "dynamodb:Query",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:BatchGetItem",
        "dynamodb:ConditionCheckItem",
        "sqs:PurgeQueue",
        "sqs:DeleteQueue",
        "secretsmanager:PutSecretValue",
        "s3:GetObject",
    ],
)
def test_processor_role_cannot(synthesized: Synthesized, forbidden: str) -> None:
    actions = set(_grants(synthesized.role_statements(synthesized.stack.processor.role)))
    service = forbidden.split(":", maxsplit=1)[0]
    assert forbidden not in actions
    assert f"{service}:*" not in actions


def test_processor_cannot_read_the_signing_secrets(synthesized: Synthesized) -> None:
    signing = {
        json.dumps({"Ref": synthesized.logical_id(s)}) for s in synthesized.stack.signing_secrets.secrets.values()
    }
    granted = _grants(synthesized.role_statements(synthesized.stack.processor.role))["secretsmanager:GetSecretValue"]
    assert not granted & signing


# -------------------------------------------------------------------------------------------------- tables
def test_payments_table(synthesized: Synthesized) -> None:
    _table_id, table = synthesized.resource(synthesized.stack.payments.payments_table)
    result = Match.object_like(
        {
            "Properties": Match.object_like(
                {
                    "KeySchema": [{"AttributeName": definitions.PAYMENTS_PARTITION_KEY, "KeyType": "HASH"}],
                    "AttributeDefinitions": Match.array_with(
                        [{"AttributeName": definitions.PAYMENTS_PARTITION_KEY, "AttributeType": "S"}]
                    ),
                    "BillingMode": "PAY_PER_REQUEST",
                    "PointInTimeRecoverySpecification": {
                        "PointInTimeRecoveryEnabled": True,
                        "RecoveryPeriodInDays": 35,
                    },
                    "SSESpecification": {"SSEEnabled": True},  # the AWS managed key: no KMSMasterKeyId
                    "DeletionProtectionEnabled": True,
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        }
    ).test(table)
    assert not result.has_failed(), result.render_mismatch()
    # One index only, the sweeper's sparse reconcile index (test_operations.py)
    assert [i["IndexName"] for i in table["Properties"]["GlobalSecondaryIndexes"]] == [definitions.RECONCILE_INDEX]


def test_control_table(synthesized: Synthesized) -> None:
    _table_id, table = synthesized.resource(synthesized.stack.payments.control_table)
    properties = table["Properties"]
    assert properties["KeySchema"] == [{"AttributeName": definitions.CONTROL_PARTITION_KEY, "KeyType": "HASH"}]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["DeletionPolicy"] == "Delete"  # disposable breaker state, rebuilt in seconds
    # TTL on the attribute only the forwarding checkpoints carry (tests/integration/test_forward_checkpoints.py)
    assert properties["TimeToLiveSpecification"] == {
        "AttributeName": definitions.CONTROL_TTL_ATTRIBUTE,
        "Enabled": True,
    }


# ------------------------------------------------------------------------------------------------- secrets
def test_one_api_key_secret_per_refetch_provider(synthesized: Synthesized) -> None:
    assert sorted(synthesized.stack.api_keys.secrets) == sorted(definitions.REFETCH_PROVIDERS)
    secrets = [synthesized.resource(s)[1]["Properties"] for s in synthesized.stack.api_keys.secrets.values()]
    for secret in secrets:
        # shared/gateway/registry.py uses the whole secret string as the key: a plain string, not JSON
        generated = secret["GenerateSecretString"]
        assert "SecretStringTemplate" not in generated
        assert "GenerateStringKey" not in generated
        assert "SecretString" not in secret  # no key value in the template


# ------------------------------------------------------------------------------------------------- outputs
def test_dispatch_outputs(synthesized: Synthesized) -> None:
    ids = _ids(synthesized)
    outputs = synthesized.template_json["Outputs"]
    assert outputs[definitions.OUTPUT_PAYMENTS_TABLE]["Value"] == {"Ref": ids["payments"]}
    assert outputs[definitions.OUTPUT_CONTROL_TABLE]["Value"] == {"Ref": ids["control"]}
    assert outputs[definitions.OUTPUT_QUEUE_URL]["Value"] == {"Ref": ids["queue"]}
    assert outputs[definitions.OUTPUT_DEAD_LETTER_QUEUE_URL]["Value"] == {"Ref": ids["dlq"]}
    assert outputs[definitions.OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL]["Value"] == {"Ref": ids["pipe_dlq"]}
    assert outputs[definitions.OUTPUT_PROCESSOR_FUNCTION]["Value"] == {
        "Ref": synthesized.logical_id(synthesized.stack.processor.function)
    }
    assert definitions.OUTPUT_API_KEY_SECRETS in outputs  # its value: test_deploy_again.py
