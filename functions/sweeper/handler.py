"""Sweeper Lambda, run by an EventBridge schedule: re-dispatch stale pending events, measure, reconcile."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger
from shared.sweeper import sweep


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return sweep(context)
