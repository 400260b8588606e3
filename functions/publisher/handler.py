"""Publisher Lambda, the outbox Pipe's target: a batch of outbox stream records -> events on the stack's bus."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import instrumented
from shared.payments.publishing import publish_outbox_batch


@instrumented
def lambda_handler(event: list[dict[str, Any]], context: LambdaContext) -> dict[str, int]:
    return publish_outbox_batch(event)
