"""Which client refetches which provider, and where its base URL, key and breaker come from."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters import base as parameters_base
from moto import mock_aws

from shared.gateway import registry
from shared.gateway.base import GatewayRejected, GatewayUnavailable
from shared.gateway.breaker import DEFAULT_COOLDOWN_SECONDS, CircuitBreaker, GuardedClient
from shared.gateway.registry import ApiKeySource, build_gateway_client, gateway_client
from shared.providers.asaas.client import AsaasClient
from shared.providers.stripe.client import StripeClient
from shared.settings import ConfigurationError


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "INBOX_API_BASE_STRIPE",
        "INBOX_API_BASE_ASAAS",
        "INBOX_API_KEY_STRIPE",
        "INBOX_API_KEY_ASAAS",
        "INBOX_API_KEY_SECRET_PREFIX",
        "CONTROL_TABLE",
    ):
        monkeypatch.delenv(name, raising=False)
    parameters.clear_caches()
    vars(parameters_base)["DEFAULT_PROVIDERS"].clear()  # their boto3 clients must not outlive a moto mock
    yield
    parameters.clear_caches()
    vars(parameters_base)["DEFAULT_PROVIDERS"].clear()


def base_url(client: Any) -> str:
    url: str = client.client._http.base_url
    return url


@pytest.mark.parametrize("provider", ["standard", "github", "STRIPE", ""])
def test_providers_without_an_api_have_no_client(provider):
    assert gateway_client(provider) is None
    assert build_gateway_client(provider, {}) is None


def test_stripe_and_asaas_have_clients_with_the_real_apis_by_default():
    stripe = build_gateway_client("stripe", {})
    asaas = build_gateway_client("asaas", {})

    assert isinstance(stripe, GuardedClient) and isinstance(stripe.client, StripeClient)
    assert isinstance(asaas, GuardedClient) and isinstance(asaas.client, AsaasClient)
    assert base_url(stripe) == "https://api.stripe.com"
    assert base_url(asaas) == "https://api.asaas.com"
    assert stripe.breaker is None  # no CONTROL_TABLE, no breaker
    assert {"stripe", "asaas"} <= set(registry.supported_providers())  # other gateways register beside them


def test_the_base_url_comes_from_the_environment():
    client = build_gateway_client("asaas", {"INBOX_API_BASE_ASAAS": "http://127.0.0.1:8790/"})
    assert base_url(client) == "http://127.0.0.1:8790"


def test_the_control_table_wires_a_breaker():
    client = build_gateway_client("stripe", {"CONTROL_TABLE": "stack-control"})
    assert isinstance(client, GuardedClient)
    assert isinstance(client.breaker, CircuitBreaker)
    assert (client.breaker.table_name, client.breaker.source) == ("stack-control", "stripe")


def test_the_breaker_cooldown_is_a_setting():
    # Given an operator's cooldown for the circuit breakers
    client = build_gateway_client("stripe", {"CONTROL_TABLE": "stack-control", "INBOX_BREAKER_COOLDOWN_SECONDS": "2.5"})
    # Then the breaker waits that long, and without the setting its default
    assert isinstance(client, GuardedClient) and client.breaker is not None
    assert client.breaker.cooldown_seconds == 2.5
    default = build_gateway_client("stripe", {"CONTROL_TABLE": "stack-control"})
    assert isinstance(default, GuardedClient) and default.breaker is not None
    assert default.breaker.cooldown_seconds == DEFAULT_COOLDOWN_SECONDS


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "3601"])
def test_a_bad_breaker_cooldown_names_the_variable(value):
    with pytest.raises(ConfigurationError, match="INBOX_BREAKER_COOLDOWN_SECONDS"):
        build_gateway_client("stripe", {"CONTROL_TABLE": "t", "INBOX_BREAKER_COOLDOWN_SECONDS": value})


def test_clients_are_built_once_per_process(monkeypatch):
    monkeypatch.setenv("INBOX_API_BASE_STRIPE", "http://first.test")
    first = gateway_client("stripe")
    monkeypatch.setenv("INBOX_API_BASE_STRIPE", "http://second.test")

    assert gateway_client("stripe") is first
    registry.reset_gateway_clients()
    rebuilt = gateway_client("stripe")
    assert rebuilt is not first
    assert base_url(rebuilt) == "http://second.test"


def test_a_key_in_the_environment_is_never_read():
    # Given a plaintext key in INBOX_API_KEY_STRIPE (the local stack stores such a key in its Secrets Manager)
    environ = {"INBOX_API_KEY_STRIPE": "sk_test_plaintext", "INBOX_API_KEY_SECRET_PREFIX": "stack/gateway-api/"}
    with mock_aws():
        boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="stack/gateway-api/stripe", SecretString="sk_test_from_secrets_manager"
        )
        # Then the key is the secret's, as in AWS
        assert ApiKeySource("stripe", environ)() == "sk_test_from_secrets_manager"
    # And with the variable alone, there is no key: the function never takes one from its environment
    with pytest.raises(GatewayRejected, match="no API key for stripe"):
        ApiKeySource("stripe", {"INBOX_API_KEY_STRIPE": "sk_test_plaintext"})()


def test_with_no_secret_map_and_no_secret_prefix_an_operator_must_act():
    with pytest.raises(GatewayRejected, match="INBOX_API_KEY_SECRETS or INBOX_API_KEY_SECRET_PREFIX"):
        ApiKeySource("stripe", {})()


def test_the_key_comes_from_secrets_manager():
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        secrets.create_secret(Name="stack/gateway-api/asaas", SecretString="$aact_from_secrets_manager\n")

        source = ApiKeySource("asaas", {"INBOX_API_KEY_SECRET_PREFIX": "stack/gateway-api/"})
        assert source() == "$aact_from_secrets_manager"

        secrets.put_secret_value(SecretId="stack/gateway-api/asaas", SecretString="$aact_rotated")
        assert source() == "$aact_from_secrets_manager"  # cached for five minutes, not read per call


def test_a_missing_secret_is_a_configuration_error():
    with mock_aws(), pytest.raises(GatewayRejected, match="not readable"):
        ApiKeySource("stripe", {"INBOX_API_KEY_SECRET_PREFIX": "stack/gateway-api/"})()


def test_an_empty_secret_is_a_configuration_error():
    with mock_aws():
        boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="stack/gateway-api/stripe", SecretString="   "
        )
        with pytest.raises(GatewayRejected, match="empty"):
            ApiKeySource("stripe", {"INBOX_API_KEY_SECRET_PREFIX": "stack/gateway-api/"})()


def test_an_unreachable_secrets_manager_is_transient(monkeypatch):
    def broken(*_args, **_kwargs):
        raise ConnectionError("no route")

    monkeypatch.setattr(parameters, "get_secret", broken)
    with pytest.raises(GatewayUnavailable):
        ApiKeySource("stripe", {"INBOX_API_KEY_SECRET_PREFIX": "p/"})()


def test_the_key_is_not_read_when_the_client_is_built():
    # building must not touch Secrets Manager (no AWS mock here: a read would fail loudly)
    assert build_gateway_client("stripe", {"INBOX_API_KEY_SECRET_PREFIX": "p/"}) is not None


@pytest.mark.parametrize("provider", registry.supported_providers())
def test_each_provider_names_its_own_module_and_client(provider):
    # Given a provider the registry supports, When its client class is looked up
    factory, default_base = registry.client_class(provider)
    module = importlib.import_module(f"shared.providers.{provider}.client")
    # Then it is that module's client, for that provider, with that module's API
    assert provider == module.PROVIDER
    assert factory.__module__ == module.__name__
    assert default_base == module.DEFAULT_BASE_URL
    assert isinstance(build_gateway_client(provider, {}), GuardedClient)


def test_a_gateway_module_is_loaded_only_with_the_first_client_of_its_provider():
    # Given a fresh interpreter with the registry imported
    code = (
        "import sys; from shared.gateway import registry; "
        "loaded = lambda: sorted(p for p in registry.supported_providers() "
        "if f'shared.providers.{p}.client' in sys.modules); "
        "before = loaded(); registry.build_gateway_client('stripe', {}); print(before, loaded())"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # When a Stripe client is built, Then only Stripe's module was loaded, and only then
    assert result.stdout.strip() == "[] ['stripe']"
