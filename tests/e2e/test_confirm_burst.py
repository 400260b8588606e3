"""Confirm from the payload against verify from the API, through the local stack (what `make run` starts): the
bench section `confirm_burst` at its smoke-test size (`python -m bench --quick confirm_burst`), its results file
redirected, so the committed bench/results/ is kept."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

import bench.__main__ as bench_main
from bench import confirm_burst

# About a minute a mode on the shared 2-core machine: run with the soak tests (`make chaos`), not by `make test`.
pytestmark = [pytest.mark.e2e, pytest.mark.soak, pytest.mark.xdist_group(__name__)]

ROOT = Path(__file__).resolve().parents[2]


def test_every_payment_ends_at_the_gateways_truth_within_its_read_limit(monkeypatch, capsys):
    # Given the bench's confirm burst at its quick size (24 payments, some moved on at the gateway after or before
    # their webhooks), the gateway at 1 read/s, its results file under build/
    (ROOT / "build").mkdir(exist_ok=True)
    results = Path(tempfile.mkdtemp(prefix="confirm-burst-", dir=ROOT / "build")) / "quick.json"
    monkeypatch.setattr(bench_main, "QUICK_RESULTS", results)

    # When it runs, each mode on a local stack of its own
    assert bench_main.main(["--quick", "confirm_burst"]) == 0
    burst = json.loads(results.read_text())["confirm_burst"]

    # Then in every mode that ran, every payment ends at the gateway's truth, every event settled, and no
    # one-second window of the gateway saw more than the limit plus the limiter's burst
    assert burst["payments"] == confirm_burst.QUICK_PAYMENTS
    assert burst["ok"], burst
    ran = [burst[mode] for mode in confirm_burst.MODES if burst[mode]["available"]]
    assert ran and ran[0]["mode"] == "never"
    for run in ran:
        assert run["mismatched_payments"] == 0 and run["settled"], run
        assert run["gateway"]["windows_over_bound"] == 0, run["gateway"]
        assert run["to_correct"]["missing"] == run["to_verified"]["missing"] == 0
        assert run["answers"] == {"200": run["events"]}
    # And a mode the sources.json of this version does not take is reported, not measured as something else
    behind = burst["when_behind"]
    assert behind["available"] == confirm_burst.supports_confirm_from_payload()
    assert (burst["p99_to_correct_when_behind_vs_never"] is None) == (not behind["available"])
    assert "Confirm from the payload" in capsys.readouterr().out
