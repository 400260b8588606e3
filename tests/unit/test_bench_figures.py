"""The benchmark's own arithmetic (bench/stats.py, bench/end_to_end.py's run figures): percentiles, latency
summaries, events/s, the answers to a duplicate storm."""

from __future__ import annotations

import pytest

from bench import cold_start
from bench.end_to_end import Run, _answer_kind
from bench.stats import latency_summary, percentile


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1, 2, 3, 4], 50, 2.5),  # between the two middle values
        ([4, 1, 3, 2], 50, 2.5),  # order does not matter
        ([7], 99, 7),
        ([1, 2, 3, 4], 0, 1),
        ([1, 2, 3, 4], 100, 4),
        (list(range(1, 101)), 95, 95.05),  # numpy.percentile(range(1, 101), 95) == 95.05
        (list(range(1, 101)), 99, 99.01),
        ([10, 20], 25, 12.5),
    ],
)
def test_percentiles_interpolate_between_the_closest_ranks(values, q, expected):
    # Given some values, When their q-th percentile is taken, Then it is numpy's default ("linear") one
    assert percentile(values, q) == pytest.approx(expected)


@pytest.mark.parametrize(("values", "q"), [([], 50), ([1.0], -1), ([1.0], 100.5)])
def test_a_percentile_of_nothing_or_out_of_range_is_refused(values, q):
    with pytest.raises(ValueError):
        percentile(values, q)


def test_a_latency_summary_is_in_milliseconds():
    # Given latencies in seconds: 99 fast ones and a slow one
    seconds = [0.1] * 99 + [2.0]
    # When summarised
    summary = latency_summary(seconds)
    # Then percentiles, mean and max are milliseconds, and only the tail sees the slow one
    assert summary["p50_ms"] == 100.0
    assert summary["p95_ms"] == 100.0
    assert summary["p99_ms"] == pytest.approx(119.0)  # 1% of the way from the 99th value to the 100th
    assert summary["max_ms"] == 2000.0
    assert summary["mean_ms"] == 119.0
    assert summary["count"] == 100


def test_a_run_measures_latency_from_the_first_post_to_processed_and_rate_over_the_whole_run():
    # Given three events, the second one posted twice (its first POST counts), all settled
    run = Run(events=["a", "b", "c"], copies=1)
    run.first_sent = {"a": 100.0, "b": 100.5, "c": 101.0}
    run.answered = {"a": 100.1, "b": 100.7, "c": 101.1}
    run.settled = {"a": ("processed", 100.3), "b": ("processed", 101.0), "c": ("ignored", 102.0)}
    run.acks = [0.1, 0.2, 0.1]
    # When its figures are computed
    figures = run.figures()
    # Then each latency is processed_at - first POST, and the rate is events over first POST -> last processed
    assert sorted(run.latencies) == pytest.approx([0.3, 0.5, 1.0])
    assert figures["seconds"] == 2.0
    assert figures["events_per_s"] == 1.5
    assert figures["statuses"] == {"processed": 2, "ignored": 1}
    assert figures["post_to_processed"]["p50_ms"] == 500.0


def test_a_storm_counts_deliveries_not_events():
    run = Run(events=["a", "b"], copies=5)
    run.first_sent = {"a": 10.0, "b": 10.0}
    run.answered = {"a": 10.5, "b": 11.0}  # a copy answered after the last event was processed
    run.settled = {"a": ("processed", 10.2), "b": ("processed", 10.4)}
    run.acks = [0.01] * 10
    figures = run.figures()
    assert figures["deliveries"] == 10
    assert figures["seconds"] == 1.0  # up to the last answer
    assert figures["deliveries_per_s"] == 10.0
    assert figures["events_per_s"] == 2.0


@pytest.mark.parametrize(
    ("status", "payload", "kind"),
    [
        (200, b'{"received":true}', "stored"),
        (200, b'{"received":true,"duplicate":true}', "duplicate"),
        (200, b"not json", "http_200_unreadable"),
        (503, b'{"error":"storage unavailable"}', "http_503"),
        (401, b"", "http_401"),
    ],
)
def test_each_answer_of_the_ingest_is_told_apart(status, payload, kind):
    assert _answer_kind(status, payload) == kind


def test_cold_start_figures_compare_each_copy_with_its_own_baseline():
    # Given CPU and wall samples (ms) of the baseline and the processor, on the copy without and with bytecode
    runs = {
        cold_start.BASELINE: {
            "no bytecode": [(300.0, 310.0), (320.0, 330.0), (310.0, 315.0)],
            "bytecode": [(100.0, 105.0)] * 3,
        },
        "processor: import + init": {
            "no bytecode": [(450.0, 460.0)] * 3,
            "bytecode": [(110.0, 200.0), (130.0, 140.0), (120.0, 125.0)],
        },
    }
    # When they are summarized
    figures = cold_start.summarize(runs)
    # Then each figure is the median CPU time, its ratio against the baseline of the same copy
    processor = figures["processor: import + init"]
    assert processor["no bytecode"]["cpu_median_ms"] == 450.0
    assert processor["no bytecode"]["ratio_to_baseline"] == 1.45  # 450 / 310
    assert processor["bytecode"]["cpu_median_ms"] == 120.0
    assert processor["bytecode"]["cpu_min_ms"] == 110.0
    assert processor["bytecode"]["wall_median_ms"] == 140.0
    assert processor["bytecode"]["ratio_to_baseline"] == 1.2  # 120 / 100
    # And what bytecode saves is the difference of the medians; the baseline's ratio is 1
    assert processor["bytecode_saves_ms"] == 330.0
    assert figures[cold_start.BASELINE]["bytecode"]["ratio_to_baseline"] == 1.0
