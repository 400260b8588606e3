"""A stand-in for the Lambda context object, as the local runtime and the tests pass it to handlers."""

from __future__ import annotations

import time
import uuid

from aws_lambda_powertools.utilities.typing import LambdaContext


class LocalLambdaContext(LambdaContext):
    """Powertools' own `LambdaContext` type, filled in the way the Lambda runtime fills it."""

    def __init__(self, function_name: str, memory_limit_in_mb: int = 512, timeout_seconds: float = 30.0) -> None:
        self._function_name = function_name
        self._function_version = "$LATEST"
        self._invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self._memory_limit_in_mb = memory_limit_in_mb
        self._aws_request_id = str(uuid.uuid4())
        self._log_group_name = f"/aws/lambda/{function_name}"
        self._log_stream_name = "local"
        self._tenant_id = None
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:  # type: ignore[override]  # an instance's own deadline
        return max(0, int((self._deadline - time.monotonic()) * 1000))
