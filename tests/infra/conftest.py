"""One synth for the whole infrastructure suite (it takes several seconds): the same app app.py builds, with
cdk.json's feature flags and the cdk-nag plugin, into a temporary cloud assembly."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Before aws_cdk is imported: jsii reads it when it starts (Node 20 works; the warning is noise).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, CfnElement
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.application import build_app
from infra.stack import WebhookInboxStack
from shared.definitions import SourceSpec, default_sources

FORWARD_URL = "https://receiver.example.com/webhook-inbox"
# A one-gateway merchant: the deployment the fixed-cost target is about (issue 15 §2).
ONE_SOURCE = (SourceSpec(name="stripe-br", provider="stripe"),)


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: WebhookInboxStack
    assembly_dir: Path
    template: Template
    template_json: dict[str, Any]

    @property
    def template_path(self) -> Path:
        return self.assembly_dir / self.stack.template_file

    @property
    def validation_report(self) -> dict[str, Any]:
        report: dict[str, Any] = json.loads((self.assembly_dir / "validation-report.json").read_text())
        return report

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {
            logical_id: resource
            for logical_id, resource in self.template_json["Resources"].items()
            if resource["Type"] == resource_type
        }

    def only(self, resource_type: str) -> tuple[str, dict[str, Any]]:
        found = self.resources(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
        return next(iter(found.items()))

    def logical_id(self, construct: IConstruct) -> str:
        """The logical id of an L2 construct's resource (its default child) or of an L1 resource."""
        element = construct if isinstance(construct, CfnElement) else construct.node.default_child
        assert isinstance(element, CfnElement), f"{construct.node.path} has no CloudFormation resource"
        return self.stack.get_logical_id(element)

    def resource(self, construct: IConstruct) -> tuple[str, dict[str, Any]]:
        """(logical id, template resource) of a construct of the stack."""
        logical_id = self.logical_id(construct)
        return logical_id, self.template_json["Resources"][logical_id]

    def role_statements(self, role: IConstruct) -> list[dict[str, Any]]:
        """Every statement of a role's policies, with actions as lists."""
        role_id = self.logical_id(role)
        statements: list[dict[str, Any]] = []
        for policy in self.resources("AWS::IAM::Policy").values():
            if {"Ref": role_id} in policy["Properties"]["Roles"]:
                statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
        normalized = []
        for statement in statements:
            actions = statement["Action"]
            resources = statement["Resource"]
            normalized.append(
                {
                    **statement,
                    "Action": [actions] if isinstance(actions, str) else list(actions),
                    "Resource": resources if isinstance(resources, list) else [resources],
                }
            )
        return normalized


def cfn_lint(template: Path) -> list[str]:
    """What `cfn-lint --ignore-checks W3005 -- TEMPLATE` finds (its exit status is 0 when this is empty): the CLI's
    own configuration (these arguments, any .cfnlintrc) and runner, in this process. A cfn-lint process per template
    paid its start (~1.2 CPU s of imports and rule loading) each time; the rules' work on the template (~4-6 CPU s)
    is the same either way."""
    from cfnlint.config import ConfigMixIn
    from cfnlint.runner import Runner

    runner = Runner(ConfigMixIn(["--ignore-checks", "W3005", "--", str(template)]))
    return [str(match) for match in runner.run()]


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    # With forwarding, the dashboard and X-Ray tracing, so that every optional resource and permission is
    # synthesized (and checked by cdk-nag). The default declaration (one source per provider) whatever sources.json
    # the checkout holds.
    app, stack = build_app(
        context={"forward_url": FORWARD_URL, "inbox_dashboard": "true", "inbox_tracing": "true"},
        outdir=str(outdir),
        sources=default_sources(),
    )
    try:
        assembly = app.synth()
    except RuntimeError as error:  # cdk-nag findings (or another validation) stop the synth: show them
        report = outdir / "validation-report.json"
        details = report.read_text() if report.exists() else ""
        pytest.fail(f"synth failed: {error}\n{details}")
    template_json: dict[str, Any] = json.loads((Path(assembly.directory) / stack.template_file).read_text())
    return Synthesized(
        app=app,
        stack=stack,
        assembly_dir=Path(assembly.directory),
        template=Template.from_json(template_json),
        template_json=template_json,
    )


@pytest.fixture(scope="session")
def one_source(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The full app for a one-gateway merchant with the default settings (no forwarding, no dashboard), synthesized
    with cdk-nag like app.py does."""
    outdir = tmp_path_factory.mktemp("cdk.out.one-source")
    app, stack = build_app(outdir=str(outdir), sources=ONE_SOURCE)
    assembly = app.synth()
    template_json: dict[str, Any] = json.loads((Path(assembly.directory) / stack.template_file).read_text())
    return Synthesized(
        app=app,
        stack=stack,
        assembly_dir=Path(assembly.directory),
        template=Template.from_json(template_json),
        template_json=template_json,
    )


# The mutual-TLS deployment (tests/infra/test_mutual_tls.py): a plain Stripe source beside an Efí-like source (a
# `standard` one with mutual_tls), and the four context values it then needs.
MUTUAL_TLS_SOURCES = (SourceSpec("stripe-br", "stripe"), SourceSpec("pix", "standard", mutual_tls=True))
CERTIFICATE_ARN = "arn:aws:acm:sa-east-1:123456789012:certificate/0f3c1a2b-1111-2222-3333-444455556666"
MUTUAL_TLS_VALUES = {
    "inbox_mtls_domain": "pix.webhooks.example.com",
    "inbox_mtls_certificate_arn": CERTIFICATE_ARN,
    "inbox_mtls_truststore_uri": "s3://example-truststores/efi/chain.pem",
    "inbox_mtls_truststore_version": "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
}


@pytest.fixture(scope="session")
def mutual(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The full app with a mutual-TLS source (the custom domain and its rule), synthesized with cdk-nag."""
    outdir = tmp_path_factory.mktemp("cdk.out.mutual-tls")
    app, stack = build_app(context=MUTUAL_TLS_VALUES, outdir=str(outdir), sources=MUTUAL_TLS_SOURCES)
    assembly = app.synth()
    template_json: dict[str, Any] = json.loads((Path(assembly.directory) / stack.template_file).read_text())
    return Synthesized(
        app=app,
        stack=stack,
        assembly_dir=Path(assembly.directory),
        template=Template.from_json(template_json),
        template_json=template_json,
    )


# ------------------------------------------------------------------ what CloudFormation does with the template
EXAMPLE_ACCOUNT = "123456789012"


def stack_id(region: str, stack_name: str, uuid: str) -> str:
    """A stack id as CloudFormation returns it (the UUID is drawn when the stack is created)."""
    return f"arn:aws:cloudformation:{region}:{EXAMPLE_ACCOUNT}:stack/{stack_name}/{uuid}"


def resolve(value: Any, pseudo: dict[str, str]) -> Any:
    """The value CloudFormation gives `value` (an intrinsic-function tree of Ref to pseudo parameters, Fn::Join,
    Fn::Split, Fn::Select): enough for the names and rules these tests check, and an error on anything else."""
    if isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, list):
        return [resolve(item, pseudo) for item in value]
    ((function, argument),) = value.items()
    if function == "Ref":
        return pseudo[argument]
    if function == "Fn::Join":
        delimiter, parts = argument
        return delimiter.join(resolve(parts, pseudo))
    if function == "Fn::Split":
        delimiter, source = argument
        return resolve(source, pseudo).split(delimiter)
    if function == "Fn::Select":
        index, items = argument
        return resolve(items, pseudo)[int(index)]
    raise AssertionError(f"no resolver for {function}")


def _holds(condition: Any, pseudo: dict[str, str]) -> bool:
    """A rule function (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/
    intrinsic-function-reference-rules.html) over resolved values."""
    ((function, argument),) = condition.items()
    if function == "Fn::Contains":
        strings, string = argument
        return resolve(string, pseudo) in resolve(strings, pseudo)
    if function == "Fn::Equals":
        left, right = argument
        return bool(resolve(left, pseudo) == resolve(right, pseudo))
    if function == "Fn::Not":
        (inner,) = argument
        return not _holds(inner, pseudo)
    if function == "Fn::And":
        return all(_holds(inner, pseudo) for inner in argument)
    if function == "Fn::Or":
        return any(_holds(inner, pseudo) for inner in argument)
    raise AssertionError(f"no evaluator for the rule function {function}")


def refused_by_rules(template: dict[str, Any], region: str, *, bootstrap_version: str = "30") -> list[str]:
    """What CloudFormation answers a change set of `template` in `region`: the AssertDescription of every rule
    assertion that fails (empty: the change set is created). Rules run before any resource is created."""
    pseudo = {"AWS::Region": region, "BootstrapVersion": bootstrap_version}
    refused = []
    for rule in template.get("Rules", {}).values():
        if "RuleCondition" in rule and not _holds(rule["RuleCondition"], pseudo):
            continue
        refused += [a["AssertDescription"] for a in rule["Assertions"] if not _holds(a["Assert"], pseudo)]
    return refused
