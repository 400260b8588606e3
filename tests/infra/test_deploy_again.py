"""A deploy that succeeds on a fresh or small account, and again after a delete (issue 10 §3).

- Secrets: retained like the tables, never named in the template (a fixed name collides with the copy a deleted
  stack retained, or with one inside Secrets Manager's recovery window), tagged, and handed to the functions as
  one JSON map of ARNs that fits Lambda's 4 KB environment.
- Concurrency: no ReservedConcurrentExecutions unless the context asks (a small account's quota cannot spare
  any); the forwarding Pipe reads each shard one batch at a time instead.
- dynamodb:ListStreams: granted on "*" (it has no resource type), to the stream readers only.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Template

from infra.application import build_app
from infra.config import SettingsError, StackSettings
from infra.constructs.secrets import (
    SECRET_REMOVAL_POLICY,
    SecretMapTooLarge,
    longest_arn_length,
    longest_map_length,
    retained_secret,
    secret_arn_map,
)
from shared import definitions
from shared.secrets import secret_arns

from .conftest import FORWARD_URL, Synthesized
from .test_readme_make_targets import recipe

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _secrets(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return synthesized.resources("AWS::SecretsManager::Secret")


SAMPLE_ARN_PREFIX = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"


def _sample_arn(logical_id: str) -> str:
    """What CloudFormation would give the secret `logical_id` (a generated name and Secrets Manager's suffix)."""
    return f"{SAMPLE_ARN_PREFIX}{logical_id}-Ab12Cd34Ef56-XyZ123"


def _resolve(part: Any) -> str:
    """A template value as deploy resolves it, each secret's Ref standing for _sample_arn(its logical id)."""
    if isinstance(part, str):
        return part
    if "Ref" in part:
        return _sample_arn(part["Ref"])
    if "Fn::Sub" in part:
        substitutes = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}
        text = str(part["Fn::Sub"])
        for name, value in substitutes.items():
            text = text.replace("${" + name + "}", value)
        return text
    if "Fn::Select" in part:
        index, listed = part["Fn::Select"]
        separator, source = listed["Fn::Split"]
        return _resolve(source).split(separator)[int(index)]
    if "Fn::Join" in part:
        separator, parts = part["Fn::Join"]
        return str(separator).join(_resolve(item) for item in parts)
    raise AssertionError(f"unexpected template value {part!r}")


def _rendered_map(value: Any) -> dict[str, str]:
    """A {name: ARN} map as a function reads it: the template's value resolved as deploy would, then expanded by
    the functions' own reader (shared.secrets.secret_arns: the ARNs' common part is written once)."""
    mapping: dict[str, str] = json.loads(_resolve(value))
    return secret_arns(mapping)


def _function_variables(synthesized: Synthesized, function: Any) -> dict[str, Any]:
    variables: dict[str, Any] = synthesized.resource(function)[1]["Properties"]["Environment"]["Variables"]
    return variables


# ------------------------------------------------------------------------------------------------- secrets
def test_every_secret_survives_a_stack_deletion_and_its_removal_from_the_template(synthesized: Synthesized) -> None:
    # Given the stack with every optional secret (forwarding configured)
    secrets = _secrets(synthesized)
    # (+ the forwarding secret and the rejected-delivery log's fingerprint key)
    assert len(secrets) == len(definitions.PROVIDERS) + len(definitions.REFETCH_PROVIDERS) + 2
    # Then each is retained on delete (unless the operation that created it rolls back) and on replacement
    for logical_id, secret in secrets.items():
        assert secret["DeletionPolicy"] == "RetainExceptOnCreate", logical_id
        assert secret["UpdateReplacePolicy"] == "Retain", logical_id


def test_no_secret_has_a_fixed_name_so_a_redeploy_cannot_collide(synthesized: Synthesized) -> None:
    # Then CloudFormation generates every secret's name: none collides with a retained or deleted one
    assert [logical_id for logical_id, s in _secrets(synthesized).items() if "Name" in s["Properties"]] == []


def test_every_secret_is_tagged_with_its_stack_provider_and_kind(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    expected: dict[str, tuple[str | None, str]] = {
        **{
            synthesized.logical_id(secret): (provider, definitions.SECRET_KIND_SIGNING)
            for provider, secret in stack.signing_secrets.secrets.items()
        },
        **{
            synthesized.logical_id(secret): (provider, definitions.SECRET_KIND_API_KEY)
            for provider, secret in stack.api_keys.secrets.items()
        },
    }
    assert stack.outbox.forward_secret is not None
    expected[synthesized.logical_id(stack.outbox.forward_secret)] = (None, definitions.SECRET_KIND_FORWARD_SIGNING)
    expected[synthesized.logical_id(stack.rejected.fingerprint_key)] = (None, definitions.SECRET_KIND_FINGERPRINT_KEY)
    secrets = _secrets(synthesized)
    assert set(secrets) == set(expected)
    for logical_id, (provider, kind) in expected.items():
        tags = {tag["Key"]: tag["Value"] for tag in secrets[logical_id]["Properties"]["Tags"]}
        assert tags[definitions.SECRET_TAG_STACK] == stack.stack_name
        assert tags[definitions.SECRET_TAG_KIND] == kind
        assert tags.get(definitions.SECRET_TAG_PROVIDER) == provider


def test_the_ingest_finds_each_signing_secret_by_arn_in_one_variable(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    variables = _function_variables(synthesized, stack.ingest.function)
    # Then the map lists every provider's own secret (a Ref of a secret is its ARN), and no name prefix remains
    assert _rendered_map(variables[definitions.ENV_SIGNING_SECRETS]) == {
        provider: _sample_arn(synthesized.logical_id(secret))
        for provider, secret in stack.signing_secrets.secrets.items()
    }
    assert definitions.ENV_SECRET_PREFIX not in variables


def test_the_processor_finds_each_api_key_by_arn_in_one_variable(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    variables = _function_variables(synthesized, stack.processor.function)
    assert _rendered_map(variables[definitions.ENV_API_KEY_SECRETS]) == {
        provider: _sample_arn(synthesized.logical_id(secret)) for provider, secret in stack.api_keys.secrets.items()
    }
    assert definitions.ENV_API_KEY_SECRET_PREFIX not in variables


def test_the_forwarder_finds_its_secret_by_arn(synthesized: Synthesized) -> None:
    outbox = synthesized.stack.outbox
    assert outbox.forwarder is not None and outbox.forward_secret is not None
    variables = _function_variables(synthesized, outbox.forwarder)
    assert variables[definitions.ENV_FORWARD_SECRET_NAME] == {"Ref": synthesized.logical_id(outbox.forward_secret)}


def test_the_outputs_give_the_cli_the_same_maps(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    outputs = synthesized.template_json["Outputs"]
    ingest = _function_variables(synthesized, stack.ingest.function)
    processor = _function_variables(synthesized, stack.processor.function)
    assert outputs[definitions.OUTPUT_SIGNING_SECRETS]["Value"] == ingest[definitions.ENV_SIGNING_SECRETS]
    assert outputs[definitions.OUTPUT_API_KEY_SECRETS]["Value"] == processor[definitions.ENV_API_KEY_SECRETS]
    assert stack.outbox.forward_secret is not None
    assert outputs[definitions.OUTPUT_FORWARD_SECRET]["Value"] == {
        "Ref": synthesized.logical_id(stack.outbox.forward_secret)
    }


def test_the_secret_maps_fit_lambdas_environment_with_room_for_the_other_variables(synthesized: Synthesized) -> None:
    # Given the longest ARN each secret can get
    stack = synthesized.stack
    budget = definitions.LAMBDA_ENVIRONMENT_LIMIT_BYTES - definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES
    ingest = _function_variables(synthesized, stack.ingest.function)
    # the declaration beside the maps: it grows with sources.json too
    declaration = len(definitions.ENV_SOURCES) + len(ingest[definitions.ENV_SOURCES])
    for variable, secrets in (
        (definitions.ENV_SIGNING_SECRETS, stack.signing_secrets.secrets),
        (definitions.ENV_API_KEY_SECRETS, stack.api_keys.secrets),
    ):
        longest = longest_map_length(variable, {key: longest_arn_length(s) for key, s in secrets.items()})
        # Then each map, at its longest and with INBOX_SOURCES, leaves the reserve to the function's other variables
        assert longest + declaration <= budget, (variable, longest, declaration)
    # And the other variables of the ingest (the function with the larger map) fit in that reserve
    others = sum(
        len(name) + len(value if isinstance(value, str) else "x" * 255)  # a Ref: a name of at most 255 characters
        for name, value in ingest.items()
        if name not in (definitions.ENV_SIGNING_SECRETS, definitions.ENV_SOURCES)
    )
    assert others <= definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES


def test_the_arn_bound_holds_for_a_realistic_generated_name() -> None:
    # Given a secret in a stack with a long name, as CloudFormation would name it (stack, logical id, random part)
    stack = Stack(App(), "AVeryLongStackNameForAStagingEnvironment")
    secret = retained_secret(
        stack,
        "StripeSigningSecret",
        kind=definitions.SECRET_KIND_SIGNING,
        provider="stripe",
        description="test",
        generate_secret_string=secretsmanager.SecretStringGenerator(),
    )
    logical_id = stack.resolve(stack.get_logical_id(secret.node.default_child))  # type: ignore[arg-type]
    generated_name = f"{stack.stack_name}-{logical_id}-AbCdEfGhIjKlM"
    arn = f"arn:aws-us-gov:secretsmanager:ap-southeast-5:123456789012:secret:{generated_name}-Xy12Zw"
    # Then the bound is not below it
    assert longest_arn_length(secret) >= len(arn)
    assert SECRET_REMOVAL_POLICY.name == "RETAIN_ON_UPDATE_OR_DELETE"


def test_a_map_that_could_outgrow_the_environment_stops_the_synth() -> None:
    # Given more secrets than one function's environment can list (a future with many named sources)
    stack = Stack(App(), "WebhookInbox")
    secrets = {
        f"source-{index:03d}": retained_secret(
            stack,
            f"Source{index}SigningSecret",
            kind=definitions.SECRET_KIND_SIGNING,
            provider=f"source-{index:03d}",
            description="test",
            generate_secret_string=secretsmanager.SecretStringGenerator(),
        )
        for index in range(40)
    }
    # When the map is built, then synth stops with a message naming the limit
    with pytest.raises(SecretMapTooLarge, match="4096-byte limit"):
        secret_arn_map(definitions.ENV_SIGNING_SECRETS, secrets)
    # And the same map for a few of them is accepted
    assert "Fn::Join" in json.dumps(
        stack.resolve(secret_arn_map(definitions.ENV_SIGNING_SECRETS, dict(list(secrets.items())[:5])))
    )


# ------------------------------------------------------------------------------------------------ bootstrap
def test_make_bootstrap_is_the_pinned_cdk_cli_on_this_app() -> None:
    # When `make bootstrap` is dry-run, then it is the npm-installed (pinned) CLI's bootstrap, on app.py
    lines = recipe("bootstrap", "CDK_ARGS=--profile staging")
    assert lines[-1] == 'npx --no-install cdk bootstrap --app ".venv/bin/python app.py" --profile staging', lines


# --------------------------------------------------------------------------------------------- concurrency
def test_no_reserved_concurrency_anywhere_by_default(synthesized: Synthesized) -> None:
    # Given the stack with every optional function (forwarding configured) and no concurrency context value
    reserved = [
        logical_id
        for logical_id, resource in synthesized.template_json["Resources"].items()
        if "ReservedConcurrentExecutions" in resource.get("Properties", {})
    ]
    # Then nothing reserves concurrency: a new account with a small quota can deploy it
    assert reserved == []


def test_the_forwarder_reserves_concurrency_when_the_context_asks() -> None:
    # Given the context asks for it
    _app, stack = build_app(context={"forward_url": FORWARD_URL, "forwarder_reserved_concurrency": "3"})
    resources = Template.from_stack(stack).to_json()["Resources"]
    assert stack.outbox.forwarder is not None
    forwarder_id = stack.resolve(stack.get_logical_id(stack.outbox.forwarder.node.default_child))  # type: ignore[arg-type]
    reserved = {
        logical_id: resource["Properties"]["ReservedConcurrentExecutions"]
        for logical_id, resource in resources.items()
        if "ReservedConcurrentExecutions" in resource.get("Properties", {})
    }
    # Then the forwarder, and only it, reserves that much
    assert reserved == {forwarder_id: 3}


@pytest.mark.parametrize("value", [0, -1])
def test_reserved_concurrency_below_one_is_refused(value: int) -> None:
    with pytest.raises(SettingsError, match="forwarder_reserved_concurrency"):
        StackSettings(forward_url=FORWARD_URL, forwarder_reserved_concurrency=value)


def test_the_forwarding_pipe_works_each_shard_one_batch_at_a_time(synthesized: Synthesized) -> None:
    # What keeps the forwarding ordered and its rate bounded without reserved concurrency
    forward_pipe = synthesized.stack.outbox.forward_pipe
    assert forward_pipe is not None
    properties = synthesized.resource(forward_pipe.pipe)[1]["Properties"]
    stream = properties["SourceParameters"]["DynamoDBStreamParameters"]
    assert stream["ParallelizationFactor"] == 1
    assert stream["BatchSize"] == definitions.FORWARD_PIPE_BATCH_SIZE
    assert properties["TargetParameters"]["LambdaFunctionParameters"]["InvocationType"] == "REQUEST_RESPONSE"


# ------------------------------------------------------------------------------------------- ListStreams
def test_list_streams_is_granted_on_star_alone_and_only_to_stream_readers(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    assert stack.outbox.forward_pipe is not None
    readers = {
        synthesized.logical_id(role)
        for role in (
            stack.pipe.role,
            stack.outbox.publish_pipe.role,
            stack.outbox.forward_pipe.role,
            stack.archive.role,
        )
    }
    granted_to: set[str] = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if "dynamodb:ListStreams" not in actions:
                continue
            # Then it is on "*" (a stream ARN would grant nothing; CDK may merge it with X-Ray's "*" actions)
            assert statement["Resource"] == "*", statement
            granted_to.update(role["Ref"] for role in policy["Properties"]["Roles"])
    # And exactly the roles that read a stream have it
    assert granted_to == readers
