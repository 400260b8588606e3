"""The one way the stack makes a table and a bucket (infra/constructs/tables.py, buckets.py), on a bare stack with
cdk.json's feature flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from infra.application import cdk_json_context
from infra.constructs.buckets import data_bucket, private_bucket
from infra.constructs.tables import POINT_IN_TIME_RECOVERY_DAYS, table


@pytest.fixture(scope="module")
def template() -> Template:
    stack = Stack(App(context=cdk_json_context()), "Helpers")
    table(stack, "Kept", partition_key="pk", sort_key=("sequence", dynamodb.AttributeType.NUMBER), kept=True)
    table(stack, "Disposable", partition_key="pk", kept=False, time_to_live_attribute="expires_at")
    table(stack, "NoRecovery", partition_key="pk", kept=False, point_in_time_recovery=False)
    logs = private_bucket(stack, "Logs", lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))])
    data_bucket(
        stack,
        "Data",
        access_logs=logs,
        access_log_prefix="data/",
        lifecycle_rules=[s3.LifecycleRule(id="expire", expiration=Duration.days(30))],
    )
    return Template.from_stack(stack)


def _table(template: Template, logical_prefix: str) -> Mapping[str, Any]:
    found = [v for k, v in template.find_resources("AWS::DynamoDB::Table").items() if k.startswith(logical_prefix)]
    assert len(found) == 1
    return found[0]


def test_a_kept_table_is_protected_retained_and_recoverable_for_35_days(template):
    # Given a kept table / When synthesized / Then deletion protection, RETAIN, PITR for the maximum period
    kept = _table(template, "Kept")
    assert kept["DeletionPolicy"] == "Retain"
    properties = kept["Properties"]
    assert properties["DeletionProtectionEnabled"] is True
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["SSESpecification"] == {"SSEEnabled": True}
    assert properties["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True,
        "RecoveryPeriodInDays": POINT_IN_TIME_RECOVERY_DAYS,
    }
    assert properties["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sequence", "KeyType": "RANGE"},
    ]
    assert {"AttributeName": "sequence", "AttributeType": "N"} in properties["AttributeDefinitions"]


def test_a_disposable_table_is_deleted_with_the_stack_and_may_turn_recovery_off(template):
    # Given a disposable table and one without point-in-time recovery / When synthesized
    disposable, no_recovery = _table(template, "Disposable"), _table(template, "NoRecovery")
    # Then neither is protected nor retained; the first has PITR at DynamoDB's default period, the second none
    for resource in (disposable, no_recovery):
        assert resource["DeletionPolicy"] == "Delete"
        assert resource["Properties"]["DeletionProtectionEnabled"] is False
        assert resource["Properties"]["SSESpecification"] == {"SSEEnabled": True}
    assert disposable["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert disposable["Properties"]["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert no_recovery["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}


def test_a_kept_table_without_point_in_time_recovery_is_refused():
    # Given a kept table asked to go without recovery / When it is made / Then the synth stops, naming it
    with pytest.raises(ValueError, match="Ledger: a kept table has point-in-time recovery"):
        table(
            Stack(App(context=cdk_json_context()), "Refused"),
            "Ledger",
            partition_key="pk",
            kept=True,
            point_in_time_recovery=False,
        )


def test_every_bucket_is_private_encrypted_tls_only_and_retained(template):
    # Given the log bucket and a data bucket / When synthesized / Then both have the guard rails
    buckets = template.find_resources("AWS::S3::Bucket")
    assert len(buckets) == 2
    for resource in buckets.values():
        assert resource["DeletionPolicy"] == "Retain"
        properties = resource["Properties"]
        assert properties["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
        ]
        assert properties["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert properties["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    # and each bucket policy refuses plain HTTP and TLS below 1.2
    for policy in template.find_resources("AWS::S3::BucketPolicy").values():
        conditions = [statement["Condition"] for statement in policy["Properties"]["PolicyDocument"]["Statement"]]
        assert {"Bool": {"aws:SecureTransport": "false"}} in conditions
        assert {"NumericLessThan": {"s3:TlsVersion": 1.2}} in conditions


def test_a_data_bucket_is_versioned_logged_and_drops_expired_delete_markers_last(template):
    # Given the data bucket / When synthesized
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": {"DestinationBucketName": Match.any_value(), "LogFilePrefix": "data/"},
            # Then its own rules come first and the delete-marker rule last
            "LifecycleConfiguration": {
                "Rules": [
                    Match.object_like({"Id": "expire", "ExpirationInDays": 30}),
                    {"Id": "remove-expired-delete-markers", "ExpiredObjectDeleteMarker": True, "Status": "Enabled"},
                ]
            },
        },
    )
