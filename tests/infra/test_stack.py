"""The synthesized ingest slice says what the definitions say, and grants no more than the ingest needs.

(Dispatch and processing: test_dispatch.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from inbox_cli.cost import ACCESS_LOG_EXAMPLE
from infra.application import build_app
from shared import definitions
from shared.definitions import default_sources

from .conftest import Synthesized

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _statements(synthesized: Synthesized) -> list[dict[str, Any]]:
    """Every statement of the ingest role's policies, with actions and resources as lists."""
    return synthesized.role_statements(synthesized.stack.ingest.role)


def _ingest_function(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    return synthesized.resource(synthesized.stack.ingest.function)


def _inbox_table(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    return synthesized.resource(synthesized.stack.storage.table)


def _signing_secret_ids(synthesized: Synthesized) -> set[str]:
    return {synthesized.logical_id(secret) for secret in synthesized.stack.signing_secrets.secrets.values()}


def _actions(synthesized: Synthesized) -> set[str]:
    return {action for statement in _statements(synthesized) for action in statement["Action"]}


# ------------------------------------------------------------------------------------------------- table
def test_inbox_table_matches_definitions(synthesized: Synthesized) -> None:
    _table_id, table = _inbox_table(synthesized)
    result = Match.object_like(
        {
            "Properties": Match.object_like(
                {
                    "KeySchema": [{"AttributeName": definitions.INBOX_PARTITION_KEY, "KeyType": "HASH"}],
                    "BillingMode": "PAY_PER_REQUEST",
                    "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                    "TimeToLiveSpecification": {"AttributeName": definitions.INBOX_TTL_ATTRIBUTE, "Enabled": True},
                    "PointInTimeRecoverySpecification": Match.object_like({"PointInTimeRecoveryEnabled": True}),
                    "SSESpecification": {"SSEEnabled": True},
                    "DeletionProtectionEnabled": True,
                }
            ),
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        }
    ).test(table)
    assert not result.has_failed(), result.render_mismatch()
    # warm throughput is opt-in (context inbox_warm_write_units, docs/scale.md): nothing pre-warmed by default
    assert "WarmThroughput" not in table["Properties"]
    assert all("WarmThroughput" not in index for index in table["Properties"]["GlobalSecondaryIndexes"])


def test_inbox_indexes_match_definitions(synthesized: Synthesized) -> None:
    _table_id, table = _inbox_table(synthesized)
    properties = table["Properties"]
    indexes = {index["IndexName"]: index for index in properties["GlobalSecondaryIndexes"]}
    assert set(indexes) == {name for name, _pk, _sk in definitions.INBOX_GLOBAL_INDEXES}
    for name, partition_key, sort_key in definitions.INBOX_GLOBAL_INDEXES:
        assert indexes[name]["KeySchema"] == [
            {"AttributeName": partition_key, "KeyType": "HASH"},
            {"AttributeName": sort_key, "KeyType": "RANGE"},
        ]
        assert indexes[name]["Projection"] == definitions.inbox_index_projection(name)
        assert not {"body", "headers", "body_s3_key"} & set(indexes[name]["Projection"].get("NonKeyAttributes", ()))
    # the events-by-group index projects keys only: no attribute a settle changes (status) is copied into it
    assert indexes[definitions.RESOURCE_EVENTS_INDEX]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    attribute_types = {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]}
    key_names = {definitions.INBOX_PARTITION_KEY} | {
        key for _name, pk, sk in definitions.INBOX_GLOBAL_INDEXES for key in (pk, sk)
    }
    assert attribute_types == dict.fromkeys(key_names, "S")


# ----------------------------------------------------------------------------------------------- buckets
def test_body_bucket_is_private_encrypted_versioned_logged_and_expires_after_retention(
    synthesized: Synthesized,
) -> None:
    table_retention = synthesized.stack.settings.retention_days
    _id, body_bucket = synthesized.resource(synthesized.stack.storage.body_bucket)
    bucket = body_bucket["Properties"]
    assert "LoggingConfiguration" in bucket
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"], True
    )
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    expiry = [
        rule["ExpirationInDays"] for rule in bucket["LifecycleConfiguration"]["Rules"] if "ExpirationInDays" in rule
    ]
    assert len(expiry) == 1
    assert expiry[0] > table_retention  # a body outlives the item that points at it


def test_every_bucket_refuses_plain_http(synthesized: Synthesized) -> None:
    buckets = synthesized.resources("AWS::S3::Bucket")
    policies = synthesized.resources("AWS::S3::BucketPolicy").values()
    for logical_id in buckets:
        policy = next(p for p in policies if p["Properties"]["Bucket"] == {"Ref": logical_id})
        assert any(
            statement["Effect"] == "Deny"
            and statement.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ), f"{logical_id} accepts plain HTTP"


# ----------------------------------------------------------------------------------------------- secrets
def test_one_signing_secret_per_provider(synthesized: Synthesized) -> None:
    assert sorted(synthesized.stack.signing_secrets.secrets) == sorted(definitions.PROVIDERS)
    secrets = [synthesized.template_json["Resources"][secret_id] for secret_id in _signing_secret_ids(synthesized)]
    for secret in secrets:
        generated = secret["Properties"]["GenerateSecretString"]
        assert generated["GenerateStringKey"] == "current"
        assert json.loads(generated["SecretStringTemplate"]) == {"previous": ""}


# ------------------------------------------------------------------------------------------------ lambda
def test_ingest_function_runtime_architecture_and_observability(synthesized: Synthesized) -> None:
    _function_id, function = _ingest_function(synthesized)
    properties = function["Properties"]
    assert properties["Runtime"] == "python3.13"
    assert properties["Architectures"] == ["arm64"]
    assert properties["Handler"] == "handler.lambda_handler"
    assert properties["MemorySize"] == definitions.INGEST_MEMORY_MB
    assert properties["Timeout"] == definitions.INGEST_TIMEOUT_SECONDS
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert properties["LoggingConfig"]["LogFormat"] == "JSON"
    log_group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
    assert synthesized.template_json["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30


def test_by_default_no_function_is_traced_and_each_logs_json_at_info_without_platform_lines(
    one_source: Synthesized,
) -> None:
    """Given the default settings (no -c inbox_tracing, no -c inbox_log_level), when synthesized, then no function
    has a TracingConfig or an X-Ray permission, and each writes JSON, filtered at INFO, with the platform's START,
    END and REPORT lines (system INFO events) left out (docs/cost.md, "CloudWatch Logs and X-Ray")."""
    functions = one_source.resources("AWS::Lambda::Function")
    assert functions
    for function in functions.values():
        properties = function["Properties"]
        assert "TracingConfig" not in properties
        assert {key: value for key, value in properties["LoggingConfig"].items() if key != "LogGroup"} == {
            "LogFormat": "JSON",
            "ApplicationLogLevel": "INFO",
            "SystemLogLevel": "WARN",
        }
    roles = {function["Properties"]["Role"]["Fn::GetAtt"][0] for function in functions.values()}
    policies = [
        policy
        for policy in one_source.resources("AWS::IAM::Policy").values()
        if {role.get("Ref") for role in policy["Properties"]["Roles"]} & roles
    ]
    assert policies
    assert "xray:" not in json.dumps(policies)  # (the replay state machine traces its few executions: its own role)


def test_ingest_function_environment(synthesized: Synthesized) -> None:
    _function_id, function = _ingest_function(synthesized)
    variables = function["Properties"]["Environment"]["Variables"]
    table_id, _table = _inbox_table(synthesized)
    assert variables == {
        "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
        definitions.ENV_INBOX_TABLE: {"Ref": table_id},
        definitions.ENV_BODY_BUCKET: variables[definitions.ENV_BODY_BUCKET],
        definitions.ENV_SIGNING_SECRETS: variables[definitions.ENV_SIGNING_SECRETS],  # test_deploy_again.py
        definitions.ENV_SIGNATURE_TOLERANCE: str(definitions.DEFAULT_SIGNATURE_TOLERANCE_SECONDS),
        definitions.ENV_RETENTION_DAYS: str(definitions.DEFAULT_RETENTION_DAYS),
        # the rejected-delivery log (tests/infra/test_rejected_log.py)
        definitions.ENV_REJECTED_TABLE: synthesized.stack.rejected.table_name,
        definitions.ENV_FINGERPRINT_KEY_SECRET: {
            "Ref": synthesized.logical_id(synthesized.stack.rejected.fingerprint_key)
        },
        definitions.ENV_SOURCES: definitions.sources_json(definitions.default_sources()),  # test_sources.py
    }
    bucket_ref = variables[definitions.ENV_BODY_BUCKET]["Ref"]
    assert "LoggingConfiguration" in synthesized.template_json["Resources"][bucket_ref]["Properties"]


# ------------------------------------------------------------------------------------------------- IAM
def test_ingest_role_has_no_managed_policy(synthesized: Synthesized) -> None:
    _function_id, function = _ingest_function(synthesized)
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    role = synthesized.template_json["Resources"][role_id]["Properties"]
    assert "ManagedPolicyArns" not in role


def test_ingest_role_is_least_privilege(synthesized: Synthesized) -> None:
    assert _actions(synthesized) == {
        "dynamodb:PutItem",
        "s3:PutObject",
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }


@pytest.mark.parametrize(
    "forbidden",
    [
        "dynamodb:DeleteItem",
        "dynamodb:Scan",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "dynamodb:GetItem",
        "dynamodb:BatchWriteItem",
        "s3:GetObject",
        "s3:DeleteObject",
        "secretsmanager:PutSecretValue",
    ],
)
def test_ingest_role_cannot(synthesized: Synthesized, forbidden: str) -> None:
    service = forbidden.split(":", maxsplit=1)[0]
    actions = _actions(synthesized)
    assert forbidden not in actions
    assert f"{service}:*" not in actions


def test_put_item_is_granted_on_the_tables_only_not_their_indexes(synthesized: Synthesized) -> None:
    # The inbox, and the rejected-delivery log (tests/infra/test_rejected_log.py): nothing else, no index.
    table_id, _table = _inbox_table(synthesized)
    rejected_id = synthesized.logical_id(synthesized.stack.rejected.table)
    resources = [r for s in _statements(synthesized) if "dynamodb:PutItem" in s["Action"] for r in s["Resource"]]
    assert sorted(resources, key=str) == sorted(
        [{"Fn::GetAtt": [table_id, "Arn"]}, {"Fn::GetAtt": [rejected_id, "Arn"]}], key=str
    )


def test_secret_read_is_granted_on_the_signing_secrets_and_the_fingerprint_key_only(
    synthesized: Synthesized,
) -> None:
    secret_ids = _signing_secret_ids(synthesized) | {synthesized.logical_id(synthesized.stack.rejected.fingerprint_key)}
    statements = [s for s in _statements(synthesized) if "secretsmanager:GetSecretValue" in s["Action"]]
    assert {resource["Ref"] for statement in statements for resource in statement["Resource"]} == secret_ids


def test_only_xray_is_granted_on_every_resource(synthesized: Synthesized) -> None:
    wildcard = [s for s in _statements(synthesized) if "*" in s["Resource"]]
    assert {action for s in wildcard for action in s["Action"]} == {
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }


# ------------------------------------------------------------------------------------------------- API
def test_http_api_routes_go_to_the_ingest_function(synthesized: Synthesized) -> None:
    routes = synthesized.resources("AWS::ApiGatewayV2::Route").values()
    assert sorted(route["Properties"]["RouteKey"] for route in routes) == sorted(
        [
            f"POST {definitions.WEBHOOK_ROUTE}",
            f"GET {definitions.HEALTH_ROUTE}",
            # Efí appends /pix to the registered URL: the same source, through a route of its own
            *(f"POST {definitions.WEBHOOK_SUFFIX_ROUTE % suffix}" for suffix in definitions.WEBHOOK_PATH_SUFFIXES),
        ]
    )
    assert "POST /webhooks/{provider}/pix" in {route["Properties"]["RouteKey"] for route in routes}
    function_id, _function = _ingest_function(synthesized)
    synthesized.template.has_resource_properties(
        "AWS::ApiGatewayV2::Integration",
        {
            "IntegrationType": "AWS_PROXY",
            "PayloadFormatVersion": "2.0",
            "IntegrationUri": {"Fn::GetAtt": [function_id, "Arn"]},
        },
    )
    # API Gateway may invoke the function for exactly these routes (and nothing else may invoke it).
    permissions = [
        p
        for p in synthesized.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
        or p["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert len(permissions) == 2 + len(definitions.WEBHOOK_PATH_SUFFIXES)  # the webhook, /health, Efí's /pix
    for permission in permissions:
        assert permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
        assert permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}


def test_default_stage_throttles_and_logs_access_as_json(synthesized: Synthesized) -> None:
    _stage_id, stage = synthesized.only("AWS::ApiGatewayV2::Stage")
    properties = stage["Properties"]
    assert properties["StageName"] == "$default"
    assert properties["AutoDeploy"] is True
    assert properties["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": definitions.API_THROTTLE_RATE_LIMIT,
        "ThrottlingBurstLimit": definitions.API_THROTTLE_BURST_LIMIT,
    }
    access_log = properties["AccessLogSettings"]
    log_group_id = access_log["DestinationArn"]["Fn::GetAtt"][0]
    assert synthesized.template_json["Resources"][log_group_id]["Type"] == "AWS::Logs::LogGroup"
    fields = json.loads(access_log["Format"])
    assert {"requestId", "ip", "method", "path", "status", "integrationLatency", "integrationError"} <= set(fields)
    assert all(value.startswith("$context.") for value in fields.values())
    forbidden = ("body", "header", "authorizer")
    assert not [value for value in fields.values() if any(word in value.lower() for word in forbidden)]
    # and the cost model prices the line the stack deploys (inbox_cli/cost.py, ACCESS_LOG_EXAMPLE)
    assert set(ACCESS_LOG_EXAMPLE) == set(fields)


def test_outputs(synthesized: Synthesized) -> None:
    outputs = synthesized.template_json["Outputs"]
    assert {
        definitions.OUTPUT_API_URL,
        definitions.OUTPUT_INBOX_TABLE,
        definitions.OUTPUT_BODY_BUCKET,
        definitions.OUTPUT_SIGNING_SECRETS,
        definitions.OUTPUT_INGEST_FUNCTION,
    } <= set(outputs)


def _index_names(context: dict[str, Any]) -> set[str]:
    """The inbox table's index names in the template of the default declaration with `context`."""
    _app, stack = build_app(context=context, sources=default_sources())
    for table in Template.from_stack(stack).find_resources("AWS::DynamoDB::Table").values():
        names = {index["IndexName"] for index in table["Properties"].get("GlobalSecondaryIndexes", ())}
        if definitions.OPEN_EVENTS_INDEX in names:
            return names
    raise AssertionError("no inbox table in the template")


def test_a_deployed_stack_moves_to_the_events_by_group_index_one_index_per_update() -> None:
    # Given the inbox indexes of a stack deployed before the change (open events, and events by resource)
    open_index, (previous, _pk, _sk) = definitions.OPEN_EVENTS_INDEX, definitions.PREVIOUS_RESOURCE_EVENTS_INDEX
    deployed = {open_index, previous}
    # When it is updated first with inbox_previous_resource_index=true, then with the defaults
    first = _index_names({definitions.PREVIOUS_RESOURCE_INDEX_CONTEXT: "true"})
    second = _index_names({})
    # Then each update adds or deletes one index only (CloudFormation refuses more than one GSI creation or
    # deletion in a single update: docs/deploy.md), and the second leaves the new indexes alone
    assert first - deployed == {definitions.RESOURCE_EVENTS_INDEX} and deployed <= first
    assert first - second == {previous} and second <= first
    assert second == {name for name, _pk, _sk in definitions.INBOX_GLOBAL_INDEXES}
