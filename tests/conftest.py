"""Fixtures shared by every tier: no test ever reaches a real AWS account."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Before any boto3 client exists: dummy credentials, a fixed region, and no account-id endpoints (moto).
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "webhook-inbox",
        "POWERTOOLS_METRICS_NAMESPACE": "WebhookInbox",
        "POWERTOOLS_DEV": "false",
    }
)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.pop("AWS_PROFILE", None)

from inbox_local import moto_speedups
from tests import aws_speedups  # once the environment above is set

aws_speedups.install()
moto_speedups.install()  # the embedded AWS's caches of moto's per-request work, in-process moto too


@pytest.fixture(autouse=True, scope="session")
def _aws_limits() -> None:
    """In-process moto refuses what AWS refuses, as the local stack's embedded AWS does (inbox_local/aws_limits.py).
    Imported here, once the environment above is set."""
    from inbox_local import aws_limits

    aws_limits.install()


@pytest.fixture(autouse=True)
def _fresh_clients() -> Iterator[None]:
    """Cached boto3 clients must not outlive the moto mock they were made under."""
    from shared import aws
    from shared.ingest import default_ingest_service

    aws.reset_clients()
    default_ingest_service.cache_clear()
    yield
    aws.reset_clients()
    default_ingest_service.cache_clear()
