"""The local Step Functions is held to AWS's execution-history quota (inbox_local/step_functions.py): the event that
would be number `limit` is ExecutionSucceeded or the execution fails with it replaced by ExecutionFailed
(https://docs.aws.amazon.com/step-functions/latest/dg/bp-history-limit.html). The limit is lowered here through
the installer's parameter so that a few Pass states reach it. And its executions are held to TimeoutSeconds, on a
clock whose Wait seconds the tests may scale (https://docs.aws.amazon.com/step-functions/latest/dg/statemachine-structure.html)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from inbox_local.step_functions import (
    CLOCK,
    HISTORY_LIMIT_ERROR,
    HISTORY_PAGE_DEFAULT,
    TASK_PAYLOAD_LIMIT_BYTES,
    history_limit,
    history_limit_cause,
    history_page,
    install,
    register_function,
)
from infra.replay_definition import EXECUTION_HISTORY_LIMIT

LIMIT = 50  # ExecutionStarted + 2 per Pass state + ExecutionSucceeded: 24 Pass states make exactly 50 events


@pytest.fixture
def sfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    install(limit=LIMIT)
    try:
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            yield boto3.client("stepfunctions", region_name="us-east-1")
    finally:
        install()  # back to AWS's figure for the tests that follow in this process


def _passes(count: int) -> dict[str, Any]:
    states: dict[str, Any] = {f"P{n}": {"Type": "Pass", "Next": f"P{n + 1}"} for n in range(count)}
    states[f"P{count - 1}"] = {"Type": "Pass", "End": True}
    return {"StartAt": "P0", "States": states}


def _run(
    sfn: Any, definition: dict[str, Any], execution_input: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    arn = sfn.create_state_machine(
        name=f"m{time.time_ns()}", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, name="run", input=json.dumps(execution_input or {}))[
        "executionArn"
    ]
    deadline = time.monotonic() + 30
    while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    events = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    return described, events


def test_the_installed_limit_is_awss_figure_by_default() -> None:
    install()
    assert history_limit() == EXECUTION_HISTORY_LIMIT == 25_000


def test_an_execution_whose_last_event_is_number_limit_succeeds(sfn: Any) -> None:
    described, events = _run(sfn, _passes((LIMIT - 2) // 2))
    assert described["status"] == "SUCCEEDED"
    assert len(events) == LIMIT and events[-1]["type"] == "ExecutionSucceeded"


def test_an_execution_that_needs_more_events_fails_as_aws_fails_it(sfn: Any) -> None:
    # Given a workflow one state longer than the history allows
    described, events = _run(sfn, _passes((LIMIT - 2) // 2 + 1))
    # Then it failed with AWS's error, and event number LIMIT is its ExecutionFailed: nothing after it
    assert described["status"] == "FAILED"
    assert (described["error"], described["cause"]) == (HISTORY_LIMIT_ERROR, history_limit_cause(LIMIT))
    assert len(events) == LIMIT
    assert events[-1]["type"] == "ExecutionFailed"
    assert events[-1]["executionFailedEventDetails"]["cause"] == history_limit_cause(LIMIT)
    assert [event["id"] for event in events] == list(range(1, LIMIT + 1))


def test_no_state_runs_after_the_limit_failed_the_execution(sfn: Any) -> None:
    # Given a loop that would go on for ever (a Pass counting up, a Choice going back to it)
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, 1)"}, "Next": "Again"},
            "Again": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThan": -1, "Next": "Count"}]},
        },
    }
    arn = sfn.create_state_machine(
        name="loop", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r"
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=arn, name="run", input='{"n": 0}')["executionArn"]
    while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
        time.sleep(0.02)
    # Then the quota ended it (where moto alone would loop until the execution's timeout)
    assert (described["status"], described["error"]) == ("FAILED", HISTORY_LIMIT_ERROR)
    assert len(sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]) == LIMIT


def test_the_history_is_read_a_page_at_a_time_as_aws_pages_it(sfn: Any) -> None:
    # Given an execution of exactly LIMIT events
    described, events = _run(sfn, _passes((LIMIT - 2) // 2))
    arn = described["executionArn"]
    assert [event["id"] for event in events] == list(range(1, LIMIT + 1))
    # When it is read 20 events at a time, oldest first, following nextToken
    pages, token = [], None
    while True:
        page = sfn.get_execution_history(executionArn=arn, maxResults=20, **({"nextToken": token} if token else {}))
        pages.append(page["events"])
        if (token := page.get("nextToken")) is None:
            break
    # Then the pages hold every event once, in order, the last one shorter
    assert [len(page) for page in pages] == [20, 20, 10]
    assert [event for page in pages for event in page] == events
    # And newest first, one event: the ExecutionSucceeded, whose id is the history's length
    newest = sfn.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1)
    assert newest["events"] == [events[-1]] and events[-1]["type"] == "ExecutionSucceeded"
    assert newest["events"][0]["id"] == LIMIT and "nextToken" in newest
    reversed_page = sfn.get_execution_history(executionArn=arn, reverseOrder=True, nextToken=newest["nextToken"])
    assert reversed_page["events"] == events[-2::-1] and "nextToken" not in reversed_page


def test_without_max_results_a_page_is_awss_default_of_100_events() -> None:
    events = [{"id": n} for n in range(1, 151)]
    for max_results in (None, 0):  # 0 "uses the default" too
        first = history_page(events, max_results=max_results, reverse=False, next_token=None)
        assert [event["id"] for event in first["events"]] == list(range(1, 101))
        rest = history_page(events, max_results=max_results, reverse=False, next_token=first["nextToken"])
        assert [event["id"] for event in rest["events"]] == list(range(101, 151)) and "nextToken" not in rest
    assert HISTORY_PAGE_DEFAULT == 100


def test_a_page_larger_than_aws_allows_or_a_foreign_token_is_refused(sfn: Any) -> None:
    described, _ = _run(sfn, _passes(3))
    arn = described["executionArn"]
    with pytest.raises(sfn.exceptions.ClientError, match="maxResults"):
        sfn.get_execution_history(executionArn=arn, maxResults=1001)
    with pytest.raises(sfn.exceptions.InvalidToken):
        sfn.get_execution_history(executionArn=arn, nextToken="not-a-token")


# ---------------------------------------------------------------------------------- TimeoutSeconds, on a clock
@pytest.fixture
def waits_take_no_time() -> Iterator[None]:
    """Wait states' seconds pass without real time (the local executions' scaled clock); the rest runs as is."""
    before = CLOCK.scale
    CLOCK.scale = float("inf")
    try:
        yield
    finally:
        CLOCK.scale = before


def _waits(timeout_seconds: int, *waits: int) -> dict[str, Any]:
    """Wait states of these seconds, each followed by a Pass, under a state machine TimeoutSeconds."""
    states: dict[str, Any] = {}
    for index, seconds in enumerate(waits):
        states[f"W{index}"] = {"Type": "Wait", "Seconds": seconds, "Next": f"P{index}"}
        states[f"P{index}"] = {"Type": "Pass", "Next": f"W{index + 1}"}
    states[f"P{len(waits) - 1}"] = {"Type": "Pass", "End": True}
    return {"StartAt": "W0", "TimeoutSeconds": timeout_seconds, "States": states}


def _entered(events: list[dict[str, Any]]) -> list[str]:
    return [event["stateEnteredEventDetails"]["name"] for event in events if "stateEnteredEventDetails" in event]


def test_an_execution_past_its_timeout_seconds_times_out_where_it_is(sfn: Any, waits_take_no_time: None) -> None:
    # Given a state machine of TimeoutSeconds 100 whose waits add up to 120 s (on the scaled clock)
    described, events = _run(sfn, _waits(100, 60, 60))
    # Then the execution timed out during the second wait: its history ends with ExecutionTimedOut, and the state
    # after that wait never started
    assert described["status"] == "TIMED_OUT"
    assert events[-1]["type"] == "ExecutionTimedOut"
    assert _entered(events) == ["W0", "P0", "W1"]


def test_an_execution_within_its_timeout_seconds_succeeds(sfn: Any, waits_take_no_time: None) -> None:
    # Given the same waits under TimeoutSeconds 130: they fit
    described, events = _run(sfn, _waits(130, 60, 60))
    assert described["status"] == "SUCCEEDED"
    assert _entered(events) == ["W0", "P0", "W1", "P1"]


def test_the_timeout_runs_on_real_time_outside_the_waits(sfn: Any) -> None:
    # Given AWS's clock (a Wait second is a real second) and a 1-second timeout before a 30-second wait
    assert CLOCK.scale == 1.0
    described, events = _run(sfn, _waits(1, 30))
    # Then the execution timed out at its deadline, inside the wait (which _run would not outwait: 30 s at most)
    assert described["status"] == "TIMED_OUT"
    assert events[-1]["type"] == "ExecutionTimedOut"
    assert _entered(events) == ["W0"]


# ------------------------------------------------------------------------------------------------ Lambda tasks
ECHO_ARN = "arn:aws:lambda:us-east-1:123456789012:function:echo"


def _lambda_task(parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "StartAt": "Call",
        "States": {"Call": {"Type": "Task", "Resource": ECHO_ARN, "Parameters": parameters, "End": True}},
    }


def test_a_lambda_task_runs_the_registered_function_in_process(sfn: Any) -> None:
    # Given a function registered for its ARN (moto alone would need docker to run it)
    calls: list[Any] = []

    def echo(event: Any, _context: Any) -> Any:
        calls.append(event)
        return {"echo": event}

    register_function(ECHO_ARN, "replay", echo)
    # When a Lambda task calls it
    described, _events = _run(sfn, _lambda_task({"n.$": "$.n"}), {"n": 7})
    # Then it ran with the task's payload, and its result is the task's output
    assert described["status"] == "SUCCEEDED"
    assert calls == [{"n": 7}]
    assert json.loads(described["output"]) == {"echo": {"n": 7}}


def test_a_function_error_is_reported_as_lambda_reports_it(sfn: Any) -> None:
    # Given a function that raises
    def fails(_event: Any, _context: Any) -> Any:
        raise LookupError("no such page")

    register_function(ECHO_ARN, "replay", fails)
    # When a Lambda task calls it, Then the task fails with the error's type as its name, and its message as cause
    described, events = _run(sfn, _lambda_task({"n": 1}))
    assert described["status"] == "FAILED"
    failed = next(e["lambdaFunctionFailedEventDetails"] for e in events if e["type"] == "LambdaFunctionFailed")
    assert failed["error"] == "LookupError"
    assert json.loads(failed["cause"]) == {"errorType": "LookupError", "errorMessage": "no such page"}


def test_a_task_payload_over_256_kib_fails_with_data_limit_exceeded_before_the_function_runs(sfn: Any) -> None:
    # Given a state input under the quota whose task Parameters make a payload over it (the text twice)
    calls: list[Any] = []
    register_function(ECHO_ARN, "replay", lambda event, _context: calls.append(event))
    text = "x" * (TASK_PAYLOAD_LIMIT_BYTES // 2 + 1)
    # When the task runs
    described, events = _run(sfn, _lambda_task({"a.$": "$.text", "b.$": "$.text"}), {"text": text})
    # Then it fails as Step Functions fails it, and the function was never invoked
    assert described["status"] == "FAILED"
    assert described["error"] == "States.DataLimitExceeded"
    assert calls == []
    assert "LambdaFunctionSucceeded" not in {event["type"] for event in events}


def test_a_task_payload_just_under_the_quota_is_delivered(sfn: Any) -> None:
    # Given a payload a little under 256 KiB (the JSON's braces and names included)
    calls: list[Any] = []
    register_function(ECHO_ARN, "replay", lambda event, _context: calls.append(len(event["a"])))
    text = "x" * (TASK_PAYLOAD_LIMIT_BYTES // 2 - 64)
    # When the task sends it twice, Then the function gets it
    described, _events = _run(sfn, _lambda_task({"a.$": "$.text", "b.$": "$.text"}), {"text": text})
    assert described["status"] == "SUCCEEDED", described
    assert calls == [len(text)]
