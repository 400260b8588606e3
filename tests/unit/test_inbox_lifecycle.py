"""The inbox item's lifecycle as data: which write moves an item from which status to which, what each write's
request says, and that the replay workflow embeds the very request the owner builds."""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from typing import Any

import pytest

from infra.replay_definition import SELECTABLE_STATUSES, replay_definition
from shared import definitions
from shared.inbox import lifecycle
from shared.inbox.lifecycle import LIFECYCLE, DispatchReason, EventStatus, IgnoredReason, Write, text_value

PENDING, PROCESSED, IGNORED, FAILED = (
    EventStatus.PENDING,
    EventStatus.PROCESSED,
    EventStatus.IGNORED,
    EventStatus.FAILED,
)

# Every transition the inbox allows, written out by hand: (from, to) -> the writes that make it. `None` is "no
# item yet". Any pair not listed must be refused.
EXPECTED: dict[tuple[EventStatus | None, EventStatus], set[Write]] = {
    (None, PENDING): {Write.RECEIVE},
    (None, FAILED): {Write.RECEIVE},  # signed but unparseable: stored, never dropped
    (None, IGNORED): {Write.RECEIVE},  # unparseable, and its scheme does not bind the body: proves nothing
    (PENDING, PENDING): {Write.ATTEMPT, Write.WAIT, Write.REDISPATCH, Write.REPLAY},
    (PENDING, PROCESSED): {Write.SETTLE},
    (PENDING, IGNORED): {Write.SETTLE},
    (PENDING, FAILED): {Write.FAIL, Write.GIVE_UP},
    (FAILED, PENDING): {Write.REPLAY},
}
STATUSES_OR_NONE: list[EventStatus | None] = [None, *EventStatus]


def a_request(write: Write) -> dict[str, Any]:
    """The request of each write with sample values."""
    pk = "stripe#evt_1"
    match write:
        case Write.ATTEMPT:
            return lifecycle.attempt_update(error="GatewayUnavailable", now="t1")
        case Write.SETTLE:
            return lifecycle.settle_update(PROCESSED, note="paid", now="t1")
        case Write.FAIL | Write.GIVE_UP:
            return lifecycle.fail_update(pk, error="rejected", now="t1", counts_attempt=write is Write.FAIL)
        case Write.WAIT:
            return lifecycle.wait_update(until="t2", waiting_for=lifecycle.WaitingFor.CIRCUIT, now="t1")
        case Write.REDISPATCH:
            return lifecycle.redispatch_update(group_id="g", now="t1", seen_dispatch_id="d0", quiet_since="t0")
        case Write.REPLAY:
            return lifecycle.replay_update(
                selected=text_value("failed"),
                open_status=text_value(lifecycle.open_status_value(PENDING, pk)),
                dispatch_id=text_value(lifecycle.new_dispatch_id()),
                now=text_value("t1"),
                replayed_by=text_value("arn:execution"),
            )
    raise AssertionError(write)


UPDATES = [write for write in Write if write is not Write.RECEIVE]


@pytest.mark.parametrize(("source", "target"), list(itertools.product(STATUSES_OR_NONE, EventStatus)))
def test_every_transition_is_allowed_exactly_when_the_table_lists_it(source, target):
    # Given a pair of statuses (from, to)
    # When the lifecycle is asked which writes make it
    writes = lifecycle.writes_between(source, target)
    # Then it is exactly the hand-written expectation: nothing else moves an item
    assert writes == EXPECTED.get((source, target), set())
    assert ((source, target) in lifecycle.allowed_transitions()) == ((source, target) in EXPECTED)


def test_settled_items_never_move_again():
    # Given the settled statuses
    for settled in (PROCESSED, IGNORED):
        # Then no write takes an item out of them (a late redelivery or a replay cannot reopen one)
        assert not any(lifecycle.writes_between(settled, target) for target in EventStatus)


def test_the_writes_that_dispatch_are_the_ones_the_pipe_filter_passes():
    # Given the Pipe's filter: a write that leaves the item pending with one of these reasons is enqueued
    passing = set(definitions.PIPE_FILTER_PATTERN["dynamodb"]["NewImage"]["dispatch_reason"]["S"])
    assert definitions.PIPE_FILTER_PATTERN["dynamodb"]["NewImage"]["status"]["S"] == [PENDING.value]
    # Then the dispatching reasons are those, and only the receive, the re-dispatch and the replay dispatch
    assert {reason.value for reason in lifecycle.DISPATCHING_REASONS} == passing
    assert {write for write, row in LIFECYCLE.items() if row.dispatches} == {
        Write.RECEIVE,
        Write.REDISPATCH,
        Write.REPLAY,
    }
    # And the processor's own writes on a pending item say "attempt" or "wait", which the filter drops
    assert LIFECYCLE[Write.ATTEMPT].dispatch_reason is DispatchReason.ATTEMPT
    assert LIFECYCLE[Write.WAIT].dispatch_reason is DispatchReason.WAIT
    assert DispatchReason.ATTEMPT.value not in passing and DispatchReason.WAIT.value not in passing


@pytest.mark.parametrize("write", UPDATES)
def test_each_update_is_conditioned_on_the_status_it_moves_the_item_from(write):
    # When a write's request is built
    request = a_request(write)
    values = request["ExpressionAttributeValues"]
    # Then its condition starts with the status check, and the status it expects is one of its row's sources
    assert request["ConditionExpression"].startswith("#status = :expected_status")
    assert EventStatus(values[":expected_status"]["S"]) in LIFECYCLE[write].sources
    # And every placeholder is used and every one used is given (DynamoDB refuses either mistake)
    expressions = request["UpdateExpression"] + " " + request["ConditionExpression"]
    used = {token.rstrip(",)") for token in expressions.split() if token.startswith(":")}
    assert used == set(values)


@pytest.mark.parametrize("write", UPDATES)
def test_a_dispatching_update_sets_a_fresh_dispatch_id_and_its_reason(write):
    row = LIFECYCLE[write]
    first, second = a_request(write), a_request(write)
    expression = first["UpdateExpression"]
    if row.dispatches:
        # Then it sets a new dispatch id (a fresh FIFO deduplication id) and dispatched_at (the sweeper's clock)
        assert "dispatch_id = :dispatch_id" in expression and "dispatched_at = :now" in expression
        assert first["ExpressionAttributeValues"][":dispatch_reason"] == text_value(str(row.dispatch_reason))
        assert first["ExpressionAttributeValues"][":dispatch_id"] != second["ExpressionAttributeValues"][":dispatch_id"]
    else:
        # Or, when it does not dispatch, it never touches the dispatch id
        assert "dispatch_id =" not in expression


def test_what_each_update_does_to_attempts_errors_and_the_open_events_index():
    expressions = {write: a_request(write)["UpdateExpression"] for write in UPDATES}
    counted = "attempts = if_not_exists(attempts, :zero) + :one"
    # Then attempts are counted by an attempt, a settle and a failing attempt; reset by a replay; kept otherwise
    assert {write for write, expression in expressions.items() if counted in expression} == {
        Write.ATTEMPT,
        Write.SETTLE,
        Write.FAIL,
    }
    assert "attempts = :zero" in expressions[Write.REPLAY]
    assert "attempts" not in expressions[Write.REDISPATCH] and "attempts" not in expressions[Write.GIVE_UP]
    # And a wait is no attempt: it only says until when the event waits and for what
    assert expressions[Write.WAIT] == (
        "SET dispatch_reason = :dispatch_reason, wait_until = :wait_until, waiting_for = :waiting_for"
    )
    # And a settled item leaves the open-events index, forgets its last error, its dispatch marks and any wait (it
    # is never dispatched again: the settle's item is no larger than the received one); a failed one stays in the
    # index
    assert expressions[Write.SETTLE].endswith(
        "REMOVE open_status, last_error, dispatch_id, dispatch_reason, dispatched_at, wait_until, waiting_for"
    )
    assert "open_status = :open_status" in expressions[Write.FAIL]
    assert expressions[Write.REPLAY].endswith("REMOVE last_error")


def test_a_failure_that_feeds_the_outbox_is_conditioned_on_the_count_it_read():
    # Given a writer that read 2 failures
    request = lifecycle.fail_update("stripe#evt_1", error="e", now="t", counts_attempt=True, failures_seen=2)
    # Then it writes the third, only if the count is still 2
    assert "failures = :failures" in request["UpdateExpression"]
    assert request["ConditionExpression"].endswith("AND failures = :seen_failures")
    assert request["ExpressionAttributeValues"][":failures"] == {"N": "3"}
    # And the first failure requires that none was counted yet
    first = lifecycle.fail_update("stripe#evt_1", error="e", now="t", counts_attempt=True, failures_seen=0)
    assert first["ConditionExpression"].endswith("AND attribute_not_exists(failures)")


def test_a_redispatch_is_refused_once_anyone_else_dispatched_or_attempted_the_event_or_while_it_waits():
    read = lifecycle.redispatch_update(group_id="g", now="t1", seen_dispatch_id="d0", quiet_since="t0")
    never = lifecycle.redispatch_update(group_id="g", now="t1", seen_dispatch_id=None, quiet_since="t0")
    assert read["ConditionExpression"] == (
        "#status = :expected_status AND dispatch_id = :seen_dispatch_id"
        " AND (attribute_not_exists(last_attempt_at) OR last_attempt_at < :quiet_since)"
        " AND (attribute_not_exists(wait_until) OR wait_until < :quiet_since)"
    )
    assert "attribute_not_exists(dispatch_id)" in never["ConditionExpression"]


def test_a_write_to_a_status_its_row_does_not_list_is_refused_before_any_request():
    with pytest.raises(ValueError, match="not pending"):
        lifecycle.settle_update(PENDING, note="n", now="t")
    with pytest.raises(ValueError, match="not processed"):
        lifecycle.received_attributes("stripe#evt_1", PROCESSED, received_at="t")
    with pytest.raises(ValueError, match="not ignored"):
        lifecycle.replay_update(
            selected=text_value("ignored"),
            open_status=text_value("pending#1"),
            dispatch_id=text_value("d"),
            now=text_value("t"),
            replayed_by=text_value("arn"),
        )


def test_a_received_item_carries_its_dispatch_only_when_pending():
    pending = lifecycle.received_attributes("stripe#evt_1", PENDING, received_at="t0")
    unparseable = lifecycle.received_attributes("stripe#evt_2", FAILED, received_at="t0", error="bad json")
    assert pending["dispatch_reason"] == "received" and pending["dispatch_id"]
    # (its dispatch time is its receive time: not stored twice; the sweeper reads `received_at`)
    assert "dispatched_at" not in pending and pending["received_at"] == "t0"
    assert pending["attempts"] == 0 and pending["open_status"].startswith("pending#")
    assert unparseable["last_error"] == "bad json" and unparseable["open_status"].startswith("failed#")
    assert "dispatch_id" not in unparseable and "dispatch_reason" not in unparseable


def test_the_replay_selects_exactly_the_statuses_a_replay_moves_an_item_from():
    assert {EventStatus(status) for status in SELECTABLE_STATUSES} == LIFECYCLE[Write.REPLAY].sources


def set_pending_states(definition: dict[str, Any]) -> list[dict[str, Any]]:
    """Every state of the workflow (Map iterators included) that writes an item back to pending."""
    found: list[dict[str, Any]] = []

    def walk(states: dict[str, Any]) -> None:
        for state in states.values():
            if state.get("Resource") == "arn:aws:states:::aws-sdk:dynamodb:updateItem":
                found.append(state)
            for nested in ("Iterator", "ItemProcessor"):
                if nested in state:
                    walk(state[nested]["States"])

    walk(definition["States"])
    return found


def test_the_replay_workflow_sends_the_update_the_owners_replay_write_sends():
    # Given the owner's replay write for one item, as a Python writer would send it
    owner = lifecycle.replay_update(
        selected=text_value("failed"),
        open_status=text_value("pending#3"),
        dispatch_id=text_value("0b7c..."),
        now=text_value("2026-01-01T00:00:00.000Z"),
        replayed_by=text_value("arn:aws:states:...:execution:replay:1"),
    )
    # When the workflow's UpdateItem tasks are read from its definition (the replay by id's; a page selected by age
    # is applied by the page function, through the owner itself: InboxStore.replay)
    states = set_pending_states(replay_definition("inbox"))
    assert len(states) == 1
    assert {state["Parameters"]["Key"]["pk"]["S.$"] for state in states} == {"$.found.Item.pk.S"}
    for state in states:
        parameters = state["Parameters"]
        # Then it sends the same expressions and the same names, to the item it read (the GetItem's result), its
        # shard taken from that item
        assert parameters["TableName"] == "inbox"
        item = parameters["Key"]["pk"]["S.$"].removesuffix(".pk.S")
        assert item == "$.found.Item"
        assert f"{item}.open_status.S" in parameters["ExpressionAttributeValues"][":open_status"]["S.$"]
        for part in ("UpdateExpression", "ConditionExpression", "ExpressionAttributeNames"):
            assert parameters[part] == owner[part]
        # And the same values: the constant ones equal, the varying ones read from the execution's state
        values, expected = parameters["ExpressionAttributeValues"], owner["ExpressionAttributeValues"]
        assert set(values) == set(expected)
        varying = {name for name, value in values.items() if any(key.endswith(".$") for key in value)}
        assert varying == {":expected_status", ":open_status", ":dispatch_id", ":now", ":replayed_by"}
        assert {name: values[name] for name in set(values) - varying} == {
            name: expected[name] for name in set(expected) - varying
        }
        assert values[":expected_status"] == {"S.$": "$.input.status"}
        assert values[":dispatch_id"] == {"S.$": "States.UUID()"}  # a fresh uuid per item: not deduplicated


def test_the_lifecycle_owner_is_pure_so_every_lambda_carries_it_cheaply():
    # Given a fresh interpreter, When the run-time owner is imported (as the ingest, processor and sweeper do)
    code = (
        "import sys; before = set(sys.modules); import shared.inbox.lifecycle;"
        " print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Then it loaded nothing but the standard library, the definitions package (its table, and the catalog's entries
    # with their types and folders) and itself: no boto3, no drivers
    catalog = {"shared.providers", "shared.providers.entry_types"} | {
        f"shared.providers.{provider}{part}" for provider in definitions.PROVIDERS for part in ("", ".entry")
    }
    loaded = {
        name
        for name in ast.literal_eval(result.stdout.strip())
        if not name.startswith("shared.definitions.") and name not in catalog
    }
    assert loaded == {"shared", "shared.definitions", "shared.inbox", "shared.inbox.lifecycle"}


def test_a_dispatch_id_is_a_valid_and_fresh_sqs_deduplication_id():
    from shared.inbox.model import is_valid_fifo_id

    # Given many dispatch ids, as every dispatching write makes them
    ids = {lifecycle.new_dispatch_id() for _ in range(10_000)}
    # Then each is a valid SQS deduplication id, 16 characters (96 random bits), and none repeats
    assert len(ids) == 10_000
    assert all(is_valid_fifo_id(value) and len(value) == 16 for value in ids)


def test_an_ignored_settle_records_its_reason_from_the_closed_set():
    # Given an event ignored because it names no payment
    update = lifecycle.settle_update(
        IGNORED, note="event names no payment", now="t1", ignored_reason=IgnoredReason.NO_PAYMENT
    )
    # Then the settle writes the reason beside the note
    names = update.get("ExpressionAttributeNames", {})
    values = update["ExpressionAttributeValues"]
    assert {"S": "no_payment"} in values.values()
    assert "ignored_reason" in update["UpdateExpression"] or "ignored_reason" in names.values()
    # And a processed one, or a reason outside the set, is refused before any request
    with pytest.raises(ValueError, match="processed"):
        lifecycle.settle_update(PROCESSED, note="n", now="t", ignored_reason=IgnoredReason.NO_PAYMENT)
    with pytest.raises(ValueError, match="free text"):
        lifecycle.settle_update(IGNORED, note="n", now="t", ignored_reason="free text")  # type: ignore[arg-type]
    # And without a reason nothing is written for it (a processed event)
    assert "ignored_reason" not in str(lifecycle.settle_update(PROCESSED, note="paid", now="t1"))
