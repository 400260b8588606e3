"""The rejected-delivery log in the stack: its table (keys, index, TTL, encryption, no PITR on purpose), the
ingest's grant (PutItem on it, nothing else), the fingerprint key, the outputs and the dashboard's widget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared import definitions

from .conftest import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _table(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    return synthesized.resource(synthesized.stack.rejected.table)


def test_the_table_matches_the_definitions_the_local_stack_uses(synthesized: Synthesized) -> None:
    from inbox_local.resources import rejected_table_spec

    # Given the deployed table and the local stack's table spec, both from shared/definitions/
    _id, table = _table(synthesized)
    properties = table["Properties"]
    local = rejected_table_spec("local")
    # Then keys, index and projection agree
    assert properties["KeySchema"] == local["KeySchema"]
    assert sorted(properties["AttributeDefinitions"], key=str) == sorted(local["AttributeDefinitions"], key=str)
    [index] = properties["GlobalSecondaryIndexes"]
    [local_index] = local["GlobalSecondaryIndexes"]
    assert index["IndexName"] == local_index["IndexName"] == definitions.REJECTED_BY_DAY_INDEX
    assert index["KeySchema"] == local_index["KeySchema"]
    assert index["Projection"]["ProjectionType"] == "INCLUDE"
    assert sorted(index["Projection"]["NonKeyAttributes"]) == sorted(local_index["Projection"]["NonKeyAttributes"])
    assert "body" not in index["Projection"]["NonKeyAttributes"]
    assert "headers" not in index["Projection"]["NonKeyAttributes"]


def test_the_table_is_on_demand_encrypted_expiring_and_disposable(synthesized: Synthesized) -> None:
    _id, table = _table(synthesized)
    properties = table["Properties"]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["TimeToLiveSpecification"] == {
        "AttributeName": definitions.REJECTED_TTL_ATTRIBUTE,
        "Enabled": True,
    }
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    # No PITR: it would keep refused bodies restorable long after their 3-day TTL (acknowledged DDB3, justified)
    assert properties.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled") is not True
    assert table["DeletionPolicy"] == "Delete"
    assert "StreamSpecification" not in properties


def test_the_ingest_may_only_put_items_on_it(synthesized: Synthesized) -> None:
    # Given every statement of the ingest's role that names the rejected table
    table_id, _table_resource = _table(synthesized)
    statements = synthesized.role_statements(synthesized.stack.ingest.role)
    naming = [s for s in statements if table_id in json.dumps(s["Resource"])]
    # Then it is PutItem, on the table's ARN alone (not its index)
    assert naming
    for statement in naming:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert actions == ["dynamodb:PutItem"]
        assert {"Fn::GetAtt": [table_id, "Arn"]} in statement["Resource"]
        assert "index" not in json.dumps(statement["Resource"])
    # and no other role of the stack may write it
    writers = [
        policy
        for policy in synthesized.resources("AWS::IAM::Policy").values()
        if table_id in json.dumps(policy["Properties"]["PolicyDocument"])
    ]
    assert len(writers) == 1


def test_the_ingest_reads_the_fingerprint_key_and_knows_the_table(synthesized: Synthesized) -> None:
    key_id = synthesized.logical_id(synthesized.stack.rejected.fingerprint_key)
    _function_id, function = synthesized.resource(synthesized.stack.ingest.function)
    variables = function["Properties"]["Environment"]["Variables"]
    # the table's name as text (it is the table's own: the name it is created with)
    assert variables[definitions.ENV_REJECTED_TABLE] == _table(synthesized)[1]["Properties"]["TableName"]
    assert variables[definitions.ENV_REJECTED_TABLE] == synthesized.stack.stack_name + "-rejected"
    assert variables[definitions.ENV_FINGERPRINT_KEY_SECRET] == {"Ref": key_id}
    statements = synthesized.role_statements(synthesized.stack.ingest.role)
    reads = [s for s in statements if {"Ref": key_id} in s["Resource"]]
    allowed = {"secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
    assert reads and all(set(s["Action"]) <= allowed for s in reads)
    # The key is generated, {"current": ...}, as shared/secrets.read_secret_pair reads it
    _id, secret = synthesized.resource(synthesized.stack.rejected.fingerprint_key)
    generator = secret["Properties"]["GenerateSecretString"]
    assert generator["GenerateStringKey"] == "current" and generator["PasswordLength"] >= 32


def test_the_outputs_name_the_table_and_the_key(synthesized: Synthesized) -> None:
    outputs = synthesized.template_json["Outputs"]
    assert outputs[definitions.OUTPUT_REJECTED_TABLE]["Value"] == {"Ref": _table(synthesized)[0]}
    key_id = synthesized.logical_id(synthesized.stack.rejected.fingerprint_key)
    assert outputs[definitions.OUTPUT_FINGERPRINT_KEY_SECRET]["Value"] == {"Ref": key_id}


def test_the_dashboard_shows_rejections_and_what_was_not_recorded_by_cause(synthesized: Synthesized) -> None:
    # Given the dashboard (-c inbox_dashboard=true): refusals are counted service-wide (their reasons are in the
    # rejected log itself, `inbox rejected list`: one custom metric, not one per reason), what was not recorded by cause
    [dashboard] = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "Rejected deliveries, recorded, and not recorded by cause" in body
    for cause in definitions.REJECTION_NOT_RECORDED_CAUSES:
        assert cause in body
    assert definitions.METRIC_DELIVERIES_REJECTED in body and definitions.METRIC_REJECTIONS_NOT_RECORDED in body
