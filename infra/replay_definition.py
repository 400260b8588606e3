"""The replay workflow's Amazon States Language definition, built in pure Python (no CDK import).

One builder, two users: the CDK stack deploys it as a Step Functions state machine (the table name arrives through
a DefinitionSubstitution), and the local stack creates the very same definition in its embedded AWS (moto, with
Step Functions execution enabled), so ``inbox replay`` runs the same states locally and in the cloud.

What an execution does. Input (every field but ``provider`` optional)::

    {"provider": "stripe", "status": "failed", "since": "2026-01-01T00:00:00.000000Z",
     "until": "2026-01-02T00:00:00.000000Z", "event_ids": ["evt_1", ...], "dry_run": false,
     "page_size": 25, "wait_seconds": 1, "max_events": 500}

- Selection. Without ``event_ids``: a Query per shard of the sparse open-events index (``{status}#{shard}``,
  sort key ``received_at`` between ``since`` and ``until``, compared as strings: pass them as the items write
  them, ISO-8601 UTC with a ``Z``; the CLI normalizes), filtered on ``provider``, ``page_size`` items a page.
  With ``event_ids``: a consistent GetItem of each ``{provider}#{event_id}``; ``since``/``until`` do not apply.
  Only ``failed`` (the default) or ``pending`` events can be selected: the workflow derives the index shard of
  the item it sets back to pending from the item's own ``open_status`` (``failed#3`` -> ``pending#3``), which
  settled (processed/ignored) items no longer carry; their shard is a CRC32 no intrinsic function computes.
- Replay, per selected event: one UpdateItem ``SET status = pending, open_status = pending#<same shard>,
  dispatch_id = <new uuid>, dispatch_reason = replay, dispatched_at, attempts = 0, replayed_at, replayed_by
  REMOVE last_error``, conditioned on ``status`` still being the selected one. ``dispatched_at`` (like
  ``replayed_at``, the state's entered time: ISO-8601 UTC) keeps the sweeper from taking the replayed event for a
  stale one before it had its chance; ``replayed_by`` is the execution's ARN. The write is what the Pipe's
  filter dispatches, so the event goes through the Pipe and the FIFO queue (its payment's message group) again.
  The signature's timestamp tolerance is not checked again: the event was verified when it was received.
- Safe to re-run: an event already replayed is no longer in the selected status, so the condition fails and the
  event counts as ``skipped`` (so does one that changed between the read and the write).
- Rate: events of a page are written one at a time (Map, MaxConcurrency 1: in ``received_at`` order within a
  shard), and the workflow waits ``wait_seconds`` after every page that wrote something. One execution selects at
  most ``max_events`` (it stops at the first page boundary at or after it, with ``complete: false``); run it again
  to continue: the events already replayed no longer match.
- A dry run reads exactly the same selection and writes nothing (no wait either).

Output::

    {"provider", "status", "dry_run", "since", "until", "complete": bool,
     "counts": {"selected", "planned", "replayed", "skipped", "not_found", "not_selected", "pages"},
     "events": [[{"pk": "stripe#evt_1", "event_type": "...", "outcome": "replayed", "replayed": 1}, ...], ...]}

``events`` is a list of pages (flatten one level); each entry also carries a key named after its outcome (the
counts come from wildcard paths over those keys). The counts by provider, event type and status that make the
plan are computed from it by the reader (``inbox replay``), not by the workflow: grouping needs JSONata or a
Lambda, and moto's interpreter, which runs this very definition in the tests and in the local stack, evaluates no
JSONata (5.2.5 ships JSONata without its JVM bridge), while a Lambda cannot run there without docker. JSONPath
intrinsic functions cannot group, and they cannot append to a list, so the pages are accumulated as a JSON text
(``States.Format``) and parsed once at the end (``States.StringToJson``). ``max_events`` (at most
``MAX_EVENTS_LIMIT``) keeps that list, hence the state payload, well under Step Functions' 256 KB.
"""

from __future__ import annotations

from typing import Any, Final

from infra import definitions

# The CloudFormation DefinitionSubstitutions key the stack fills with the inbox table's name.
TABLE_SUBSTITUTION: Final = "InboxTable"

SELECTABLE_STATUSES: Final = ("failed", "pending")
DEFAULT_STATUS: Final = "failed"
DEFAULT_PAGE_SIZE: Final = 25
MAX_PAGE_SIZE: Final = 100
DEFAULT_WAIT_SECONDS: Final = 1
MAX_WAIT_SECONDS: Final = 300
DEFAULT_MAX_EVENTS: Final = 500
MAX_EVENTS_LIMIT: Final = 1000
TIMEOUT_SECONDS: Final = 3600
# received_at bounds that include every item: ISO timestamps start with a digit between these.
SINCE_ANY: Final = "0"
UNTIL_ANY: Final = "9"

OUTCOMES: Final = ("planned", "replayed", "skipped", "not_found", "not_selected")

# Errors of DynamoDB worth retrying, as Step Functions names aws-sdk errors ("DynamoDb.<Exception>").
RETRYABLE_ERRORS: Final = [
    "DynamoDb.ProvisionedThroughputExceededException",
    "DynamoDb.RequestLimitExceededException",
    "DynamoDb.ThrottlingException",
    "DynamoDb.InternalServerErrorException",
    "DynamoDb.InternalServerError",
]
CONDITION_FAILED: Final = "DynamoDb.ConditionalCheckFailedException"
INVALID_INPUT_ERROR: Final = "Replay.InvalidInput"

_PROJECTION = "pk, provider, event_type, #status, open_status"


def table_placeholder() -> str:
    """The table name as the deployed definition holds it, before CloudFormation substitutes it."""
    return "${" + TABLE_SUBSTITUTION + "}"


def default_input() -> dict[str, Any]:
    return {
        "status": DEFAULT_STATUS,
        "dry_run": False,
        "since": SINCE_ANY,
        "until": UNTIL_ANY,
        "page_size": DEFAULT_PAGE_SIZE,
        "wait_seconds": DEFAULT_WAIT_SECONDS,
        "max_events": DEFAULT_MAX_EVENTS,
    }


def _retry() -> list[dict[str, Any]]:
    return [{"ErrorEquals": RETRYABLE_ERRORS, "IntervalSeconds": 1, "BackoffRate": 2.0, "MaxAttempts": 6}]


def _between(path: str, low: int, high: int) -> dict[str, Any]:
    return {
        "And": [
            {"Variable": path, "IsNumeric": True},
            {"Variable": path, "NumericGreaterThanEquals": low},
            {"Variable": path, "NumericLessThanEquals": high},
        ]
    }


def _count(outcome: str) -> str:
    """How many of this page's results have that outcome: each result carries a marker key named after its
    outcome, and a wildcard path lists only the results that have the key (no filter expression needed)."""
    return f"States.ArrayLength($.results[*].{outcome})"


def _entry(outcome: str, **paths: str) -> dict[str, Any]:
    return {**{f"{name}.$": path for name, path in paths.items()}, "outcome": outcome, outcome: 1}


def _added_counts(*, page: bool) -> dict[str, Any]:
    """The running counts plus this page's results (`$.results`)."""
    counts = {f"{outcome}.$": f"States.MathAdd($.counts.{outcome}, {_count(outcome)})" for outcome in OUTCOMES}
    selected = f"States.MathAdd(States.MathAdd({_count('planned')}, {_count('replayed')}), {_count('skipped')})"
    counts["selected.$"] = f"States.MathAdd($.counts.selected, {selected})"
    counts["pages.$"] = "States.MathAdd($.counts.pages, 1)" if page else "$.counts.pages"
    return counts


def _item_states(prefix: str, table_name: str) -> dict[str, Any]:
    """Per selected item (state input ``{"item": <DynamoDB item>, "input": <normalized input>}``): plan it in a
    dry run, otherwise set it back to pending if it is still in the selected status."""
    item = {"pk": "$.item.pk.S", "event_type": "$.item.event_type.S"}
    return {
        f"{prefix}IsDryRun": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.input.dry_run", "BooleanEquals": True, "Next": f"{prefix}Planned"}],
            "Default": f"{prefix}SetPending",
        },
        f"{prefix}Planned": {"Type": "Pass", "Parameters": _entry("planned", **item), "End": True},
        f"{prefix}SetPending": {
            "Type": "Task",
            "Comment": "Back to pending with a new dispatch id: the Pipe dispatches the write (dispatch_reason replay)",
            "Resource": "arn:aws:states:::aws-sdk:dynamodb:updateItem",
            "Parameters": {
                "TableName": table_name,
                "Key": {"pk": {"S.$": "$.item.pk.S"}},
                "UpdateExpression": (
                    "SET #status = :pending, open_status = :open, dispatch_id = :dispatch_id, "
                    "dispatch_reason = :replay, dispatched_at = :now, attempts = :zero, replayed_at = :now, "
                    "replayed_by = :execution "
                    "REMOVE last_error"
                ),
                "ConditionExpression": "#status = :selected",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {
                    ":pending": {"S": "pending"},
                    ":open": {
                        "S.$": "States.Format('pending#{}', "
                        "States.ArrayGetItem(States.StringSplit($.item.open_status.S, '#'), 1))"
                    },
                    ":dispatch_id": {"S.$": "States.UUID()"},
                    ":replay": {"S": "replay"},
                    ":zero": {"N": "0"},
                    ":now": {"S.$": "$$.State.EnteredTime"},
                    ":execution": {"S.$": "$$.Execution.Id"},
                    ":selected": {"S.$": "$.input.status"},
                },
            },
            "ResultPath": None,
            "Retry": _retry(),
            "Catch": [{"ErrorEquals": [CONDITION_FAILED], "ResultPath": "$.error", "Next": f"{prefix}Skipped"}],
            "Next": f"{prefix}Replayed",
        },
        f"{prefix}Replayed": {"Type": "Pass", "Parameters": _entry("replayed", **item), "End": True},
        f"{prefix}Skipped": {"Type": "Pass", "Parameters": _entry("skipped", **item), "End": True},
    }


def _query(table_name: str, index_name: str, *, next_page: bool) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "TableName": table_name,
        "IndexName": index_name,
        "KeyConditionExpression": "open_status = :open AND received_at BETWEEN :since AND :until",
        "FilterExpression": "provider = :provider",
        "ProjectionExpression": _PROJECTION,
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":open": {"S.$": "States.Format('{}#{}', $.input.status, $.shard)"},
            ":since": {"S.$": "$.input.since"},
            ":until": {"S.$": "$.input.until"},
            ":provider": {"S.$": "$.input.provider"},
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
        "Next": "ReplayPage",
    }


def _tally(*, next_shard: bool) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "input.$": "$.input",
        "counts": _added_counts(page=True),
        "events.$": "States.Format('{},{}', $.events, States.JsonToString($.results))",
        "wrote.$": _count("replayed"),
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


def _pace(wait_state: str, then: str) -> dict[str, Any]:
    return {
        "Type": "Choice",
        "Comment": "Wait between pages only after one that wrote something",
        "Choices": [{"Variable": "$.wrote", "NumericGreaterThan": 0, "Next": wait_state}],
        "Default": then,
    }


def replay_definition(
    table_name: str,
    *,
    index_name: str = definitions.OPEN_EVENTS_INDEX,
    shards: int = definitions.OPEN_EVENTS_SHARDS,
) -> dict[str, Any]:
    """The replay state machine (Amazon States Language, JSONPath) for the inbox table ``table_name``."""
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
        ],
        "Next": "SelectBy",
    }
    by_id_item = {
        "GetById": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:dynamodb:getItem",
            "Parameters": {
                "TableName": table_name,
                "Key": {"pk": {"S.$": "States.Format('{}#{}', $.input.provider, $.event_id)"}},
                "ConsistentRead": True,
                "ProjectionExpression": _PROJECTION,
                "ExpressionAttributeNames": {"#status": "status"},
            },
            "ResultPath": "$.found",
            "Retry": _retry(),
            "Next": "ByIdFound",
        },
        "ByIdFound": {
            "Type": "Choice",
            "Choices": [
                {
                    "And": [
                        {"Variable": "$.found.Item", "IsPresent": True},
                        {"Variable": "$.found.Item.open_status.S", "IsPresent": True},
                        {"Variable": "$.found.Item.status.S", "StringEqualsPath": "$.input.status"},
                    ],
                    "Next": "ByIdSelected",
                },
                {"Variable": "$.found.Item", "IsPresent": True, "Next": "ByIdNotSelected"},
            ],
            "Default": "ByIdNotFound",
        },
        "ByIdSelected": {
            "Type": "Pass",
            "Parameters": {"item.$": "$.found.Item", "input.$": "$.input"},
            "Next": "ByIdIsDryRun",
        },
        "ByIdNotSelected": {
            "Type": "Pass",
            "Parameters": _entry("not_selected", pk="$.found.Item.pk.S", status="$.found.Item.status.S"),
            "End": True,
        },
        "ByIdNotFound": {
            "Type": "Pass",
            "Parameters": _entry("not_found", pk="States.Format('{}#{}', $.input.provider, $.event_id)"),
            "End": True,
        },
        **_item_states("ById", table_name),
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
        "InvalidInput": {
            "Type": "Fail",
            "Error": INVALID_INPUT_ERROR,
            "Cause": (
                "expected {provider: string, status?: " + "|".join(SELECTABLE_STATUSES) + ", since?/until?: "
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
            "Default": "ScanStart",
        },
        # ------------------------------------------------------------------ by id: the events named in the input
        "CountIds": {
            "Type": "Pass",
            "Parameters": {"input.$": "$.input", "ids.$": "States.ArrayLength($.input.event_ids)"},
            "Next": "IdsWithinLimit",
        },
        "IdsWithinLimit": {
            "Type": "Choice",
            "Choices": [{**_between("$.ids", 1, MAX_EVENTS_LIMIT), "Next": "ReplayById"}],
            "Default": "InvalidInput",
        },
        "ReplayById": {
            "Type": "Map",
            "ItemsPath": "$.input.event_ids",
            "ItemSelector": {"event_id.$": "$$.Map.Item.Value", "input.$": "$.input"},
            "MaxConcurrency": 1,
            "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "GetById", "States": by_id_item},
            "ResultPath": "$.results",
            "Next": "TallyById",
        },
        "TallyById": {
            "Type": "Pass",
            "Parameters": {
                "input.$": "$.input",
                "counts": {
                    **{f"{outcome}.$": _count(outcome) for outcome in OUTCOMES},
                    "selected.$": (
                        f"States.MathAdd(States.MathAdd({_count('planned')}, {_count('replayed')}), "
                        f"{_count('skipped')})"
                    ),
                    "pages": 0,
                },
                "events.$": "States.JsonToString($.results)",
                "complete": True,
            },
            "Next": "Summary",
        },
        # ------------------------------------------------------- by age: every shard of the open-events index
        "ScanStart": {
            "Type": "Pass",
            "Parameters": {"input.$": "$.input", "shard": 0, "counts": zero_counts, "events": "[]"},
            "Next": "QueryFirstPage",
        },
        "QueryFirstPage": _query(table_name, index_name, next_page=False),
        "QueryNextPage": _query(table_name, index_name, next_page=True),
        "ReplayPage": {
            "Type": "Map",
            "ItemsPath": "$.page.Items",
            "ItemSelector": {"item.$": "$$.Map.Item.Value", "input.$": "$.input"},
            "MaxConcurrency": 1,
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "ByAgeIsDryRun",
                "States": _item_states("ByAge", table_name),
            },
            "ResultPath": "$.results",
            "Next": "MorePagesInShard",
        },
        "MorePagesInShard": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.page.LastEvaluatedKey", "IsPresent": True, "Next": "TallyNextPage"}],
            "Default": "TallyNextShard",
        },
        "TallyNextPage": _tally(next_shard=False),
        "NextPageWithinLimit": {
            "Type": "Choice",
            "Choices": [
                {
                    "Variable": "$.counts.selected",
                    "NumericGreaterThanEqualsPath": "$.input.max_events",
                    "Next": "Incomplete",
                }
            ],
            "Default": "PaceNextPage",
        },
        "PaceNextPage": _pace("WaitBeforeNextPage", "QueryNextPage"),
        "WaitBeforeNextPage": {"Type": "Wait", "SecondsPath": "$.input.wait_seconds", "Next": "QueryNextPage"},
        "TallyNextShard": _tally(next_shard=True),
        "ShardsLeft": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.shard", "NumericGreaterThanEquals": shards, "Next": "Complete"},
                {
                    "Variable": "$.counts.selected",
                    "NumericGreaterThanEqualsPath": "$.input.max_events",
                    "Next": "Incomplete",
                },
            ],
            "Default": "PaceNextShard",
        },
        "PaceNextShard": _pace("WaitBeforeNextShard", "QueryFirstPage"),
        "WaitBeforeNextShard": {"Type": "Wait", "SecondsPath": "$.input.wait_seconds", "Next": "QueryFirstPage"},
        "Complete": {"Type": "Pass", "Result": True, "ResultPath": "$.complete", "Next": "Summary"},
        "Incomplete": {"Type": "Pass", "Result": False, "ResultPath": "$.complete", "Next": "Summary"},
        # ------------------------------------------------------------------------------------------- output
        "Summary": {
            "Type": "Pass",
            "Parameters": {
                "provider.$": "$.input.provider",
                "status.$": "$.input.status",
                "dry_run.$": "$.input.dry_run",
                "since.$": "$.input.since",
                "until.$": "$.input.until",
                "complete.$": "$.complete",
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
        "TimeoutSeconds": TIMEOUT_SECONDS,
        "States": states,
    }
