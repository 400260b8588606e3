"""Small statistics for the benchmarks: percentiles and a latency summary."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100), interpolating linearly between the closest ranks (numpy's default,
    "linear"): p50 of [1, 2, 3, 4] is 2.5, p100 is the maximum."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99, mean and max of latencies given in seconds, in milliseconds."""
    return {
        "p50_ms": round(percentile(seconds, 50) * 1000, 1),
        "p95_ms": round(percentile(seconds, 95) * 1000, 1),
        "p99_ms": round(percentile(seconds, 99) * 1000, 1),
        "mean_ms": round(sum(seconds) / len(seconds) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
        "count": len(seconds),
    }
