"""The refetch rate limit through the local stack (what `make run` starts): a burst of Stripe webhooks against the
gateway simulator limited to a few requests per second (429 above it). Runs `python -m bench refetch_burst`'s
`main` on a smaller burst, its results file redirected, so the committed bench/results/latest.json is kept."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

import bench.__main__ as bench_main
from bench import refetch_burst
from shared.gateway.ratelimit import burst_size

# Minutes on the shared 2-core machine: run with the soak tests (`make chaos`), not by `make test`.
pytestmark = [pytest.mark.e2e, pytest.mark.soak, pytest.mark.xdist_group(__name__)]

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 8.0
PAYMENTS, EVENTS = 20, 120


def test_a_burst_stays_within_the_gateway_limit_and_drains_with_nothing_failed(monkeypatch, capsys):
    # Given the bench's refetch burst made small (120 events over 20 payments, the gateway limited to 8/s and the
    # source's rate the same), its results file under build/
    (ROOT / "build").mkdir(exist_ok=True)
    results = Path(tempfile.mkdtemp(prefix="refetch-burst-", dir=ROOT / "build")) / "latest.json"
    monkeypatch.setattr(bench_main, "RESULTS", results)
    monkeypatch.setattr(
        refetch_burst,
        "measure",
        functools.partial(refetch_burst.measure, payments=PAYMENTS, events=EVENTS, limit=LIMIT),
    )

    # When it runs through a local stack of its own
    assert bench_main.main(["refetch_burst"]) == 0
    burst = json.loads(results.read_text())["refetch_burst"]

    # Then every event settled in one attempt (waiting for the limit, or a 429, spent none), nothing failed, and
    # every payment matches the gateway's truth
    assert burst["ok"], burst
    assert burst["failed"] == burst["pending"] == burst["mismatched_payments"] == 0
    assert burst["attempts_per_event"] == {"1": EVENTS}
    # And the gateway never saw more in a second than the limit plus the bucket's short burst
    assert burst["gateway_per_second_max"] <= LIMIT + burst_size(LIMIT)
    # And every request the gateway saw took a slot of the shared schedule (a slot is taken before connecting: a
    # request that never reached the gateway, a connect timeout on a loaded machine, used one too)
    assert burst["gateway_requests"] <= burst["limiter"]["admitted"]
    assert "Refetch burst" in capsys.readouterr().out
