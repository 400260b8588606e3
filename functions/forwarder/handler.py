"""Forwarder Lambda, the forwarding Pipe's target: outbox stream records -> the customer's HTTPS endpoint, each
event signed with Standard Webhooks, in order, checkpointed (shared/forwarding.py)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.forwarding import forward_stream_batch
from shared.observability import instrumented


@instrumented
def lambda_handler(event: list[dict[str, Any]], context: LambdaContext) -> dict[str, int]:
    return forward_stream_batch(event, remaining_seconds=lambda: context.get_remaining_time_in_millis() / 1000)
