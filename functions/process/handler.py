"""Processor Lambda: SQS FIFO batches of dispatched events, with partial batch responses."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger, metrics
from shared.process.app import handle_record

# skip_group_on_error: when one message of a payment fails, the later messages of the same payment in this
# batch are returned too (order holds), while other payments' messages in the batch still complete.
batch = SqsFifoPartialProcessor(skip_group_on_error=True)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return process_partial_response(event=event, record_handler=handle_record, processor=batch, context=context)
