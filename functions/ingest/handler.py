"""Ingest Lambda: POST /webhooks/{provider} and GET /health on the HTTP API."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.ingest import default_ingest_service, handle_api_event
from shared.observability import instrumented


@instrumented
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_api_event(event, default_ingest_service)
