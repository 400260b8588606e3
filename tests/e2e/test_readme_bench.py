"""docs/benchmarks.md, `make bench`: `.venv/bin/python -m bench end_to_end` — not re-run in full inside the suite (600 +
200 + 300 events, about a minute and a half on two cores): the same `main(["end_to_end"])` that `python -m bench
end_to_end` calls, with the section's event and request counts made small and its outputs (results file, histogram,
profile) redirected to a temporary directory, so the committed bench/results/latest.json is not touched."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

import bench.__main__ as bench_main
from bench import end_to_end

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

ROOT = Path(__file__).resolve().parents[2]
WARMUP_EVENTS = 4


def test_bench_end_to_end_measures_and_keeps_the_other_sections(monkeypatch, capsys):
    # Given a previous results file holding a cold_start section, outputs redirected under build/ (ignored by git)
    (ROOT / "build").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="readme-bench-", dir=ROOT / "build"))
    results = scratch / "latest.json"
    previous_cold_start = {"ingest: import + init": {"median_ms": 1.0, "ratio_to_baseline": 1.0}}
    results.write_text(json.dumps({"cold_start": previous_cold_start}))
    monkeypatch.setattr(bench_main, "RESULTS", results)
    monkeypatch.setattr(end_to_end, "HISTOGRAM", scratch / "e2e_latency.png")
    monkeypatch.setattr(end_to_end, "PROFILES", scratch / "profiles")
    monkeypatch.setattr(
        end_to_end, "measure", functools.partial(end_to_end.measure, events=12, storm_events=4, profiled_events=8)
    )
    # and the warm-ups of its two stacks (30 deliveries each, more than the measured runs here): a few
    event_ids = end_to_end.event_ids
    monkeypatch.setattr(
        end_to_end,
        "event_ids",
        lambda label, count: event_ids(label, min(count, WARMUP_EVENTS) if label == "warmup" else count),
    )
    # and its baselines too (5 x 150 GET /health and 200 PutItems by default): what is checked is that each is
    # measured and enters its ratio, not its figure
    monkeypatch.setattr(end_to_end, "health_baseline", functools.partial(end_to_end.health_baseline, requests=20))
    monkeypatch.setattr(end_to_end, "putitem_baseline", functools.partial(end_to_end.putitem_baseline, count=40))
    # When `python -m bench end_to_end` runs (its main, with that argument)
    assert bench_main.main(["end_to_end"]) == 0
    # Then it measured the end-to-end section against its baseline, and kept the section it did not run
    document = json.loads(results.read_text())
    assert document["sections_measured"] == ["end_to_end"]
    assert document["cold_start"] == previous_cold_start
    e2e = document["end_to_end"]
    assert e2e["single"]["events_per_s"] > 0 and e2e["baseline_putitem"]["puts_per_s"] > 0
    assert e2e["ratios"]["events_per_s_vs_putitem_per_s"] > 0
    assert (scratch / "e2e_latency.png").stat().st_size > 0
    # And it printed the tables and where it wrote them
    assert f"written to {results.relative_to(ROOT)}" in capsys.readouterr().out
