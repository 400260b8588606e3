"""The replay workflow's Amazon States Language definition, built in pure Python (no CDK import).

One builder, two users: the CDK stack deploys it as a Step Functions state machine (the table name arrives through
a DefinitionSubstitution), and the local stack creates the very same definition in its embedded AWS (moto, with
Step Functions execution enabled), so ``inbox replay`` runs the same states locally and in the cloud.

What an execution does. Input (every field but ``provider`` optional; ``source`` defaults to ``provider``, the
provider's default source)::

    {"provider": "stripe", "source": "stripe-br", "status": "failed", "since": "2026-01-01T00:00:00.000000Z",
     "until": "2026-01-02T00:00:00.000000Z", "event_ids": ["evt_1", ...], "dry_run": false,
     "page_size": 25, "wait_seconds": 1, "max_events": 500}

- Selection. Without ``event_ids``: a Query per shard of the sparse open-events index (``{status}#{shard}``,
  sort key ``received_at`` between ``since`` and ``until``, compared as strings: pass them as the items write
  them, ISO-8601 UTC with a ``Z``; the CLI normalizes), filtered on ``provider`` and on the key's source part
  (``begins_with(pk, "{source}#")``: a source name holds no ``#``, and an item written before sources, of a
  default source, has its provider's name there), ``page_size`` items a page. With ``event_ids``: a consistent
  GetItem of each ``{source}#{event_id}``; ``since``/``until`` do not apply.
  Only ``failed`` (the default) or ``pending`` events can be selected: the workflow derives the index shard of
  the item it sets back to pending from the item's own ``open_status`` (``failed#3`` -> ``pending#3``), which
  settled (processed/ignored) items no longer carry; their shard is a CRC32 no intrinsic function computes.
- Replay, per selected event: one UpdateItem ``SET status = pending, open_status = pending#<same shard>,
  dispatch_id = <new id>, dispatch_reason = replay, dispatched_at, attempts = 0, replayed_at, replayed_by
  REMOVE last_error``, conditioned on ``status`` still being the selected one and ``replayed_by`` not already
  being this execution: the inbox lifecycle's replay write (shared/definitions/lifecycle.py composes it from
  the lifecycle's table). A page selected by age is handed whole to one Lambda task, the page function
  (functions/replay -> shared/replay.py), which sends that write for each of its events through
  shared/inbox/store.py and returns their outcome entries; the by-id path embeds the write here, its varying
  values as Step Functions paths.
  ``dispatched_at`` (like ``replayed_at``, the state's entered time: ISO-8601 UTC) keeps the sweeper from taking
  the replayed event for a stale one before it had its chance; ``replayed_by`` is the execution's ARN. The write
  is what the Pipe's filter dispatches, so the event goes through the Pipe and the FIFO queue (its payment's
  message group) again. The signature's timestamp tolerance is not checked again: the event was verified when it
  was received.
- Safe to re-run: an event already replayed is no longer in the selected status, so the condition fails and the
  event counts as ``skipped`` (so does one that changed between the read and the write). Safe to retry a page:
  the page task is retried whole when it fails, and the events its failed attempt replayed carry this
  execution's ``replayed_by``: refused, not written again, and reported ``replayed`` (shared/replay.py).
- Rate: events of a page are written one at a time (by the page function, in ``received_at`` order within a
  shard), and the workflow waits ``wait_seconds`` after every page that wrote something. One execution selects at
  most ``max_events`` (it stops at the first page boundary at or after it, with ``complete: false``); run it again
  to continue: the events already replayed no longer match.
- A dry run reads exactly the same selection and writes nothing (no wait either).
- Cost: STANDARD bills each state entered. A replayed page enters one state, its Lambda task, however many
  events it holds; the dry run is decided once per page (``PageMode``: the plan's Map, one Pass per event, or the
  replay's task), and an empty page skips both. inbox_cli/cost.py prices it.

Output::

    {"provider", "source", "status", "dry_run", "since", "until", "complete": bool,
     "counts": {"selected", "planned", "replayed", "skipped", "not_found", "not_selected", "pages"},
     "events": [[{"pk": "stripe#evt_1", "event_type": "...", "outcome": "replayed", "replayed": 1}, ...], ...]}

``events`` is a list of pages (flatten one level); each entry also carries a key named after its outcome (the
counts come from wildcard paths over those keys). The counts by provider, event type and status that make the
plan are computed from it by the reader (``inbox replay``), not by the workflow: grouping needs JSONata (or a
task of its own), and moto's interpreter, which runs this very definition in the tests and in the local stack,
evaluates no JSONata (5.2.5 ships JSONata without its JVM bridge). JSONPath
intrinsic functions cannot group, and they cannot append to a list, so the pages are accumulated as a JSON text
(``States.Format``) and parsed once at the end (``States.StringToJson``). ``max_events`` (at most
``MAX_EVENTS_LIMIT``) keeps that list, hence the state payload, well under Step Functions' 256 KB.
"""

from __future__ import annotations

from typing import Any, Final

from shared import definitions
from shared.definitions import EventStatus

# The CloudFormation DefinitionSubstitutions keys the stack fills with the inbox table's name and the ARN of the
# function that applies a page (functions/replay).
TABLE_SUBSTITUTION: Final = "InboxTable"
PAGE_FUNCTION_SUBSTITUTION: Final = "ReplayPageFunction"

# The statuses a replay moves an item from (the lifecycle's); the default is the one replays are for.
SELECTABLE_STATUSES: Final = tuple(sorted(status.value for status in definitions.REPLAYABLE_STATUSES))
DEFAULT_STATUS: Final = EventStatus.FAILED.value
DEFAULT_PAGE_SIZE: Final = 25
MAX_PAGE_SIZE: Final = 100
DEFAULT_WAIT_SECONDS: Final = 1
MAX_WAIT_SECONDS: Final = 300
DEFAULT_MAX_EVENTS: Final = 500
MAX_EVENTS_LIMIT: Final = 1000
TIMEOUT_SECONDS: Final = 3600
# An execution that runs past TimeoutSeconds is stopped (TIMED_OUT) wherever it is, and starts no successor
# (https://docs.aws.amazon.com/step-functions/latest/dg/statemachine-structure.html). Its pages' waits alone could
# take MAX_PAGES_PER_EXECUTION x MAX_WAIT_SECONDS = 60,000 s, so an execution also continues in a new one once the
# waits it has counted reach WAIT_BUDGET_SECONDS. Every page counts `wait_seconds` (the Wait after it, whether or
# not it wrote something: an overestimate, so never late), and the check comes after a page's count and before its
# wait, so at most one more wait follows: an execution waits at most WAIT_BUDGET_SECONDS - 1 + MAX_WAIT_SECONDS
# (2,099 s) in all, and WORK_ALLOWANCE_SECONDS is left for its tasks: 3 s for each of its at most 200 Queries and
# 200 page tasks (or 200 GetItems and UpdateItems by id). An allowance, not a bound: a task retried to its last
# attempt waits 63 s (_retry), so an execution throttled throughout could still reach the timeout; it then ends
# TIMED_OUT, and the replay is safe to run again (the events it replayed no longer match). `execution_time_bound()`
# holds the sum under TIMEOUT_SECONDS.
WORK_ALLOWANCE_SECONDS: Final = 1500
WAIT_BUDGET_SECONDS: Final = TIMEOUT_SECONDS - WORK_ALLOWANCE_SECONDS - MAX_WAIT_SECONDS

# A STANDARD execution's history holds at most 25,000 events; the execution fails when it would need more
# (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html, "Maximum execution history size";
# https://docs.aws.amazon.com/step-functions/latest/dg/bp-history-limit.html). The local stack enforces it
# (inbox_local/step_functions.py).
EXECUTION_HISTORY_LIMIT: Final = 25_000
# What one execution does at most before it continues in a new execution (the pattern AWS recommends for this
# quota: https://docs.aws.amazon.com/step-functions/latest/dg/tutorial-continue-new.html). Pages and items are
# bounded separately because both cost history events: with page_size 1 a page is mostly overhead.
MAX_PAGES_PER_EXECUTION: Final = 200
MAX_ITEMS_PER_EXECUTION: Final = 200
IDS_PER_EXECUTION: Final = 200
# A bound on how many executions one replay may chain (a runaway guard; each does up to the bounds above).
MAX_CHAIN_LENGTH: Final = 10_000
# History events recorded per part of an execution, as counted in moto's interpreter (which records AWS's event
# types: a Task is TaskStateEntered, TaskScheduled, TaskStarted, TaskSucceeded|TaskFailed, TaskStateExited; a
# Pass, Choice or Wait its Entered and Exited; a Map MapStateEntered, MapStateStarted, MapStateSucceeded,
# MapStateExited, and each iteration MapIterationStarted, MapIterationSucceeded around its states'), checked by
# tests/integration/test_replay_workflow.py against measured histories.
EXECUTION_HISTORY_EVENTS: Final = 46  # start, input checks, the source, the end and the successor's start, the output
# Query, the page's mode choice, the page's task (a Lambda task: entered, scheduled, started, succeeded, exited; the
# dry run's Map: 4), the page's choices and tally, a wait.
PAGE_HISTORY_EVENTS: Final = 20
# Per event by age: none when replayed (the page's task applies the whole page); a dry run's Map iteration and its
# Pass (4).
ITEM_HISTORY_EVENTS: Final = 4
ID_HISTORY_EVENTS: Final = 16  # one Map iteration by id: GetItem, the choice, UpdateItem, outcome
RETRY_HISTORY_EVENTS: Final = 3  # one more attempt of a task: TaskScheduled, TaskStarted, TaskFailed
RETRY_MAX_ATTEMPTS: Final = 6
# received_at bounds that include every item: ISO timestamps start with a digit between these.
SINCE_ANY: Final = "0"
UNTIL_ANY: Final = "9"

OUTCOMES: Final = ("planned", "replayed", "skipped", "not_found", "not_selected")

# Errors of the page's Lambda task worth retrying (the page is safe to apply again: shared/replay.py): Lambda's
# transient service errors and throttling, its unhandled errors (a timeout, out of memory: Lambda.Unknown), as
# https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html names them, and the
# function's own StorageUnavailable (DynamoDB did not take a write); and the task's own TimeoutSeconds passing
# (States.Timeout), should an invocation outlast the function's timeout.
PAGE_TASK_RETRYABLE_ERRORS: Final = [
    "States.Timeout",
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
    "StorageUnavailable",
]
# The page task's own timeout: past it, Step Functions fails the attempt (States.Timeout) and retries it, instead of
# waiting for a function that Lambda already stopped.
PAGE_TASK_TIMEOUT_SECONDS: Final = definitions.REPLAY_PAGE_TIMEOUT_SECONDS + 10
# Errors of DynamoDB worth retrying, as Step Functions names aws-sdk errors ("DynamoDb.<Exception>").
RETRYABLE_ERRORS: Final = [
    "DynamoDb.ProvisionedThroughputExceededException",
    "DynamoDb.RequestLimitExceededException",
    "DynamoDb.ThrottlingException",
    "DynamoDb.InternalServerErrorException",
    "DynamoDb.InternalServerError",
]
CONDITION_FAILED: Final = "DynamoDb.ConditionalCheckFailedException"
# Starting the successor: the error AWS's nested-workflow example retries (too many open executions), as AWS names
# it (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-nested-workflows.html) and as moto names it.
START_EXECUTION_RETRYABLE_ERRORS: Final = [
    "StepFunctions.ExecutionLimitExceeded",
    "StepFunctions.ExecutionLimitExceededException",
]
INVALID_INPUT_ERROR: Final = "Replay.InvalidInput"

_PROJECTION = "pk, provider, event_type, #status, open_status"
BY_ID_RESULTS: Final = "$.results"  # where the replay by id's Map writes its iterations' entries


def table_placeholder() -> str:
    """The table name as the deployed definition holds it, before CloudFormation substitutes it."""
    return "${" + TABLE_SUBSTITUTION + "}"


def page_function_placeholder() -> str:
    """The page function's ARN as the deployed definition holds it, before CloudFormation substitutes it."""
    return "${" + PAGE_FUNCTION_SUBSTITUTION + "}"


def history_bound() -> int:
    """The most history events one execution can record, every task retried to its last attempt: what the
    per-execution bounds are chosen for (far below EXECUTION_HISTORY_LIMIT without retries, below it with all)."""
    retries = RETRY_HISTORY_EVENTS * RETRY_MAX_ATTEMPTS
    # A dry run's items have no task to retry; the page's task is retried whole.
    by_age = (
        MAX_PAGES_PER_EXECUTION * (PAGE_HISTORY_EVENTS + retries)
        + (MAX_ITEMS_PER_EXECUTION - 1 + MAX_PAGE_SIZE) * ITEM_HISTORY_EVENTS
    )
    by_id = IDS_PER_EXECUTION * (ID_HISTORY_EVENTS + 2 * retries) + PAGE_HISTORY_EVENTS
    return EXECUTION_HISTORY_EVENTS + retries + max(by_age, by_id)


def execution_time_bound() -> int:
    """The longest an execution waits (its counted waits just under the budget, one page's count and its wait
    more) plus the allowance for its tasks: what TimeoutSeconds must exceed."""
    return WAIT_BUDGET_SECONDS - 1 + MAX_WAIT_SECONDS + WORK_ALLOWANCE_SECONDS


def first_resume() -> dict[str, Any]:
    """Where a replay's first execution starts; each successor gets the next one from its predecessor."""
    return {"shard": 0, "selected": 0, "execution": 1, "id_chunk": 0}


def default_input() -> dict[str, Any]:
    return {
        "status": DEFAULT_STATUS,
        "dry_run": False,
        "since": SINCE_ANY,
        "until": UNTIL_ANY,
        "page_size": DEFAULT_PAGE_SIZE,
        "wait_seconds": DEFAULT_WAIT_SECONDS,
        "max_events": DEFAULT_MAX_EVENTS,
        "resume": first_resume(),
    }


def _retry(errors: list[str] = RETRYABLE_ERRORS) -> list[dict[str, Any]]:
    return [{"ErrorEquals": errors, "IntervalSeconds": 1, "BackoffRate": 2.0, "MaxAttempts": RETRY_MAX_ATTEMPTS}]


def _between(path: str, low: int, high: int) -> dict[str, Any]:
    return {
        "And": [
            {"Variable": path, "IsNumeric": True},
            {"Variable": path, "NumericGreaterThanEquals": low},
            {"Variable": path, "NumericLessThanEquals": high},
        ]
    }


def _count(outcome: str, results: str = "$.page.Items") -> str:
    """How many of this page's results (the list at the path ``results``) have that outcome: each result carries
    a marker key named after its outcome, and a wildcard path lists only the results that have the key (no filter
    expression needed)."""
    return f"States.ArrayLength({results}[*].{outcome})"


def _selected_count(results: str = "$.page.Items") -> str:
    """How many of the results were selected: planned, replayed or skipped (not the by-id misses)."""
    planned, replayed, skipped = (_count(outcome, results) for outcome in ("planned", "replayed", "skipped"))
    return f"States.MathAdd(States.MathAdd({planned}, {replayed}), {skipped})"


def _entry(outcome: str, **paths: str) -> dict[str, Any]:
    return {**{f"{name}.$": path for name, path in paths.items()}, "outcome": outcome, outcome: 1}


def _added_counts(*, page: bool) -> dict[str, Any]:
    """The running counts plus this page's results (``$.page.Items``, where the page's Map wrote them)."""
    counts = {f"{outcome}.$": f"States.MathAdd($.counts.{outcome}, {_count(outcome)})" for outcome in OUTCOMES}
    counts["selected.$"] = f"States.MathAdd($.counts.selected, {_selected_count()})"
    counts["pages.$"] = "States.MathAdd($.counts.pages, 1)" if page else "$.counts.pages"
    return counts


def replay_update(item: str = "$.item") -> dict[str, Any]:
    """The replay's UpdateItem, as the inbox's lifecycle composes it (shared/definitions/lifecycle.py's table, which
    shared/inbox/lifecycle.py, the run-time owner of the item's writes, uses too), its varying values taken from
    the state: the item's own index shard (the item, as DynamoDB returned it, at the path ``item``), a fresh
    uuid, the state's entered time (ISO-8601 UTC) and the execution's ARN, conditioned on the status the input
    selected."""
    shard = f"States.ArrayGetItem(States.StringSplit({item}.open_status.S, '#'), 1)"
    return definitions.replay_update(
        selected={"S.$": "$.input.status"},
        open_status={"S.$": f"States.Format('{EventStatus.PENDING.value}#{{}}', {shard})"},
        dispatch_id={"S.$": "States.UUID()"},
        now={"S.$": "$$.State.EnteredTime"},
        replayed_by={"S.$": "$$.Execution.Id"},
    )


def _set_pending(table_name: str, *, item: str, skipped: str, **then: Any) -> dict[str, Any]:
    """The replay write of the item at the path ``item``: the Task that sets it back to pending if it is still in
    the selected status; a refused condition goes to the state ``skipped``."""
    return {
        "Type": "Task",
        "Comment": "Back to pending with a new dispatch id: the Pipe dispatches the write (dispatch_reason replay)",
        "Resource": "arn:aws:states:::aws-sdk:dynamodb:updateItem",
        "Parameters": {"TableName": table_name, "Key": {"pk": {"S.$": f"{item}.pk.S"}}, **replay_update(item)},
        "ResultPath": None,
        "Retry": _retry(),
        "Catch": [{"ErrorEquals": [CONDITION_FAILED], "ResultPath": "$.error", "Next": skipped}],
        **then,
    }


def _plan_page() -> dict[str, Any]:
    """The dry run's page: a Map over its items (``$.page.Items``) whose iteration is one Pass, its outcome entry
    built by the Map's ItemSelector. The Map writes its results over the page's items, where the tally reads them."""
    value = "$$.Map.Item.Value"
    return {
        "Type": "Map",
        "ItemsPath": "$.page.Items",
        "ItemSelector": _entry("planned", pk=f"{value}.pk.S", event_type=f"{value}.event_type.S"),
        "MaxConcurrency": 1,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            "StartAt": "Planned",
            "States": {"Planned": {"Type": "Pass", "End": True}},
        },
        "ResultPath": "$.page.Items",
        "Next": "MorePagesInShard",
    }


def _replay_page(page_function: str) -> dict[str, Any]:
    """The replay's page: one Lambda task (functions/replay, shared/replay.py) applies the lifecycle's replay write
    to each event of the page, one at a time in the page's order, and returns their outcome entries (replayed, or
    skipped when the event left the selected status), written over the page's items, where the tally reads them.
    One state for the page, where a Map would enter one per event. A failed attempt is retried whole: the page is
    safe to apply again (an event this execution already replayed is refused by the write's condition and still
    reported replayed)."""
    return {
        "Type": "Task",
        "Comment": "Back to pending with a new dispatch id, each event of the page: the Pipe dispatches the writes",
        "Resource": page_function,
        "Parameters": {"status.$": "$.input.status", "execution.$": "$$.Execution.Id", "items.$": "$.page.Items"},
        "TimeoutSeconds": PAGE_TASK_TIMEOUT_SECONDS,
        "ResultPath": "$.page.Items",
        "Retry": _retry(PAGE_TASK_RETRYABLE_ERRORS),
        "Next": "MorePagesInShard",
    }


def _query(table_name: str, index_name: str, *, next_page: bool) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "TableName": table_name,
        "IndexName": index_name,
        "KeyConditionExpression": "open_status = :open AND received_at BETWEEN :since AND :until",
        "FilterExpression": "provider = :provider AND begins_with(pk, :source)",
        "ProjectionExpression": _PROJECTION,
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":open": {"S.$": "States.Format('{}#{}', $.input.status, $.shard)"},
            ":since": {"S.$": "$.input.since"},
            ":until": {"S.$": "$.input.until"},
            ":provider": {"S.$": "$.input.provider"},
            ":source": {"S.$": "States.Format('{}#', $.input.source)"},
        },
        "Limit.$": "$.input.page_size",
    }
    if next_page:
        parameters["ExclusiveStartKey.$"] = "$.cursor"
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:dynamodb:query",
        "Parameters": parameters,
        "ResultPath": "$.page",
        "Retry": _retry(),
        "Next": "PageMode",
    }


def _tally(*, next_shard: bool) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "input.$": "$.input",
        "counts": _added_counts(page=True),
        "events.$": "States.Format('{},{}', $.events, States.JsonToString($.page.Items))",
        "wrote.$": _count("replayed"),
        "total.$": f"States.MathAdd($.total, {_selected_count()})",
        "waited.$": "States.MathAdd($.waited, $.input.wait_seconds)",  # this page's wait, counted before it
    }
    if next_shard:
        parameters["shard.$"] = "States.MathAdd($.shard, 1)"
    else:
        parameters["shard.$"] = "$.shard"
        parameters["cursor.$"] = "$.page.LastEvaluatedKey"
    return {
        "Type": "Pass",
        "Parameters": parameters,
        "Next": "ShardsLeft" if next_shard else "NextPageWithinLimit",
    }


def _wrote(wait_state: str) -> dict[str, Any]:
    """The choice rule that waits between pages only after one that wrote something."""
    return {"Variable": "$.wrote", "NumericGreaterThan": 0, "Next": wait_state}


def _pace(wait_state: str, then: str) -> dict[str, Any]:
    return {
        "Type": "Choice",
        "Comment": "Wait between pages only after one that wrote something",
        "Choices": [_wrote(wait_state)],
        "Default": then,
    }


def _resume(**fields: str) -> dict[str, Any]:
    """``$.resume``: the successor's input over this execution's (a shallow merge replaces ``resume`` whole)."""
    resume: dict[str, Any] = {f"{name}.$": path for name, path in fields.items()}
    resume["execution.$"] = "States.MathAdd($.input.resume.execution, 1)"
    for name in ("shard", "selected", "id_chunk"):
        if f"{name}.$" not in resume:  # a field and its ".$" twin would conflict
            resume[name] = 0
    return {
        "Type": "Pass",
        "Parameters": {
            "resume": resume,
            # Links the successor to this execution in the console (nested-workflows: "Associate ... execution").
            "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id",
        },
        "ResultPath": "$.resume",
        "Next": "PaceContinue",
    }


def _end(*, complete: bool) -> dict[str, Any]:
    return {
        "Type": "Pass",
        "Result": {"complete": complete, "next_execution": None},
        "ResultPath": "$.end",
        "Next": "Summary",
    }


def _budget_spent(then: str, pages: int, items: int, wait_budget: int) -> list[dict[str, Any]]:
    """Choices: this execution did what one execution may (its history budget, or its time: the waits it
    counted), so it continues in a new one."""
    return [
        {"Variable": "$.counts.pages", "NumericGreaterThanEquals": pages, "Next": then},
        {"Variable": "$.counts.selected", "NumericGreaterThanEquals": items, "Next": then},
        {"Variable": "$.waited", "NumericGreaterThanEquals": wait_budget, "Next": then},
    ]


def replay_definition(
    table_name: str,
    *,
    page_function: str | None = None,
    index_name: str = definitions.OPEN_EVENTS_INDEX,
    shards: int = definitions.OPEN_EVENTS_SHARDS,
    pages_per_execution: int = MAX_PAGES_PER_EXECUTION,
    items_per_execution: int = MAX_ITEMS_PER_EXECUTION,
    ids_per_execution: int = IDS_PER_EXECUTION,
    wait_budget_seconds: int = WAIT_BUDGET_SECONDS,
    timeout_seconds: int = TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """The replay state machine (Amazon States Language, JSONPath) for the inbox table ``table_name``.

    The per-execution bounds are parameters so that tests can make a chain of executions out of a few events (and
    show what an execution without the time budget would come to). ``page_function``: the ARN of the function
    that applies a page (the deployed definition's placeholder by default)."""
    page_function = page_function or page_function_placeholder()
    zero_counts = dict.fromkeys((*OUTCOMES, "selected", "pages"), 0)
    valid_input = {
        "And": [
            {"Variable": "$.input.provider", "IsPresent": True},
            {"Variable": "$.input.provider", "IsString": True},
            {"Or": [{"Variable": "$.input.status", "StringEquals": status} for status in SELECTABLE_STATUSES]},
            {"Variable": "$.input.dry_run", "IsBoolean": True},
            {"Variable": "$.input.since", "IsString": True},
            {"Variable": "$.input.until", "IsString": True},
            {"Variable": "$.input.since", "StringLessThanEqualsPath": "$.input.until"},
            _between("$.input.page_size", 1, MAX_PAGE_SIZE),
            _between("$.input.wait_seconds", 0, MAX_WAIT_SECONDS),
            _between("$.input.max_events", 1, MAX_EVENTS_LIMIT),
            # Where this execution resumes the replay (a successor's input; the first execution's is the default)
            *(
                condition
                for name, (low, high) in {
                    "shard": (0, shards - 1),
                    "selected": (0, MAX_EVENTS_LIMIT - 1),
                    "execution": (1, MAX_CHAIN_LENGTH),
                    "id_chunk": (0, MAX_EVENTS_LIMIT // ids_per_execution),
                }.items()
                for condition in (
                    {"Variable": f"$.input.resume.{name}", "IsPresent": True},
                    _between(f"$.input.resume.{name}", low, high),
                )
            ),
        ],
        "Next": "DefaultSource",
    }
    selected = {
        "And": [
            {"Variable": "$.found.Item", "IsPresent": True},
            {"Variable": "$.found.Item.open_status.S", "IsPresent": True},
            {"Variable": "$.found.Item.status.S", "StringEqualsPath": "$.input.status"},
        ]
    }
    found = {"pk": "$.found.Item.pk.S", "event_type": "$.found.Item.event_type.S"}
    by_id_item = {
        "GetById": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:dynamodb:getItem",
            "Parameters": {
                "TableName": table_name,
                "Key": {"pk": {"S.$": "States.Format('{}#{}', $.input.source, $.event_id)"}},
                "ConsistentRead": True,
                "ProjectionExpression": _PROJECTION,
                "ExpressionAttributeNames": {"#status": "status"},
            },
            "ResultPath": "$.found",
            "Retry": _retry(),
            "Next": "ByIdFound",
        },
        # One Choice decides what becomes of the named event: planned (a dry run), set back to pending, or reported.
        "ByIdFound": {
            "Type": "Choice",
            "Choices": [
                {"And": [selected, {"Variable": "$.input.dry_run", "BooleanEquals": True}], "Next": "ByIdPlanned"},
                {**selected, "Next": "ByIdSetPending"},
                {"Variable": "$.found.Item", "IsPresent": True, "Next": "ByIdNotSelected"},
            ],
            "Default": "ByIdNotFound",
        },
        "ByIdPlanned": {"Type": "Pass", "Parameters": _entry("planned", **found), "End": True},
        "ByIdSetPending": _set_pending(table_name, item="$.found.Item", skipped="ByIdSkipped", Next="ByIdReplayed"),
        "ByIdReplayed": {"Type": "Pass", "Parameters": _entry("replayed", **found), "End": True},
        "ByIdSkipped": {"Type": "Pass", "Parameters": _entry("skipped", **found), "End": True},
        "ByIdNotSelected": {
            "Type": "Pass",
            "Parameters": _entry("not_selected", pk="$.found.Item.pk.S", status="$.found.Item.status.S"),
            "End": True,
        },
        "ByIdNotFound": {
            "Type": "Pass",
            "Parameters": _entry("not_found", pk="States.Format('{}#{}', $.input.source, $.event_id)"),
            "End": True,
        },
    }
    states: dict[str, Any] = {
        "Defaults": {
            "Type": "Pass",
            "Result": default_input(),
            "ResultPath": "$.defaults",
            "Next": "Normalize",
        },
        "Normalize": {
            "Type": "Pass",
            "Parameters": {"input.$": "States.JsonMerge($.defaults, $$.Execution.Input, false)"},
            "Next": "Validate",
        },
        "Validate": {"Type": "Choice", "Choices": [valid_input], "Default": "InvalidInput"},
        # `source` defaults to `provider` (its default source): what an input without one (an older CLI, the
        # console) selects.
        "DefaultSource": {
            "Type": "Pass",
            "Parameters": {"source.$": "$.input.provider"},
            "ResultPath": "$.source_default",
            "Next": "WithSource",
        },
        "WithSource": {
            "Type": "Pass",
            "Parameters": {"input.$": "States.JsonMerge($.source_default, $.input, false)"},
            "Next": "ValidateSource",
        },
        "ValidateSource": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.input.source", "IsString": True, "Next": "SelectBy"}],
            "Default": "InvalidInput",
        },
        "InvalidInput": {
            "Type": "Fail",
            "Error": INVALID_INPUT_ERROR,
            "Cause": (
                "expected {provider: string, source?: string, status?: "
                + "|".join(SELECTABLE_STATUSES)
                + ", since?/until?: "
                "ISO-8601 UTC strings with since <= until, event_ids?: [string] (1.."
                + str(MAX_EVENTS_LIMIT)
                + "), dry_run?: boolean, page_size?: 1.."
                + str(MAX_PAGE_SIZE)
                + ", wait_seconds?: 0.."
                + str(MAX_WAIT_SECONDS)
                + ", max_events?: 1.."
                + str(MAX_EVENTS_LIMIT)
                + "}"
            ),
        },
        "SelectBy": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.input.event_ids", "IsPresent": True, "Next": "CountIds"}],
            "Default": "ScanFrom",
        },
        # ------------------------------------------------------------------ by id: the events named in the input
        "CountIds": {
            "Type": "Pass",
            "Parameters": {"input.$": "$.input", "ids.$": "States.ArrayLength($.input.event_ids)"},
            "Next": "IdsWithinLimit",
        },
        "IdsWithinLimit": {
            "Type": "Choice",
            "Choices": [{**_between("$.ids", 1, MAX_EVENTS_LIMIT), "Next": "CountIdChunks"}],
            "Default": "InvalidInput",
        },
        # At most IDS_PER_EXECUTION ids an execution: chunk `resume.id_chunk` here, the next one in a successor.
        "CountIdChunks": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "chunks.$": f"States.ArrayLength(States.ArrayPartition($.input.event_ids, {ids_per_execution}))",
            },
            "Next": "IdChunkExists",
        },
        "IdChunkExists": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.input.resume.id_chunk", "NumericLessThanPath": "$.chunks", "Next": "IdChunk"}],
            "Default": "InvalidInput",
        },
        "IdChunk": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "chunks.$": "$.chunks",
                "ids.$": (
                    f"States.ArrayGetItem(States.ArrayPartition($.input.event_ids, {ids_per_execution}), "
                    "$.input.resume.id_chunk)"
                ),
            },
            "Next": "ReplayById",
        },
        "ReplayById": {
            "Type": "Map",
            "ItemsPath": "$.ids",
            "ItemSelector": {"event_id.$": "$$.Map.Item.Value", "input.$": "$.input"},
            "MaxConcurrency": 1,
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "GetById", "States": by_id_item},
            "ResultPath": BY_ID_RESULTS,
            "Next": "TallyById",
        },
        "TallyById": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "counts": {
                    **{f"{outcome}.$": _count(outcome, BY_ID_RESULTS) for outcome in OUTCOMES},
                    "selected.$": _selected_count(BY_ID_RESULTS),
                    "pages": 0,
                },
                "events.$": f"States.JsonToString({BY_ID_RESULTS})",
                "wrote.$": _count("replayed", BY_ID_RESULTS),
                "next_chunk.$": "States.MathAdd($.input.resume.id_chunk, 1)",
                "chunks.$": "$.chunks",
            },
            "Next": "IdChunksLeft",
        },
        "IdChunksLeft": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.next_chunk", "NumericLessThanPath": "$.chunks", "Next": "ResumeAtIdChunk"}],
            "Default": "Complete",
        },
        "ResumeAtIdChunk": _resume(id_chunk="$.next_chunk"),
        # ------------------------------------------------------- by age: every shard of the open-events index
        "ScanFrom": {
            "Type": "Choice",
            "Comment": "A successor resumes within a shard at its predecessor's cursor",
            "Choices": [{"Variable": "$.input.resume.cursor", "IsPresent": True, "Next": "ScanResume"}],
            "Default": "ScanStart",
        },
        "ScanStart": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "shard.$": "$.input.resume.shard",
                "total.$": "$.input.resume.selected",
                "counts": zero_counts,
                "events": "[]",
                "waited": 0,
            },
            "Next": "QueryFirstPage",
        },
        "ScanResume": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "shard.$": "$.input.resume.shard",
                "cursor.$": "$.input.resume.cursor",
                "total.$": "$.input.resume.selected",
                "counts": zero_counts,
                "events": "[]",
                "waited": 0,
            },
            "Next": "QueryNextPage",
        },
        "QueryFirstPage": _query(table_name, index_name, next_page=False),
        "QueryNextPage": _query(table_name, index_name, next_page=True),
        # The dry run is decided once per page, not per event, and an empty page skips the Map.
        "PageMode": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.page.Count", "NumericEquals": 0, "Next": "MorePagesInShard"},
                {"Variable": "$.input.dry_run", "BooleanEquals": True, "Next": "PlanPage"},
            ],
            "Default": "ReplayPage",
        },
        "PlanPage": _plan_page(),
        "ReplayPage": _replay_page(page_function),
        "MorePagesInShard": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.page.LastEvaluatedKey", "IsPresent": True, "Next": "TallyNextPage"}],
            "Default": "TallyNextShard",
        },
        "TallyNextPage": _tally(next_shard=False),
        "NextPageWithinLimit": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.total", "NumericGreaterThanEqualsPath": "$.input.max_events", "Next": "Incomplete"},
                *_budget_spent("ResumeAtPage", pages_per_execution, items_per_execution, wait_budget_seconds),
                _wrote("WaitBeforeNextPage"),
            ],
            "Default": "QueryNextPage",
        },
        "WaitBeforeNextPage": {"Type": "Wait", "SecondsPath": "$.input.wait_seconds", "Next": "QueryNextPage"},
        "TallyNextShard": _tally(next_shard=True),
        "ShardsLeft": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.shard", "NumericGreaterThanEquals": shards, "Next": "Complete"},
                {"Variable": "$.total", "NumericGreaterThanEqualsPath": "$.input.max_events", "Next": "Incomplete"},
                *_budget_spent("ResumeAtShard", pages_per_execution, items_per_execution, wait_budget_seconds),
                _wrote("WaitBeforeNextShard"),
            ],
            "Default": "QueryFirstPage",
        },
        "WaitBeforeNextShard": {"Type": "Wait", "SecondsPath": "$.input.wait_seconds", "Next": "QueryFirstPage"},
        "ResumeAtPage": _resume(shard="$.shard", cursor="$.cursor", selected="$.total"),
        "ResumeAtShard": _resume(shard="$.shard", selected="$.total"),
        # ------------------------------------------------- continue as a new execution (the history quota)
        "PaceContinue": _pace("WaitBeforeContinue", "StartSuccessor"),
        "WaitBeforeContinue": {"Type": "Wait", "SecondsPath": "$.input.wait_seconds", "Next": "StartSuccessor"},
        "StartSuccessor": {
            "Type": "Task",
            "Comment": "The rest of the replay in a new execution of this state machine, from the cursor",
            "Resource": "arn:aws:states:::states:startExecution",
            "Parameters": {
                "StateMachineArn.$": "$$.StateMachine.Id",
                "Name.$": "States.Format('replay-{}-{}', $.resume.resume.execution, States.UUID())",
                "Input.$": "States.JsonMerge($.input, $.resume, false)",
            },
            "ResultSelector": {"execution_arn.$": "$.ExecutionArn"},
            "ResultPath": "$.successor",
            "Retry": [
                {
                    "ErrorEquals": START_EXECUTION_RETRYABLE_ERRORS,
                    "IntervalSeconds": 1,
                    "BackoffRate": 2.0,
                    "MaxAttempts": RETRY_MAX_ATTEMPTS,
                }
            ],
            "Next": "Continued",
        },
        "Continued": {
            "Type": "Pass",
            "Parameters": {"complete": False, "next_execution.$": "$.successor.execution_arn"},
            "ResultPath": "$.end",
            "Next": "Summary",
        },
        "Complete": _end(complete=True),
        "Incomplete": _end(complete=False),
        # ------------------------------------------------------------------------------------------- output
        "Summary": {
            "Type": "Pass",
            "Parameters": {
                "provider.$": "$.input.provider",
                "source.$": "$.input.source",
                "status.$": "$.input.status",
                "dry_run.$": "$.input.dry_run",
                "since.$": "$.input.since",
                "until.$": "$.input.until",
                "execution.$": "$.input.resume.execution",
                "complete.$": "$.end.complete",
                "next_execution.$": "$.end.next_execution",
                "counts.$": "$.counts",
                "events.$": "States.StringToJson(States.Format('[{}]', $.events))",
            },
            "End": True,
        },
    }
    return {
        "Comment": (
            "Webhook Inbox replay: set selected failed (or pending) events back to pending, so that the Pipe "
            "dispatches them again; a dry run returns the plan and changes nothing."
        ),
        "StartAt": "Defaults",
        "TimeoutSeconds": timeout_seconds,
        "States": states,
    }
