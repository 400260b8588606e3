"""The AWS Regions the stack deploys to, and the template rule that refuses any other before anything is created.

The stack is environment-agnostic (app.py gives it no Region: the deployer's credentials choose it), so the Region
is known only to CloudFormation. A template rule is evaluated when the change set is created, before any resource
is: "If a parameter value isn't valid, CloudFormation doesn't create or update the stack"
(https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/intrinsic-function-reference-rules.html).
Without it, a deploy to a Region without EventBridge Pipes would create the tables, queues and functions and fail
at the first Pipe, then roll everything back.

SUPPORTED_REGIONS: the Regions of the standard AWS partition in which every resource type the stack can
synthesize exists, by cfn-lint's Region data (its per-Region lists of CloudFormation resource types);
tests/infra/test_regions.py derives the same list from that data and fails when the two part (a Region gaining
Pipes, or the stack a resource type some Region lacks). What keeps the others out today is AWS::Pipes::Pipe:
ap-east-2, ap-southeast-4 to -7, ca-west-1, il-central-1, mx-central-1 (and GovCloud, China and the isolated
partitions are not supported at all). docs/deploy.md, "Regions", lists them for the deployer.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnRule, CfnRuleAssertion, Fn, Stack, Token

from infra.config import SettingsError

SUPPORTED_REGIONS: tuple[str, ...] = (
    "af-south-1",
    "ap-east-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ca-central-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "me-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
)
SUPPORTED_REGION_RULE = "SupportedRegion"


def unsupported_region_message() -> str:
    return (
        "Webhook Inbox deploys only to a Region where EventBridge Pipes and every other service it uses exist: "
        + ", ".join(SUPPORTED_REGIONS)
        + ' (docs/deploy.md, "Regions")'
    )


def require_supported_region(stack: Stack) -> None:
    """The rule that refuses a change set in any other Region; and, when the stack is given its Region at synth,
    a SettingsError at once."""
    if not Token.is_unresolved(stack.region) and stack.region not in SUPPORTED_REGIONS:
        raise SettingsError(f"the stack's Region is {stack.region}: {unsupported_region_message()}")
    CfnRule(
        stack,
        SUPPORTED_REGION_RULE,
        assertions=[
            CfnRuleAssertion(
                assert_=Fn.condition_contains(list(SUPPORTED_REGIONS), Aws.REGION),
                assert_description=unsupported_region_message(),
            )
        ],
    )
