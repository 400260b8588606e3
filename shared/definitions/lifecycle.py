"""The inbox item's lifecycle as data: its statuses, every write that moves it (LIFECYCLE), the UpdateItem request
each write's row derives (`compose_update`), and which writes the Pipe dispatches to the queue."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from enum import Enum, StrEnum
from typing import Any, Final, NamedTuple

from shared.definitions.resources import (
    OPEN_EVENTS_INDEX,
    OPEN_EVENTS_INDEX_PK,
    OPEN_EVENTS_INDEX_SK,
    OPEN_EVENTS_SHARDS,
)

# ---------------------------------------------------------------------------------------------- inbox lifecycle
# The inbox item's statuses and every write that moves it, as data: each write is a row of LIFECYCLE (the statuses
# it moves the item from and to, the `dispatch_reason` it sets, what it does to `attempts` and `last_error`, what it
# stamps), and its UpdateItem request is derived from that row by `compose_update`, so the condition that makes a
# duplicate or a concurrent worker harmless is written once. Here, with the constants, because the stack embeds
# the replay's request in the replay workflow (infra/replay_definition.py) and infra/ may import only this package;
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
    catalog's entries: immutable without a dataclass's class-creation cost on the ingest's cold start.)"""

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
    return open_shard_value(status, zlib.crc32(pk.encode()) % OPEN_EVENTS_SHARDS)


def open_shard_value(status: EventStatus, shard: int) -> str:
    return f"{status.value}#{shard}"


def open_events_query(
    table_name: str, status: EventStatus, shard: int, *, received_before: str | None = None
) -> dict[str, Any]:
    """The Query of one shard of the sparse open-events index: the events in `status` there, oldest first, only
    those received before `received_before` when given (the sweeper's stale events)."""
    key = f"{OPEN_EVENTS_INDEX_PK} = :open"
    values = {":open": text_value(open_shard_value(status, shard))}
    if received_before is not None:
        key += f" AND {OPEN_EVENTS_INDEX_SK} < :before"
        values[":before"] = text_value(received_before)
    return {
        "TableName": table_name,
        "IndexName": OPEN_EVENTS_INDEX,
        "KeyConditionExpression": key,
        "ExpressionAttributeValues": values,
    }


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
