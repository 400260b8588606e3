"""The deployed stack's secrets are found by ARN (CloudFormation names them), the local ones by name prefix.

moto stands in for Secrets Manager: a secret created without our naming scheme (as CloudFormation names it) is
read through the {provider: ARN} map the stack hands the functions, and through the stack's output by the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from inbox_cli.target import Target
from inbox_local.dev_secrets import DEV_SECRETS, dev_signing_secret, store_signing_secrets
from shared.definitions import ENV_API_KEY_SECRETS, ENV_SIGNING_SECRETS, SourceSpec
from shared.gateway.base import GatewayRejected
from shared.gateway.registry import ApiKeySource
from shared.ingest import IngestSettings
from shared.secrets import SecretUnavailable, SigningSecretSource, secret_id
from shared.settings import ConfigurationError, text_map

GENERATED_NAME = "SigningSecretsStripeSigningSecret94F75F72-AbCdEfGhIjKl"  # the shape CloudFormation gives


@pytest.fixture
def secretsmanager(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for variable in ("AWS_ENDPOINT_URL", "INBOX_SECRET_STRIPE", "INBOX_API_KEY_STRIPE"):
        monkeypatch.delenv(variable, raising=False)
    with mock_aws():
        yield boto3.client("secretsmanager")


def _create(client: object, name: str, value: str) -> str:
    arn: str = client.create_secret(Name=name, SecretString=value)["ARN"]  # type: ignore[attr-defined]
    return arn


# ------------------------------------------------------------------------------------------- the map itself
def test_an_unset_map_is_empty_and_a_set_one_is_read() -> None:
    assert text_map({}, ENV_SIGNING_SECRETS) == {}
    assert text_map({ENV_SIGNING_SECRETS: "  "}, ENV_SIGNING_SECRETS) == {}
    assert text_map({ENV_SIGNING_SECRETS: '{"stripe": " arn:1 "}'}, ENV_SIGNING_SECRETS) == {"stripe": "arn:1"}


@pytest.mark.parametrize("raw", ["not json", '["arn:1"]', '{"stripe": 1}', '{"stripe": ""}'])
def test_a_malformed_map_is_refused_at_cold_start(raw: str) -> None:
    with pytest.raises(ConfigurationError, match=ENV_SIGNING_SECRETS):
        IngestSettings.from_environ({"INBOX_TABLE": "t", "INBOX_BODY_BUCKET": "b", ENV_SIGNING_SECRETS: raw})


def test_the_map_wins_over_the_prefix_and_the_prefix_serves_the_rest() -> None:
    ids = {"stripe": "arn:aws:secretsmanager:us-east-1:1:secret:x-AbCdEf"}
    assert secret_id(ids, "local/webhook-signing/", "stripe") == ids["stripe"]
    assert secret_id(ids, "local/webhook-signing/", "asaas") == "local/webhook-signing/asaas"
    assert secret_id(ids, "", "asaas") is None


# --------------------------------------------------------------------------------------------- the functions
def test_the_ingest_verifies_with_the_secret_its_map_names(secretsmanager: object) -> None:
    # Given a signing secret with a CloudFormation-style name, listed in the ingest's map
    arn = _create(secretsmanager, GENERATED_NAME, json.dumps({"current": "whsec_a", "previous": "whsec_b"}))
    settings = IngestSettings.from_environ(
        {"INBOX_TABLE": "t", "INBOX_BODY_BUCKET": "b", ENV_SIGNING_SECRETS: json.dumps({"stripe": arn})}
    )
    source = SigningSecretSource(settings.secret_prefix, ids=settings.signing_secret_ids)
    # When the ingest asks for Stripe's secrets, then it gets that secret's pair
    pair = source.signing_secrets("stripe")
    assert (pair.current, pair.previous) == ("whsec_a", "whsec_b")


def test_a_provider_neither_mapped_nor_prefixed_is_unavailable_not_rejected(secretsmanager: object) -> None:
    source = SigningSecretSource("", ids={})
    with pytest.raises(SecretUnavailable, match="not configured"):
        source.signing_secrets("asaas")


def test_the_functions_read_only_secrets_manager_never_a_variable(
    secretsmanager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given INBOX_SECRET_STRIPE set in the function's environment, but no secret in Secrets Manager
    monkeypatch.setenv("INBOX_SECRET_STRIPE", "whsec_plaintext")
    # When the ingest asks for Stripe's secrets, then the variable is not a way around Secrets Manager
    with pytest.raises(SecretUnavailable, match="unavailable"):
        SigningSecretSource("local/webhook-signing/").signing_secrets("stripe")


def test_the_local_stack_stores_each_sources_secrets_where_the_functions_read_them(secretsmanager: object) -> None:
    # Given three local sources: one with INBOX_SECRET_<SOURCE> and _PREVIOUS set, two with nothing set
    prefix = "webhook-inbox-local/webhook-signing/"
    sources = [SourceSpec("stripe", "stripe"), SourceSpec("stripe-br", "stripe"), SourceSpec("asaas", "asaas")]
    environ = {"INBOX_SECRET_STRIPE_BR": "whsec_br", "INBOX_SECRET_STRIPE_BR_PREVIOUS": "whsec_br_old"}
    # When the local stack stores them at start
    store_signing_secrets(secretsmanager, prefix, sources, environ)
    # Then the ingest reads each by the deployed path: the variables where set, else the development secret
    read = SigningSecretSource(prefix).signing_secrets
    assert (read("stripe-br").current, read("stripe-br").previous) == ("whsec_br", "whsec_br_old")
    assert (read("stripe").current, read("stripe").previous) == (DEV_SECRETS["stripe"], None)
    assert read("asaas").current == dev_signing_secret(sources[2])


def test_storing_again_replaces_a_sources_secrets(secretsmanager: object) -> None:
    # Given a source's secrets already stored (a stack restarted against the same embedded AWS)
    prefix = "p/"
    store_signing_secrets(secretsmanager, prefix, [SourceSpec("stripe", "stripe")], {})
    # When they are stored again with a variable now set
    store_signing_secrets(secretsmanager, prefix, [SourceSpec("stripe", "stripe")], {"INBOX_SECRET_STRIPE": "whsec_n"})
    # Then the secret holds the new value
    value = secretsmanager.get_secret_value(SecretId="p/stripe")["SecretString"]  # type: ignore[attr-defined]
    assert json.loads(value) == {"current": "whsec_n", "previous": ""}


def test_the_processor_reads_the_api_key_its_map_names(secretsmanager: object) -> None:
    arn = _create(secretsmanager, "GatewayApiKeysStripeApiKeyC0FFEE12-MnOpQrStUvWx", "sk_test_from_map")
    source = ApiKeySource("stripe", {ENV_API_KEY_SECRETS: json.dumps({"stripe": arn})})
    assert source() == "sk_test_from_map"


def test_a_malformed_api_key_map_asks_an_operator_to_act(secretsmanager: object) -> None:
    with pytest.raises(GatewayRejected, match="not configured"):
        ApiKeySource("stripe", {ENV_API_KEY_SECRETS: "{"})()


# ------------------------------------------------------------------------------------------------- the CLI
def _deployed(arns: dict[str, str]) -> Target:
    return Target("https://api.example.com", "inbox", "payments", "bodies", local=False, signing_secret_arns=arns)


def test_the_cli_signs_with_the_deployed_secret_the_stack_output_names(secretsmanager: object) -> None:
    arn = _create(secretsmanager, GENERATED_NAME, json.dumps({"current": "whsec_deployed", "previous": ""}))
    assert _deployed({"stripe": arn}).signing_secret("stripe") == "whsec_deployed"


def test_the_cli_prefers_the_environment_and_says_what_to_set_otherwise(
    secretsmanager: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit, match="INBOX_SECRET_STRIPE"):
        _deployed({}).signing_secret("stripe")
    monkeypatch.setenv("INBOX_SECRET_STRIPE", "whsec_env")
    assert _deployed({}).signing_secret("stripe") == "whsec_env"
