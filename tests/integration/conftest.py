"""Integration tier: the real handlers against moto (in-process), resources provisioned exactly as locally."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.responses import DynamoHandler

from inbox_local.api_keys import store_api_keys
from inbox_local.config import LocalNames, function_environment
from inbox_local.dev_secrets import put_signing_secrets, store_signing_secrets
from inbox_local.resources import provision
from shared.definitions import default_sources


@dataclass
class AwsWorld:
    names: LocalNames
    resources: dict[str, str]
    session: boto3.session.Session

    def set_signing_secrets(self, source: str, current: str, previous: str | None = None) -> None:
        """`source`'s signing secrets in Secrets Manager, where the ingest reads them (as the local stack stores
        them at start, and as an operator's rotation does in AWS), read afresh on the next delivery."""
        put_signing_secrets(self._secretsmanager(), f"{self.names.secret_prefix}{source}", current, previous)
        _forget_cached_secrets()

    def set_forwarding_secrets(self, current: str, previous: str | None = None) -> None:
        """The forwarding pair in Secrets Manager under the local stack's name, as the local stack stores
        INBOX_FORWARD_SECRET at start (inbox_local/forward_secret.py) and as an operator's rotation does; read
        afresh by the next forwarder the root hands out (the cache forgotten, as after its five minutes)."""
        put_signing_secrets(self._secretsmanager(), self.names.forward_secret_name, current, previous)
        _forget_cached_secrets()

    def delete_signing_secrets(self, source: str) -> None:
        """`source` has no signing secret at all."""
        self._secretsmanager().delete_secret(
            SecretId=f"{self.names.secret_prefix}{source}", ForceDeleteWithoutRecovery=True
        )
        _forget_cached_secrets()

    def store_api_keys(self, keys: dict[str, str | None]) -> None:
        """The gateways' API keys ({source: key}) in Secrets Manager, where the processor's clients read them (as the
        local stack stores them at start)."""
        present = {source: key for source, key in keys.items() if key}
        store_api_keys(self._secretsmanager(), self.names.api_key_secret_prefix, present)
        _forget_cached_secrets()

    def _secretsmanager(self) -> Any:
        return self.session.client("secretsmanager")


def _forget_cached_secrets() -> None:
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()


_TRANSACTIONS = threading.Lock()
_moto_transact_write_items = DynamoDBBackend.transact_write_items
_REQUESTS = threading.RLock()
_moto_call_action = DynamoHandler.call_action


def _atomic_call_action(self: DynamoHandler) -> Any:
    """One DynamoDB request at a time, as the local stack's embedded AWS does (inbox_local/embedded_aws.py): moto's
    backend is not thread-safe (a transaction deep-copies the tables it touches while another thread's put changes
    them: `dictionary changed size during iteration`), and the processor runs a batch's FIFO groups in threads."""
    with _REQUESTS:
        return _moto_call_action(self)


def _atomic_transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
    """moto's TransactWriteItems snapshots the tables it touches and restores them on a cancellation, without a
    lock: two concurrent transactions (tests racing two processors) can both pass their conditions, or one's
    rollback can erase the other's commit. DynamoDB runs a transaction atomically; so does this (the local stack's
    embedded AWS serializes DynamoDB requests the same way, inbox_local/embedded_aws.py)."""
    with _TRANSACTIONS:
        _moto_transact_write_items(self, transact_items)


@pytest.fixture
def aws_world(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsWorld]:
    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", _atomic_transact_write_items)
    monkeypatch.setattr(DynamoHandler, "call_action", _atomic_call_action)
    names = LocalNames()
    for name, value in function_environment(names).items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        session = boto3.session.Session()
        resources = provision(session, names)
        # Every provider's default source verifies with its development secret, as on `make run`.
        store_signing_secrets(session.client("secretsmanager"), names.secret_prefix, default_sources(), environ={})
        yield AwsWorld(names, resources, session)
