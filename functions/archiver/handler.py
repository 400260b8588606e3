"""Archiver Lambda: inbox stream REMOVE records of TTL deletions -> gzip JSON lines in the archive bucket."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import instrumented
from shared.retention import archive_stream_batch


@instrumented
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return archive_stream_batch(event)
