"""Integration tier: the real handlers against moto (in-process), resources provisioned exactly as locally."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from inbox_local.config import DEV_SECRETS, LocalNames, function_environment
from inbox_local.resources import provision


@dataclass
class AwsWorld:
    names: LocalNames
    resources: dict[str, str]
    session: boto3.session.Session


@pytest.fixture
def aws_world(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsWorld]:
    names = LocalNames()
    for name, value in function_environment(names).items():
        monkeypatch.setenv(name, value)
    for provider, secret in DEV_SECRETS.items():
        monkeypatch.setenv(f"INBOX_SECRET_{provider.upper()}", secret)
    with mock_aws():
        session = boto3.session.Session()
        yield AwsWorld(names, provision(session, names), session)
