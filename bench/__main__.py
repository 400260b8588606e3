"""`make bench`: every figure is a ratio against a baseline measured in the same run."""

from __future__ import annotations

import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench import cold_start, ingest_cost

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
TARGETS = {"ingest: import + init": 1.3, "processor: import + init": 1.6}
INGEST_OVERHEAD_TARGET = 1.5


def main() -> int:
    print("measuring cold starts (fresh interpreters)...", flush=True)
    cold = cold_start.measure()
    print("measuring ingest cost per event (moto in-process)...", flush=True)
    ingest = ingest_cost.measure()
    print("\nCold start: import + init, median of fresh processes")
    print(f"  {'program':34} {'median ms':>10} {'ratio':>7} {'target':>7}")
    for name, figures in cold.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else ("met" if figures["ratio_to_baseline"] <= target else "NOT MET")
        print(
            f"  {name:34} {figures['median_ms']:>10} {figures['ratio_to_baseline']:>6}x "
            f"{'' if target is None else f'{target}x':>7} {verdict}"
        )
    print("\nIngest cost per event: handler vs bare conditional PutItem (same backend)")
    print(f"  {'body':6} {'handler ms':>11} {'bare ms':>9} {'ratio':>7} {'target':>7}")
    for label, figures in ingest.items():
        verdict = "met" if figures["overhead_ratio"] <= INGEST_OVERHEAD_TARGET else "NOT MET"
        print(
            f"  {label:6} {figures['handler_median_ms']:>11} {figures['bare_putitem_median_ms']:>9} "
            f"{figures['overhead_ratio']:>6}x {INGEST_OVERHEAD_TARGET:>6}x {verdict}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cold_start": cold,
                "ingest_cost": ingest,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwritten to {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
