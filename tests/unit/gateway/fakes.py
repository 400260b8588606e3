"""Fakes for the gateway tests: a scripted urllib3 pool, a recorded sleep, a settable clock."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from shared.gateway.ratelimit import RateLimiter


class FakeResponse:
    def __init__(
        self, status: int, body: bytes | dict[str, Any] | list[Any] = b"", headers: dict[str, str] | None = None
    ):
        self.status = status
        self._body = json.dumps(body).encode() if isinstance(body, dict | list) else body
        self.headers = headers or {}
        self.released = False
        self.closed = False

    def read(self, amt: int | None = None) -> bytes:
        data, self._body = (self._body, b"") if amt is None else (self._body[:amt], self._body[amt:])
        return data

    def release_conn(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


@dataclass
class FakePool:
    """Answers requests from a script: each item is a FakeResponse, an exception to raise, or a callable(url)."""

    script: list[Any] = field(default_factory=list)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        self.calls.append((method, url, kwargs))
        if not self.script:
            raise AssertionError(f"unexpected request {method} {url}")
        outcome = self.script.pop(0)
        if callable(outcome) and not isinstance(outcome, FakeResponse):
            outcome = outcome(url)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    @property
    def urls(self) -> list[str]:
        return [url for _, url, _ in self.calls]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Spy:
    """A DynamoDB client that counts the calls it forwards."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return call


CONTROL_TABLE = "test-control"


def limiter(dynamodb: Any, clock: Any, sleeps: Any, rate: float = 10.0, **kwargs: Any) -> RateLimiter:
    """A Stripe source's rate limiter on the test control table."""
    return RateLimiter(CONTROL_TABLE, "stripe", rate, clock=clock, sleep=sleeps, dynamodb=dynamodb, **kwargs)


def stored_limiter_state(dynamodb: Any, source: str = "stripe") -> dict[str, Any]:
    return dynamodb.get_item(TableName=CONTROL_TABLE, Key={"pk": {"S": f"ratelimit#{source}"}}).get("Item") or {}
