"""Gateway test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from inbox_local.resources import simple_table_spec
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
