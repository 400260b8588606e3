"""What a real account refuses, caught before anything is created: the Regions the stack deploys to (a template
rule, its list checked against cfn-lint's Region data), and the vended log groups' names (under /aws/vendedlogs/,
unique per stack and per creation of it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from aws_cdk import App, Environment

from infra.application import cdk_json_context
from infra.config import SettingsError
from infra.constructs.vended_logs import MAX_LOG_GROUP_NAME_LENGTH, STACK_ID_UUID_LENGTH, VENDED_LOGS_PREFIX
from infra.regions import SUPPORTED_REGION_RULE, SUPPORTED_REGIONS
from infra.stack import WebhookInboxStack

from .conftest import Synthesized, refused_by_rules, resolve, stack_id

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

DEPLOY_MD = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
UUID_1 = "6f1e9d40-8d1a-11ef-9b0a-0a1b2c3d4e5f"
UUID_2 = "0c2a7e10-9e3b-11ef-8c4d-0e5f6a7b8c9d"


# -------------------------------------------------------------------------------------------------- Regions
def _cfn_lint_regions_with(resource_types: set[str]) -> set[str]:
    """The standard partition's Regions whose cfn-lint data lists every one of `resource_types`. A Region with no
    data of its own is left out: cfn-lint answers for it with us-east-1's list, which proves nothing."""
    from cfnlint.helpers import REGIONS
    from cfnlint.schema.manager import PROVIDER_SCHEMA_MANAGER

    providers = Path(PROVIDER_SCHEMA_MANAGER._providers_dir)
    partitions = botocore.session.get_session()
    found = set()
    for region in REGIONS:
        if not (providers / f"{region}.json").exists():
            continue
        if partitions.get_partition_for_region(region) != "aws":
            continue
        if resource_types <= set(PROVIDER_SCHEMA_MANAGER.get_resource_types(region)):
            found.add(region)
    return found


def _resource_types(*synthesized: Synthesized) -> set[str]:
    return {resource["Type"] for s in synthesized for resource in s.template_json["Resources"].values()}


def test_the_supported_regions_are_where_every_resource_type_of_the_stack_exists(
    synthesized: Synthesized, one_source: Synthesized, mutual: Synthesized
) -> None:
    # Given every resource type the stack can synthesize (forwarding, dashboard, tracing; mutual TLS)
    types = _resource_types(synthesized, one_source, mutual)
    assert "AWS::Pipes::Pipe" in types
    # Then the Regions the stack declares are exactly those where cfn-lint's data has them all
    assert set(SUPPORTED_REGIONS) == _cfn_lint_regions_with(types)
    assert list(SUPPORTED_REGIONS) == sorted(SUPPORTED_REGIONS)
    # And what keeps a standard Region out is EventBridge Pipes alone (as docs/deploy.md says)
    every_standard_region = _cfn_lint_regions_with(set())
    assert _cfn_lint_regions_with(types - {"AWS::Pipes::Pipe"}) == every_standard_region
    assert {"ca-west-1", "il-central-1", "mx-central-1"} <= every_standard_region - set(SUPPORTED_REGIONS)
    # And docs/deploy.md names the ones it leaves out, exactly
    assert set(_documented_regions()[len(SUPPORTED_REGIONS) :]) == every_standard_region - set(SUPPORTED_REGIONS)


@pytest.mark.parametrize("region", ["us-east-1", "sa-east-1", "eu-west-1"])
def test_a_deploy_to_a_supported_region_passes_the_rules(synthesized: Synthesized, region: str) -> None:
    assert refused_by_rules(synthesized.template_json, region) == []


@pytest.mark.parametrize("region", ["ca-west-1", "il-central-1", "mx-central-1", "ap-southeast-5", "us-gov-west-1"])
def test_a_deploy_to_another_region_is_refused_before_anything_is_created(
    synthesized: Synthesized, one_source: Synthesized, region: str
) -> None:
    # Given the environment-agnostic template, deployed where EventBridge Pipes does not exist
    for template in (synthesized.template_json, one_source.template_json):
        # Then CloudFormation refuses the change set, naming the Regions that work and where to read about them
        (refusal,) = refused_by_rules(template, region)
        assert "EventBridge Pipes" in refusal
        assert ", ".join(SUPPORTED_REGIONS) in refusal
        assert 'docs/deploy.md, "Regions"' in refusal
    rule = synthesized.template_json["Rules"][SUPPORTED_REGION_RULE]
    assert rule["Assertions"][0]["Assert"] == {"Fn::Contains": [list(SUPPORTED_REGIONS), {"Ref": "AWS::Region"}]}


def test_a_stack_given_an_unsupported_region_stops_at_synth() -> None:
    # Given a stack built with its Region known (an environment-aware use of the construct)
    app = App(context=cdk_json_context())
    with pytest.raises(SettingsError, match="the stack's Region is ca-west-1: Webhook Inbox deploys only"):
        WebhookInboxStack(app, "Regional", env=Environment(region="ca-west-1"))


def _documented_regions() -> list[str]:
    """The Region codes docs/deploy.md's "Regions" section names: the supported ones first, then the others."""
    section = DEPLOY_MD.read_text().split("## Regions", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"`([a-z]{2}(?:-[a-z]+)+-\d)`", section)


def test_docs_deploy_lists_the_supported_regions() -> None:
    assert _documented_regions()[: len(SUPPORTED_REGIONS)] == list(SUPPORTED_REGIONS)


# --------------------------------------------------------------------------------------- vended log groups
def _log_group_name(synthesized: Synthesized, log_group: Any, *, stack_name: str, uuid: str) -> str:
    _id, resource = synthesized.resource(log_group)
    pseudo = {"AWS::StackName": stack_name, "AWS::StackId": stack_id("sa-east-1", stack_name, uuid)}
    name: str = resolve(resource["Properties"]["LogGroupName"], pseudo)
    return name


@pytest.mark.parametrize(
    ("construct", "expected_prefix"),
    [
        (lambda stack: stack.replay.log_group, "/aws/vendedlogs/states/WebhookInbox-replay-"),
        (lambda stack: stack.api.access_log_group, "/aws/vendedlogs/apigateway/WebhookInbox-access-"),
    ],
)
def test_the_vended_log_groups_are_named_per_stack_and_per_creation(
    synthesized: Synthesized, construct: Any, expected_prefix: str
) -> None:
    log_group = construct(synthesized.stack)
    # Given the stack created, deleted (its log groups are kept) and created again under the same name
    first = _log_group_name(synthesized, log_group, stack_name="WebhookInbox", uuid=UUID_1)
    again = _log_group_name(synthesized, log_group, stack_name="WebhookInbox", uuid=UUID_2)
    # Then each group is under /aws/vendedlogs/ (no entry in the account's CloudWatch Logs resource policy)
    assert first.startswith(VENDED_LOGS_PREFIX)
    assert first == expected_prefix + UUID_1
    # And the second creation does not collide with what the first left, while every update keeps its name
    assert again != first
    assert _log_group_name(synthesized, log_group, stack_name="WebhookInbox", uuid=UUID_1) == first
    # And another stack of the account never shares it
    assert _log_group_name(synthesized, log_group, stack_name="WebhookInboxStaging", uuid=UUID_1) != first
    # And the longest stack name still makes a valid log group name
    longest = _log_group_name(synthesized, log_group, stack_name="W" * 128, uuid=UUID_1)
    assert len(longest) <= MAX_LOG_GROUP_NAME_LENGTH
    assert re.fullmatch(r"[\.\-_/#A-Za-z0-9]+", longest)
    assert len(UUID_1) == STACK_ID_UUID_LENGTH
    # And they are kept when the stack is deleted (which is why the name must change with the creation)
    _id, resource = synthesized.resource(log_group)
    assert resource["DeletionPolicy"] == "Retain"
