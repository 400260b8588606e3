"""How long to wait before retry N: one policy type for every retry loop in the service.

A `Backoff` doubles from `base` on each attempt (`base * 2**(attempt - 1)`, `attempt` counting from 1) and is
bounded by `cap`; its `jitter` says how the wait is spread, so that callers failing together do not come back
together:

- `Jitter.NONE`: the wait exactly (a single caller retrying its own call: the forwarder, the bus publisher).
- `Jitter.FULL`: AWS's "full jitter", uniform in [0, min(cap, base * 2**(attempt - 1))] (the gateway client: many
  Lambda instances calling one API).
- `Jitter.PROPORTIONAL`: the doubled wait times a factor uniform in [1 - spread, 1 + spread], then capped (the
  processor's visibility delays: each retry keeps its order of magnitude, the queue spreads them).

The random source is a parameter (`rand`, returning a float in [0, 1) like `random.random`), so a test gives it a
fixed value or a seeded generator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

# The longest a retried event waits before its next attempt (the processor's visibility delay, and the longest a
# gateway's Retry-After blocks a source). The sweeper treats a pending event as stale (its dispatch lost) only after
# INBOX_STALE_AFTER_SECONDS (default 900) without a dispatch or an attempt, which must stay above this cap:
# otherwise it would re-dispatch events that are only backing off.
MAX_BACKOFF_SECONDS: Final = 600


class Jitter(StrEnum):
    NONE = "none"
    FULL = "full"
    PROPORTIONAL = "proportional"


@dataclass(frozen=True, slots=True)
class Backoff:
    """An exponential backoff: `base` seconds after the first failure, doubling, at most `cap` seconds."""

    base: float
    cap: float = math.inf
    jitter: Jitter = Jitter.NONE
    spread: float = 0.0  # PROPORTIONAL only: the factor's distance from 1 (0.2 = +-20 %)

    def __post_init__(self) -> None:
        if not (self.base >= 0 and self.cap >= 0):
            raise ValueError("a backoff's base and cap cannot be negative")
        if not 0 <= self.spread < 1:
            raise ValueError("a backoff's spread must be in [0, 1)")
        if self.spread and self.jitter is not Jitter.PROPORTIONAL:
            raise ValueError("only a proportional jitter has a spread")

    def ceiling(self, attempt: int) -> float:
        """The wait after failed attempt `attempt` (1-based) before any jitter: base * 2^(attempt-1), capped."""
        if attempt < 1:
            raise ValueError("attempts count from 1")
        return float(min(self.cap, self.base * (2 ** (attempt - 1))))

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based), spread by `rand` as the jitter says."""
        if self.jitter is Jitter.FULL:
            return float(rand() * self.ceiling(attempt))
        if self.jitter is Jitter.PROPORTIONAL:
            if attempt < 1:
                raise ValueError("attempts count from 1")
            low, high = 1.0 - self.spread, 1.0 + self.spread
            factor = low + (high - low) * rand()  # random.uniform(low, high), from the injected source
            return float(min(self.cap, self.base * (2 ** (attempt - 1)) * factor))
        return self.ceiling(attempt)

    def total(self, attempts: int) -> float:
        """The most the waits between `attempts` attempts can add up to (every jitter at its largest)."""
        most = 1.0 + self.spread if self.jitter is Jitter.PROPORTIONAL else 1.0
        return float(sum(min(self.cap, self.base * (2 ** (n - 1)) * most) for n in range(1, attempts)))
