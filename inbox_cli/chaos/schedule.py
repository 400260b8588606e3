"""The seeded schedule of a chaos run: the faults of each round, and which payments the gateway's API does not
know yet. A function of the seed (and the run's shape) alone."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from inbox_cli.simulate import lifecycles_for
from shared.gateway.http import READ_TIMEOUT_SECONDS

# Payments whose API stays unaware of them for all of an event's attempts are only scheduled when that is quick:
# with 8 attempts, the backoff alone is about two minutes. `make chaos` and the tests run the stack with 3.
MAX_ATTEMPTS_TO_EXHAUST = 4

# Base rates of the schedule; each round scales them by its mood (calm, normal, storm) and a little jitter.
BASE_RATES: dict[str, float] = {
    "ingest_throttle_rate": 0.2,
    "crash_before_commit_rate": 0.06,
    "crash_after_commit_rate": 0.06,
    "gateway_error_rate": 0.1,
    "gateway_throttle_rate": 0.08,
    "gateway_slow_rate": 0.04,
}
MOODS = (0.5, 1.0, 1.0, 1.5)
LATE_PAYMENT_SHARE = 0.3  # payments whose first fetch answers 404 (the webhook raced the API)
EXHAUSTING_PAYMENT_SHARE = 0.06  # ... whose fetches answer 404 until the harness reveals them, before the replay
# "Unknown for N fetches" with N = the attempts per event is not enough to make an event fail: a slow answer the
# client gave up on, or a retry inside one attempt, also consumes a 404. These stay unknown until revealed.
UNKNOWN_UNTIL_REVEALED = 1_000_000


@dataclass(frozen=True)
class RoundFaults:
    ingest_throttle_rate: float
    crash_before_commit_rate: float
    crash_after_commit_rate: float
    gateway_error_rate: float
    gateway_throttle_rate: float
    gateway_slow_rate: float
    pipe_pause_seconds: float  # 0: the Pipe keeps pumping this round

    def knobs(self, slow_seconds: float) -> dict[str, Any]:
        """The `POST /_local/faults` document for this round."""
        document: dict[str, Any] = {
            "ingest_throttle_rate": self.ingest_throttle_rate,
            "crash_before_commit_rate": self.crash_before_commit_rate,
            "crash_after_commit_rate": self.crash_after_commit_rate,
            "gateway": {
                "error_rate": self.gateway_error_rate,
                "throttle_rate": self.gateway_throttle_rate,
                "slow_rate": self.gateway_slow_rate,
                "slow_seconds": slow_seconds,
            },
        }
        if self.pipe_pause_seconds:
            document["pipe_pause_seconds"] = self.pipe_pause_seconds
        return document


@dataclass(frozen=True)
class ChaosSchedule:
    seed: int
    rounds: list[RoundFaults]
    unknown_fetches: list[int]  # per payment, in creation order: 404s its API answers first
    slow_seconds: float  # beyond the refetch client's read timeout: a timeout, not a slow answer
    exhausting: bool  # whether some payments stay unknown for all of an event's attempts

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def rounds_for(providers: Iterable[str], max_delay_rounds: int) -> int:
    """How many delivery rounds a simulation of these providers may have (its longest lifecycle)."""
    longest = max((len(steps) for p in providers for steps in lifecycles_for(p).values()), default=0)
    return longest + max_delay_rounds + 1


def build_schedule(
    seed: int, *, payments: int, rounds: int, max_attempts: int, refetched: Sequence[bool] | None = None
) -> ChaosSchedule:
    """The faults of each round and of each payment, from the seed alone. `refetched` says, per payment, whether
    its provider has an API the processor asks (default: all do); only those can be unknown to it."""
    rng = random.Random(f"inbox-chaos-schedule:{seed}")  # noqa: S311 - a reproducible schedule
    has_api = list(refetched) if refetched is not None else [True] * payments
    if len(has_api) != payments:
        raise ValueError(f"refetched names {len(has_api)} payments, not {payments}")
    timeline = []
    for _ in range(rounds):
        mood = rng.choice(MOODS)
        rates = {name: round(min(0.5, base * mood * rng.uniform(0.8, 1.2)), 4) for name, base in BASE_RATES.items()}
        timeline.append(rates)
    pauses = {r: round(rng.uniform(1.5, 4.0), 1) for r in rng.sample(range(rounds), k=max(1, rounds // 4))}
    exhausting = max_attempts <= MAX_ATTEMPTS_TO_EXHAUST
    unknown = []
    for index in range(payments):
        draw = rng.random()
        if not has_api[index]:
            unknown.append(0)
        elif exhausting and draw < EXHAUSTING_PAYMENT_SHARE:
            unknown.append(UNKNOWN_UNTIL_REVEALED)
        elif draw < LATE_PAYMENT_SHARE:
            unknown.append(1)
        else:
            unknown.append(0)
    candidates = [index for index in range(payments) if has_api[index]]
    if exhausting and candidates and UNKNOWN_UNTIL_REVEALED not in unknown:
        unknown[rng.choice(candidates)] = UNKNOWN_UNTIL_REVEALED  # at least one: the replay path is always exercised
    return ChaosSchedule(
        seed=seed,
        rounds=[RoundFaults(**rates, pipe_pause_seconds=pauses.get(r, 0.0)) for r, rates in enumerate(timeline)],
        unknown_fetches=unknown,
        slow_seconds=READ_TIMEOUT_SECONDS + 0.5,
        exhausting=exhausting,
    )
