"""A started replay followed without waiting (`replay_progress`, what the console's progress page polls): each
execution of its chain, then the report once the last one ended, or why it failed."""

from __future__ import annotations

import json
from typing import Any

from inbox_cli.replay import ReplayRequest, replay_progress, start_replay, wait_for_replay

FIRST = "arn:aws:states:us-east-1:123456789012:execution:replay:first"
SECOND = "arn:aws:states:us-east-1:123456789012:execution:replay:second"


class Executions:
    """DescribeExecution answers from a dict, as Step Functions would give them; StartExecution recorded."""

    def __init__(self, described: dict[str, dict[str, Any]]) -> None:
        self.described = described
        self.started: list[dict[str, Any]] = []

    def describe_execution(self, executionArn: str) -> dict[str, Any]:  # boto3 calls it with this keyword
        return self.described[executionArn]

    def start_execution(self, **request: Any) -> dict[str, Any]:
        self.started.append(request)
        return {"executionArn": FIRST}


def succeeded(**output: Any) -> dict[str, Any]:
    return {"status": "SUCCEEDED", "output": json.dumps(output)}


def test_a_chain_whose_successor_still_runs_is_running_with_both_executions():
    # Given a first execution that finished and started a successor, which still runs
    sfn = Executions(
        {
            FIRST: succeeded(provider="stripe", status="failed", counts={"replayed": 3}, next_execution=SECOND),
            SECOND: {"status": "RUNNING"},
        }
    )
    # When its progress is read
    progress = replay_progress(sfn, FIRST)  # type: ignore[arg-type]
    # Then it is running, with both executions and their statuses, and no report yet
    assert progress.running
    assert progress.executions == [
        {"execution_arn": FIRST, "status": "SUCCEEDED"},
        {"execution_arn": SECOND, "status": "RUNNING"},
    ]
    assert progress.to_json()["report"] is None


def test_a_finished_chain_reports_what_the_whole_replay_did():
    sfn = Executions(
        {
            FIRST: succeeded(provider="stripe", status="failed", counts={"replayed": 3}, next_execution=SECOND),
            SECOND: succeeded(provider="stripe", status="failed", counts={"replayed": 2}, complete=True),
        }
    )
    progress = replay_progress(sfn, FIRST)  # type: ignore[arg-type]
    # Then the report adds both executions up, as `inbox replay` (which waits for the same chain) reports it
    assert not progress.running and progress.error is None
    assert progress.report is not None and progress.report.counts == {"replayed": 5}
    waited = wait_for_replay(sfn, FIRST, poll_seconds=0)  # type: ignore[arg-type]
    assert progress.to_json()["report"] == waited.to_json()
    assert progress.to_json()["headline"].startswith("Replayed 5 failed events of stripe")


def test_a_failed_execution_is_reported_with_its_error_and_cause():
    sfn = Executions({FIRST: {"status": "FAILED", "error": "States.TaskFailed", "cause": "throttled"}})
    progress = replay_progress(sfn, FIRST)  # type: ignore[arg-type]
    assert not progress.running and progress.report is None
    assert progress.error == f"execution {FIRST} FAILED: States.TaskFailed: throttled"


def test_starting_a_replay_sends_the_requests_input_and_returns_at_once():
    sfn = Executions({})
    request = ReplayRequest(provider="stripe", event_ids=("evt_1",))
    # When it is started, Then the execution's input is the request's, and nothing is waited for
    assert start_replay(sfn, "arn:state-machine", request) == FIRST  # type: ignore[arg-type]
    (started,) = sfn.started
    assert json.loads(started["input"]) == request.execution_input()
    assert started["stateMachineArn"] == "arn:state-machine"
