"""`inbox chaos` over a local stack: faults of every kind while payments flow, then nothing lost, nothing doubled."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_cli.simulate import refetched, simulated_providers
from tests.e2e.conftest import RunningStack, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SEED = "11"
PAYMENTS_PER_PROVIDER = 2  # the run's time grows with its events: few payments, but every provider
FAULT_KINDS = (
    "ingest_throttle",
    "crash_before_commit",
    "crash_after_commit",
    "gateway_error",
    "gateway_throttle",
    "gateway_slow",
    "gateway_unknown",
    "pipe_pause",
)


@pytest.fixture(scope="module")
def chaos_stack() -> Iterator[RunningStack]:
    # Three attempts per event: a payment the gateway's API does not know for all of them fails its first event
    # quickly (the replay path), instead of after eight backoffs.
    stack = start_stack({"INBOX_MAX_ATTEMPTS": "3"})
    yield stack
    if stack.process.poll() is None:
        stop_stack(stack)


def faults(stack: RunningStack, method: str = "GET", payload: Any = None) -> tuple[int, dict[str, Any]]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(f"{stack.url}/_local/faults", data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read())


def test_an_invalid_fault_setting_is_refused_whole(chaos_stack):
    stack = chaos_stack
    # Given a stack with every fault off
    status, before = faults(stack)
    assert status == 200
    assert before["ingest_throttle_rate"] == 0 and before["pipe_paused"] is False
    # When a change mixes a valid rate with an invalid one
    status, answer = faults(stack, "POST", {"ingest_throttle_rate": 0.5, "crash_after_commit_rate": 2})
    # Then it is refused, and nothing changed
    assert status == 400 and "crash_after_commit_rate" in answer["error"]
    assert faults(stack)[1]["ingest_throttle_rate"] == 0
    # And an unknown setting is refused too, naming it
    status, answer = faults(stack, "POST", {"disk_full": True})
    assert status == 400 and "disk_full" in answer["error"]


def test_a_seeded_chaos_run_loses_nothing_and_applies_nothing_twice(chaos_stack):
    stack = chaos_stack
    # When `inbox chaos` drives payments through the stack while the seeded schedule turns faults on and off
    providers = simulated_providers()
    payments = str(PAYMENTS_PER_PROVIDER * len(providers))
    result = stack.cli("chaos", "--seed", SEED, "--payments", payments, "--json", check=False, timeout=240)
    assert result.stdout, f"{result.stderr}\n--- stack output ---\n{stack.output()[-20000:]}"
    report = json.loads(result.stdout)
    invariants = {invariant["name"]: invariant for invariant in report["invariants"]}

    # Then every invariant holds, and the exit status says so
    failing = {name: (i["detail"], i["examples"][:3]) for name, i in invariants.items() if not i["ok"]}
    assert not failing, failing
    assert report["ok"] is True and result.returncode == 0
    assert len(invariants) == 6  # with the transactional outbox's: every transition published once
    assert report["statuses"].get("pending", 0) == 0 and report["statuses"].get("failed", 0) == 0

    # And every kind of fault was really injected, and concurrent duplicates were really sent
    not_injected = [kind for kind in FAULT_KINDS if report["faults"].get(kind, 0) <= 0]
    assert not not_injected, report["faults"]
    assert report["delivery"]["concurrent_pairs"] > 0
    assert report["delivery"]["sends"] > report["delivery"]["webhooks"]

    # And events did fail (a payment unknown to the API for all of their attempts), went to the dead-letter
    # queue, and were recovered by the replay
    recovery = report["recovery"]
    assert recovery["failed_before_replay"] >= 1
    assert recovery["replayed"] == recovery["failed_before_replay"] == recovery["recovered_by_replay"]
    assert recovery["dead_lettered"] >= 1 and recovery["dlq_left"] == 0

    # And the payments were spread over every simulated provider, each one's matching its gateway
    by_provider = report["by_provider"]
    assert set(by_provider) == set(providers)
    assert all(f["payments"] == f["matching"] == PAYMENTS_PER_PROVIDER for f in by_provider.values()), by_provider
    # with the gateway's faults landing on the refetched providers only, and what failed (unknown to an API) too
    no_api = [p for p in providers if not refetched(p)]
    assert not any(sum(by_provider[p]["gateway_faults"].values()) for p in no_api)
    assert not any(by_provider[p]["failed_before_replay"] for p in no_api)
    assert sum(f["recovered_by_replay"] for f in by_provider.values()) == recovery["recovered_by_replay"]
    assert sum(f["refused"] for f in by_provider.values()) >= report["faults"]["ingest_throttle"] > 0

    # And the run left every fault off
    _, after = faults(stack)
    assert after["pipe_paused"] is False
    assert after["ingest_throttle_rate"] == after["crash_before_commit_rate"] == after["crash_after_commit_rate"] == 0
    assert after["gateway"]["error_rate"] == after["gateway"]["slow_rate"] == after["gateway"]["unknown_fetches"] == 0
    assert after["counters"]["crash_before_commit"] >= report["faults"]["crash_before_commit"]

    print(f"\nchaos run: faults {report['faults']}, recovery {recovery}, {report['elapsed_seconds']} s")
