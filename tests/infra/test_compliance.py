"""cdk-nag (AwsSolutions) finds nothing unacknowledged, every acknowledgement says why, and cfn-lint is clean."""

from __future__ import annotations

import pytest
from aws_cdk.assertions import Annotations, Match

from infra.nag import MINIMUM_REASON_LENGTH
from shared import definitions

from .conftest import Synthesized, cfn_lint

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

# Every acknowledged finding, reviewed: adding one to the stack means adding it here, with its reason in code.
EXPECTED_ACKNOWLEDGEMENTS = {
    # one signing secret per provider, one API-key secret per provider with an API (same reason for each)
    *(("AwsSolutions-SMG4", f"SigningSecrets/{p.capitalize()}SigningSecret/Resource") for p in definitions.PROVIDERS),
    *(("AwsSolutions-SMG4", f"GatewayApiKeys/{p.capitalize()}ApiKey/Resource") for p in definitions.REFETCH_PROVIDERS),
    ("AwsSolutions-IAM5[Resource::*]", "IngestFunction/Ingest/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<BODY_BUCKET.Arn>/*]", "IngestFunction/Ingest/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "IngestFunction/Ingest/Function/Resource"),
    ("AwsSolutions-APIG4", "IngestApi/HttpApi/POST--webhooks--{provider}/Resource"),
    # Efí appends /pix to the registered URL: the same route, the same function, the same reason
    ("AwsSolutions-APIG4", "IngestApi/HttpApi/POST--webhooks--{provider}--pix/Resource"),
    ("AwsSolutions-APIG4", "IngestApi/HttpApi/GET--health/Resource"),
    # dispatch and processing
    ("AwsSolutions-IAM5[Resource::*]", "ProcessorFunction/Processor/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "ProcessorFunction/Processor/Function/Resource"),
    ("AwsSolutions-SQS3", "DispatchPipe/DeadLetterQueue/Resource"),
    # every role that reads a DynamoDB stream: dynamodb:ListStreams has no resource type (the archiver's is above)
    ("AwsSolutions-IAM5[Resource::*]", "DispatchPipe/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Outbox/PublishPipe/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Outbox/ForwardPipe/Role/DefaultPolicy/Resource"),
    # operations: replay, sweeper, retention
    ("AwsSolutions-IAM5[Resource::*]", "ReplayWorkflow/Role/DefaultPolicy/Resource"),
    # the replay logs at ERROR by default (its SF2, tracing off, is acknowledged only untraced: test_replay.py)
    ("AwsSolutions-SF1", "ReplayWorkflow/StateMachine/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "SweeperFunction/Sweeper/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "SweeperFunction/Sweeper/Function/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "ReplayWorkflow/PageFunction/ReplayPage/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "ReplayWorkflow/PageFunction/ReplayPage/Function/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Archive/Archiver/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "Archive/Archiver/Function/Resource"),
    ("AwsSolutions-IAM5[Resource::<BODY_BUCKET.Arn>/*]", "Archive/Archiver/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<ARCHIVE_BUCKET.Arn>/archive/*]", "Archive/Archiver/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-SQS3", "Archive/FailureQueue/Resource"),
    # downstream: the outbox's publisher and (forwarding configured) the forwarder, their Pipes' DLQs, the secret
    ("AwsSolutions-IAM5[Resource::*]", "Outbox/Publisher/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "Outbox/Publisher/Function/Resource"),
    ("AwsSolutions-SQS3", "Outbox/PublishPipe/DeadLetterQueue/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Outbox/Forwarder/Role/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "Outbox/Forwarder/Function/Resource"),
    ("AwsSolutions-SQS3", "Outbox/ForwardPipe/DeadLetterQueue/Resource"),
    ("AwsSolutions-SMG4", "Outbox/ForwardSigningSecret/Resource"),
    ("AwsSolutions-DDB3", "RejectedLog/RejectedTable/Resource"),
    ("AwsSolutions-SMG4", "RejectedLog/FingerprintKey/Resource"),
}


def test_cdk_nag_reports_no_unacknowledged_finding(synthesized: Synthesized) -> None:
    reports = {report["pluginName"]: report for report in synthesized.validation_report["pluginReports"]}
    assert "AwsSolutions" in reports, "the cdk-nag plugin did not run"
    for name, report in reports.items():
        assert report["violations"] == [], f"{name} findings: {report['violations']}"
        assert report["conclusion"] == "success"


def test_cdk_nag_annotations_hold_no_error_or_warning(synthesized: Synthesized) -> None:
    annotations = Annotations.from_stack(synthesized.stack)
    assert annotations.find_error("*", Match.string_like_regexp("AwsSolutions-.*")) == []
    assert annotations.find_warning("*", Match.string_like_regexp("AwsSolutions-.*")) == []
    assert annotations.find_error("*", Match.any_value()) == []
    assert annotations.find_warning("*", Match.any_value()) == []


def test_every_acknowledgement_is_expected_and_explained(synthesized: Synthesized) -> None:
    (report,) = [r for r in synthesized.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    stack_name = synthesized.stack.stack_name
    body_bucket_id = synthesized.stack.get_logical_id(synthesized.stack.storage.body_bucket.node.default_child)  # type: ignore[arg-type]
    archive_bucket_id = synthesized.logical_id(synthesized.stack.archive.bucket)
    found = set()
    for suppressed in report["suppressedViolations"]:
        assert len(suppressed["reason"].strip()) >= MINIMUM_REASON_LENGTH, suppressed
        for construct in suppressed["violatingConstructs"]:
            path = construct["constructPath"].removeprefix(f"{stack_name}/")
            rule = suppressed["ruleName"].replace(body_bucket_id, "BODY_BUCKET")
            found.add((rule.replace(archive_bucket_id, "ARCHIVE_BUCKET"), path))
    assert found == EXPECTED_ACKNOWLEDGEMENTS


def test_cfn_lint_passes(synthesized: Synthesized) -> None:
    findings = cfn_lint(synthesized.template_path)
    assert findings == [], "\n".join(findings)
