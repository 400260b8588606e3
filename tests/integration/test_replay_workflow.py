"""The replay workflow executed by moto's Step Functions interpreter against moto's DynamoDB.

The definition is the one the stack deploys: the builder's JSON with the table name substituted the way
CloudFormation substitutes it (tests/infra/test_replay.py checks the template holds exactly that JSON, and runs
the synthesized one too). Executions go through `inbox_cli.replay.run_replay`, the CLI's own path. moto runs
with the local stack's corrections (inbox_local/step_functions.py): the 25,000-event history quota and the
startExecution integration as AWS runs them.
"""

from __future__ import annotations

import functools
import json
import shlex
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws

from inbox_cli import target as target_module
from inbox_cli.cost import replay_pages, replay_transitions
from inbox_cli.main import cli
from inbox_cli.replay import ReplayFailed, ReplayReport, ReplayRequest, normalize_time, run_replay
from inbox_local.config import LocalNames
from inbox_local.pipe import StreamPipe
from inbox_local.replay import (
    REPLAY_PAGE_FUNCTION_ARN,
    REPLAY_ROLE_ARN,
    ensure_replay_state_machine,
    local_replay_definition,
    register_page_function,
)
from inbox_local.resources import provision
from inbox_local.step_functions import CLOCK, register_function
from inbox_local.step_functions import install as install_step_functions_limits
from infra.replay_definition import (
    EXECUTION_HISTORY_EVENTS,
    EXECUTION_HISTORY_LIMIT,
    ITEM_HISTORY_EVENTS,
    MAX_EVENTS_LIMIT,
    MAX_PAGES_PER_EXECUTION,
    MAX_WAIT_SECONDS,
    PAGE_HISTORY_EVENTS,
    RETRY_HISTORY_EVENTS,
    RETRY_MAX_ATTEMPTS,
    TIMEOUT_SECONDS,
    execution_time_bound,
    history_bound,
    page_function_placeholder,
    replay_definition,
    table_placeholder,
)
from shared import definitions
from shared.inbox import lifecycle
from shared.inbox.model import EventStatus, iso_utc, open_status_value
from shared.inbox.store import InboxStore, StorageUnavailable, from_attributes, to_attributes
from shared.replay import handle as replay_handle

SMALL_BUDGET = 4


@dataclass
class ReplayWorld:
    names: LocalNames
    resources: dict[str, str]
    session: boto3.session.Session
    state_machine_arn: str

    # One client each for the world's lifetime (one test, one mock): a client per call cost more CPU than the
    # writes themselves when a test puts 1,000 items (botocore builds each client from its service model).
    @functools.cached_property
    def dynamodb(self) -> Any:
        return self.session.client("dynamodb")

    @functools.cached_property
    def sfn(self) -> Any:
        return self.session.client("stepfunctions")

    def newest_event(self, execution_arn: str) -> dict[str, Any]:
        """The last event of an execution's history, read alone (newest first, one event): its id is the history's
        length, as events are numbered from 1 (reading a 6,000-event history whole costs seconds of moto's CPU)."""
        page = self.sfn.get_execution_history(executionArn=execution_arn, reverseOrder=True, maxResults=1)
        event: dict[str, Any] = page["events"][0]
        return event

    def put(
        self,
        provider: str,
        status: str,
        *,
        day: int = 1,
        event_type: str = "payment_intent.succeeded",
        source: str | None = None,
        event_id: str | None = None,
    ) -> str:
        """An inbox item; with `source`, keyed and marked as that source's (without: the provider's default)."""
        pk = f"{source or provider}#{event_id or f'evt_{uuid.uuid4().hex[:12]}'}"
        item: dict[str, Any] = {
            "pk": pk,
            "provider": provider,
            **({"source": source} if source else {}),
            "event_id": pk.partition("#")[2],
            "event_type": event_type,
            "status": status,
            "received_at": f"2026-01-{day:02d}T12:00:00.000000Z",
            "dispatch_id": "original-dispatch",
            "dispatch_reason": "received",
            "group_id": f"{provider}#pay_{pk[-4:]}",
            "attempts": 8 if status == "failed" else 0,
        }
        if status in {"failed", "pending"}:
            item["open_status"] = open_status_value(EventStatus(status), pk)
        if status == "failed":
            item["last_error"] = "ResourceNotFound: pay_1"
        self.dynamodb.put_item(TableName=self.names.inbox_table, Item=to_attributes(item))
        return pk

    def items(self) -> dict[str, dict[str, Any]]:
        pages = self.dynamodb.get_paginator("scan").paginate(TableName=self.names.inbox_table)
        return {item["pk"]: item for page in pages for item in map(from_attributes, page["Items"])}

    def replay(
        self, *, state_machine_arn: str | None = None, poll_seconds: float = 0.05, **fields: Any
    ) -> ReplayReport:
        fields.setdefault("wait_seconds", 0)
        arn = state_machine_arn or self.state_machine_arn
        return run_replay(self.sfn, arn, ReplayRequest(**fields), poll_seconds=poll_seconds)

    def small_budget_state_machine(self) -> str:
        """The replay definition with per-execution bounds of a few events: a chain out of a handful."""
        definition = replay_definition(
            self.names.inbox_table,
            page_function=REPLAY_PAGE_FUNCTION_ARN,
            pages_per_execution=SMALL_BUDGET,
            items_per_execution=SMALL_BUDGET,
            ids_per_execution=SMALL_BUDGET,
        )
        created = self.sfn.create_state_machine(
            name="replay-small-budget", definition=json.dumps(definition), roleArn=REPLAY_ROLE_ARN
        )
        arn: str = created["stateMachineArn"]
        return arn

    def execute_raw(self, execution_input: dict[str, Any]) -> dict[str, Any]:
        arn = self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn, name=f"raw-{time.time_ns()}", input=json.dumps(execution_input)
        )["executionArn"]
        while (described := self.sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
            time.sleep(0.05)
        result: dict[str, Any] = described
        return result


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayWorld]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    names = LocalNames()
    monkeypatch.setenv(definitions.ENV_INBOX_TABLE, names.inbox_table)  # the page function's, as deployed
    install_step_functions_limits()
    register_page_function()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        session = boto3.session.Session(region_name="us-east-1")
        resources = provision(session, names)
        arn = ensure_replay_state_machine(session.client("stepfunctions"), names.inbox_table)
        yield ReplayWorld(names, resources, session, arn)


def test_the_local_state_machine_runs_the_definition_the_stack_deploys(world: ReplayWorld) -> None:
    deployed = (
        json.dumps(replay_definition(table_placeholder()))
        .replace(table_placeholder(), world.names.inbox_table)
        .replace(page_function_placeholder(), REPLAY_PAGE_FUNCTION_ARN)
    )
    assert json.loads(deployed) == local_replay_definition(world.names.inbox_table)
    assert world.sfn.describe_state_machine(stateMachineArn=world.state_machine_arn)["definition"] == deployed
    # Created once: asking again returns the same state machine
    assert ensure_replay_state_machine(world.sfn, world.names.inbox_table) == world.state_machine_arn


def test_a_dry_run_plans_and_changes_nothing(world: ReplayWorld) -> None:
    # Given failed, pending and settled events of two providers
    for _ in range(3):
        world.put("stripe", "failed", event_type="payment_intent.succeeded")
    world.put("stripe", "failed", event_type="charge.refunded")
    world.put("stripe", "pending")
    world.put("stripe", "processed")
    world.put("asaas", "failed", event_type="PAYMENT_RECEIVED")
    before = world.items()
    # When a dry run selects Stripe's failed events
    report = world.replay(provider="stripe", dry_run=True)
    # Then the plan counts them by provider, event type and status, and nothing was written
    assert world.items() == before
    assert report.complete and report.dry_run
    assert report.counts["selected"] == report.counts["planned"] == 4
    assert report.counts["replayed"] == 0
    planned = {"source": "stripe", "provider": "stripe", "status": "failed", "outcome": "planned"}
    assert report.plan() == [
        {**planned, "event_type": "payment_intent.succeeded", "count": 3},
        {**planned, "event_type": "charge.refunded", "count": 1},
    ]
    assert report.counts["pages"] == definitions.OPEN_EVENTS_SHARDS  # one (small) page per index shard
    assert len(report.executions) == 1  # far from any per-execution bound


def test_a_replay_of_one_source_leaves_the_other_sources_of_its_provider_alone(world: ReplayWorld) -> None:
    # Given failed events of two Stripe sources and of the default Stripe source (an item from before sources)
    brazil = {world.put("stripe", "failed", source="stripe-br") for _ in range(3)}
    us = {world.put("stripe", "failed", source="stripe-us") for _ in range(2)}
    default = world.put("stripe", "failed")
    # When the stripe-br source is replayed
    report = world.replay(provider="stripe", source="stripe-br")
    # Then its events, and only they, are pending again, and the report names the source
    items = world.items()
    assert {pk for pk, item in items.items() if item["status"] == "pending"} == brazil
    assert all(items[pk]["status"] == "failed" for pk in (*us, default))
    assert report.counts["replayed"] == 3 and report.to_json()["source"] == "stripe-br"
    assert {row["source"] for row in report.plan()} == {"stripe-br"}
    # And without a source the provider's default source is selected (what an input of an older CLI means)
    assert world.replay(provider="stripe").counts["replayed"] == 1
    assert world.items()[default]["status"] == "pending"
    # And by id, the key is the source's: stripe-us's event is found under stripe-us only
    us_id = next(iter(us)).partition("#")[2]
    assert world.replay(provider="stripe", source="stripe-br", event_ids=(us_id,)).counts["not_found"] == 1
    assert world.replay(provider="stripe", source="stripe-us", event_ids=(us_id,)).counts["replayed"] == 1


def test_a_replay_sets_only_the_selected_failed_events_back_to_pending(world: ReplayWorld) -> None:
    selected = {world.put("stripe", "failed") for _ in range(5)}
    others = {world.put("stripe", status) for status in ("pending", "processed", "ignored")}
    others.add(world.put("asaas", "failed"))
    before = world.items()

    report = world.replay(provider="stripe")

    assert report.counts["replayed"] == 5 and report.counts["skipped"] == 0
    assert {event["pk"] for event in report.events if event["outcome"] == "replayed"} == selected
    after = world.items()
    for pk in others:
        assert after[pk] == before[pk]
    for pk in selected:
        item = after[pk]
        assert item["status"] == "pending"
        assert item["open_status"] == before[pk]["open_status"].replace("failed#", "pending#")  # same shard
        assert item["open_status"] == open_status_value(EventStatus.PENDING, pk)
        assert item["dispatch_reason"] == "replay"
        assert item["dispatch_id"] != "original-dispatch"
        # a fresh one, as the lifecycle makes them: SQS FIFO does not deduplicate it away
        assert len(item["dispatch_id"]) == len(lifecycle.new_dispatch_id())
        assert item["attempts"] == 0
        assert "last_error" not in item
        assert item["replayed_by"] == report.execution_arn
        assert item["replayed_at"] and item["dispatched_at"] == item["replayed_at"]
        assert item["received_at"] == before[pk]["received_at"]  # the event's history is kept
    assert len({after[pk]["dispatch_id"] for pk in selected}) == 5


def test_running_it_again_changes_nothing_more(world: ReplayWorld) -> None:
    for _ in range(3):
        world.put("stripe", "failed")
    world.replay(provider="stripe")
    after_first = world.items()

    again = world.replay(provider="stripe")

    assert again.counts["selected"] == again.counts["replayed"] == 0
    assert world.items() == after_first


def test_replayed_writes_are_what_the_pipe_dispatches(world: ReplayWorld) -> None:
    # Given the Pipe emulation (the deployed Pipe's filter, group id and dedup id) has drained what is there
    pipe = StreamPipe(world.session, world.resources["stream_arn"], world.resources["queue_url"])
    failed = [world.put("stripe", "failed") for _ in range(3)]
    world.put("stripe", "processed")
    pipe.poll_once()  # failed and processed inserts are filtered out
    # When they are replayed
    world.replay(provider="stripe")
    # Then each replayed event is enqueued once, in its payment's group, with its new dispatch id
    assert pipe.poll_once() == 3
    sqs = world.session.client("sqs")
    received = sqs.receive_message(
        QueueUrl=world.resources["queue_url"], MaxNumberOfMessages=10, AttributeNames=["All"]
    )["Messages"]
    items = world.items()
    bodies = {json.loads(m["Body"])["pk"]: (json.loads(m["Body"]), m["Attributes"]) for m in received}
    assert set(bodies) == set(failed)
    for pk, (body, attributes) in bodies.items():
        assert body == {"pk": pk, "dispatch_id": items[pk]["dispatch_id"], "dispatch_reason": "replay"}
        assert attributes["MessageGroupId"] == items[pk]["group_id"]
        assert attributes["MessageDeduplicationId"] == items[pk]["dispatch_id"]


def test_since_and_until_bound_the_received_time(world: ReplayWorld) -> None:
    by_day = {day: world.put("stripe", "failed", day=day) for day in (1, 5, 10, 20)}
    report = world.replay(provider="stripe", since="2026-01-05", until="2026-01-10T23:59:59Z")
    assert {event["pk"] for event in report.events if event["outcome"] == "replayed"} == {by_day[5], by_day[10]}
    assert world.items()[by_day[1]]["status"] == "failed"
    assert world.items()[by_day[20]]["status"] == "failed"


def test_pending_events_can_be_selected_too(world: ReplayWorld) -> None:
    stuck = world.put("stripe", "pending")
    world.put("stripe", "failed")
    report = world.replay(provider="stripe", status="pending")
    assert [(e["pk"], e["outcome"]) for e in report.events] == [(stuck, "replayed")]
    item = world.items()[stuck]
    assert (item["status"], item["dispatch_reason"]) == ("pending", "replay")
    assert item["dispatch_id"] != "original-dispatch"


def test_by_id_replays_the_named_events_that_are_in_the_selected_status(world: ReplayWorld) -> None:
    failed = world.put("stripe", "failed")
    processed = world.put("stripe", "processed")
    untouched = world.put("stripe", "failed")
    report = world.replay(
        provider="stripe", event_ids=(failed.partition("#")[2], processed.partition("#")[2], "evt_missing")
    )
    outcomes = {event["pk"]: event["outcome"] for event in report.events}
    assert outcomes == {failed: "replayed", processed: "not_selected", "stripe#evt_missing": "not_found"}
    assert (report.counts["replayed"], report.counts["not_selected"], report.counts["not_found"]) == (1, 1, 1)
    items = world.items()
    assert items[failed]["status"] == "pending"
    assert items[processed]["status"] == "processed"
    assert items[untouched]["status"] == "failed"


def put_raced(world: ReplayWorld) -> str:
    """An item the index still lists as failed while it is already pending again (what a read racing the processor
    or another replay sees)."""
    pk = world.put("stripe", "pending")
    world.dynamodb.update_item(
        TableName=world.names.inbox_table,
        Key={"pk": {"S": pk}},
        UpdateExpression="SET open_status = :open",
        ExpressionAttributeValues={":open": {"S": open_status_value(EventStatus.FAILED, pk)}},
    )
    return pk


def test_an_event_that_changed_after_it_was_read_is_skipped(world: ReplayWorld) -> None:
    # Given an item the index still lists as failed while it is already pending again
    pk = put_raced(world)
    before = world.items()[pk]
    report = world.replay(provider="stripe")
    # Then the conditional update refuses it: counted as skipped, unchanged
    assert [(e["pk"], e["outcome"]) for e in report.events] == [(pk, "skipped")]
    assert report.counts["skipped"] == 1 and report.counts["replayed"] == 0
    assert world.items()[pk] == before


def test_pages_and_the_per_execution_limit(world: ReplayWorld) -> None:
    pks = {world.put("stripe", "failed") for _ in range(40)}
    for _ in range(10):
        world.put("asaas", "failed")  # read (Limit counts before the provider filter) but never selected
    first = world.replay(provider="stripe", page_size=3, max_events=10)
    assert not first.complete
    assert 10 <= first.counts["replayed"] < 10 + 3  # stops at the first page boundary at or after the limit
    rest = world.replay(provider="stripe", page_size=3, max_events=MAX_EVENTS_LIMIT)
    assert rest.complete
    assert first.counts["replayed"] + rest.counts["replayed"] == 40
    replayed = {e["pk"] for report in (first, rest) for e in report.events if e["outcome"] == "replayed"}
    assert replayed == pks
    assert all(item["status"] == "pending" for pk, item in world.items().items() if pk in pks)


def test_it_waits_between_pages_that_wrote(world: ReplayWorld) -> None:
    for _ in range(2):
        world.put("stripe", "failed")
    started = time.monotonic()
    report = world.replay(provider="stripe", wait_seconds=1)
    assert report.counts["replayed"] == 2
    # Each event is in some shard; a page (or shard) that wrote is followed by a one-second wait.
    assert time.monotonic() - started >= 1
    world.put("stripe", "failed")
    started = time.monotonic()
    world.replay(provider="stripe", dry_run=True, wait_seconds=300)
    assert time.monotonic() - started < 60  # a dry run writes nothing, so it never waits


@pytest.mark.parametrize(
    "execution_input",
    [
        {},
        {"provider": 7},
        {"provider": "stripe", "status": "processed"},
        {"provider": "stripe", "dry_run": "yes"},
        {"provider": "stripe", "page_size": 0},
        {"provider": "stripe", "page_size": "ten"},
        {"provider": "stripe", "wait_seconds": 301},
        {"provider": "stripe", "max_events": MAX_EVENTS_LIMIT + 1},
        {"provider": "stripe", "since": "2026-02-01", "until": "2026-01-01"},
        {"provider": "stripe", "event_ids": []},
        {"provider": "stripe", "source": 7},
    ],
)
def test_invalid_input_fails_the_execution_before_anything_is_read(world: ReplayWorld, execution_input) -> None:
    pk = world.put("stripe", "failed")
    described = world.execute_raw(execution_input)
    assert (described["status"], described["error"]) == ("FAILED", "Replay.InvalidInput")
    assert world.items()[pk]["status"] == "failed"


def test_the_cli_reports_a_failed_execution(world: ReplayWorld) -> None:
    with pytest.raises(ReplayFailed, match=r"Replay\.InvalidInput"):
        world.replay(provider="stripe", page_size=1000)


def test_times_are_normalized_to_the_items_format() -> None:
    assert normalize_time("2026-01-05") == "2026-01-05T00:00:00.000000Z"
    assert normalize_time("2026-01-05T10:00:00Z") == "2026-01-05T10:00:00.000000Z"
    assert normalize_time("2026-01-05T10:00:00-03:00") == "2026-01-05T13:00:00.000000Z"
    with pytest.raises(ValueError, match="ISO-8601"):
        normalize_time("yesterday")


def test_a_replay_beyond_one_executions_budget_continues_in_new_executions_and_is_reported_as_one(
    world: ReplayWorld,
) -> None:
    # Given a replay workflow whose executions may each handle only a few events, and more events than that
    machine = world.small_budget_state_machine()
    pks = {world.put("stripe", "failed") for _ in range(5 * SMALL_BUDGET)}
    # When a dry run, then a replay, select them
    plan = world.replay(state_machine_arn=machine, provider="stripe", dry_run=True, page_size=2)
    report = world.replay(state_machine_arn=machine, provider="stripe", page_size=2)
    # Then the dry run followed a chain of executions and planned each event once
    assert len(plan.executions) >= 3 and plan.counts["planned"] == len(pks) and plan.complete
    # And the replay ran as a chain: each execution started the next, which resumed where it stopped
    assert len(report.executions) >= 3 and report.complete
    assert report.counts["replayed"] == len(pks)
    assert sorted(event["pk"] for event in report.events) == sorted(pks)  # each exactly once
    assert sum(counts["replayed"] for counts in report.counts_by_execution) == len(pks)
    assert all(counts["pages"] <= SMALL_BUDGET for counts in report.counts_by_execution)
    items = world.items()
    for pk in pks:
        assert items[pk]["status"] == "pending"
        assert items[pk]["replayed_by"] in report.executions
    # And each successor knows who started it (the console links them) and which link of the chain it is
    for index, (predecessor, successor) in enumerate(zip(report.executions, report.executions[1:], strict=False)):
        started = json.loads(world.sfn.describe_execution(executionArn=successor)["input"])
        assert started["AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"] == predecessor
        assert started["resume"]["execution"] == index + 2
    assert report.to_json()["executions"] == report.executions


def test_the_per_replay_limit_holds_across_executions(world: ReplayWorld) -> None:
    machine = world.small_budget_state_machine()
    for _ in range(4 * SMALL_BUDGET):
        world.put("stripe", "failed")
    report = world.replay(state_machine_arn=machine, provider="stripe", page_size=1, max_events=2 * SMALL_BUDGET + 1)
    assert not report.complete and len(report.executions) >= 2
    assert report.counts["replayed"] == 2 * SMALL_BUDGET + 1  # page size 1: stops exactly at the limit


def test_replay_by_id_beyond_one_execution_continues_with_the_next_chunk(world: ReplayWorld) -> None:
    machine = world.small_budget_state_machine()
    failed = [world.put("stripe", "failed") for _ in range(3)]
    ids = tuple(pk.partition("#")[2] for pk in failed) + tuple(f"evt_missing_{n}" for n in range(SMALL_BUDGET + 2))
    report = world.replay(state_machine_arn=machine, provider="stripe", event_ids=ids)
    assert len(report.executions) == 3  # chunks of SMALL_BUDGET ids
    assert report.counts["replayed"] == 3 and report.counts["not_found"] == SMALL_BUDGET + 2
    assert [event["pk"].partition("#")[2] for event in report.events] == list(ids)  # in order, each once


@pytest.fixture
def paced_hours_in_seconds() -> Iterator[None]:
    """The local executions' Wait seconds pass without real time (inbox_local/step_functions.py CLOCK); their
    TimeoutSeconds is still enforced, on that clock."""
    before = CLOCK.scale
    CLOCK.scale = float("inf")
    try:
        yield
    finally:
        CLOCK.scale = before


def test_a_slowly_paced_replay_continues_before_its_executions_time_out(
    world: ReplayWorld, paced_hours_in_seconds: None
) -> None:
    # Given more failed events than fit the timeout at the slowest pace: one per page, 300 s after each page
    events = 2 * definitions.OPEN_EVENTS_SHARDS
    assert (events - 1) * MAX_WAIT_SECONDS > TIMEOUT_SECONDS
    pks = {world.put("stripe", "failed") for _ in range(events)}
    # When they are replayed with the deployed definition (TimeoutSeconds enforced on the scaled clock)
    report = world.replay(provider="stripe", page_size=1, wait_seconds=MAX_WAIT_SECONDS, poll_seconds=0.01)
    # Then every execution of the chain ended before its timeout, having continued in a new one in time
    assert report.complete and len(report.executions) > 1
    for execution in report.executions:
        assert world.sfn.describe_execution(executionArn=execution)["status"] == "SUCCEEDED"
    # And each event was replayed exactly once
    assert sorted(event["pk"] for event in report.events) == sorted(pks)
    assert all(item["status"] == "pending" for pk, item in world.items().items() if pk in pks)
    # And the bound the definition holds to is below the timeout
    assert execution_time_bound() < TIMEOUT_SECONDS


def test_without_the_time_budget_an_execution_times_out_mid_chain(world: ReplayWorld, paced_hours_in_seconds: None):
    # Given the same replay, on a definition that never continues for time (only for its history budget)
    definition = replay_definition(
        world.names.inbox_table, page_function=REPLAY_PAGE_FUNCTION_ARN, wait_budget_seconds=10**9
    )
    machine = world.sfn.create_state_machine(
        name="replay-no-time-budget", definition=json.dumps(definition), roleArn=REPLAY_ROLE_ARN
    )["stateMachineArn"]
    pks = {world.put("stripe", "failed") for _ in range(2 * definitions.OPEN_EVENTS_SHARDS)}
    # When it runs at the slowest pace
    with pytest.raises(ReplayFailed, match="TIMED_OUT"):
        world.replay(state_machine_arn=machine, provider="stripe", page_size=1, wait_seconds=MAX_WAIT_SECONDS)
    # Then it stopped at its timeout with events left unreplayed, and started no successor
    items = world.items()
    assert 0 < sum(items[pk]["status"] == "pending" for pk in pks) < len(pks)
    assert len(world.sfn.list_executions(stateMachineArn=machine)["executions"]) == 1


@pytest.mark.slow
def test_a_replay_of_1000_events_page_size_1_runs_to_the_end_within_the_history_quota(world: ReplayWorld) -> None:
    # Given 1,000 failed events (the per-replay maximum), read one per page: ~20 history events per event, ~38 with
    # each page's task retried to its last attempt, so that one execution could fail
    pks = {world.put("stripe", "failed") for _ in range(MAX_EVENTS_LIMIT)}
    retried = RETRY_HISTORY_EVENTS * RETRY_MAX_ATTEMPTS
    assert MAX_EVENTS_LIMIT * (PAGE_HISTORY_EVENTS + ITEM_HISTORY_EVENTS + retried) > EXECUTION_HISTORY_LIMIT
    # When they are replayed with page size 1 (polled as often as the CLI polls: a describe every 50 ms takes moto
    # CPU, and so the GIL, from the execution it watches)
    report = world.replay(provider="stripe", page_size=1, max_events=MAX_EVENTS_LIMIT, poll_seconds=1.0)
    # Then the replay finished, as several executions, and replayed every event once
    assert report.complete
    assert report.counts["replayed"] == MAX_EVENTS_LIMIT and len(report.events) == MAX_EVENTS_LIMIT
    assert {event["pk"] for event in report.events} == pks
    assert len(report.executions) >= MAX_EVENTS_LIMIT // MAX_PAGES_PER_EXECUTION
    # And each execution succeeded, its history far from the quota the local stack enforces
    newest = [world.newest_event(arn) for arn in report.executions]
    assert [event["type"] for event in newest] == ["ExecutionSucceeded"] * len(report.executions)
    lengths = [event["id"] for event in newest]
    assert max(lengths) <= EXECUTION_HISTORY_EVENTS + MAX_PAGES_PER_EXECUTION * (
        PAGE_HISTORY_EVENTS + ITEM_HISTORY_EVENTS
    )
    assert max(lengths) < history_bound() < EXECUTION_HISTORY_LIMIT


def test_the_workflows_replay_and_the_owners_replay_write_leave_the_same_item(world: ReplayWorld) -> None:
    # Given two failed events alike in everything but their key
    by_workflow, by_owner = world.put("stripe", "failed"), world.put("stripe", "failed")
    # When the workflow replays one, and the other is sent the lifecycle's replay write directly
    report = world.replay(provider="stripe", event_ids=(by_workflow.partition("#")[2],))
    assert report.counts["replayed"] == 1
    update = lifecycle.replay_update(
        selected=lifecycle.text_value("failed"),
        open_status=lifecycle.text_value(open_status_value(EventStatus.PENDING, by_owner)),
        dispatch_id=lifecycle.text_value(str(uuid.uuid4())),
        now=lifecycle.text_value(iso_utc(datetime.now(UTC))),
        replayed_by=lifecycle.text_value(report.execution_arn),
    )
    world.dynamodb.update_item(TableName=world.names.inbox_table, Key={"pk": {"S": by_owner}}, **update)
    # Then both items are the same, but for what is each one's own (key, shard) or each write's own (id, time)
    items = world.items()
    own = {"pk", "event_id", "open_status", "dispatch_id", "dispatched_at", "replayed_at", "group_id"}
    assert {k: v for k, v in items[by_workflow].items() if k not in own} == {
        k: v for k, v in items[by_owner].items() if k not in own
    }
    for pk in (by_workflow, by_owner):
        assert items[pk]["open_status"] == open_status_value(EventStatus.PENDING, pk)
        assert items[pk]["dispatched_at"] == items[pk]["replayed_at"]
        assert set(items[pk]) == set(items[by_workflow])


def test_inbox_replay_source_replays_that_source_only(
    world: ReplayWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the local stack's sources.json of two Stripe accounts, and failed events of each
    sources = tmp_path / "sources.json"
    accounts = [{"name": "stripe-br", "provider": "stripe"}, {"name": "stripe-us", "provider": "stripe"}]
    sources.write_text(json.dumps(accounts))
    monkeypatch.setenv(definitions.ENV_SOURCES_FILE, str(sources))
    monkeypatch.delenv(definitions.ENV_SOURCES, raising=False)
    monkeypatch.setattr(target_module, "aws_environment", lambda endpoints: {})  # moto serves this process
    brazil = {world.put("stripe", "failed", source="stripe-br") for _ in range(2)}
    us = world.put("stripe", "failed", source="stripe-us")

    def inbox(command: str) -> Any:
        result = CliRunner().invoke(cli, shlex.split(command)[1:])
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    # When `inbox replay --source stripe-br --dry-run` runs, Then it plans that source's events and changes nothing
    plan = inbox("inbox replay --source stripe-br --dry-run --json")
    assert (plan["source"], plan["counts"]["planned"]) == ("stripe-br", 2)
    assert all(item["status"] == "failed" for item in world.items().values())
    # When `inbox replay --source stripe-br` runs, Then its events, and only they, are pending again
    assert inbox("inbox replay --source stripe-br --json")["counts"]["replayed"] == 2
    assert {pk for pk, item in world.items().items() if item["status"] == "pending"} == brazil
    assert world.items()[us]["status"] == "failed"
    # And --provider replays every source of the provider, one report each
    reports = inbox("inbox replay --provider stripe --json")
    assert [(r["source"], r["counts"]["replayed"]) for r in reports] == [("stripe-br", 0), ("stripe-us", 1)]
    # And a source the stack does not declare is refused
    refused = CliRunner().invoke(cli, ["replay", "--source", "stripe-mx"])
    assert refused.exit_code == 2 and "no source 'stripe-mx'" in refused.output


def _states_entered(world: ReplayWorld) -> Counter[str]:
    """State transitions Step Functions bills (one per state entered), by state name, over every execution of the
    state machine."""
    arns = [e["executionArn"] for e in world.sfn.list_executions(stateMachineArn=world.state_machine_arn)["executions"]]
    pages = (world.sfn.get_paginator("get_execution_history").paginate(executionArn=arn) for arn in arns)
    events = (event for each in pages for page in each for event in page["events"])
    return Counter(
        event["stateEnteredEventDetails"]["name"] for event in events if event["type"].endswith("StateEntered")
    )


def test_the_cost_models_state_transitions_per_replayed_event_are_the_definitions(world: ReplayWorld) -> None:
    # Given 230 failed events of one source: more than one execution's budget, in pages of the default size
    for _ in range(230):
        world.put("stripe", "failed")
    # When one replay sets them back to pending
    report = world.replay(provider="stripe", max_events=MAX_EVENTS_LIMIT)
    assert report.counts["replayed"] == 230
    # Then the states its executions entered (what Step Functions bills) are the cost model's count for the pages
    # it read (how many depends on how the events fell into the index's shards), within 10 %
    states = _states_entered(world)
    entered, pages = states.total(), states["PageMode"]
    assert abs(replay_transitions(230, pages=pages) - entered) <= 0.1 * entered, (replay_transitions(230), states)
    # And the model's own estimate of the pages is within two pages of them
    assert abs(replay_pages(230) - pages) <= 2, (replay_pages(230), pages)
    # And no state was entered per event: each page that wrote entered one task, however many events it held
    assert max(states.values()) < 230 / 10, states
    assert states["ReplayPage"] == pages


def test_a_planned_event_enters_one_state_and_a_replayed_page_one_whatever_its_events(world: ReplayWorld) -> None:
    # Given two failed events, and one the index lists as failed while it is already pending again (a lost race)
    for _ in range(2):
        world.put("stripe", "failed")
    put_raced(world)
    # When a dry run plans them, Then each planned event entered one state (its Pass), and no UpdateItem ran
    assert world.replay(provider="stripe", dry_run=True).counts["planned"] == 3
    planned = _states_entered(world)
    assert (planned["Planned"], planned["ReplayPage"], planned["PageMode"]) == (3, 0, definitions.OPEN_EVENTS_SHARDS)
    # When they are replayed, Then each page with events entered one task (the page function), none per event,
    # the refused event included
    report = world.replay(provider="stripe")
    assert (report.counts["replayed"], report.counts["skipped"]) == (2, 1)
    replayed = _states_entered(world) - planned
    assert replayed["ReplayPage"] == planned["PlanPage"]  # the pages that held events: one per shard with any
    assert (replayed["Planned"], replayed["PageMode"]) == (0, definitions.OPEN_EVENTS_SHARDS)


def _ids_in_one_shard(provider: str, count: int) -> list[str]:
    """Event ids whose items fall into one shard of the open-events index: one page of the replay."""
    ids = (f"evt_shard_{n}" for n in range(10_000))
    return [i for i in ids if open_status_value(EventStatus.FAILED, f"{provider}#{i}").endswith("#0")][:count]


def test_a_page_task_that_crashes_halfway_is_retried_and_replays_each_event_once(world: ReplayWorld) -> None:
    # Given six failed events in one page, and a page function whose first attempt crashes after three writes
    pks = [world.put("stripe", "failed", event_id=event_id) for event_id in _ids_in_one_shard("stripe", 6)]
    attempts: list[int] = []
    after_crash: dict[str, dict[str, Any]] = {}

    class CrashingStore(InboxStore):
        def replay(self, pk: str, **kwargs: Any) -> bool:
            if len(attempts) == 1 and sum(1 for a in after_crash.values() if a) == 3:
                after_crash.update(world.items())
                raise StorageUnavailable("inbox update failed: ThrottlingException")
            replayed = super().replay(pk, **kwargs)
            after_crash.setdefault(pk, {"written": True})
            return replayed

    def crashing_page(event: Any, _context: Any) -> Any:
        attempts.append(len(event["items"]))
        return replay_handle(event, store=CrashingStore(world.names.inbox_table, dynamodb=world.dynamodb))

    register_function(REPLAY_PAGE_FUNCTION_ARN, "replay", crashing_page)
    try:
        # When they are replayed
        report = world.replay(provider="stripe")
    finally:
        register_page_function()
    # Then the page was applied twice (the crash, then the state machine's retry of the whole page)
    assert attempts == [6, 6]
    # And every event was replayed once: reported replayed (none skipped), and the three the first attempt wrote
    # were not written again (their dispatch id and replay time are the first attempt's)
    assert (report.counts["replayed"], report.counts["skipped"]) == (6, 0)
    assert sorted(event["pk"] for event in report.events) == sorted(pks)
    final = world.items()
    written_first = [pk for pk in pks if after_crash[pk].get("status") == "pending"]
    assert len(written_first) == 3
    for pk in written_first:
        assert (final[pk]["dispatch_id"], final[pk]["replayed_at"]) == (
            after_crash[pk]["dispatch_id"],
            after_crash[pk]["replayed_at"],
        )
    assert all(final[pk]["status"] == "pending" and final[pk]["replayed_by"] == report.execution_arn for pk in pks)
    # And the failed attempt is in the execution's history, as Step Functions records a function's error
    history = world.sfn.get_execution_history(executionArn=report.execution_arn, maxResults=1000)["events"]
    failures = [e["lambdaFunctionFailedEventDetails"]["error"] for e in history if e["type"] == "LambdaFunctionFailed"]
    assert failures == ["StorageUnavailable"]


def test_a_page_applied_again_leaves_the_pending_events_it_replayed_alone(world: ReplayWorld) -> None:
    # Given a pending event replayed by one execution
    pk = world.put("stripe", "pending")
    store = InboxStore(world.names.inbox_table, dynamodb=world.dynamodb)
    assert store.replay(pk, selected=EventStatus.PENDING, now="2026-01-02T00:00:00.000000Z", replayed_by="arn:1")
    first = world.items()[pk]
    # When the same execution applies its page again (a retried task), Then it is reported replayed and not written
    assert store.replay(pk, selected=EventStatus.PENDING, now="2026-01-02T00:00:09.000000Z", replayed_by="arn:1")
    assert world.items()[pk] == first
    # And another execution (a new replay) replays it again
    assert store.replay(pk, selected=EventStatus.PENDING, now="2026-01-02T00:01:00.000000Z", replayed_by="arn:2")
    assert world.items()[pk]["dispatch_id"] != first["dispatch_id"]
    # And an event that left the selected status otherwise is not replayed (skipped)
    processed = world.put("stripe", "processed")
    assert not store.replay(
        processed, selected=EventStatus.FAILED, now="2026-01-02T00:00:00.000000Z", replayed_by="arn:1"
    )
