"""The simulator's fault knobs: what a gateway's bad day looks like to a client (API routes only)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class Faults:
    """Drawn per API request from a seeded `random.Random`, so a run can be replayed.

    - `error_rate`: probability of a 500;
    - `throttle_rate`: probability of a 429 with `Retry-After: retry_after_seconds`;
    - `slow_rate` / `slow_seconds`: probability of answering only after a delay (the client's read timeout is 5 s);
    - `unknown_fetches`: a payment created while this is N answers 404 to its first N fetches (webhooks racing
      the API: the webhook arrives before the resource is readable).
    - `rate_limit_per_second`: not drawn: the gateway's API rate limit, requests answered per wall-clock second
      and provider (a fixed window, the strictest reading of "N per second"); above it, 429 with `Retry-After`
      (the seconds left in the window, rounded up). 0: no limit.
    """

    error_rate: float = 0.0
    throttle_rate: float = 0.0
    retry_after_seconds: float = 1.0
    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    unknown_fetches: int = 0
    rate_limit_per_second: float = 0.0

    def validate(self) -> None:
        for name in ("error_rate", "throttle_rate", "slow_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        if self.error_rate + self.throttle_rate > 1.0:
            raise ValueError("error_rate + throttle_rate cannot exceed 1")
        if self.retry_after_seconds < 0 or self.slow_seconds < 0 or self.unknown_fetches < 0:
            raise ValueError("retry_after_seconds, slow_seconds and unknown_fetches cannot be negative")
        if not 0 <= self.rate_limit_per_second <= 100_000:  # NaN fails the comparison too
            raise ValueError("rate_limit_per_second must be 0 (no limit) or a positive number of requests")

    def updated(self, changes: dict[str, Any]) -> Faults:
        known = {f.name: f.type for f in fields(self)}
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValueError(f"unknown fault knob(s): {', '.join(unknown)}")
        values = asdict(self)
        for name, value in changes.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number")
            values[name] = int(value) if name == "unknown_fetches" else float(value)
        faults = Faults(**values)
        faults.validate()
        return faults
