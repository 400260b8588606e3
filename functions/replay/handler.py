"""Replay page Lambda: invoked by the replay workflow (Step Functions) with one page of selected events."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import instrumented
from shared.replay import handle


@instrumented
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> list[dict[str, Any]]:
    return handle(event)
