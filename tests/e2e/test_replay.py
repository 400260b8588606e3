"""`inbox replay` against the local stack: the replay workflow (the stack's Step Functions definition, executed by
the embedded AWS) plans, then sets a failed event back to pending, and the Pipe, the queue and the processor take
it from there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_cli.simulate import SimulatorAdmin
from tests.e2e.conftest import RunningStack, start_stack, stop_stack, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]


@pytest.fixture(scope="module")
def replay_stack() -> Iterator[RunningStack]:
    # One attempt per event: a refetch that finds nothing fails the event at once (instead of after 8 backoffs).
    stack = start_stack({"INBOX_MAX_ATTEMPTS": "1"})
    yield stack
    if stack.process.poll() is None:
        stop_stack(stack)


def event(stack: RunningStack, provider: str, event_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(stack.cli("events", "show", provider, event_id, "--json").stdout)
    return shown


def wait_for_status(
    stack: RunningStack, provider: str, event_id: str, wanted: set[str], timeout: float = 60
) -> dict[str, Any]:
    """`inbox events show` of the event once its item is in a `wanted` status (waited for in-process)."""
    wait_until(
        lambda: stack.stored_event(provider, event_id), lambda item: item.get("status") in wanted, timeout=timeout
    )
    shown = event(stack, provider, event_id)
    if shown["status"] not in wanted:
        raise AssertionError(f"{provider}#{event_id} still {shown['status']} after {timeout} s: {shown}")
    return shown


def replay(stack: RunningStack, *args: str) -> dict[str, Any]:
    result = stack.cli("replay", "--provider", "stripe", "--json", "--wait-seconds", "0", *args, timeout=180)
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_a_failed_event_is_planned_then_replayed_and_processed(replay_stack):
    admin = SimulatorAdmin(f"http://127.0.0.1:{replay_stack.env['INBOX_GATEWAY_PORT']}")
    # Given a payment the gateway's API does not know yet (its first fetch answers 404)
    admin.set_faults(unknown_fetches=1)
    resource_id, _webhooks = admin.create_payment("stripe", 1990)
    admin.set_faults(unknown_fetches=0)
    # And a webhook about it, which therefore fails (one attempt allowed)
    event_id = f"evt_replay_{int(time.time() * 1000)}"
    replay_stack.cli("send", "stripe", "--event-id", event_id, "--resource-id", resource_id, "--status", "pending")
    failed = wait_for_status(replay_stack, "stripe", event_id, {"failed"})
    assert failed["last_error"]

    # When the operator asks for a dry run
    plan = replay(replay_stack, "--dry-run")
    # Then the plan lists that event, counted by provider, type and status, and nothing changes
    assert plan["dry_run"] is True and plan["complete"] is True
    assert plan["counts"]["planned"] == plan["counts"]["selected"] == 1
    assert plan["counts"]["replayed"] == 0
    assert [(e["pk"], e["outcome"]) for e in plan["events"]] == [(f"stripe#{event_id}", "planned")]
    (row,) = plan["plan"]
    assert row == {
        "source": "stripe",
        "provider": "stripe",
        "event_type": failed["event_type"],
        "status": "failed",
        "outcome": "planned",
        "count": 1,
    }
    unchanged = event(replay_stack, "stripe", event_id)
    assert unchanged["status"] == "failed" and unchanged["dispatch_id"] == failed["dispatch_id"]
    assert "replayed_at" not in unchanged

    # When the operator replays for real
    done = replay(replay_stack)
    # Then the event was set back to pending with a new dispatch, went through the Pipe and the queue again,
    # and the processor, now that the gateway knows the payment, settles it
    assert done["dry_run"] is False
    assert done["counts"]["replayed"] == 1 and done["counts"]["skipped"] == 0
    settled = wait_for_status(replay_stack, "stripe", event_id, {"processed", "ignored"})
    assert "replayed_at" in settled  # the replay's stamp (the settle clears the dispatch marks, not this)
    assert "dispatch_id" not in settled  # the replay's new dispatch id was cleared by the settle that followed it
    assert settled["replayed_by"] == done["execution_arn"]
    assert "last_error" not in settled
    payment = json.loads(replay_stack.cli("payments", "show", "stripe", resource_id, "--json").stdout)
    assert payment["status"] == "pending"  # what the gateway says

    # And running it again changes nothing more
    again = replay(replay_stack)
    assert again["counts"]["replayed"] == 0 and again["counts"]["selected"] == 0


def test_replay_by_id_reports_ids_it_did_not_select(replay_stack):
    # Given an event that was processed (the gateway knows its payment)
    admin = SimulatorAdmin(f"http://127.0.0.1:{replay_stack.env['INBOX_GATEWAY_PORT']}")
    resource_id, _webhooks = admin.create_payment("stripe", 500)
    event_id = f"evt_replay_ok_{int(time.time() * 1000)}"
    replay_stack.cli(
        "send", "stripe", "--event-id", event_id, "--resource-id", resource_id, "--status", "pending", "--amount", "500"
    )
    wait_for_status(replay_stack, "stripe", event_id, {"processed", "ignored"})
    # When the operator names it, and an id that does not exist
    report = replay(replay_stack, "--id", event_id, "--id", "evt_does_not_exist")
    # Then neither is touched, and the report says why
    assert report["counts"]["replayed"] == 0
    outcomes = {e["pk"]: e["outcome"] for e in report["events"]}
    assert outcomes == {f"stripe#{event_id}": "not_selected", "stripe#evt_does_not_exist": "not_found"}


def test_the_human_readable_report(replay_stack):
    result = replay_stack.cli("replay", "--provider", "asaas", "--dry-run", "--since", "2020-01-01")
    assert "Dry run: 0 failed events of asaas would be set back to pending" in result.stdout
    assert "execution: arn:aws:states:" in result.stdout


def test_an_invalid_time_is_refused_before_anything_runs(replay_stack):
    result = replay_stack.cli("replay", "--provider", "stripe", "--since", "yesterday", check=False)
    assert result.returncode == 2
    assert "--since" in result.stderr
