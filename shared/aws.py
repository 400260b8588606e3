"""boto3 clients, created on first use and reused across invocations.

Never at import time: a test or the local runtime sets up its endpoint (moto) before the first call.
Timeouts are short and retries bounded: the ingest answers a gateway that is waiting.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

# `max_attempts` in a Config's `retries` counts the retries, `total_max_attempts` every attempt (botocore's Config):
# 3 retries, 4 attempts in all.
_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})


# Best-effort writes (the rejected-delivery log): one attempt, short timeouts. The ingest answers a refused
# delivery 401 whether or not its record was written, and must answer well within its own timeout.
_BEST_EFFORT_CONFIG = Config(connect_timeout=1, read_timeout=1, retries={"mode": "standard", "total_max_attempts": 1})
# The SDK's own timeouts and retries: the publisher's bus client, whose batch the Pipe retries whole on a failure.
_SDK_DEFAULTS = Config()

_CONFIGS = {"standard": _CONFIG, "best_effort": _BEST_EFFORT_CONFIG, "sdk_defaults": _SDK_DEFAULTS}


_clients: dict[tuple[str, str], Any] = {}
# Made under a lock: threads that ask at once (the processor's FIFO groups of a batch, the local front door's
# concurrent deliveries) would each build a session and parse the service's model from JSON again (~0.1 CPU s a
# client; 1.4 CPU s at a local stack's first burst, measured with py-spy), where one client serves them all.
_clients_lock = threading.Lock()


def _client(service: str, config: str = "standard") -> Any:
    key = (service, config)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                session = boto3.session.Session()
                client = session.client(service, config=_CONFIGS[config])  # type: ignore[call-overload]
                _clients[key] = client
    return client


def dynamodb() -> DynamoDBClient:
    client: DynamoDBClient = _client("dynamodb")
    return client


def dynamodb_best_effort() -> DynamoDBClient:
    """A DynamoDB client that tries once, with short timeouts: for writes whose loss is only counted."""
    client: DynamoDBClient = _client("dynamodb", "best_effort")
    return client


def s3() -> S3Client:
    client: S3Client = _client("s3")
    return client


def sqs() -> SQSClient:
    client: SQSClient = _client("sqs")
    return client


def events() -> EventBridgeClient:
    """The publisher's EventBridge client, with the SDK's default timeouts and retries."""
    client: EventBridgeClient = _client("events", "sdk_defaults")
    return client


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints between cases)."""
    with _clients_lock:
        _clients.clear()
