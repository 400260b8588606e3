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
from shared.definitions import ENV_API_KEY_SECRETS, ENV_SIGNING_SECRETS
from shared.gateway.base import GatewayRejected
from shared.gateway.registry import ApiKeySource
from shared.secrets import SecretUnavailable, SigningSecretSource, secret_id
from shared.settings import ConfigurationError, IngestSettings, text_map

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
    source = SigningSecretSource(settings.secret_prefix, {}, ids=settings.signing_secret_ids)
    # When the ingest asks for Stripe's secrets, then it gets that secret's pair
    pair = source.signing_secrets("stripe")
    assert (pair.current, pair.previous) == ("whsec_a", "whsec_b")


def test_a_provider_neither_mapped_nor_prefixed_is_unavailable_not_rejected(secretsmanager: object) -> None:
    source = SigningSecretSource("", {}, ids={})
    with pytest.raises(SecretUnavailable, match="not configured"):
        source.signing_secrets("asaas")


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
