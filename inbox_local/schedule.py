"""Emulation of an EventBridge schedule: calls a function with a "Scheduled Event" every interval."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from inbox_local.config import REGION
from inbox_local.invocation import invoke

Handler = Callable[[dict[str, Any], Any], Any]


def scheduled_event(rule: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:123456789012:rule/{rule}"],
        "detail": {},
    }


class Schedule:
    def __init__(self, name: str, handler: Handler, interval_seconds: float) -> None:
        if interval_seconds <= 0:
            raise ValueError(f"schedule {name}: the interval must be positive, got {interval_seconds}")
        self.name = name
        self.handler = handler
        self.interval_seconds = interval_seconds
        self.runs = 0
        self.last_result: Any = None

    def fire(self) -> Any:
        self.last_result = invoke(self.name, self.handler, scheduled_event(self.name))  # held to its timeout
        self.runs += 1
        return self.last_result

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval_seconds):
            try:
                self.fire()
            except Exception as error:  # the next tick tries again, as the schedule would
                print(f"{self.name}: {type(error).__name__}: {error}", flush=True)
