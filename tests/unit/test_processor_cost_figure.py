"""The cost model's Lambda durations follow the last measurement (bench/processor_batch.py and bench/ingest_cost.py,
in bench/results/latest.json, turned into Lambda time by `lambda_ms`): a re-measured figure that moves by more than
the noise makes the fallback defaults fail until they are updated."""

from __future__ import annotations

import json

import pytest

from inbox_cli.cost import BENCH_RESULTS, LAMBDA_ONE_VCPU_MB, Assumptions, lambda_ms, measured_assumptions

NOISE = 0.2  # the batch medians move by this much between runs on the shared 2-core machine


def test_the_processor_duration_is_the_measured_typical_batch():
    # Given the last benchmark's processor figures, When the model's default is read
    results = json.loads(BENCH_RESULTS.read_text()) if BENCH_RESULTS.exists() else {}
    measured = results.get("processor_batch", {}).get("typical", {}).get("after", {}).get("ms_per_event")
    # bench/results/latest.json is committed with that section: its absence is a defect, not a reason to skip
    assert measured is not None, f"{BENCH_RESULTS} has no processor_batch.typical.after.ms_per_event"
    # Then the measured typical batch (3 events of 3 payments, groups at once) priced on Lambda is the default's
    priced = measured_assumptions()
    assert priced.processor_ms_per_event >= measured  # CPU at a share of a vCPU never makes it faster
    assert Assumptions().processor_ms_per_event == pytest.approx(priced.processor_ms_per_event, rel=NOISE)
    assert Assumptions().ingest_ms == pytest.approx(priced.ingest_ms, rel=NOISE)


@pytest.mark.parametrize(
    ("wait", "cpu", "memory", "concurrent", "expected"),
    [
        (50.0, 10.0, LAMBDA_ONE_VCPU_MB, 1, 60.0),  # one vCPU: the CPU as measured, after the wait
        (50.0, 10.0, 3538, 1, 60.0),  # more than one vCPU does not speed up one thread
        (50.0, 10.0, 442, 1, 90.0),  # a quarter of a vCPU: the CPU takes four times as long
        (50.0, 10.0, 442, 4, 60.0),  # four groups: each one's CPU overlaps the others' waits
        (10.0, 10.0, 442, 4, 40.0),  # little waiting: the shared CPU is the bound
    ],
)
def test_lambda_time_is_the_wait_and_the_cpu_at_the_share_of_a_vcpu(wait, cpu, memory, concurrent, expected):
    # Given work that waits and computes, When it runs at a memory size (and that many units at once)
    # Then its time per unit is its wait plus its CPU slowed to the share, or the instance's shared CPU
    assert lambda_ms(wait, cpu, memory, concurrent=concurrent) == pytest.approx(expected, rel=0.01)
