"""Fixtures the unit tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters import base as parameters_base
from moto import mock_aws


@pytest.fixture
def secretsmanager() -> Iterator[Any]:
    """A moto Secrets Manager, with Powertools' secret cache and its providers' clients cleared around it."""
    parameters.clear_caches()
    vars(parameters_base)["DEFAULT_PROVIDERS"].clear()  # their boto3 clients must not outlive a moto mock
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="us-east-1")
    parameters.clear_caches()
    vars(parameters_base)["DEFAULT_PROVIDERS"].clear()
