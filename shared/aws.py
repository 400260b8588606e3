"""boto3 clients, created on first use and reused across invocations.

Never at import time: a test or the local runtime sets up its endpoint (moto) before the first call.
Timeouts are short and retries bounded: the ingest answers a gateway that is waiting.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})


@cache
def _client(service: str) -> Any:
    return boto3.session.Session().client(service, config=_CONFIG)  # type: ignore[call-overload]


def dynamodb() -> DynamoDBClient:
    client: DynamoDBClient = _client("dynamodb")
    return client


def s3() -> S3Client:
    client: S3Client = _client("s3")
    return client


def sqs() -> SQSClient:
    client: SQSClient = _client("sqs")
    return client


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints between cases)."""
    _client.cache_clear()
