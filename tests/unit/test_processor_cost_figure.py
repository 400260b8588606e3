"""The cost model's processor milliseconds per event follow the last measurement (bench/processor_batch.py, section
`processor_batch` of bench/results/latest.json): a re-measured figure that moves by more than the noise makes this
fail until the assumption is updated."""

from __future__ import annotations

import json

import pytest

from inbox_cli.cost import BENCH_RESULTS, Assumptions

NOISE = 0.2  # the batch medians move by this much between runs on the shared 2-core machine


def test_the_processor_duration_is_the_measured_typical_batch():
    # Given the last benchmark's processor figures, When the model's default is read
    results = json.loads(BENCH_RESULTS.read_text()) if BENCH_RESULTS.exists() else {}
    measured = results.get("processor_batch", {}).get("typical", {}).get("after", {}).get("ms_per_event")
    # bench/results/latest.json is committed with that section: its absence is a defect, not a reason to skip
    assert measured is not None, f"{BENCH_RESULTS} has no processor_batch.typical.after.ms_per_event"
    # Then it is the typical batch's (3 events of 3 payments, groups at once) milliseconds per event
    assert Assumptions().processor_ms_per_event == pytest.approx(measured, rel=NOISE)
