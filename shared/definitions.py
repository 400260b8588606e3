"""Definitions shared by the CDK stack, the local runtime and the Lambdas: one source of truth.

Pure constants on purpose (standard library only, no I/O, no CDK or boto3 import; the one piece of logic is the
inbox lifecycle's composer, pure too, which derives a write's request from its row): the local runtime builds its
moto resources from these values, the stack builds CloudFormation from the same values, and the Lambdas read the
same names and defaults, so local, cloud and function code cannot drift. It is the one module of `shared/` that
`infra/` and the local runtime may import (docs/architecture.md; tests/unit/test_import_rules.py).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import zlib
from collections.abc import Iterable, Mapping
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

SERVICE_NAME: Final = "webhook-inbox"
METRICS_NAMESPACE: Final = "WebhookInbox"

# ---------------------------------------------------------------------------------------------- inbox table
INBOX_PARTITION_KEY: Final = "pk"  # "{source}#{event_id}": the unique key is what deduplicates
INBOX_TTL_ATTRIBUTE: Final = "expires_at"

# Sparse index of events that still need attention (pending or failed), oldest first. The partition value is
# "{status}#{shard}" so that a burst of pending events spreads over several index partitions instead of
# throttling one (a throttled GSI back-pressures writes to the table itself).
OPEN_EVENTS_INDEX: Final = "open-events-by-age"
OPEN_EVENTS_INDEX_PK: Final = "open_status"
OPEN_EVENTS_INDEX_SK: Final = "received_at"
OPEN_EVENTS_SHARDS: Final = 8

# Every event of one payment, in business-time order: keyed by the FIFO group id, which is the payment's key
# `{source}#{resource_id}` (or, for a key SQS refuses, `fifo_group_id` of it; an event about no payment is a group
# of its own). Keys only: its one reader (the payment timeline) reads each event from the table, and a projected
# attribute that a write changes is an index write (the settle's `status` was one per event).
RESOURCE_EVENTS_INDEX: Final = "events-by-group"
RESOURCE_EVENTS_INDEX_PK: Final = "group_id"
RESOURCE_EVENTS_INDEX_SK: Final = "occurred_at"
# The index it replaces (keyed by `resource_key`, projecting `status`). An index's name, keys and projection cannot
# change in place, and one stack update may add or delete one index only, so a stack deployed with it moves in two
# updates (docs/deploy.md, "Upgrading the inbox indexes"): the first, with the context value
# PREVIOUS_RESOURCE_INDEX_CONTEXT=true, adds the new index next to it; the next one, without, deletes it. Items
# still carry `resource_key` until they expire; new items do not (the group id holds it).
PREVIOUS_RESOURCE_EVENTS_INDEX: Final = ("events-by-resource", "resource_key", "occurred_at")
PREVIOUS_RESOURCE_EVENTS_INDEX_INCLUDED: Final = (
    "provider",
    "event_id",
    "event_type",
    "resource_id",
    "status",
    "received_at",
)
PREVIOUS_RESOURCE_INDEX_CONTEXT: Final = "inbox_previous_resource_index"

INBOX_GLOBAL_INDEXES: Final[tuple[tuple[str, str, str], ...]] = (
    (OPEN_EVENTS_INDEX, OPEN_EVENTS_INDEX_PK, OPEN_EVENTS_INDEX_SK),
    (RESOURCE_EVENTS_INDEX, RESOURCE_EVENTS_INDEX_PK, RESOURCE_EVENTS_INDEX_SK),
)
# Each index projects only what its readers use, never the body or the headers: an index copy is then under 1 KB,
# one write unit, where projecting ALL copied the whole item (body included) into each index and tripled the write
# units of every inbox write. Keys (the table's and the index's) are always projected.
# Readers of the open-events index: the sweeper (re-dispatch: group_id, dispatch marks; gauges: provider), replay
# (provider, event_type, status), `inbox stats` (provider), the simulator and chaos harness (provider,
# resource_id). A test runs each of them against the projected index, so an attribute missing here fails there,
# not in production.
INBOX_INDEX_PROJECTIONS: Final[dict[str, str]] = {OPEN_EVENTS_INDEX: "INCLUDE", RESOURCE_EVENTS_INDEX: "KEYS_ONLY"}
INBOX_INDEX_INCLUDED_ATTRIBUTES: Final[dict[str, tuple[str, ...]]] = {
    OPEN_EVENTS_INDEX: (
        "provider",
        "event_id",
        "event_type",
        "resource_id",
        "status",
        "attempts",
        "group_id",
        "dispatch_id",
        "dispatched_at",
        "last_attempt_at",
        "last_error",
        "failed_at",
    ),
    RESOURCE_EVENTS_INDEX: (),
}


def inbox_index_projection(index: str) -> dict[str, Any]:
    """An inbox index's `Projection` as DynamoDB's API and CloudFormation spell it."""
    projection: dict[str, Any] = {"ProjectionType": INBOX_INDEX_PROJECTIONS[index]}
    if INBOX_INDEX_PROJECTIONS[index] == "INCLUDE":
        projection["NonKeyAttributes"] = list(INBOX_INDEX_INCLUDED_ATTRIBUTES[index])
    return projection


# ------------------------------------------------------------------------------------------- payments table
PAYMENTS_PARTITION_KEY: Final = "pk"  # "{source}#{resource_id}"

# ---------------------------------------------------------------------------------------------- inbox lifecycle
# The inbox item's statuses and every write that moves it, as data: each write is a row of LIFECYCLE (the statuses
# it moves the item from and to, the `dispatch_reason` it sets, what it does to `attempts` and `last_error`, what it
# stamps), and its UpdateItem request is derived from that row by `compose_update`, so the condition that makes a
# duplicate or a concurrent worker harmless is written once. Here, with the constants, because the stack embeds
# the replay's request in the replay workflow (infra/replay_definition.py) and infra/ may import only this module;
# shared/inbox/lifecycle.py is the run-time owner every Lambda writes through (its writers fill in the values).
# A write "dispatches" (the Pipe enqueues the event) when it leaves the item pending with a dispatching reason
# (PIPE_FILTER_PATTERN below); every dispatching write sets a fresh `dispatch_id` (SQS FIFO's 5-minute
# deduplication would swallow a re-dispatch under the old one) and `dispatched_at` (the sweeper's clock), except
# the receipt, whose `received_at` is that time (the sweeper reads the later of the two).

# An attribute value in DynamoDB's wire format: {"S": "text"}, {"N": "3"}; or, in the replay workflow's
# definition, a Step Functions path that yields one ({"S.$": "$.item.pk.S"}).
AttributeValue = Mapping[str, Any]


class EventStatus(StrEnum):
    PENDING = "pending"
    PROCESSED = "processed"
    IGNORED = "ignored"
    FAILED = "failed"


# Statuses kept in the sparse open-events index (the sweeper's and the replay's reading list).
OPEN_STATUSES: Final = frozenset({EventStatus.PENDING, EventStatus.FAILED})


class DispatchReason(StrEnum):
    """Why a write to a pending item happened. Only the dispatching ones make the Pipe enqueue the event (the Pipe's
    filter below passes DISPATCH_REASONS)."""

    RECEIVED = "received"  # the ingest's insert
    REDISPATCH = "redispatch"  # the sweeper's re-dispatch of a stale event
    REPLAY = "replay"  # an operator's replay
    ATTEMPT = "attempt"  # the processor's own bookkeeping while the event is still pending: never re-enqueues
    WAIT = "wait"  # the processor's note that the event waits for its source (never re-enqueues either)


class IgnoredReason(StrEnum):
    """Why a well-formed event settled `ignored`: a closed set, stored on the item (`ignored_reason`, beside the
    free-text `note`) and counted per source and reason (METRIC_EVENTS_IGNORED). `failed` is kept for an event that
    should have changed a payment and could not (an amount the gateway contradicts, a status nobody maps, a payment
    the gateway never knew); an event that has nothing to change is one of these."""

    UNROUTED_TYPE = "unrouted_type"  # no handler routes its type: not a payment event (setup_intent.*, contact.*)
    NO_PAYMENT = "no_payment"  # a routed type, but it names no payment the inbox tracks
    NOTHING_TO_APPLY = "nothing_to_apply"  # it names a payment but states nothing to apply (no status, no API)
    NO_CHANGE = "no_change"  # the payment is already in the state it reports
    NOT_NEWER = "not_newer"  # ordered by event time, and not newer than the last event applied
    TRANSITION_REFUSED = "transition_refused"  # the state machine refuses the move (a regression)


IGNORED_REASONS: Final[tuple[str, ...]] = tuple(reason.value for reason in IgnoredReason)
# Routine: a payment's second event that finds it already there, a type the gateway was configured to send that is
# not a payment's. Stored on the item and in EventsSettled's ignored share (per provider), but not counted per
# source: they are sent every hour of traffic, and each (source, reason) would be a custom metric billed all month.
ROUTINE_IGNORED_REASONS: Final[tuple[str, ...]] = (IgnoredReason.NO_CHANGE.value, IgnoredReason.UNROUTED_TYPE.value)
# Counted per source and reason (METRIC_EVENTS_IGNORED), sent only when one happens.
COUNTED_IGNORED_REASONS: Final[tuple[str, ...]] = tuple(
    reason for reason in IGNORED_REASONS if reason not in ROUTINE_IGNORED_REASONS
)
# The reason a healthy driver almost never gives: a routed payment event that names no payment is what a parser
# that lost the resource (or a gateway that changed its shape) looks like. Its rise on one source pages
# (infra/constructs/monitoring.py, `ignored-no-payment-<source>`). One reason, one metric per alarm: each metric an
# alarm reads is billed by the month, per source.
ALARMED_IGNORED_REASON: Final = IgnoredReason.NO_PAYMENT.value


DISPATCHING_REASONS: Final = frozenset({DispatchReason.RECEIVED, DispatchReason.REDISPATCH, DispatchReason.REPLAY})
DISPATCH_REASONS: Final = tuple(reason.value for reason in DispatchReason if reason in DISPATCHING_REASONS)


class Write(StrEnum):
    RECEIVE = "receive"  # the ingest stores a verified delivery, once (its key deduplicates)
    ATTEMPT = "attempt"  # the processor counts a failed attempt; the event is retried from the queue
    SETTLE = "settle"  # the processor applied it (processed) or found nothing to change (ignored)
    FAIL = "fail"  # the processor's attempt found it cannot be processed (that attempt counts)
    GIVE_UP = "give_up"  # the processor's attempts are exhausted (the last one was already counted)
    WAIT = "wait"  # the processor notes that the event waits for its source (open circuit, rate limit): no attempt
    REDISPATCH = "redispatch"  # the sweeper dispatches a pending event whose dispatch got lost
    REPLAY = "replay"  # an operator sets a failed (or pending) event back to pending


class Attempts(Enum):
    KEEP = "keep"
    COUNT = "count"  # one more
    RESET = "reset"  # back to 0: a replayed event gets its full budget again


class LastError(Enum):
    KEEP = "keep"
    RECORD = "record"
    CLEAR = "clear"


class Transition(NamedTuple):
    """What one write does to an item. `sources` empty: the item must not exist yet. (A NamedTuple, like the
    catalog's entries below: immutable without a dataclass's class-creation cost on the ingest's cold start.)"""

    sources: frozenset[EventStatus]
    targets: frozenset[EventStatus]
    dispatch_reason: DispatchReason | None  # written when the write leaves the item pending
    attempts: Attempts
    last_error: LastError
    stamps: tuple[str, ...] = ()  # attributes set to the write's time
    fields: tuple[str, ...] = ()  # attributes whose values the writer supplies
    optional_fields: tuple[str, ...] = ()  # ... when it has them (each may be guarded by the value it read)
    # Optimistic guards: the attribute still holds what the writer read (or is still absent), so a write based
    # on a stale read is refused. `quiet` attributes must be absent or older than the writer's cutoff.
    unchanged: tuple[str, ...] = ()
    quiet: tuple[str, ...] = ()
    # Attributes the write removes: what the item no longer needs once in its target status. Each one stays out of
    # every later write's billed size (an update is billed on the larger of the item before and after it).
    clears: tuple[str, ...] = ()
    # Fields (of `fields`) the item must not already hold the writer's value of: a writer that stamps its own
    # identity writes once. A replay execution applying a page again (its task retried after a crash halfway)
    # leaves the events it already set back to pending alone, even those selected as pending.
    once_per: tuple[str, ...] = ()

    @property
    def dispatches(self) -> bool:
        """Whether it re-enqueues the event: it leaves the item pending with a dispatching reason."""
        return EventStatus.PENDING in self.targets and self.dispatch_reason in DISPATCHING_REASONS

    @property
    def moves_status(self) -> bool:
        return self.targets != self.sources


_PENDING = frozenset({EventStatus.PENDING})
# What a wait for the source writes (Write.WAIT): when its message comes back (ISO-8601 UTC, as every stamp) and what
# it waits for (WaitingFor).
WAIT_UNTIL: Final = "wait_until"
WAIT_FIELDS: Final = (WAIT_UNTIL, "waiting_for")


class WaitingFor(StrEnum):
    """What an event that waits without an attempt waits for (`waiting_for`)."""

    CIRCUIT = "circuit"  # its source's circuit breaker is open (shared/gateway/breaker.py)
    RATE_LIMIT = "rate_limit"  # its source's refetch rate limit, or the gateway's 429 (shared/gateway/ratelimit.py)


LIFECYCLE: Final[Mapping[Write, Transition]] = {
    Write.RECEIVE: Transition(
        sources=frozenset(),
        # failed: a body its class binds that cannot be parsed; ignored: an unparseable body its class does not
        # bind (it proves nothing: UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR)
        targets=frozenset({EventStatus.PENDING, EventStatus.FAILED, EventStatus.IGNORED}),
        dispatch_reason=DispatchReason.RECEIVED,
        attempts=Attempts.RESET,
        last_error=LastError.RECORD,  # the parse failure of an unparseable one
        stamps=("received_at",),
        optional_fields=("note",),  # why an ignored one is ignored
    ),
    Write.ATTEMPT: Transition(
        sources=_PENDING,
        targets=_PENDING,
        dispatch_reason=DispatchReason.ATTEMPT,
        attempts=Attempts.COUNT,
        last_error=LastError.RECORD,
        stamps=("last_attempt_at",),  # the sweeper sees it is being worked on, not stale
    ),
    Write.SETTLE: Transition(
        sources=_PENDING,
        targets=frozenset({EventStatus.PROCESSED, EventStatus.IGNORED}),
        dispatch_reason=None,
        attempts=Attempts.COUNT,
        last_error=LastError.CLEAR,
        stamps=("processed_at",),
        fields=("note",),
        optional_fields=("ignored_reason",),  # an IgnoredReason, for an ignored one
        # A settled event is never dispatched again (only failed or pending ones are replayed, with fresh marks):
        # its dispatch marks go, and so does a wait it was in, so that the settle's item is no larger than the
        # received one.
        clears=("dispatch_id", "dispatch_reason", "dispatched_at", *WAIT_FIELDS),
    ),
    Write.FAIL: Transition(
        sources=_PENDING,
        targets=frozenset({EventStatus.FAILED}),
        dispatch_reason=None,
        attempts=Attempts.COUNT,
        last_error=LastError.RECORD,
        stamps=("failed_at",),
        optional_fields=("failures",),  # counted when an outbox record carries the count (its sequence)
    ),
    Write.GIVE_UP: Transition(
        sources=_PENDING,
        targets=frozenset({EventStatus.FAILED}),
        dispatch_reason=None,
        attempts=Attempts.KEEP,
        last_error=LastError.RECORD,
        stamps=("failed_at",),
        optional_fields=("failures",),
    ),
    Write.WAIT: Transition(
        sources=_PENDING,
        targets=_PENDING,
        dispatch_reason=DispatchReason.WAIT,  # not a dispatching reason: the message it waits in is the one
        attempts=Attempts.KEEP,  # no call was made: a wait is never one of the event's attempts
        last_error=LastError.KEEP,
        # Until when its message is hidden, and what it waits for: the sweeper leaves it alone until that time
        # plus its stale threshold (shared/sweeper.py), however long the source keeps it waiting.
        fields=WAIT_FIELDS,
    ),
    Write.REDISPATCH: Transition(
        sources=_PENDING,
        targets=_PENDING,
        dispatch_reason=DispatchReason.REDISPATCH,
        attempts=Attempts.KEEP,
        last_error=LastError.KEEP,
        # The group id is written again, valid: the Pipe copies it, and SQS would refuse an old raw key.
        fields=("group_id",),
        # Nobody dispatched or attempted it since the sweeper read it, and it does not wait for its source (a wait
        # that ended before the cutoff is quiet too): two sweepers at once re-dispatch it once, and an event whose
        # message is only hidden until its source has room is never enqueued a second time.
        unchanged=("dispatch_id",),
        quiet=("last_attempt_at", WAIT_UNTIL),
    ),
    Write.REPLAY: Transition(
        sources=frozenset({EventStatus.FAILED, EventStatus.PENDING}),
        targets=_PENDING,
        dispatch_reason=DispatchReason.REPLAY,
        attempts=Attempts.RESET,
        last_error=LastError.CLEAR,
        stamps=("replayed_at",),
        fields=("replayed_by",),
        once_per=("replayed_by",),
    ),
}

# The statuses a replay may select: the ones it moves an item from.
REPLAYABLE_STATUSES: Final = frozenset(LIFECYCLE[Write.REPLAY].sources)


def allowed_transitions() -> frozenset[tuple[EventStatus | None, EventStatus]]:
    """Every (from, to) some write makes; `None` is "no item yet". Anything else is refused."""
    return frozenset(
        (source, target)
        for transition in LIFECYCLE.values()
        for source in (transition.sources or {None})
        for target in transition.targets
    )


def writes_between(source: EventStatus | None, target: EventStatus) -> frozenset[Write]:
    return frozenset(
        write
        for write, transition in LIFECYCLE.items()
        if (source in transition.sources or (source is None and not transition.sources))
        and target in transition.targets
    )


# ---------------------------------------------------------------------------------- inbox lifecycle: values


def text_value(value: str) -> dict[str, str]:
    return {"S": value}


def number_value(value: int) -> dict[str, str]:
    return {"N": str(value)}


def open_status_value(status: EventStatus, pk: str) -> str:
    """Partition value of the sparse open-events index: status plus a stable shard of the key."""
    return f"{status.value}#{zlib.crc32(pk.encode()) % OPEN_EVENTS_SHARDS}"


# -------------------------------------------------------------------------------- inbox lifecycle: requests

RECEIVE_CONDITION: Final = "attribute_not_exists(pk)"  # the unique key, not a read-then-write, deduplicates


def replay_update(
    *,
    selected: AttributeValue,
    open_status: AttributeValue,
    dispatch_id: AttributeValue,
    now: AttributeValue,
    replayed_by: AttributeValue,
) -> dict[str, Any]:
    """Back to pending with a fresh dispatch id, conditioned on the item still being in the `selected` status.

    Every value is an AttributeValue, so the replay workflow passes Step Functions paths (the item's shard, a
    States.UUID(), the state's entered time, the execution's ARN) where a Python writer passes literals."""
    return compose_update(
        Write.REPLAY,
        EventStatus.PENDING,
        expected=selected,
        now=now,
        open_status=open_status,
        dispatch_id=dispatch_id,
        fields={"replayed_by": replayed_by},
    )


class _Request:
    """An UpdateItem's expressions as they are assembled: assignments, removals, conditions and their values."""

    __slots__ = ("conditions", "removes", "sets", "values")

    def __init__(self) -> None:
        self.sets: list[str] = []
        self.removes: list[str] = []
        self.conditions: list[str] = []
        self.values: dict[str, AttributeValue] = {}

    def set(self, assignment: str, **values: AttributeValue) -> None:
        self.sets.append(assignment)
        self.values.update({f":{name}": value for name, value in values.items()})

    def require(self, condition: str, **values: AttributeValue) -> None:
        self.conditions.append(condition)
        self.values.update({f":{name}": value for name, value in values.items()})

    def parameters(self) -> dict[str, Any]:
        expression = "SET " + ", ".join(self.sets) + (" REMOVE " + ", ".join(self.removes) if self.removes else "")
        return {
            "UpdateExpression": expression,
            "ConditionExpression": " AND ".join(self.conditions),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": self.values,
        }


def compose_update(
    write: Write,
    target: EventStatus,
    *,
    now: AttributeValue,
    expected: AttributeValue | None = None,
    error: AttributeValue | None = None,
    open_status: AttributeValue | None = None,
    dispatch_id: AttributeValue | None = None,
    fields: Mapping[str, AttributeValue] | None = None,
    seen: Mapping[str, AttributeValue | None] | None = None,
    quiet_since: AttributeValue | None = None,
) -> dict[str, Any]:
    """The UpdateItem parameters of one write (no TableName, no Key), derived from its row of LIFECYCLE. Values are
    AttributeValues: literals from a Python writer (shared/inbox/lifecycle.py), Step Functions paths from the replay."""
    transition = LIFECYCLE[write]
    fields, seen = dict(fields or {}), dict(seen or {})
    optional = set(fields) - set(transition.fields)
    if target not in transition.targets:
        raise ValueError(f"{write} moves an item to {sorted(transition.targets)}, not {target}")
    if set(transition.fields) - set(fields) or not optional <= set(transition.optional_fields):
        raise ValueError(f"{write} writes {transition.fields} (or {transition.optional_fields}), not {sorted(fields)}")
    if not set(transition.unchanged) <= set(seen) <= set(transition.unchanged) | optional:
        raise ValueError(f"{write} guards {transition.unchanged} (and optional fields), not {sorted(seen)}")
    request = _Request()
    _assign(request, write, transition, target, now, error, open_status, dispatch_id, fields)
    _condition(request, write, transition, expected, seen, quiet_since)
    return request.parameters()


def _assign(
    request: _Request,
    write: Write,
    transition: Transition,
    target: EventStatus,
    now: AttributeValue,
    error: AttributeValue | None,
    open_status: AttributeValue | None,
    dispatch_id: AttributeValue | None,
    fields: Mapping[str, AttributeValue],
) -> None:
    if transition.moves_status:
        request.set("#status = :status", status=text_value(target.value))
        if target not in OPEN_STATUSES:
            request.removes.append("open_status")  # settled: out of the open-events index
        elif open_status is None:
            raise ValueError(f"{write} to {target} keeps the item in the open-events index: its shard is needed")
        else:
            request.set("open_status = :open_status", open_status=open_status)
    if target is EventStatus.PENDING and transition.dispatch_reason is not None:
        request.set("dispatch_reason = :dispatch_reason", dispatch_reason=text_value(transition.dispatch_reason.value))
        if transition.dispatches:
            if dispatch_id is None:
                raise ValueError(f"{write} dispatches: it needs a fresh dispatch id")
            request.set("dispatch_id = :dispatch_id", dispatch_id=dispatch_id)
            request.set("dispatched_at = :now", now=now)
    if transition.attempts is Attempts.COUNT:
        request.set("attempts = if_not_exists(attempts, :zero) + :one", zero=number_value(0), one=number_value(1))
    elif transition.attempts is Attempts.RESET:
        request.set("attempts = :zero", zero=number_value(0))
    if transition.last_error is LastError.RECORD:
        if error is None:
            raise ValueError(f"{write} records the error: it needs one")
        request.set("last_error = :error", error=error)
    elif transition.last_error is LastError.CLEAR:
        request.removes.append("last_error")
    request.removes.extend(transition.clears)
    for stamp in transition.stamps:
        request.set(f"{stamp} = :now", now=now)
    for name, value in fields.items():
        request.set(f"{name} = :{name}", **{name: value})


def _condition(
    request: _Request,
    write: Write,
    transition: Transition,
    expected: AttributeValue | None,
    seen: Mapping[str, AttributeValue | None],
    quiet_since: AttributeValue | None,
) -> None:
    if len(transition.sources) == 1:
        (source,) = transition.sources
        request.require("#status = :expected_status", expected_status=text_value(source.value))
    elif expected is not None:  # the writer names which of the sources it selected (and read)
        literal = expected.get("S")
        if literal is not None and literal not in {source.value for source in transition.sources}:
            raise ValueError(f"{write} moves an item from {sorted(transition.sources)}, not {literal}")
        request.require("#status = :expected_status", expected_status=expected)
    else:
        raise ValueError(f"{write} moves an item from any of {sorted(transition.sources)}: name the one expected")
    for name, value in seen.items():
        if value is None:
            request.require(f"attribute_not_exists({name})")
        else:
            request.require(f"{name} = :seen_{name}", **{f"seen_{name}": value})
    for name in transition.once_per:
        request.require(f"(attribute_not_exists({name}) OR {name} <> :{name})")
    for name in transition.quiet:
        if quiet_since is None:
            raise ValueError(f"{write} needs the cutoff its {name} must be older than")
        request.require(f"(attribute_not_exists({name}) OR {name} < :quiet_since)", quiet_since=quiet_since)


# ----------------------------------------------------------------------------------------- dispatch (Pipe)
# Which stream records become queue messages. A write dispatches when it leaves the item pending AND says it
# wants a dispatch (`dispatch_reason`): the ingest's insert ("received"), the sweeper's re-dispatch
# ("redispatch") and a replay ("replay"). The processor's own bookkeeping writes while an event is still
# pending set `dispatch_reason` to "attempt" (or "wait"), so they never re-enqueue the event they are working on.
PIPE_FILTER_PATTERN: Final[dict[str, Any]] = {
    "eventName": ["INSERT", "MODIFY"],
    "dynamodb": {
        "NewImage": {
            "status": {"S": [EventStatus.PENDING.value]},
            "dispatch_reason": {"S": list(DISPATCH_REASONS)},
        }
    },
}

# JSON paths into the stream record, as EventBridge Pipes' SQS target parameters take them.
PIPE_MESSAGE_GROUP_ID_PATH: Final = "$.dynamodb.NewImage.group_id.S"
# A fresh uuid written with every dispatching write: SQS FIFO's 5-minute deduplication never swallows a
# re-dispatch, while a retried delivery of the same stream record still deduplicates.
PIPE_DEDUPLICATION_ID_PATH: Final = "$.dynamodb.NewImage.dispatch_id.S"
# The message body: just enough to load the item; the item itself stays the truth.
# Pipes substitutes values as they are: a string placeholder is written inside quotes (AWS: "put quotes around
# variables that reference JSON path parameters, not around JSON objects or arrays").
PIPE_INPUT_TEMPLATE: Final = (
    '{"pk": "<$.dynamodb.Keys.pk.S>", "dispatch_id": "<$.dynamodb.NewImage.dispatch_id.S>", '
    '"dispatch_reason": "<$.dynamodb.NewImage.dispatch_reason.S>"}'
)
PIPE_BATCH_SIZE: Final = 10
# Where a newly created Pipe starts reading the stream. TRIM_HORIZON: the oldest record still in the stream (24 h),
# so events accepted before the Pipe existed (first deploy) or while it was being replaced (StartingPosition and
# Source are create-only: a change replaces the Pipe) are dispatched, not stranded until the sweeper finds them.
# Re-reading records already dispatched is harmless: the processor skips items that are no longer pending.
PIPE_STARTING_POSITION: Final = "TRIM_HORIZON"
# A record the Pipe cannot deliver (say, an item written without a group id) is retried this often, bisecting the
# batch to isolate it, then handed to the Pipe's dead-letter queue so it stops blocking its shard. Nothing is lost:
# the item itself is still pending in the inbox, and the sweeper re-dispatches stale pending events.
PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 10

# -------------------------------------------------------------------------------------------------- queue
# AWS's guidance for a queue feeding a Lambda event source mapping: a visibility timeout of at least six times the
# function's timeout, so a batch the service retries (throttling, a crashed invocation) never becomes visible to a
# second poller while the first is still at work. 6 x PROCESSOR_TIMEOUT_SECONDS (30 s) = 180 s. (It was 60 s.)
# The processor's own retries do not wait for it: they set the failed message's visibility to the backoff. But
# the later messages of that payment in the same batch, returned unprocessed (skip_group_on_error), come back
# only after this timeout, and their FIFO group waits for them.
QUEUE_VISIBILITY_TIMEOUT_SECONDS: Final = 180
# A safety net only: the processor counts attempts on the item and dead-letters exhausted events itself, so
# that a delay while a gateway's circuit is open (many receives, no attempt spent) never dead-letters an event.
QUEUE_MAX_RECEIVE_COUNT: Final = 100
QUEUE_RETENTION_DAYS: Final = 14
PROCESSOR_BATCH_SIZE: Final = 10
PROCESSOR_MAX_CONCURRENCY: Final = 10
PROCESSOR_TIMEOUT_SECONDS: Final = 30
PROCESSOR_MEMORY_MB: Final = 512

# ---------------------------------------------------------------------------------------------- ingest API
# The parameter's value is a source's name (docs/sources.md); the route keeps its parameter's name so that a
# deployed route is not replaced.
WEBHOOK_ROUTE: Final = "/webhooks/{provider}"
# A provider's appended segment (ProviderEntry.path_suffixes): "/webhooks/{provider}/pix" for Efí.
WEBHOOK_SUFFIX_ROUTE: Final = "/webhooks/{provider}/%s"
HEALTH_ROUTE: Final = "/health"
# The stage throttle admits what the inbox table absorbs, so that a burst meets the front door (429: the gateway
# resends) before DynamoDB (a throttled put: the ingest answers 500, a retry) (docs/scale.md, "The front door").
# A new on-demand table sustains 4,000 write units/s without pre-warming (docs/aws-limits.md). A delivery the ingest
# stores writes the item and its two index entries, 3 units (measured: `make bench`, section item_sizes; a
# duplicate's refused put is 1); its event's settle writes the same table again: the item, twice in a transaction,
# and the open-events entry's removal, 3 units at most (2.625 measured). The rate counts both per admitted delivery,
# however fast the processor keeps up; the burst is what one second admits on top of the rate with the ingest's
# writes alone (the settles follow, after the Pipe and the queue).
ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND: Final = 4_000
INBOX_WRITE_UNITS_PER_STORED_DELIVERY: Final = 3
INBOX_WRITE_UNITS_PER_SETTLED_EVENT: Final = 3


def api_throttle(table_write_units_per_second: int = ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND) -> tuple[int, int]:
    """The stage's (rate, burst) for an inbox table that absorbs this many write units a second (its warm
    throughput when pre-warmed)."""
    rate = table_write_units_per_second // (INBOX_WRITE_UNITS_PER_STORED_DELIVERY + INBOX_WRITE_UNITS_PER_SETTLED_EVENT)
    burst = table_write_units_per_second // INBOX_WRITE_UNITS_PER_STORED_DELIVERY - rate
    return rate, burst


API_THROTTLE_RATE_LIMIT: Final = api_throttle()[0]  # requests/s, steady state: 666
API_THROTTLE_BURST_LIMIT: Final = api_throttle()[1]  # 667
INGEST_TIMEOUT_SECONDS: Final = 10
INGEST_MEMORY_MB: Final = 512

# ------------------------------------------------------------------------------------------------ defaults
DEFAULT_SIGNATURE_TOLERANCE_SECONDS: Final = 300
DEFAULT_RETENTION_DAYS: Final = 30
MINIMUM_RETENTION_DAYS: Final = 7
# DynamoDB items are limited to 400 KB; bodies above this go to S3 and the item references them.
INLINE_BODY_LIMIT_BYTES: Final = 256 * 1024
# DynamoDB TransactWriteItems: at most 100 actions, the items 4 MB in all, no two actions on one item
# (TransactWriteItems API reference; docs/aws-limits.md). A delivery's events are stored in one transaction
# (shared/ingest_batch.py), so a delivery holds at most MAX_EVENTS_PER_DELIVERY events; the local stack enforces both.
TRANSACT_WRITE_MAX_ACTIONS: Final = 100
TRANSACT_WRITE_MAX_BYTES: Final = 4 * 1024 * 1024
MAX_EVENTS_PER_DELIVERY: Final = TRANSACT_WRITE_MAX_ACTIONS
# The inline copies of one delivery's body, summed over its events, stay under this; above it the body goes to S3
# once and every event's item points at it. With each item's other attributes bounded by the request's 10 KB of
# headers plus ~1 KB, 100 items stay under 2 MiB + 1.1 MB: well inside the transaction's 4 MB.
MULTI_EVENT_INLINE_BODY_BUDGET_BYTES: Final = 2 * 1024 * 1024


def secret_prefix(stack_name: str) -> str:
    """Name prefix of the local stack's signing secrets (``{prefix}{source}``, inbox_local/config.py). The
    deployed stack names none of its secrets: CloudFormation generates the names (infra/constructs/secrets.py)."""
    return f"{stack_name}/webhook-signing/"


# Tags on every secret of the deployed stack: which stack, which provider (or source), which kind. The names are
# CloudFormation's, so these tags and the stack's outputs are how an operator finds a secret (console filter,
# `aws secretsmanager list-secrets --filters Key=tag-key,...`), also one retained by a deleted stack.
SECRET_TAG_STACK: Final = "webhook-inbox:stack"
SECRET_TAG_PROVIDER: Final = "webhook-inbox:provider"
SECRET_TAG_SOURCE: Final = "webhook-inbox:source"  # the source a signing or API-key secret belongs to
SECRET_TAG_KIND: Final = "webhook-inbox:kind"
SECRET_KIND_SIGNING: Final = "signing"  # a gateway's webhook signing secrets {"current", "previous"}
SECRET_KIND_API_KEY: Final = "api-key"  # a gateway's API key for the refetch (plain string)
SECRET_KIND_FORWARD_SIGNING: Final = "forward-signing"  # the forwarded events' Standard Webhooks secret pair
SECRET_KIND_FINGERPRINT_KEY: Final = "fingerprint-key"  # keys the rejected-delivery log's fingerprints {"current"}

# Lambda: "the total size of all environment variables doesn't exceed 4 KB"
# (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). The secret ARN maps are the only
# variables that grow with the number of declared sources, with INBOX_SOURCES (the declaration itself);
# infra/constructs/secrets.py checks at synth that they, the maps at their longest possible ARNs, leave this much
# of the 4 KB to every other variable.
LAMBDA_ENVIRONMENT_LIMIT_BYTES: Final = 4096
LAMBDA_ENVIRONMENT_RESERVE_BYTES: Final = 1024


# ------------------------------------------------------------------------------------------- control table
# Small operational state shared by every function instance: the refetch circuit breakers
# (pk = "breaker#{source}"), the refetch rate limits (pk = "ratelimit#{source}", shared/gateway/ratelimit.py) and,
# with forwarding, one checkpoint per outbox partition (pk = "outbox-forward#{outbox pk}", shared/forwarding.py).
# Kept apart from the payments table so payment scans never see it.
CONTROL_PARTITION_KEY: Final = "pk"
# The table's TTL attribute: only the checkpoints carry it (a breaker and a rate limit are one item per source,
# rewritten in place; a checkpoint is one per payment ever forwarded, and would otherwise accumulate for ever).
CONTROL_TTL_ATTRIBUTE: Final = "expires_at"
FORWARD_CHECKPOINT_PREFIX: Final = "outbox-forward#"

# ---------------------------------------------------------------------------------------------- environment
# Environment variable names: the contract between the stack (and the local runtime) and the functions.
ENV_INBOX_TABLE: Final = "INBOX_TABLE"
ENV_PAYMENTS_TABLE: Final = "PAYMENTS_TABLE"
ENV_CONTROL_TABLE: Final = "CONTROL_TABLE"
ENV_BODY_BUCKET: Final = "INBOX_BODY_BUCKET"
ENV_SECRET_PREFIX: Final = "INBOX_SECRET_PREFIX"  # the local stack's secret names ({prefix}{source})
ENV_API_KEY_SECRET_PREFIX: Final = "INBOX_API_KEY_SECRET_PREFIX"  # likewise, for the API keys
# The deployed stack's secrets, as JSON objects {source: secret ARN} (shared/secrets.py reads them): a signing
# secret per declared source, an API-key secret per declared source whose provider has a refetch API.
ENV_SIGNING_SECRETS: Final = "INBOX_SIGNING_SECRETS"
ENV_API_KEY_SECRETS: Final = "INBOX_API_KEY_SECRETS"
# In those maps (and the stack outputs that repeat them) the ARNs' common part,
# "arn:<partition>:secretsmanager:<region>:<account>:secret:", is written once under this key (no source name can
# be "*") and each source's entry holds the rest, the secret's name with its suffix: 16 ARNs in full outgrew what
# Lambda's 4 KB environment leaves the map (infra/constructs/secrets.py checks it at synth). shared.secrets.secret_arns
# expands a map back to full ARNs.
SECRET_MAP_ARN_PREFIX_KEY: Final = "*"
ENV_SIGNATURE_TOLERANCE: Final = "INBOX_SIGNATURE_TOLERANCE_SECONDS"
ENV_RETENTION_DAYS: Final = "INBOX_RETENTION_DAYS"
ENV_QUEUE_URL: Final = "INBOX_QUEUE_URL"
ENV_MAX_ATTEMPTS: Final = "INBOX_MAX_ATTEMPTS"

# ---------------------------------------------------------------------------------------------- stack outputs
# CloudFormation output names the CLI reads to find a deployed stack's resources (`inbox ... --stack NAME`).
OUTPUT_API_URL: Final = "ApiUrl"
OUTPUT_INBOX_TABLE: Final = "InboxTableName"
OUTPUT_PAYMENTS_TABLE: Final = "PaymentsTableName"
OUTPUT_BODY_BUCKET: Final = "BodyBucketName"
OUTPUT_SIGNING_SECRETS: Final = "SigningSecretArns"  # JSON {source: secret ARN}: the deployed sources
OUTPUT_INGEST_FUNCTION: Final = "IngestFunctionName"
OUTPUT_CONTROL_TABLE: Final = "ControlTableName"
OUTPUT_QUEUE_URL: Final = "DispatchQueueUrl"
OUTPUT_DEAD_LETTER_QUEUE_URL: Final = "DeadLetterQueueUrl"
OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL: Final = "PipeDeadLetterQueueUrl"
OUTPUT_PROCESSOR_FUNCTION: Final = "ProcessorFunctionName"
OUTPUT_API_KEY_SECRETS: Final = "GatewayApiKeySecretArns"  # JSON {source: secret ARN}
OUTPUT_SOURCE_PROVIDERS: Final = "SourceProviders"  # JSON {source: provider}: what the stack was deployed with
# The mutual-TLS custom domain (only when a source declares mutual_tls; infra/constructs/mutual_tls_domain.py): its
# base URL, the API Gateway domain name DNS must point the custom name at, and that target's hosted zone (alias).
OUTPUT_MUTUAL_TLS_URL: Final = "MutualTlsUrl"
OUTPUT_MUTUAL_TLS_DNS_TARGET: Final = "MutualTlsDnsTarget"
OUTPUT_MUTUAL_TLS_DNS_ZONE: Final = "MutualTlsDnsHostedZoneId"
OUTPUT_MUTUAL_TLS_SOURCES: Final = "MutualTlsSources"  # JSON [source, ...]: the sources that require it
ENV_DLQ_URL: Final = "INBOX_DLQ_URL"
ENV_RETRY_BASE_SECONDS: Final = "INBOX_RETRY_BASE_SECONDS"
MAX_PROCESSING_ATTEMPTS: Final = 8  # attempts the processor counts on the item before failing the event
RETRY_BASE_SECONDS: Final = 5

# ------------------------------------------------------------------------------------------------ operations
# The sweeper (functions/sweeper): an EventBridge schedule runs it every SWEEP_SCHEDULE_MINUTES in AWS; the local
# stack runs it every INBOX_SWEEP_INTERVAL_SECONDS (default LOCAL_SWEEP_INTERVAL_SECONDS).
SWEEP_SCHEDULE_MINUTES: Final = 5
LOCAL_SWEEP_INTERVAL_SECONDS: Final = 10
SWEEPER_TIMEOUT_SECONDS: Final = 120  # the sweeper stops paging when fewer than 10 s of its invocation remain
SWEEPER_MEMORY_MB: Final = 256
# A pending event is stale (its dispatch was lost) when nothing happened to it for this long: no dispatch
# (`dispatched_at`) and no processing attempt (`last_attempt_at`). It must exceed the processor's longest backoff
# (shared.backoff.MAX_BACKOFF_SECONDS = 600), or the sweeper would re-dispatch events that are only waiting.
DEFAULT_STALE_AFTER_SECONDS: Final = 900
# Payments left in an intermediate status (pending, authorized) are refetched from the gateway after this long.
DEFAULT_RECONCILE_AFTER_SECONDS: Final = 3600
DEFAULT_SWEEP_MAX_ITEMS: Final = 500  # per phase (re-dispatch, reconcile) and per run
# The replay's page function (functions/replay), invoked by the replay workflow with one page of at most 100
# events, each one conditional UpdateItem (milliseconds in AWS): the timeout is for a throttled table, whose writes
# the SDK retries, not for the work.
REPLAY_PAGE_TIMEOUT_SECONDS: Final = 60
REPLAY_PAGE_MEMORY_MB: Final = 256

# Sparse index of payments the sweeper reconciles: only payments in an intermediate status carry
# `reconcile_key` = "{source}#{status}" (one partition per source and status, so the sweeper queries only the
# sources whose provider has an API to refetch from), sorted by `checked_at` = when the payment was last confirmed
# against its source (the processor's write, or the sweeper's claim when it sends a reconciliation). Keys only:
# the sweeper needs nothing else.
RECONCILE_INDEX: Final = "payments-to-reconcile"
RECONCILE_INDEX_PK: Final = "reconcile_key"
RECONCILE_INDEX_SK: Final = "checked_at"
RECONCILE_INDEX_PROJECTION: Final = "KEYS_ONLY"
PAYMENTS_GLOBAL_INDEXES: Final[tuple[tuple[str, str, str], ...]] = (
    (RECONCILE_INDEX, RECONCILE_INDEX_PK, RECONCILE_INDEX_SK),
)

# ------------------------------------------------------------------------------------------------- retention
# The archiver (functions/archiver) consumes the inbox stream through an event source mapping with this filter:
# only REMOVE records made by the DynamoDB service itself, i.e. TTL deletions (AWS: "Records deleted by TTL carry
# userIdentity {type: Service, principalId: dynamodb.amazonaws.com}"). An operator's own DeleteItem is not archived.
ARCHIVE_FILTER_PATTERN: Final[dict[str, Any]] = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}
ARCHIVE_KEY_PREFIX: Final = "archive/"
ARCHIVER_BATCH_SIZE: Final = 100
ARCHIVER_MAX_BATCHING_WINDOW_SECONDS: Final = 60  # fewer, larger archive objects
# The stream keeps records 24 h: the mapping retries a failing batch (bisecting it) until it succeeds or the record
# ages out, then reports it to its on-failure destination. The archive is at-least-once (a bisected retry can
# write a record into a second object); every line carries its `pk`.
ARCHIVER_STARTING_POSITION: Final = "TRIM_HORIZON"
ARCHIVER_TIMEOUT_SECONDS: Final = 120
ARCHIVER_MEMORY_MB: Final = 512
OUTPUT_ARCHIVE_BUCKET: Final = "ArchiveBucketName"

ENV_STALE_AFTER: Final = "INBOX_STALE_AFTER_SECONDS"
ENV_RECONCILE_AFTER: Final = "INBOX_RECONCILE_AFTER_SECONDS"
ENV_SWEEP_MAX_ITEMS: Final = "INBOX_SWEEP_MAX_ITEMS"
ENV_SWEEP_INTERVAL: Final = "INBOX_SWEEP_INTERVAL_SECONDS"  # local stack only (AWS: the schedule's rate)
ENV_ARCHIVE_BUCKET: Final = "INBOX_ARCHIVE_BUCKET"
ENV_REDACT_FIELDS: Final = "INBOX_REDACT_FIELDS"  # comma-separated JSON key names; empty: no redaction

# -------------------------------------------------------------------------------------- rejected deliveries
# What the ingest refused (bad or missing signature, stale timestamp, undecodable body), kept a few days in a table
# of its own so it can never be mistaken for an accepted event (shared/rejections.py writes it, `inbox rejected`
# reads it). Bounded: at most REJECTED_PER_SOURCE_PER_MINUTE items per source and minute can exist, because the
# key is one of that many slots of the minute (shared/rejections.py explains), written with attribute_not_exists.
REJECTED_TABLE_SUFFIX: Final = "-rejected"  # the deployed table's name: "{stack name}-rejected"
REJECTED_PARTITION_KEY: Final = "pk"  # the rejection id: "rej_" + 26 Crockford base32 characters (ULID layout)
REJECTED_TTL_ATTRIBUTE: Final = "expires_at"
# Newest first without a scan: one index partition per UTC day, sorted by the time received. It projects what a
# listing shows, never the body or the headers.
REJECTED_BY_DAY_INDEX: Final = "rejected-by-day"
REJECTED_BY_DAY_INDEX_PK: Final = "received_day"  # YYYY-MM-DD
REJECTED_BY_DAY_INDEX_SK: Final = "received_at"
REJECTED_INDEX_INCLUDED_ATTRIBUTES: Final[tuple[str, ...]] = (
    "source",
    "provider",
    "reason",
    "detail",
    "source_ip",
    "user_agent",
    "body_size",
    "expires_at",
)
DEFAULT_REJECTED_RETENTION_DAYS: Final = 3
MAX_REJECTED_RETENTION_DAYS: Final = 14  # disposable diagnostics, not an archive
DEFAULT_REJECTED_PER_SOURCE_PER_MINUTE: Final = 60
MAX_REJECTED_PER_SOURCE_PER_MINUTE: Final = 600
REJECTED_BODY_LIMIT_BYTES: Final = 64 * 1024  # what is kept of a refused body (size and sha256 are of the whole)
ENV_REJECTED_TABLE: Final = "INBOX_REJECTED_TABLE"  # unset: refusals are only counted
ENV_REJECTED_RETENTION_DAYS: Final = "INBOX_REJECTED_RETENTION_DAYS"
ENV_REJECTED_PER_SOURCE_PER_MINUTE: Final = "INBOX_REJECTED_PER_SOURCE_PER_MINUTE"
# The key of the fingerprints that stand in for secret-bearing headers: the deployed stack's generated secret
# ({"current": ...}, by ARN), or locally the value itself.
ENV_FINGERPRINT_KEY_SECRET: Final = "INBOX_FINGERPRINT_KEY_SECRET"
ENV_FINGERPRINT_KEY: Final = "INBOX_FINGERPRINT_KEY"
OUTPUT_REJECTED_TABLE: Final = "RejectedTableName"
OUTPUT_FINGERPRINT_KEY_SECRET: Final = "FingerprintKeySecretArn"
# The reason codes a refusal is recorded (and counted) under. `unknown_source` is only counted: anyone can scan
# URLs, and recording them under no source would let a scanner fill the log.
REJECTION_REASONS: Final[tuple[str, ...]] = (
    "signature_invalid",
    "signature_missing",
    "signature_malformed",
    "timestamp_out_of_tolerance",
    "body_undecodable",
    "ip_not_allowed",  # a sender outside the source's allowed_ip_ranges (403)
    # a delivery to a `mutual_tls` source that did not come through the mutual-TLS front door with a verified
    # client certificate (403, before any secret is read)
    "client_certificate_missing",
    "unknown_source",
    "too_many_events",  # an authentic delivery with more events than one transaction stores (413)
)
# Why a refusal was counted but not recorded: the per-source budget of the minute was spent (this instance's
# bucket), the minute's slot was taken (another record, or another instance), the log could not be written.
REJECTION_NOT_RECORDED_CAUSES: Final[tuple[str, ...]] = ("rate_limited", "slot_taken", "log_unavailable")
METRIC_DELIVERIES_REJECTED: Final = "DeliveriesRejected"  # dimension `reason` (REJECTION_REASONS)
METRIC_REJECTIONS_RECORDED: Final = "RejectionsRecorded"
METRIC_REJECTIONS_NOT_RECORDED: Final = "RejectionsNotRecorded"  # dimension `cause`

# ------------------------------------------------------------------------------------------ replay, monitoring
# The replay workflow (Step Functions; its definition: infra/replay_definition.py) and the alarms' SNS topic.
OUTPUT_REPLAY_STATE_MACHINE: Final = "ReplayStateMachineArn"
OUTPUT_ALARM_TOPIC: Final = "AlarmTopicArn"
OUTPUT_SWEEPER_FUNCTION: Final = "SweeperFunctionName"
OUTPUT_ARCHIVER_FUNCTION: Final = "ArchiverFunctionName"
# Metric names the functions emit (namespace METRICS_NAMESPACE) and the alarms and the dashboard read; each is
# declared, with its dimensions and when it is sent, in shared/observability.METRICS.
# Ingest (shared/ingest.py):
METRIC_EVENTS_UNPARSEABLE: Final = "EventsUnparseable"  # verified but unparseable: stored as failed
METRIC_SIGNATURES_REJECTED: Final = "SignaturesRejected"
METRIC_STORAGE_FAILURES: Final = "StorageFailures"
# Processor (shared/process/service.py): one EventsSettled sample per processed (0) or ignored (1) event, per
# provider (Sum = ignored, SampleCount = settled, Average = the ignored share); failed ones service-wide.
METRIC_EVENTS_SETTLED: Final = "EventsSettled"
METRIC_EVENTS_FAILED: Final = "EventsFailed"
# One count per ignored event of a counted reason (COUNTED_IGNORED_REASONS), by `source` and `reason`.
METRIC_EVENTS_IGNORED: Final = "EventsIgnored"
# Sweeper (service dimension only):
METRIC_OLDEST_PENDING_AGE: Final = "OldestPendingAgeSeconds"
# Archiver (shared/retention.py): items archived incomplete: without their body (gone from the body bucket, or
# unreadable) or without their attributes (a stream image that could not be decoded).
METRIC_ARCHIVED_INCOMPLETE: Final = "ArchivedIncomplete"

# ------------------------------------------------------------------------------------------------- outbox
# The transactional outbox (shared/payments/outbox.py): every payment transition and every failed event writes
# one record in the transaction that causes it; the table's stream publishes them (AWS: a Pipe to the stack's
# EventBridge bus; locally: inbox_local/outbox_publisher.py). Keys: one partition per payment, ordered by the
# payment's transition number, so the stream hands one payment's records over in order.
OUTBOX_PARTITION_KEY: Final = "pk"  # "{source}#{resource_id}" (or "failed#{inbox pk}")
OUTBOX_SORT_KEY: Final = "sequence"  # number: the payment's `transitions` after the change
OUTBOX_TTL_ATTRIBUTE: Final = "expires_at"
OUTBOX_RETENTION_DAYS: Final = 7  # the TTL the outbox writes (shared/payments/outbox.py) and docs/events.md
OUTBOX_STREAM_VIEW_TYPE: Final = "NEW_IMAGE"
ENV_OUTBOX_TABLE: Final = "OUTBOX_TABLE"
OUTPUT_OUTBOX_TABLE: Final = "OutboxTableName"
OUTPUT_EVENT_BUS: Final = "EventBusName"
OUTBOX_EVENT_SOURCE: Final = "webhook-inbox"  # the EventBridge `source` of published events
# Only new records are published (the TTL's REMOVE records are not events).
OUTBOX_PIPE_FILTER_PATTERN: Final[dict[str, Any]] = {"eventName": ["INSERT"]}
OUTBOX_PIPE_BATCH_SIZE: Final = 10
OUTBOX_PIPE_STARTING_POSITION: Final = "TRIM_HORIZON"
OUTBOX_PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 185  # the stream keeps a record 24 h; never give up early
# Local forwarding (and the signer in AWS): where every published event is POSTed, Standard Webhooks signed.
ENV_FORWARD_URL: Final = "INBOX_FORWARD_URL"
ENV_FORWARD_SECRET: Final = "INBOX_FORWARD_SECRET"  # whsec_<base64>
ENV_FORWARD_SECRET_PREVIOUS: Final = "INBOX_FORWARD_SECRET_PREVIOUS"  # set during a rotation: both sign
# AWS: the Secrets Manager secret of the pair, by its ARN (CloudFormation names it; any secret id works).
ENV_FORWARD_SECRET_NAME: Final = "INBOX_FORWARD_SECRET_NAME"
ENV_EVENT_BUS_NAME: Final = "INBOX_EVENT_BUS_NAME"
# The publisher Lambda (outbox Pipe -> bus) and the forwarder Lambda (forwarding Pipe -> the customer's endpoint).
# Both Pipes read the outbox stream: DynamoDB Streams serves at most two readers per shard without throttling.
PUBLISHER_MEMORY_MB: Final = 256
PUBLISHER_TIMEOUT_SECONDS: Final = 30
FORWARDER_MEMORY_MB: Final = 256
# Ten deliveries of at most 3 x 5 s POSTs + backoffs each would take 165 s; the forwarder starts a delivery only
# with its worst case left (shared/forwarding.py) and leaves the rest of the batch to the Pipe's retry.
FORWARDER_TIMEOUT_SECONDS: Final = 120
# The forwarding rate needs no reserved concurrency: the forwarding Pipe reads each outbox stream shard with one
# batch in flight (ParallelizationFactor 1, the default) and the forwarder POSTs a batch's events one at a time, so
# at most one POST per open shard is in flight (infra/constructs/outbox.py and docs/deploy.md explain). Reserved
# concurrency is opt-in (context `forwarder_reserved_concurrency`): on a new account whose concurrency quota is
# small, reserving any of it fails the deploy (Lambda keeps at least 100 unreserved).
FORWARD_PIPE_PARALLELIZATION_FACTOR: Final = 1
FORWARD_PIPE_BATCH_SIZE: Final = 10
# Retries of a batch the endpoint keeps refusing: the Pipe backs off exponentially between attempts; after them
# (or when the record is older than the maximum age) the batch's metadata goes to the forwarding dead-letter queue
# and the shard moves on. The events stay on the bus and in the outbox table (7 days) for a manual re-send.
FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 185
FORWARD_PIPE_MAXIMUM_RECORD_AGE_SECONDS: Final = 86_400
# DynamoDB Streams keeps a table's changes "in a log for up to 24 hours"
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html).
DYNAMODB_STREAM_RETENTION_SECONDS: Final = 86_400
# TTL: "DynamoDB typically deletes expired items within two days of expiration"; until then they "still show up in
# reads, queries, and scans" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html).
DYNAMODB_TTL_DELETION_LAG_SECONDS: Final = 2 * 86_400
# A forwarding checkpoint lives as long as a record of its partition can still be handed over again: by the stream
# (its 24 hours) or by `inbox outbox resend`, which reads the outbox table (its records' TTL, and the TTL's lag, since
# an expired record is read until it is deleted). Each save writes it anew: it expires this long after the last
# delivery of its payment. Once it is gone, a record older than it can no longer come back; a new one has a higher
# sequence than any the checkpoint held, so nothing is sent twice and nothing is skipped.
FORWARD_CHECKPOINT_RETENTION_SECONDS: Final = (
    DYNAMODB_STREAM_RETENTION_SECONDS + OUTBOX_RETENTION_DAYS * 86_400 + DYNAMODB_TTL_DELETION_LAG_SECONDS
)
OUTPUT_FORWARD_SECRET: Final = "ForwardSigningSecretArn"
OUTPUT_OUTBOX_DEAD_LETTER_QUEUE_URL: Final = "OutboxDeadLetterQueueUrl"
OUTPUT_FORWARD_DEAD_LETTER_QUEUE_URL: Final = "ForwardDeadLetterQueueUrl"
EVENT_BUS_ARCHIVE_RETENTION_DAYS: Final = 30  # the bus's archive: published events can be replayed to new rules

# The forwarding log (shared/forwarding_log.py): one item per forwarding attempt (the forwarder's, the local
# publisher's, `inbox outbox resend`'s), keyed by the event's `webhook-id` and the attempt's time, so one Query
# lists an event's attempts oldest first. Written only by whoever forwards (PutItem), never updated; gone by TTL.
# Its own table, not the control table: a log that grows with traffic must not share a table with the
# checkpoints and breakers every forwarder reads, and its TTL and size rules are its own.
FORWARD_LOG_PARTITION_KEY: Final = "webhook_id"
FORWARD_LOG_SORT_KEY: Final = "attempted_at"  # ISO-8601 UTC with microseconds: string order is time order
FORWARD_LOG_TTL_ATTRIBUTE: Final = "expires_at"
DEFAULT_FORWARD_LOG_RETENTION_DAYS: Final = 30  # outlives the outbox's 7 days: an event's answers stay readable
MAXIMUM_FORWARD_LOG_RETENTION_DAYS: Final = 365
# Bounds of one item (DynamoDB's item limit is 400 KB; these keep an attempt under ~12 KB whatever the endpoint
# answers): the first bytes of the body, a number of headers, each header's name and value, the error text.
FORWARD_LOG_BODY_BYTES: Final = 4096
FORWARD_LOG_MAX_HEADERS: Final = 32
FORWARD_LOG_HEADER_NAME_CHARS: Final = 64
FORWARD_LOG_HEADER_VALUE_CHARS: Final = 256
FORWARD_LOG_ERROR_CHARS: Final = 300
ENV_FORWARD_LOG_TABLE: Final = "INBOX_FORWARD_LOG_TABLE"
ENV_FORWARD_LOG_RETENTION_DAYS: Final = "INBOX_FORWARD_LOG_RETENTION_DAYS"
OUTPUT_FORWARD_LOG_TABLE: Final = "ForwardLogTableName"
# Local stack only: how many times the local publisher retries a chunk the endpoint refuses before it gives the
# chunk up, as the forwarding Pipe does after FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS (its records then wait for
# `inbox outbox resend`). Default: the Pipe's own number.
ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS: Final = "INBOX_FORWARD_MAX_RETRY_ATTEMPTS"


# ------------------------------------------------------------------------------------------- provider catalog
# One declaration per provider: everything the code, the stack, the local stack and the docs need to know that a
# provider exists. Every list of providers is derived from PROVIDER_CATALOG (the drivers' and the gateway
# clients' registries, the processor's routing table, the stack's secrets, the test parameter lists);
# tests/unit/test_catalog.py fails when a provider is half-added (one with no development secret in
# inbox_local/dev_secrets.py, too: development material lives with the local stack, never in a Lambda), and
# docs/adding-a-provider.md is the checklist. Code is named, never imported, here ("module:attribute" strings):
# a Lambda imports only the driver and the gateway client it uses, when it first uses them. The entries are
# NamedTuples, immutable like frozen dataclasses but without the code a dataclass generates and compiles when its
# class is created (~0.75 ms a class against ~0.12 ms, measured here): this module is on the ingest's cold start.

# How the processor applies an event (shared/process/handlers.py maps each kind to its handler class).
# refetch: the webhook is a hint, the payment is read back from the gateway's API. occurred_at: no API, the event
# states the status, and only an event newer than the payment's last one may apply it.
HandlerKind = Literal["refetch", "occurred_at"]
HANDLER_REFETCH: Final[HandlerKind] = "refetch"
HANDLER_OCCURRED_AT: Final[HandlerKind] = "occurred_at"
HANDLER_KINDS: Final[tuple[HandlerKind, ...]] = (HANDLER_REFETCH, HANDLER_OCCURRED_AT)
# A provider's ordering defence (docs/architecture.md): its routes' handler kind, or "none" when the
# processor has no route for its events (they are stored and end `ignored`).
ORDERING_NONE: Final = "none"

# Where a documented fact about a provider comes from (docs/providers.md, "Sources").
FactSource = Literal["verified", "secondary", "project-notes", "inferred", "configured"]


class Route(NamedTuple):
    """Events of these types are applied by the handler of this kind. A type is exact, a prefix ending in `*`
    (`"charge.*"`), or `"*"`. `event_types_from` names ("module:attribute") a tuple of types kept beside the
    driver's status tables (or a function returning one, for a driver configured at run time), read when the
    processor builds its routing table."""

    handler: HandlerKind
    event_types: tuple[str, ...] = ()
    event_types_from: str | None = None


class ProviderFacts(NamedTuple):
    """What the provider tables (docs/sources.md, docs/providers.md) show, in short."""

    display_name: str  # the provider column of docs/sources.md's table
    signature: str  # the scheme, in a few words
    signature_source: FactSource  # where the scheme was checked (docs/providers.md, "Sources")
    dedup_key: str  # what deduplicates its redeliveries: the inbox key's event_id
    docs_url: str | None  # the provider's own page on its webhooks (None: the engine is ours)


# What a provider's scheme authenticates: its trust class (docs/architecture.md, "Trust classes"; each provider's
# class and its documentation source: docs/providers.md, "Trust classes"). What a captured delivery is worth follows
# from it: someone who holds a delivery but not the secret, changing a part its class leaves unauthenticated, can
# at most produce a duplicate or an event that settles `ignored` without touching the payment or its watermark.
# - body: an HMAC or public-key signature over the raw bytes (and, for some, a signed id or timestamp beside
#   them): the body is the provider's word. Identity, time and state may all come from it.
# - signed_fields: a signing string of named fields (`signed_fields`), not the body: identity comes only from those
#   fields, the time is the receipt time (no time is among them), the state from those fields or from the refetch.
# - secret_prefix: a plain hash of `{secret}{body}`: binds the body against whoever lacks the secret, but is
#   length-extendable (the driver refuses a body carrying a hash's padding: shared/providers/pagbank.py).
# - token: a static token or URL secret compared as it is: the body is not authenticated at all; whoever holds the
#   token is the gateway, and the inbox never stores nor logs it. The state comes from the refetch when the provider
#   has an API, else from the body ordered by event time (the residual risk docs/providers.md names).
# - none: nothing the gateway sends is authenticated beyond a header secret (Cielo, Zoop): a notification is only a
#   hint that the processor refetches the payment from the gateway's API; the stored event carries no state from
#   the body (no status, no amount, the receive time) and each delivery is stored under its own key (no
#   body-derived key to dedup on). Only a provider with a refetch API whose every route refetches may be `none`:
#   `catalog_problems` refuses any other at import.
TrustClass = Literal["body", "signed_fields", "secret_prefix", "token", "none"]
TRUST_BODY: Final[TrustClass] = "body"
TRUST_SIGNED_FIELDS: Final[TrustClass] = "signed_fields"
TRUST_SECRET_PREFIX: Final[TrustClass] = "secret_prefix"
TRUST_TOKEN: Final[TrustClass] = "token"
TRUST_NONE: Final[TrustClass] = "none"
TRUST_CLASSES: Final[tuple[TrustClass, ...]] = (
    TRUST_BODY,
    TRUST_SIGNED_FIELDS,
    TRUST_SECRET_PREFIX,
    TRUST_TOKEN,
    TRUST_NONE,
)
# The classes whose scheme binds the whole body (against anyone without the secret): a body of theirs may state a
# payment's status and time, and one that cannot be parsed is still the provider's (stored `failed`).
BODY_BINDING_TRUST: Final[frozenset[TrustClass]] = frozenset({TRUST_BODY, TRUST_SECRET_PREFIX})
# A body the class does not bind and that cannot be parsed proves nothing: it is answered 2xx (a 401 would make a
# token sender pause its queue: Asaas does after 15 failures), stored `ignored`, and at most this many such bodies
# per source and hour are kept (their keys are hour slots: a further one is a duplicate of its slot).
UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR: Final = 8


class ProviderEntry(NamedTuple):
    # The URL id (/webhooks/{id}) of its default source, the env var suffix (INBOX_API_KEY_{ID}), the driver's `name`.
    id: str
    driver: str  # "module:attribute" of the driver instance (shared/providers/<id>.py)
    refetch_client: str | None  # "module:Class" of the gateway API client (shared/gateway/<id>.py); None: no API
    routes: tuple[Route, ...]  # what the processor applies; event types not routed are stored and end ignored
    facts: ProviderFacts
    # Refetch requests per second one source of this provider may send to the gateway's API, shared by every
    # processor instance and the sweeper's reconciliation (a source overrides it in sources.json). The gateway's
    # documented limit where it publishes one (docs/providers.md cites it), else the conservative default.
    refetch_rate_per_second: float = 0.0  # 0: DEFAULT_REFETCH_RATE_PER_SECOND
    # What its scheme authenticates (above); `signed_fields` names the fields of a `signed_fields` class's signing
    # string, as the provider documents them.
    trust: TrustClass = TRUST_BODY
    signed_fields: tuple[str, ...] = ()
    # Path segments the provider appends to the registered URL (Efí: `/pix`): `/webhooks/{source}/{suffix}`
    # reaches the same source, for the sources of this provider only (WEBHOOK_SUFFIX_ROUTES).
    path_suffixes: tuple[str, ...] = ()
    # A deprecated scheme the driver also verifies, only for a source that declares `legacy_signature: true` in
    # sources.json (its driver then provides `with_legacy_signature()`); None: the provider has none to enable.
    legacy_signature: str | None = None

    @property
    def binds_body(self) -> bool:
        """Whether its scheme binds the whole body: only then may a body state the payment's status."""
        return self.trust in BODY_BINDING_TRUST

    @property
    def ordering(self) -> str:
        """refetch, occurred_at or none: the kind of the provider's routes (a provider uses one kind)."""
        return self.routes[0].handler if self.routes else ORDERING_NONE


_REFETCH: Final[HandlerKind] = HANDLER_REFETCH
_BY_EVENT_TIME: Final[HandlerKind] = HANDLER_OCCURRED_AT

PROVIDER_CATALOG: Final[tuple[ProviderEntry, ...]] = (
    ProviderEntry(
        id="stripe",
        driver="shared.providers.stripe.driver:driver",
        refetch_client="shared.providers.stripe.client:StripeClient",
        # `v1.*`: the thin versions of the same events (event destinations with thin payloads)
        routes=(
            Route(
                _REFETCH,
                ("payment_intent.*", "charge.*", "refund.*", "v1.payment_intent.*", "v1.charge.*", "v1.refund.*"),
            ),
        ),
        facts=ProviderFacts(
            display_name="Stripe",
            signature="`Stripe-Signature` HMAC-SHA256 of `{t}.{body}`, ±300 s",
            signature_source="verified",
            dedup_key="event `id`",
            docs_url="https://stripe.com/docs/payments/handling-payment-events",
        ),
        # 25 requests/s: Stripe's default per-endpoint limit (live mode allows 100 operations/s in all, sandboxes
        # 25): docs/providers.md, "Refetch rate limits".
        refetch_rate_per_second=25.0,
    ),
    ProviderEntry(
        id="standard",
        driver="shared.providers.standard.driver:driver",
        refetch_client=None,  # a signing scheme, not a gateway: no API to ask
        routes=(Route(_BY_EVENT_TIME, ("payment.*",)),),
        facts=ProviderFacts(
            display_name="Standard Webhooks / Svix",
            signature="`webhook-*`/`svix-*` HMAC-SHA256 base64 of `{id}.{ts}.{body}`",
            signature_source="verified",
            dedup_key="`webhook-id`",
            docs_url="https://github.com/standard-webhooks/standard-webhooks",
        ),
    ),
    ProviderEntry(
        id="asaas",
        driver="shared.providers.asaas.driver:driver",
        refetch_client="shared.providers.asaas.client:AsaasClient",
        routes=(Route(_REFETCH, ("PAYMENT_*",)),),
        facts=ProviderFacts(
            display_name="Asaas",
            signature="static `asaas-access-token` (never stored)",
            signature_source="project-notes",
            dedup_key="body `id`",
            docs_url="https://docs.asaas.com/docs/about-webhooks",
        ),
        trust=TRUST_TOKEN,  # `asaas-access-token`: the token itself, nothing over the body
    ),
    ProviderEntry(
        id="pagarme",
        driver="shared.providers.pagarme.driver:driver",
        refetch_client="shared.providers.pagarme.client:PagarmeClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
        facts=ProviderFacts(
            display_name="Pagar.me",
            signature="v5 RS256 (JWKS) and legacy `X-Hub-Signature` sha1",
            signature_source="verified",
            dedup_key="hook id / derived",
            docs_url="https://github.com/pagarme/ecommerce-module-core",
        ),
        # GET /charges/* and /orders/* are limited to 200 requests a minute (3.3/s): docs/providers.md.
        refetch_rate_per_second=3.0,
    ),
    ProviderEntry(
        id="stone",
        driver="shared.providers.stone.driver:driver",  # the Pagar.me driver under Stone's id (Connect Stone)
        refetch_client="shared.providers.stone.client:StoneClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
        facts=ProviderFacts(
            display_name="Stone",
            signature="as `pagarme` (Pagar.me platform): v5 RS256, legacy sha1",
            signature_source="inferred",  # Stone documents Pagar.me's hooks and API; the signature header is inferred
            dedup_key="hook id / derived",
            docs_url="https://connect-stone.stone.com.br/reference/retorno-webhook",
        ),
        # Pagar.me's documented limit for GET /charges/* and /orders/*: 200 requests a minute (docs.pagar.me
        # "Rate Limit"), the API Connect Stone payments are read from.
        refetch_rate_per_second=3.0,  # as pagarme: the same API and its documented 200 requests a minute
    ),
    ProviderEntry(
        id="kiwify",
        driver="shared.providers.kiwify.driver:driver",
        refetch_client=None,  # no payment API: ordered by event time (provider_status is already canonical)
        routes=(
            Route(_BY_EVENT_TIME, event_types_from="shared.providers.kiwify.driver:SALE_EVENTS"),
            Route(_BY_EVENT_TIME, ("CASHIN.*", "CASHOUT.*")),  # Kiwify Banking
        ),
        facts=ProviderFacts(
            display_name="Kiwify",
            signature="sales `?signature=` HMAC-SHA1; Banking Ed25519",
            signature_source="verified",
            dedup_key="derived (no stable envelope id)",
            docs_url="https://docs.kiwify.com.br/en/api-reference/banking/webhook-headers",
        ),
    ),
    ProviderEntry(
        id="hotmart",
        driver="shared.providers.hotmart.driver:driver",
        refetch_client=None,
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.hotmart.driver:PURCHASE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Hotmart",
            signature="`X-HOTMART-HOTTOK`",
            signature_source="secondary",
            dedup_key="body `id`",
            docs_url="https://help.hotmart.com/en/article/360001491352",
        ),
        trust=TRUST_TOKEN,  # `X-HOTMART-HOTTOK`: the token itself, nothing over the body
    ),
    ProviderEntry(
        id="eduzz",
        driver="shared.providers.eduzz.driver:driver",
        refetch_client=None,  # no invoice API is refetched: ordered by event time (provider_status is canonical)
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.eduzz.driver:INVOICE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Eduzz",
            signature="`x-signature` HMAC-SHA256 hex of the body",
            signature_source="verified",  # the scheme is Eduzz's; the hex encoding is inferred (docs/providers.md)
            dedup_key="body `id`",
            docs_url="https://github.com/eduzz/eduzz-webhook-docs",
        ),
    ),
    # Efí (Gerencianet) Pix: mutual TLS, or skip-mTLS's `?hmac=`; several Pix per delivery (docs/providers.md).
    ProviderEntry(
        id="efi",
        driver="shared.providers.efi.driver:driver",
        refetch_client="shared.providers.efi.client:EfiClient",
        routes=(Route(_REFETCH, event_types_from="shared.providers.efi.driver:EVENT_TYPES"),),
        facts=ProviderFacts(
            display_name="Efí Pix",
            signature="mutual TLS (Efí's CA), else `?hmac=` + source IP",
            signature_source="verified",  # mTLS, the CA chain and /pix: Efí's docs and repos; hmac: Efí's forum
            dedup_key="Pix `endToEndId`; devolução id + status",
            docs_url="https://dev.efipay.com.br/docs/api-pix/webhooks/",
        ),
        path_suffixes=("pix",),
        trust=TRUST_TOKEN,  # mutual TLS authenticates the connection, `?hmac=` is the secret itself: no body MAC
    ),
    ProviderEntry(
        id="pagbank",
        driver="shared.providers.pagbank.driver:driver",
        refetch_client="shared.providers.pagbank.client:PagbankClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*")),),
        facts=ProviderFacts(
            display_name="PagBank",
            signature="`x-authenticity-token` = sha256(`{token}-{body}`)",
            signature_source="verified",
            dedup_key="derived",
            docs_url="https://developer.pagbank.com.br/reference/confirmar-autenticidade-da-notificacao",
        ),
        trust=TRUST_SECRET_PREFIX,  # sha256(token + "-" + body): length-extendable
    ),
    ProviderEntry(
        id="iugu",
        driver="shared.providers.iugu.driver:driver",
        refetch_client="shared.providers.iugu.client:IuguClient",
        routes=(Route(_REFETCH, ("invoice.*",)),),
        facts=ProviderFacts(
            display_name="iugu",
            signature="token in `Authorization` or `?token=` (never stored)",
            signature_source="inferred",  # the token exists (iugu's OpenAPI); how it is put on the wire is inferred
            dedup_key="derived",
            docs_url="https://dev.iugu.com/docs/gatilhos",
        ),
        trust=TRUST_TOKEN,  # the token itself, in a header or the URL
    ),
    ProviderEntry(
        id="woovi",
        driver="shared.providers.woovi.driver:driver",
        refetch_client="shared.providers.woovi.client:WooviClient",
        routes=(Route(_REFETCH, event_types_from="shared.providers.woovi.driver:CHARGE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Woovi / OpenPix",
            signature="`x-webhook-signature` RSA-SHA256 (Woovi's published keys)",
            signature_source="verified",
            dedup_key="derived (no envelope id)",
            docs_url="https://developers.woovi.com/docs/webhook/seguranca/webhook-signature-validation",
        ),
        legacy_signature="`X-OpenPix-Signature`: base64 HMAC-SHA1 of the body with the webhook's own secret key",
    ),
    ProviderEntry(
        id="github",
        driver="shared.providers.github.driver:driver",
        refetch_client=None,
        routes=(),  # GitHub events are not payments: stored, then ignored
        facts=ProviderFacts(
            display_name="GitHub",
            signature="`X-Hub-Signature-256`",
            signature_source="verified",
            dedup_key="derived: the signed body's digest",
            docs_url="https://docs.github.com/webhooks/securing",
        ),
    ),
    ProviderEntry(
        id="shopify",
        driver="shared.providers.shopify.driver:driver",
        refetch_client=None,
        # Order and dispute topics only: a transaction alone does not say what the order became.
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.shopify.driver:PAYMENT_TOPICS"),),
        facts=ProviderFacts(
            display_name="Shopify",
            signature="`X-Shopify-Hmac-Sha256` base64",
            signature_source="verified",
            dedup_key="derived from the signed body",
            docs_url="https://shopify.dev/docs/apps/build/webhooks/subscribe/https",
        ),
    ),
    ProviderEntry(
        id="paddle",
        driver="shared.providers.paddle.driver:driver",
        refetch_client="shared.providers.paddle.client:PaddleClient",
        routes=(Route(_REFETCH, ("transaction.*", "adjustment.*")),),
        facts=ProviderFacts(
            display_name="Paddle",
            signature="`Paddle-Signature: ts=;h1=`",
            signature_source="verified",
            dedup_key="`event_id`",
            docs_url="https://developer.paddle.com/webhooks/signature-verification",
        ),
        # 240 requests a minute per IP address for most operations: docs/providers.md.
        refetch_rate_per_second=4.0,
    ),
    ProviderEntry(
        id="mercadopago",
        driver="shared.providers.mercadopago.driver:driver",
        refetch_client="shared.providers.mercadopago.client:MercadoPagoClient",
        routes=(Route(_REFETCH, ("payment", "payment.*")),),
        facts=ProviderFacts(
            display_name="Mercado Pago",
            signature="`x-signature` manifest HMAC",
            signature_source="verified",
            dedup_key="the signed `data.id` + `x-request-id`",
            docs_url="https://mercadopago.com.br/developers/en/docs/checkout-pro/payment-notifications",
        ),
        trust=TRUST_SIGNED_FIELDS,
        # The manifest `id:{data.id};request-id:{x-request-id};ts:{ts};`: the body is not signed.
        signed_fields=("data.id", "x-request-id", "ts"),
    ),
    ProviderEntry(
        id="adyen",
        driver="shared.providers.adyen.driver:driver",
        refetch_client=None,
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.adyen.driver:PAYMENT_EVENT_CODES"),),
        facts=ProviderFacts(
            display_name="Adyen",
            signature="`hmacSignature` inside the notification item",
            signature_source="verified",
            dedup_key="pspReference + eventCode + success",
            docs_url="https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures",
        ),
        trust=TRUST_SIGNED_FIELDS,
        # The HMAC signing string of each NotificationRequestItem: `eventDate` and `additionalData` are not in it.
        signed_fields=(
            "pspReference",
            "originalReference",
            "merchantAccountCode",
            "merchantReference",
            "amount.value",
            "amount.currency",
            "eventCode",
            "success",
        ),
    ),
    ProviderEntry(
        id="generic",
        driver="shared.providers.generic.driver:driver",
        refetch_client=None,
        # The configured `payment_event_types` (INBOX_GENERIC_CONFIG), read when the router is built.
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.generic.driver:payment_event_patterns"),),
        facts=ProviderFacts(
            display_name="any HMAC sender",
            signature="configured by data (`INBOX_GENERIC_CONFIG`)",
            signature_source="configured",
            dedup_key="configured",
            docs_url=None,
        ),
    ),
    # Refetch-verified providers: senders that sign nothing; a notification is a hint the processor refetches
    # (TRUST_NONE above).
    ProviderEntry(
        id="cielo",
        driver="shared.providers.cielo.driver:driver",
        refetch_client="shared.providers.cielo.client:CieloClient",
        # Every documented ChangeType names a PaymentId: read it back (an undocumented one is stored and ignored)
        routes=(Route(_REFETCH, event_types_from="shared.providers.cielo.driver:ROUTED_EVENT_TYPES"),),
        facts=ProviderFacts(
            display_name="Cielo",
            signature="none: refetch-verified (header secret, IP ranges)",
            signature_source="verified",
            dedup_key="none: each delivery stored",
            docs_url="https://docs.cielo.com.br/ecommerce-cielo-en/docs/notification-post",
        ),
        trust=TRUST_NONE,
    ),
    ProviderEntry(
        id="zoop",
        driver="shared.providers.zoop.driver:driver",
        refetch_client="shared.providers.zoop.client:ZoopClient",
        routes=(Route(_REFETCH, ("transaction.*",)),),
        facts=ProviderFacts(
            display_name="Zoop",
            signature="none found: refetch-verified (header secret)",
            signature_source="inferred",  # no signature is documented where Zoop documents its webhooks
            dedup_key="none: each delivery stored",
            docs_url="https://docs.zoop.co/docs/sobre-os-webhooks",
        ),
        trust=TRUST_NONE,
    ),
)


class CatalogInvalid(ValueError):
    """The provider catalog declares something the code cannot honour (raised when this module is imported)."""


def catalog_problems(catalog: tuple[ProviderEntry, ...]) -> list[str]:
    """What is wrong with `catalog`: a trust class that is not one, a `signed_fields` class that names no field (or
    another class that names some), a refetch-verified provider (`none`) without a refetch API, or with a route
    that does not refetch (its notifications prove nothing, so only a read from the gateway may move a payment)."""
    problems: list[str] = []
    for entry in catalog:
        if entry.trust not in TRUST_CLASSES:
            problems.append(f"{entry.id}: trust {entry.trust!r} is not one of {', '.join(TRUST_CLASSES)}")
        if (entry.trust == TRUST_SIGNED_FIELDS) != bool(entry.signed_fields):
            problems.append(f"{entry.id}: signed_fields are named by, and only by, a signed_fields trust class")
        if entry.trust != TRUST_NONE:
            continue
        if entry.refetch_client is None:
            problems.append(f"{entry.id}: refetch-verified but has no refetch_client (no API to refetch from)")
        if not entry.routes or any(route.handler != HANDLER_REFETCH for route in entry.routes):
            problems.append(f"{entry.id}: refetch-verified, so every route must refetch (and there must be one)")
    return problems


def check_catalog(catalog: tuple[ProviderEntry, ...]) -> None:
    problems = catalog_problems(catalog)
    if problems:
        raise CatalogInvalid("provider catalog: " + "; ".join(problems))


check_catalog(PROVIDER_CATALOG)

# Derived lists (never spelled by hand).
# Provider ids the stack creates a signing secret for (one Secrets Manager secret each).
PROVIDERS: Final[tuple[str, ...]] = tuple(entry.id for entry in PROVIDER_CATALOG)
# Providers with a payment API the processor refetches from (one gateway API-key secret each). The others order
# their events by `occurred_at` (or have no route at all).
REFETCH_PROVIDERS: Final[tuple[str, ...]] = tuple(
    entry.id for entry in PROVIDER_CATALOG if entry.refetch_client is not None
)
# The suffixes some providers append to the registered URL (`/webhooks/{source}/pix`): each one API route.
WEBHOOK_PATH_SUFFIXES: Final[tuple[str, ...]] = tuple(
    sorted({suffix for entry in PROVIDER_CATALOG for suffix in entry.path_suffixes})
)

# Providers whose notifications are only hints: stored once per delivery, with no state from the body.
REFETCH_VERIFIED_PROVIDERS: Final[frozenset[str]] = frozenset(
    entry.id for entry in PROVIDER_CATALOG if entry.trust == TRUST_NONE
)


def provider_entry(provider: str) -> ProviderEntry:
    """The catalog entry of `provider` (KeyError for a provider the catalog does not declare)."""
    for entry in PROVIDER_CATALOG:
        if entry.id == provider:
            return entry
    raise KeyError(provider)


# ------------------------------------------------------------------------------------------------- sources
# A source is a named endpoint bound to one catalog provider (docs/sources.md): its own signing secrets,
# gateway API credentials and options. Declared as data in `sources.json` at the repository root
# (INBOX_SOURCES_FILE overrides the path), read by the CDK app, the local stack and the CLI (`inbox cost`,
# `inbox sources list`); the functions receive the parsed declaration in INBOX_SOURCES. Without a file there is
# one source per catalog provider, named after it, so `/webhooks/stripe` and the `stripe#...` keys keep working.
#
# The reader below does file I/O when called (never at import): it is here, in the definitions module, because
# the stack, the local runtime and the functions must parse the declaration by one set of rules.
SOURCES_FILE_NAME: Final = "sources.json"
ENV_SOURCES_FILE: Final = "INBOX_SOURCES_FILE"  # where sources.json is (CDK app, local stack, CLI)
ENV_SOURCES: Final = "INBOX_SOURCES"  # the declared sources as compact JSON, handed to the functions
# Lower-case letters, digits and '-', starting with a letter, at most 32 characters: a source name goes into
# URLs, secret names, CloudFormation logical ids, metric dimensions and FIFO group ids.
SOURCE_NAME_MAX_LENGTH: Final = 32
SOURCE_NAME_PATTERN: Final = re.compile(r"[a-z][a-z0-9-]{0,31}")
SOURCE_NAME_RULE: Final = "lower-case letters, digits and '-', starting with a letter, at most 32 characters"
# A gateway that documents no API rate limit is refetched at this rate per source (requests per second).
DEFAULT_REFETCH_RATE_PER_SECOND: Final = 5.0
MAX_REFETCH_RATE_PER_SECOND: Final = 10_000.0
MAX_SOURCE_IP_RANGES: Final = 64


class SourcesInvalid(ValueError):
    """sources.json (or INBOX_SOURCES) does not declare valid sources; the message lists every bad entry."""


class SourceSpec(NamedTuple):
    """One declared source. Options left None take the deployment's (or the provider's) default."""

    name: str  # the URL segment (/webhooks/{name}), the first part of its keys ("{name}#{event_id}")
    provider: str  # a PROVIDER_CATALOG id: the driver that verifies and parses its deliveries
    signature_tolerance_seconds: int | None = None  # None: INBOX_SIGNATURE_TOLERANCE_SECONDS
    refetch_rate_per_second: float | None = None  # None: the provider's documented rate (refetch_rate(...))
    allowed_ip_ranges: tuple[str, ...] = ()  # CIDRs; empty: any sender (a delivery from elsewhere gets 403)
    redact_fields: tuple[str, ...] = ()  # JSON keys redacted from stored bodies, besides the deployment's own
    # Deliveries must come through the mutual-TLS front door (API Gateway's custom domain with a truststore; the
    # local stack's TLS port) with a client certificate it verified; any other is refused 403 before verification.
    mutual_tls: bool = False
    # True: the provider's deprecated scheme (its catalog entry's `legacy_signature`) is accepted too. None: not.
    legacy_signature: bool | None = None

    @property
    def env_suffix(self) -> str:
        return source_env_suffix(self.name)

    @property
    def has_api(self) -> bool:
        """Its provider has a refetch API: the source has an API key (a secret of its own in AWS)."""
        return self.provider in REFETCH_PROVIDERS

    @property
    def refetch_rate(self) -> float:
        """Requests per second this source may send to its gateway's API."""
        if self.refetch_rate_per_second is not None:
            return self.refetch_rate_per_second
        return provider_entry(self.provider).refetch_rate_per_second or DEFAULT_REFETCH_RATE_PER_SECOND

    def document(self) -> dict[str, Any]:
        """The entry as sources.json spells it (options at their default left out)."""
        entry: dict[str, Any] = {"name": self.name, "provider": self.provider}
        for option in _SOURCE_OPTIONS:
            value = getattr(self, option)
            if value is not None and value != () and value is not False:
                entry[option] = list(value) if isinstance(value, tuple) else value
        return entry


_SOURCE_OPTIONS: Final = (
    "signature_tolerance_seconds",
    "refetch_rate_per_second",
    "allowed_ip_ranges",
    "redact_fields",
    "mutual_tls",
    "legacy_signature",
)


def mutual_tls_sources(sources: tuple[SourceSpec, ...]) -> tuple[SourceSpec, ...]:
    """The declared sources that only accept deliveries through the mutual-TLS front door."""
    return tuple(source for source in sources if source.mutual_tls)


def source_env_suffix(name: str) -> str:
    """`stripe-br` -> `STRIPE_BR`: the suffix of INBOX_SECRET_<SOURCE>, INBOX_API_KEY_<SOURCE>, ..."""
    return name.upper().replace("-", "_")


def source_name_problem(name: object) -> str | None:
    """Why `name` cannot be a source name, or None when it can."""
    if not isinstance(name, str) or not name:
        return "a source needs a 'name'"
    if not SOURCE_NAME_PATTERN.fullmatch(name):
        return f"source name {name!r} is invalid: {SOURCE_NAME_RULE}"
    return None


def default_sources() -> tuple[SourceSpec, ...]:
    """With no sources.json: one source per catalog provider, named after it."""
    return tuple(SourceSpec(name=entry.id, provider=entry.id) for entry in PROVIDER_CATALOG)


def declared_providers(sources: Iterable[SourceSpec]) -> tuple[str, ...]:
    """The providers of `sources`, once each, in catalog order (the per-provider alarms and metrics are theirs)."""
    declared = {source.provider for source in sources}
    return tuple(provider for provider in PROVIDERS if provider in declared)


def parse_sources(document: Any, *, where: str = SOURCES_FILE_NAME) -> tuple[SourceSpec, ...]:
    """The sources a parsed sources.json declares; SourcesInvalid naming every bad entry (`where` says which
    file or variable, so the message points at it)."""
    if not isinstance(document, list) or not document:
        raise SourcesInvalid(f"{where}: expected a non-empty JSON list of sources, e.g. {_EXAMPLE}")
    problems: list[str] = []
    sources: list[SourceSpec] = []
    seen: set[str] = set()
    for position, entry in enumerate(document, start=1):
        label = f"{where}: entry {position}"
        if not isinstance(entry, dict):
            problems.append(f"{label}: expected an object like {_EXAMPLE}")
            continue
        name = entry.get("name")
        if isinstance(name, str) and name:
            label = f"{label} ({name!r})"
        entry_problems = _entry_problems(entry)
        if not entry_problems and name in seen:
            entry_problems.append(f"the name {name!r} is declared twice")
        if entry_problems:
            problems.extend(f"{label}: {problem}" for problem in entry_problems)
            continue
        seen.add(str(name))
        sources.append(
            SourceSpec(
                name=str(name),
                provider=str(entry["provider"]),
                signature_tolerance_seconds=entry.get("signature_tolerance_seconds"),
                refetch_rate_per_second=(
                    None if entry.get("refetch_rate_per_second") is None else float(entry["refetch_rate_per_second"])
                ),
                allowed_ip_ranges=tuple(
                    str(ipaddress.ip_network(r, strict=False)) for r in entry.get("allowed_ip_ranges", ())
                ),
                redact_fields=tuple(entry.get("redact_fields", ())),
                mutual_tls=entry.get("mutual_tls", False),
                legacy_signature=True if entry.get("legacy_signature") is True else None,
            )
        )
    if problems:
        raise SourcesInvalid("\n".join(problems))
    return tuple(sources)


_EXAMPLE: Final = '[{"name": "stripe-br", "provider": "stripe"}]'


def _entry_problems(entry: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    name_problem = source_name_problem(entry.get("name"))
    if name_problem:
        problems.append(name_problem)
    provider = entry.get("provider")
    if not isinstance(provider, str) or provider not in PROVIDERS:
        problems.append(f"'provider' must be one of {', '.join(PROVIDERS)} (got {provider!r})")
    unknown = sorted(set(entry) - {"name", "provider", *_SOURCE_OPTIONS})
    if unknown:
        problems.append(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(_SOURCE_OPTIONS)}")
    tolerance = entry.get("signature_tolerance_seconds")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0):
        problems.append("'signature_tolerance_seconds' must be a whole number of seconds, 0 or more")
    rate = entry.get("refetch_rate_per_second")
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= MAX_REFETCH_RATE_PER_SECOND
    ):
        problems.append(
            f"'refetch_rate_per_second' must be a number above 0 and at most {MAX_REFETCH_RATE_PER_SECOND:g}"
        )
    ranges = entry.get("allowed_ip_ranges", [])
    if not isinstance(ranges, list) or len(ranges) > MAX_SOURCE_IP_RANGES:
        problems.append(f"'allowed_ip_ranges' must be a list of at most {MAX_SOURCE_IP_RANGES} CIDRs")
    else:
        for cidr in ranges:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except (TypeError, ValueError):
                problems.append(f"'allowed_ip_ranges': {cidr!r} is not an IP address or CIDR range")
    fields = entry.get("redact_fields", [])
    if not isinstance(fields, list) or not all(isinstance(field, str) and field for field in fields):
        problems.append("'redact_fields' must be a list of JSON key names")
    if not isinstance(entry.get("mutual_tls", False), bool):
        problems.append("'mutual_tls' must be true or false")
    problems.extend(_legacy_signature_problems(entry))
    return problems


def _legacy_signature_problems(entry: Mapping[str, Any]) -> list[str]:
    legacy = entry.get("legacy_signature")
    if legacy is None or legacy is False:
        return []
    if legacy is not True:
        return ["'legacy_signature' must be true or false"]
    provider = entry.get("provider")
    declared = next((e.legacy_signature for e in PROVIDER_CATALOG if e.id == provider), None)
    if declared is None:
        with_one = ", ".join(e.id for e in PROVIDER_CATALOG if e.legacy_signature) or "none"
        return [
            f"'legacy_signature': provider {provider!r} has no legacy signature to enable "
            f"(providers with one: {with_one})"
        ]
    return []


def sources_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where sources.json is: INBOX_SOURCES_FILE, else the repository root's."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_SOURCES_FILE, "").strip()
    return Path(configured) if configured else Path(__file__).resolve().parents[1] / SOURCES_FILE_NAME


def load_sources(environ: Mapping[str, str] | None = None) -> tuple[SourceSpec, ...]:
    """The declared sources: INBOX_SOURCES when set (the functions), else the sources.json file (the stack, the
    local stack, the CLI), else default_sources(). A file named by INBOX_SOURCES_FILE must exist."""
    env = os.environ if environ is None else environ
    handed = env.get(ENV_SOURCES, "").strip()
    if handed:
        return parse_sources(_json(handed, ENV_SOURCES), where=ENV_SOURCES)
    path = sources_file_path(env)
    if not path.is_file():
        if env.get(ENV_SOURCES_FILE, "").strip():
            raise SourcesInvalid(f"{ENV_SOURCES_FILE}={path}: no such file")
        return default_sources()
    return parse_sources(_json(path.read_text(encoding="utf-8"), str(path)), where=str(path))


def sources_json(sources: tuple[SourceSpec, ...]) -> str:
    """Compact JSON of the declaration (INBOX_SOURCES): what parse_sources reads back."""
    return json.dumps([source.document() for source in sources], separators=(",", ":"))


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SourcesInvalid(f"{where}: not valid JSON ({error.msg} at line {error.lineno})") from None


def find_source(sources: tuple[SourceSpec, ...], name: str) -> SourceSpec:
    """The source named `name` (KeyError when none is declared)."""
    for source in sources:
        if source.name == name:
            return source
    raise KeyError(name)


def source_of(item: Mapping[str, Any]) -> str:
    """The source an inbox item, payment or published event belongs to: its `source`, else its key's first part
    (`source_key`: inbox items no longer store the source, their key holds it), else its `provider` (an item of a
    provider's default source, which is named after it)."""
    if item.get("source"):
        return str(item["source"])
    key = str(item.get("pk") or "")
    return key.split("#", 1)[0] if "#" in key else str(item["provider"])


def source_key(source: str, part: str) -> str:
    """`{source}#{part}`, the one rule of every key that belongs to a source: an event's (part = its event id),
    a payment's and its FIFO group (its resource id), its reconcile partition (its status), its breaker. A
    source name has no '#', so the source is everything before the first one."""
    return f"{source}#{part}"
