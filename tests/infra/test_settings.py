"""Context values are validated before anything is described; a bad one stops `cdk synth` with a clear message.

Invalid values are refused while the app is built, before any synth (cheap); one test synthesizes a stack with
non-default values, and one runs app.py the way the CDK CLI runs it (context in CDK_CONTEXT_JSON).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from app import summary as deploy_summary
from infra.application import build_app
from infra.config import SettingsError
from infra.constructs.inbox_storage import BODY_EXPIRY_MARGIN_DAYS
from shared import definitions

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("retention_days", [definitions.MINIMUM_RETENTION_DAYS - 1, 0, "6"])
def test_retention_below_the_minimum_fails(retention_days: int | str) -> None:
    with pytest.raises(SettingsError, match=r"retention_days.*at least 7 days"):
        build_app(context={"retention_days": retention_days})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("retention_days", "thirty"),
        ("retention_days", True),
        ("signature_tolerance_seconds", 0),
        ("powertools_layer_version", "latest"),
        ("stack_name", "1-starts-with-a-digit"),
        ("stack_name", "has_underscore"),
        ("sweep_interval_minutes", 0),
        ("sweep_interval_minutes", 61),
        ("archive_expiration_days", 90),  # not after the last storage-class transition
        ("archive_redact_fields", "email;cpf"),
        ("alarm_email", "not-an-address"),
        ("inbox_warm_write_units", 4000),  # what a new on-demand table has already
        ("inbox_warm_write_units", "many"),
        ("inbox_dashboard", "maybe"),  # true or false
        ("inbox_tracing", "sometimes"),  # true or false
        ("inbox_log_level", "WARN"),  # above INFO, Lambda would drop the metric (EMF) lines, which carry no level
        ("inbox_log_level", "verbose"),
        ("inbox_replay_log_level", "OFF"),  # a replay's failures are what its log is for
        ("inbox_replay_log_level", "verbose"),
    ],
)
def test_invalid_context_values_fail(key: str, value: object) -> None:
    with pytest.raises(SettingsError, match=key):
        build_app(context={key: value})


def test_context_values_reach_the_function_and_the_names() -> None:
    """The one extra synth of the suite: a non-default stack name and settings, end to end."""
    _app, stack = build_app(
        context={
            "stack_name": "InboxStaging",
            "retention_days": "21",  # as `cdk -c retention_days=21` passes it
            "signature_tolerance_seconds": 120,
            "sweep_interval_minutes": "15",
            "archive_expiration_days": 400,
            "archive_redact_fields": "email,cpf",
            "alarm_email": "oncall@example.com",
            "inbox_warm_write_units": "30000",
            "inbox_log_level": "debug",  # an incident: every function's DEBUG lines
            "inbox_replay_log_level": "all",  # every step of a replay
        }
    )
    assert stack.stack_name == "InboxStaging"
    template = Template.from_stack(stack).to_json()
    resources = template["Resources"]

    def resource(construct: Any) -> dict[str, Any]:
        found: dict[str, Any] = resources[stack.get_logical_id(construct.node.default_child)]
        return found

    # CloudFormation names the secrets; the stack's name is on each as a tag (infra/constructs/secrets.py)
    secrets = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::SecretsManager::Secret"]
    kinds = [next(t["Value"] for t in secret["Tags"] if t["Key"] == definitions.SECRET_TAG_KIND) for secret in secrets]
    # A signing secret per default source, an API key per source with an API, the rejected log's fingerprint key
    assert sorted(kinds) == sorted(
        [definitions.SECRET_KIND_SIGNING] * len(definitions.PROVIDERS)
        + [definitions.SECRET_KIND_API_KEY] * len(definitions.REFETCH_PROVIDERS)
        + [definitions.SECRET_KIND_FINGERPRINT_KEY]
    )
    assert all("Name" not in secret for secret in secrets)
    assert all({"Key": definitions.SECRET_TAG_STACK, "Value": "InboxStaging"} in secret["Tags"] for secret in secrets)
    ingest = resource(stack.ingest.function)
    variables = ingest["Properties"]["Environment"]["Variables"]
    assert variables[definitions.ENV_RETENTION_DAYS] == "21"
    assert variables[definitions.ENV_SIGNATURE_TOLERANCE] == "120"
    processor = resource(stack.processor.function)
    (layer_id,) = [logical_id for logical_id, r in resources.items() if r["Type"] == "AWS::Lambda::LayerVersion"]
    for function in (ingest, processor):
        assert function["Properties"]["Layers"] == [{"Ref": layer_id}]  # the stack's own, built from uv.lock
        assert function["Properties"]["LoggingConfig"]["ApplicationLogLevel"] == "DEBUG"
    table = resource(stack.storage.table)
    assert table["Properties"]["TimeToLiveSpecification"]["AttributeName"] == definitions.INBOX_TTL_ATTRIBUTE
    # pre-warmed for a peak (docs/scale.md): the table and every index it writes at ingest
    assert table["Properties"]["WarmThroughput"] == {"WriteUnitsPerSecond": 30000}
    indexes = table["Properties"]["GlobalSecondaryIndexes"]
    assert len(indexes) == len(definitions.INBOX_GLOBAL_INDEXES)
    assert all(index["WarmThroughput"] == {"WriteUnitsPerSecond": 30000} for index in indexes)
    # and the front door admits what the pre-warmed table absorbs (30,000 / 6 a second, 30,000 / 3 in the first)
    (stage,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    assert stage["DefaultRouteSettings"] == {"ThrottlingRateLimit": 5000, "ThrottlingBurstLimit": 5000}
    bucket = resource(stack.storage.body_bucket)
    expiry = [
        rule["ExpirationInDays"]
        for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]
        if "ExpirationInDays" in rule
    ]
    # large bodies outlive the longest-kept item: Adyen's, kept its 30 days of retries and a day, beyond the 21
    assert expiry == [30 + 1 + BODY_EXPIRY_MARGIN_DAYS]
    # operations
    schedule = resources[stack.get_logical_id(stack.sweeper.schedule.node.default_child)]  # type: ignore[arg-type]
    assert schedule["Properties"]["ScheduleExpression"] == "rate(15 minutes)"
    archive_rules = resource(stack.archive.bucket)["Properties"]["LifecycleConfiguration"]["Rules"]
    assert [rule.get("ExpirationInDays") for rule in archive_rules if rule.get("Transitions")] == [400]
    archiver = resource(stack.archive.function)["Properties"]["Environment"]["Variables"]
    assert archiver[definitions.ENV_REDACT_FIELDS] == "email,cpf"
    replay = resource(stack.replay.state_machine)["Properties"]
    assert replay["LoggingConfiguration"]["Level"] == "ALL"
    (subscription,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::SNS::Subscription"]
    assert (subscription["Protocol"], subscription["Endpoint"]) == ("email", "oncall@example.com")
    # And what `make deploy` prints names the subscriber, with no warning that no one would hear an alarm
    printed = deploy_summary(stack, template)
    assert "subscribed: email oncall@example.com" in printed and "no one would hear an alarm" not in printed


def test_app_py_refuses_a_short_retention_with_a_clear_message(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"retention_days": "3"}),
        "CDK_OUTDIR": str(tmp_path),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    result = subprocess.run(
        [sys.executable, "app.py"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode != 0
    assert "retention_days" in result.stderr
    assert "at least 7 days" in result.stderr
    assert "Traceback" not in result.stderr  # a message for the operator, not a stack trace
    assert not (tmp_path / "manifest.json").exists()
