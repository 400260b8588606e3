"""The local stack's API keys (inbox_local/api_keys.py): loaded into its Secrets Manager, where the functions read
them as in AWS; `INBOX_API_KEY_<SOURCE>` in the local stack's environment still gives a source its key."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools.utilities import parameters

from inbox_local.api_keys import api_key_variable, local_api_keys, store_api_keys
from inbox_local.config import LocalNames, function_environment
from shared.definitions import ENV_API_KEY_SECRET_PREFIX, SourceSpec
from shared.gateway.base import GatewayRejected
from shared.gateway.registry import ApiKeySource

BRAZIL = SourceSpec("stripe-br", "stripe")
USA = SourceSpec("stripe-us", "stripe")
NO_API = SourceSpec("standard", "standard")  # Standard Webhooks: a signing scheme, no API to refetch from
SIMULATED = {"stripe-br": "sk_sim_br", "stripe-us": "sk_sim_us", "standard": None}


def test_the_variable_is_named_after_the_source() -> None:
    assert api_key_variable("stripe-br") == "INBOX_API_KEY_STRIPE_BR"
    assert api_key_variable("stripe") == "INBOX_API_KEY_STRIPE"  # a provider's default source


def test_a_variable_set_in_the_local_stacks_environment_wins_over_the_simulators_key() -> None:
    # Given INBOX_API_KEY_STRIPE_BR set (a gateway sandbox's key), none for the US account
    environ = {"INBOX_API_KEY_STRIPE_BR": " sk_test_sandbox "}
    # When the local stack picks each source's key
    keys = local_api_keys([BRAZIL, USA, NO_API], SIMULATED, environ)
    # Then the Brazilian source takes the variable's, the US one the simulator's, and a source with no API none
    assert keys == {"stripe-br": "sk_test_sandbox", "stripe-us": "sk_sim_us"}


def test_a_source_with_neither_a_variable_nor_a_simulated_account_has_no_key() -> None:
    # Given a source of a provider with an API that the simulator does not hold an account for
    assert local_api_keys([SourceSpec("stripe-eu", "stripe")], SIMULATED, {}) == {}


def test_the_keys_are_stored_where_the_functions_read_them_and_a_restart_replaces_them(secretsmanager: Any) -> None:
    # Given the local stack's names and the functions' environment it sets
    names = LocalNames()
    environ = function_environment(names)
    assert environ[ENV_API_KEY_SECRET_PREFIX] == names.api_key_secret_prefix
    # When the local stack stores the keys, Then a function's key source reads each from Secrets Manager
    store_api_keys(secretsmanager, names.api_key_secret_prefix, local_api_keys([BRAZIL, USA], SIMULATED, {}))
    assert ApiKeySource("stripe-br", environ)() == "sk_sim_br"
    assert ApiKeySource("stripe-us", environ)() == "sk_sim_us"
    # And a restart with INBOX_API_KEY_STRIPE_BR set replaces the stored key (the secret exists already)
    store_api_keys(secretsmanager, names.api_key_secret_prefix, {"stripe-br": "sk_test_sandbox"})
    parameters.clear_caches()
    assert ApiKeySource("stripe-br", environ)() == "sk_test_sandbox"
    # And the variable itself is not what the function read: without the secret there is no key
    with pytest.raises(GatewayRejected, match="not readable"):
        ApiKeySource("stripe-eu", {**environ, "INBOX_API_KEY_STRIPE_EU": "sk_plain"})()
