"""Processor Lambda: SQS FIFO batches of dispatched events, with partial batch responses."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import instrumented
from shared.process.app import process_batch


@instrumented(adopts_threads=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> Any:
    return process_batch(event, context)
