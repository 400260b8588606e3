"""The declared sources decide the stack's secrets (issue 12 §1): a signing secret per declared source, an API-key
secret per declared source whose provider has a refetch API, logical ids from the source's name (removed and
declared again, it deploys cleanly), tags per source, the declaration handed to the functions that need it, and a
bad sources.json refused before anything is described.

One extra synth (module fixture): a one-source deployment, checked by cdk-nag and cfn-lint like the default one.
The other tests build constructs in a bare stack (no function assets) or stop before the synth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from infra.application import build_app, declared_sources
from infra.config import SettingsError
from infra.constructs.gateway_api_keys import GATEWAY_API_KEYS
from infra.constructs.secrets import (
    DuplicateLogicalId,
    EnvironmentTooLarge,
    SecretMapTooLarge,
    SourceSecrets,
    check_environment_share,
    environment_share,
    source_logical_id,
)
from infra.constructs.signing_secrets import SIGNING_SECRETS
from shared import definitions
from shared.definitions import SourceSpec

from .conftest import ONE_SOURCE, Synthesized, cfn_lint

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

REPO_ROOT = Path(__file__).resolve().parents[2]


def _secret_resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::SecretsManager::Secret"}


def _tags(resource: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in resource["Properties"]["Tags"]}


def _secrets_stack(sources: tuple[SourceSpec, ...], stack_name: str = "WebhookInbox") -> dict[str, Any]:
    """The template of a bare stack holding only the two secret constructs for `sources` (no function assets)."""
    stack = Stack(App(), stack_name)
    SourceSecrets(stack, "SigningSecrets", of=SIGNING_SECRETS, stack_name=stack_name, sources=sources, alongside={})
    SourceSecrets(stack, "GatewayApiKeys", of=GATEWAY_API_KEYS, stack_name=stack_name, sources=sources, alongside={})
    return dict(Template.from_stack(stack).to_json())


# ------------------------------------------------------------------------------------- which secrets exist
def test_a_one_source_deployment_has_one_signing_secret_and_one_api_key(one_source: Synthesized) -> None:
    # Given sources.json declaring one Stripe source (a provider with a refetch API), no forwarding
    stack = one_source.stack
    # Then the stack holds exactly its signing secret and its API key, keyed by the source's name, besides the
    # rejected-delivery log's fingerprint key (one per deployment, whatever the sources)
    kinds = sorted(_tags(s)[definitions.SECRET_TAG_KIND] for s in _secret_resources(one_source.template_json).values())
    assert kinds == sorted(
        [definitions.SECRET_KIND_SIGNING, definitions.SECRET_KIND_API_KEY, definitions.SECRET_KIND_FINGERPRINT_KEY]
    )
    assert list(stack.signing_secrets.secrets) == ["stripe-br"]
    assert list(stack.api_keys.secrets) == ["stripe-br"]


def test_a_source_of_a_provider_without_an_api_gets_no_api_key() -> None:
    # Given one Kiwify source (no refetch API: ordered by event time)
    template = _secrets_stack((SourceSpec(name="kiwify-shop", provider="kiwify"),))
    # Then there is its signing secret alone
    secrets = _secret_resources(template)
    assert [_tags(s)[definitions.SECRET_TAG_KIND] for s in secrets.values()] == [definitions.SECRET_KIND_SIGNING]


def test_the_default_declaration_has_one_secret_per_provider(synthesized: Synthesized) -> None:
    # Given no sources.json (the shared synth uses the default declaration)
    stack = synthesized.stack
    # Then each provider is a source of its own name, with its signing secret, and an API key where it has an API
    assert list(stack.signing_secrets.secrets) == list(definitions.PROVIDERS)
    assert list(stack.api_keys.secrets) == list(definitions.REFETCH_PROVIDERS)


def test_the_example_declaration_gives_each_account_its_own_secrets() -> None:
    # Given sources.example.json (two Stripe accounts and a Connect platform, Asaas and its sandbox, Pagar.me, Efí)
    sources = declared_sources({definitions.ENV_SOURCES_FILE: str(REPO_ROOT / "sources.example.json")})
    template = _secrets_stack(sources)
    by_source = {
        (_tags(s)[definitions.SECRET_TAG_SOURCE], _tags(s)[definitions.SECRET_TAG_KIND])
        for s in _secret_resources(template).values()
    }
    # Then every source has a signing secret and (all of these gateways have an API) an API key
    kinds = (definitions.SECRET_KIND_SIGNING, definitions.SECRET_KIND_API_KEY)
    assert by_source == {(source.name, kind) for source in sources for kind in kinds}


def test_each_secret_is_tagged_with_its_source_and_provider(one_source: Synthesized) -> None:
    source_kinds = {definitions.SECRET_KIND_SIGNING, definitions.SECRET_KIND_API_KEY}
    secrets = [
        s
        for s in _secret_resources(one_source.template_json).values()
        if _tags(s)[definitions.SECRET_TAG_KIND] in source_kinds
    ]
    assert len(secrets) == 2
    for secret in secrets:
        tags = _tags(secret)
        assert tags[definitions.SECRET_TAG_SOURCE] == "stripe-br"
        assert tags[definitions.SECRET_TAG_PROVIDER] == "stripe"
        assert tags[definitions.SECRET_TAG_STACK] == one_source.stack.stack_name


# ------------------------------------------------------------------------------- removed and declared again
def test_logical_ids_come_from_the_source_name_alone() -> None:
    # Given a name with hyphens, and a default source (a provider's id)
    # Then the hyphenated one is CamelCased, and a default source keeps the id it had before sources existed
    assert source_logical_id("stripe-br") == "StripeBr"
    assert source_logical_id("stripe") == "Stripe"  # "StripeSigningSecret": existing stacks keep their secrets


def test_a_source_removed_and_declared_again_comes_back_under_its_logical_id_with_a_generated_name() -> None:
    # Given a deployment of two sources, then one without stripe-us, then both again
    both = (SourceSpec("stripe-br", "stripe"), SourceSpec("stripe-us", "stripe"))
    first, removed, again = _secrets_stack(both), _secrets_stack(both[:1]), _secrets_stack(both)
    # Then the remaining source's secrets never change logical id (not replaced by the removal)
    assert set(_secret_resources(removed)) < set(_secret_resources(first))
    # And the source declared again gets its old logical ids: CloudFormation creates new secrets there
    assert set(_secret_resources(again)) == set(_secret_resources(first))
    for logical_id, secret in _secret_resources(again).items():
        # with names CloudFormation generates (no collision with the retained secret of the removal, or one in
        # Secrets Manager's recovery window) and kept, not deleted, when removed
        assert "Name" not in secret["Properties"], logical_id
        assert secret["DeletionPolicy"] == "RetainExceptOnCreate", logical_id
        assert secret["UpdateReplacePolicy"] == "Retain", logical_id


def test_adding_a_source_changes_no_other_sources_secret() -> None:
    # Given the example declaration, and the same with one more source in the middle
    before = (SourceSpec("asaas", "asaas"), SourceSpec("stripe-us", "stripe"))
    after = (SourceSpec("asaas", "asaas"), SourceSpec("pagarme", "pagarme"), SourceSpec("stripe-us", "stripe"))
    old, new = _secret_resources(_secrets_stack(before)), _secret_resources(_secrets_stack(after))
    # Then every existing secret is still there, unchanged (order in the file does not matter)
    assert {k: v for k, v in new.items() if k in old} == old


def test_two_names_that_would_share_a_logical_id_are_refused() -> None:
    with pytest.raises(DuplicateLogicalId, match=r"'a-1' and 'a1'"):
        _secrets_stack((SourceSpec("a-1", "stripe"), SourceSpec("a1", "stripe")))


# ---------------------------------------------------------------------------------- what the functions get
def test_the_functions_that_need_it_get_the_declaration(one_source: Synthesized) -> None:
    stack = one_source.stack
    for function in (stack.ingest.function, stack.processor.function, stack.sweeper.function):
        variables = one_source.resource(function)[1]["Properties"]["Environment"]["Variables"]
        # Then INBOX_SOURCES reads back as the declared sources
        handed = {definitions.ENV_SOURCES: variables[definitions.ENV_SOURCES]}
        assert definitions.sources_from_environment(handed) == ONE_SOURCE
    for function in (stack.archive.function, stack.outbox.publisher):
        variables = one_source.resource(function)[1]["Properties"]["Environment"]["Variables"]
        assert definitions.ENV_SOURCES not in variables  # they never look at a source's options


def test_the_maps_are_keyed_by_source(one_source: Synthesized) -> None:
    stack = one_source.stack
    ingest = one_source.resource(stack.ingest.function)[1]["Properties"]["Environment"]["Variables"]
    processor = one_source.resource(stack.processor.function)[1]["Properties"]["Environment"]["Variables"]
    signing_id = one_source.logical_id(stack.signing_secrets.secrets["stripe-br"])
    api_key_id = one_source.logical_id(stack.api_keys.secrets["stripe-br"])
    assert json.dumps(ingest[definitions.ENV_SIGNING_SECRETS]).count('\\"stripe-br\\"') == 1
    # Each entry is the name part of its secret's ARN (the common part is written once: shared.secrets.secret_arns)
    name_of = {"Fn::Select": [6, {"Fn::Split": [":", {"Ref": signing_id}]}]}
    assert name_of in ingest[definitions.ENV_SIGNING_SECRETS]["Fn::Join"][1]
    name_of = {"Fn::Select": [6, {"Fn::Split": [":", {"Ref": api_key_id}]}]}
    assert name_of in processor[definitions.ENV_API_KEY_SECRETS]["Fn::Join"][1]


def test_each_function_reads_only_its_own_secrets(one_source: Synthesized) -> None:
    stack = one_source.stack
    signing = {"Ref": one_source.logical_id(stack.signing_secrets.secrets["stripe-br"])}
    api_key = {"Ref": one_source.logical_id(stack.api_keys.secrets["stripe-br"])}

    def secret_resources(role: Any) -> list[Any]:
        return [
            resource
            for statement in one_source.role_statements(role)
            if "secretsmanager:GetSecretValue" in statement["Action"]
            for resource in statement["Resource"]
        ]

    # Then the ingest reads the signing secret (and the rejected log's fingerprint key) only, the processor the API
    # key only, the sweeper neither
    fingerprint_key = {"Ref": one_source.logical_id(stack.rejected.fingerprint_key)}
    assert sorted(map(str, secret_resources(stack.ingest.role))) == sorted(map(str, [signing, fingerprint_key]))
    assert secret_resources(stack.processor.role) == [api_key]
    assert secret_resources(stack.sweeper.role) == []


def test_only_the_declared_providers_get_an_ignored_ratio_alarm(one_source: Synthesized) -> None:
    # Then the alarms per provider are bounded by the declaration (one Stripe source: one), not the catalog
    ratio_alarms = [name for name in one_source.stack.monitoring.alarms if name.startswith("ignored-ratio-")]
    assert ratio_alarms == ["ignored-ratio-stripe"]


def test_the_one_source_stack_is_cdk_nag_clean(one_source: Synthesized) -> None:
    reports = {report["pluginName"]: report for report in one_source.validation_report["pluginReports"]}
    assert reports["AwsSolutions"]["violations"] == []
    assert reports["AwsSolutions"]["conclusion"] == "success"


def test_the_one_source_stack_passes_cfn_lint(one_source: Synthesized) -> None:
    findings = cfn_lint(one_source.template_path)
    assert findings == [], "\n".join(findings)


# ------------------------------------------------------------------------------------------ 4 KB environment
def test_a_declaration_too_large_for_lambdas_environment_stops_the_synth() -> None:
    # Given sources whose options make INBOX_SOURCES large (64 CIDRs each)
    ranges = tuple(f"10.{i}.0.0/16" for i in range(definitions.MAX_SOURCE_IP_RANGES))
    sources = tuple(SourceSpec(f"shop-{n}", "kiwify", allowed_ip_ranges=ranges) for n in range(3))
    # When the app is built, Then synth stops before any resource is described, naming the variable
    with pytest.raises(SecretMapTooLarge, match=definitions.ENV_SOURCES):
        build_app(sources=sources)


def test_the_sweeper_share_is_checked_too() -> None:
    # Given the declaration alone (the sweeper has no secret map), too large for the environment
    variables = {definitions.ENV_SOURCES: "x" * 3100}
    with pytest.raises(EnvironmentTooLarge, match="sweeper"):
        check_environment_share("sweeper", environment_share(variables))
    # And one that fits passes
    check_environment_share("sweeper", environment_share({definitions.ENV_SOURCES: "x" * 3000}))


# ------------------------------------------------------------------------------------------ bad declaration
def test_a_bad_sources_file_is_a_settings_error_naming_every_bad_entry(tmp_path: Path) -> None:
    # Given a sources.json with two bad entries among good ones
    path = tmp_path / "sources.json"
    path.write_text(
        json.dumps(
            [
                {"name": "stripe-br", "provider": "stripe"},
                {"name": "Stripe US", "provider": "stripe"},
                {"name": "shop", "provider": "woocommerce"},
            ]
        )
    )
    # When the stack's sources are read, Then one error names both entries
    with pytest.raises(SettingsError) as raised:
        declared_sources({definitions.ENV_SOURCES_FILE: str(path)})
    assert "entry 2 ('Stripe US')" in str(raised.value)
    assert "entry 3 ('shop')" in str(raised.value)


def test_the_stack_reads_the_file_not_a_stray_inbox_sources_variable(tmp_path: Path) -> None:
    # Given a sources file, and INBOX_SOURCES left in the shell by a local function run
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([{"name": "asaas", "provider": "asaas"}]))
    environ = {definitions.ENV_SOURCES_FILE: str(path), definitions.ENV_SOURCES: '[{"name":"x","provider":"stripe"}]'}
    # Then the stack deploys what the file declares
    assert declared_sources(environ) == (SourceSpec("asaas", "asaas"),)


def test_app_py_refuses_a_bad_sources_file_with_the_per_entry_message(tmp_path: Path) -> None:
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([{"name": "stripe_br", "provider": "stripe"}]))
    environment = {
        **os.environ,
        definitions.ENV_SOURCES_FILE: str(path),
        "CDK_OUTDIR": str(tmp_path / "out"),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    environment.pop(definitions.ENV_SOURCES, None)
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
    assert f"error: {path}: entry 1 ('stripe_br'): source name 'stripe_br' is invalid" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_deployed_stack_never_carries_the_woovi_development_key(synthesized: Synthesized) -> None:
    # Given the default declaration's template (a woovi source among the others)
    text = json.dumps(synthesized.template_json)
    from inbox_local.dev_secrets import DEV_SECRETS

    dev_key = DEV_SECRETS["woovi"]
    # Then the development key the local stack trusts is nowhere in it: not in a secret's value (the woovi source's
    # signing secret is generated, like every other one), not in a function's environment
    assert dev_key not in text and dev_key[:64] not in text
    assert "BEGIN PUBLIC KEY" not in text and "BEGIN PRIVATE KEY" not in text
    woovi = [
        secret
        for secret in _secret_resources(synthesized.template_json).values()
        if _tags(secret).get(definitions.SECRET_TAG_SOURCE) == "woovi"
        and _tags(secret)[definitions.SECRET_TAG_KIND] == definitions.SECRET_KIND_SIGNING
    ]
    assert len(woovi) == 1
    assert "GenerateSecretString" in woovi[0]["Properties"] and "SecretString" not in woovi[0]["Properties"]
