"""Sweeper Lambda, run by an EventBridge schedule: re-dispatch stale pending events, measure, reconcile."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import instrumented
from shared.sweeper import sweep


@instrumented
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return sweep(context)
