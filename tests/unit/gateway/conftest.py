"""Gateway test fixtures."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters import base as parameters_base
from moto import mock_aws

from inbox_local.api_keys import store_api_keys
from inbox_local.resources import simple_table_spec
from shared.definitions import ENV_API_KEY_SECRET_PREFIX
from shared.gateway import registry
from tests.unit.gateway.fakes import CONTROL_TABLE, Clock, Sleeps


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(autouse=True)
def _fresh_gateway_clients() -> Iterator[None]:
    registry.reset_gateway_clients()
    yield
    registry.reset_gateway_clients()


@pytest.fixture
def dynamodb() -> Iterator[Any]:
    """The control table (the breaker's and the rate limiter's items) in moto."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**simple_table_spec(CONTROL_TABLE, "pk"))
        yield client


API_KEY_SECRET_PREFIX = "stack/gateway-api-key/"


def _forget_cached_secrets() -> None:
    parameters.clear_caches()
    vars(parameters_base)["DEFAULT_PROVIDERS"].clear()  # their boto3 clients must not outlive a moto mock


@pytest.fixture
def api_key_secrets() -> Iterator[Callable[[Mapping[str, str]], dict[str, str]]]:
    """Secrets Manager (moto) holding API keys where the clients read them: `store({source: key})` writes them as
    the local stack does (inbox_local/api_keys.py) and returns the variable that points the clients there."""
    _forget_cached_secrets()
    with mock_aws():
        client = boto3.client("secretsmanager", region_name="us-east-1")

        def store(keys: Mapping[str, str]) -> dict[str, str]:
            store_api_keys(client, API_KEY_SECRET_PREFIX, keys)
            return {ENV_API_KEY_SECRET_PREFIX: API_KEY_SECRET_PREFIX}

        yield store
    _forget_cached_secrets()
