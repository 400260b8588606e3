"""The inbox item's lifecycle: its statuses, the writes that move it, and the DynamoDB requests those writes send.

One owner for every write to an inbox item. Each write is a row of `LIFECYCLE` (which statuses it moves the item
from and to, which `dispatch_reason` it sets, what it does to `attempts` and `last_error`, what it stamps), and its
request (UpdateExpression, ConditionExpression, attribute names and values) is derived from that row here, so the
condition that makes a duplicate or a concurrent worker harmless is written once, not once per caller:

- the ingest's conditional put (`received_attributes`, `RECEIVE_CONDITION`; executed by shared/inbox/store.py),
- the processor's attempt and failure (`attempt_update`, `fail_update`; executed by shared/inbox/store.py, or
  composed with an outbox record by shared/payments/store.py) and its settle (`settle_update`: the owner builds
  the transaction item, shared/payments/store.py composes it with the payment's write),
- the sweeper's re-dispatch (`redispatch_update`; executed by shared/inbox/store.py),
- the replay (`replay_update`): the replay workflow cannot call Python, so infra/replay_definition.py embeds the
  request this function returns, its varying values given as Step Functions paths.

Stdlib only and no I/O, on purpose: it is what the Lambdas carry and what the stack's replay definition embeds.

A write "dispatches" (the Pipe enqueues the event) when it leaves the item pending with a dispatching reason
(infra/definitions.py's PIPE_FILTER_PATTERN); every dispatching write sets a fresh `dispatch_id` (SQS FIFO's
5-minute deduplication would swallow a re-dispatch under the old one) and `dispatched_at` (the sweeper's clock).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Final

# An attribute value in DynamoDB's wire format: {"S": "text"}, {"N": "3"}; or, in the replay workflow's
# definition, a Step Functions path that yields one ({"S.$": "$.item.pk.S"}).
AttributeValue = Mapping[str, Any]

OPEN_EVENT_SHARDS: Final = 8  # must equal infra.definitions.OPEN_EVENTS_SHARDS (a test compares them)
MAX_TEXT_LENGTH: Final = 500  # `last_error` and `note` are cut to this: an item is at most 400 KB


class EventStatus(StrEnum):
    PENDING = "pending"
    PROCESSED = "processed"
    IGNORED = "ignored"
    FAILED = "failed"


# Statuses kept in the sparse open-events index (the sweeper's and the replay's reading list).
OPEN_STATUSES: Final = frozenset({EventStatus.PENDING, EventStatus.FAILED})


class DispatchReason(StrEnum):
    """Why a write to a pending item happened. Only the first three make the Pipe enqueue the event."""

    RECEIVED = "received"
    REDISPATCH = "redispatch"
    REPLAY = "replay"
    ATTEMPT = "attempt"  # the processor's own bookkeeping: never re-enqueues


DISPATCHING_REASONS: Final = frozenset({DispatchReason.RECEIVED, DispatchReason.REDISPATCH, DispatchReason.REPLAY})


class Write(StrEnum):
    RECEIVE = "receive"  # the ingest stores a verified delivery, once (its key deduplicates)
    ATTEMPT = "attempt"  # the processor counts a failed attempt; the event is retried from the queue
    SETTLE = "settle"  # the processor applied it (processed) or found nothing to change (ignored)
    FAIL = "fail"  # the processor's attempt found it cannot be processed (that attempt counts)
    GIVE_UP = "give_up"  # the processor's attempts are exhausted (the last one was already counted)
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


@dataclass(frozen=True, slots=True)
class Transition:
    """What one write does to an item. `sources` empty: the item must not exist yet."""

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

    @property
    def dispatches(self) -> bool:
        """Whether it re-enqueues the event: it leaves the item pending with a dispatching reason."""
        return EventStatus.PENDING in self.targets and self.dispatch_reason in DISPATCHING_REASONS

    @property
    def moves_status(self) -> bool:
        return self.targets != self.sources


_PENDING = frozenset({EventStatus.PENDING})

LIFECYCLE: Final[Mapping[Write, Transition]] = {
    Write.RECEIVE: Transition(
        sources=frozenset(),
        targets=frozenset({EventStatus.PENDING, EventStatus.FAILED}),  # failed: signed but unparseable
        dispatch_reason=DispatchReason.RECEIVED,
        attempts=Attempts.RESET,
        last_error=LastError.RECORD,  # the parse failure of an unparseable one
        stamps=("received_at",),
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
    Write.REDISPATCH: Transition(
        sources=_PENDING,
        targets=_PENDING,
        dispatch_reason=DispatchReason.REDISPATCH,
        attempts=Attempts.KEEP,
        last_error=LastError.KEEP,
        # The group id is written again, valid: the Pipe copies it, and SQS would refuse an old raw key.
        fields=("group_id",),
        # Nobody dispatched or attempted it since the sweeper read it: two sweepers at once re-dispatch it once.
        unchanged=("dispatch_id",),
        quiet=("last_attempt_at",),
    ),
    Write.REPLAY: Transition(
        sources=frozenset({EventStatus.FAILED, EventStatus.PENDING}),
        targets=_PENDING,
        dispatch_reason=DispatchReason.REPLAY,
        attempts=Attempts.RESET,
        last_error=LastError.CLEAR,
        stamps=("replayed_at",),
        fields=("replayed_by",),
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


# ------------------------------------------------------------------------------------------------- values


def text(value: str) -> dict[str, str]:
    return {"S": value}


def number(value: int) -> dict[str, str]:
    return {"N": str(value)}


def open_status_value(status: EventStatus, pk: str) -> str:
    """Partition value of the sparse open-events index: status plus a stable shard of the key."""
    return f"{status.value}#{zlib.crc32(pk.encode()) % OPEN_EVENT_SHARDS}"


def new_dispatch_id() -> str:
    return uuid.uuid4().hex


def cut(message: str) -> str:
    return message[:MAX_TEXT_LENGTH]


# ------------------------------------------------------------------------------------------------- requests

RECEIVE_CONDITION: Final = "attribute_not_exists(pk)"  # the unique key, not a read-then-write, deduplicates


def received_attributes(pk: str, status: EventStatus, *, received_at: str, error: str | None = None) -> dict[str, Any]:
    """The lifecycle attributes of a newly received item (plain Python values: the item is serialized whole)."""
    transition = LIFECYCLE[Write.RECEIVE]
    if status not in transition.targets:
        raise ValueError(f"a received item is {sorted(transition.targets)}, not {status}")
    attributes: dict[str, Any] = {
        "status": status.value,
        "open_status": open_status_value(status, pk),
        "attempts": 0,
        **dict.fromkeys(transition.stamps, received_at),
    }
    if error is not None:
        attributes["last_error"] = error
    if status is EventStatus.PENDING and transition.dispatch_reason is not None:
        attributes.update(
            dispatch_id=new_dispatch_id(),
            dispatch_reason=transition.dispatch_reason.value,
            # Every dispatching write stamps `dispatched_at` (and the processor's attempts `last_attempt_at`):
            # the sweeper re-dispatches a pending event when neither changed for its stale threshold.
            dispatched_at=received_at,
        )
    return attributes


def attempt_update(*, error: str, now: str) -> dict[str, Any]:
    return _update(Write.ATTEMPT, EventStatus.PENDING, now=text(now), error=text(cut(error)))


def settle_update(outcome: EventStatus, *, note: str, now: str) -> dict[str, Any]:
    return _update(Write.SETTLE, outcome, now=text(now), fields={"note": text(cut(note))})


def fail_update(
    pk: str, *, error: str, now: str, counts_attempt: bool, failures_seen: int | None = None
) -> dict[str, Any]:
    """pending -> failed. `failures_seen` (the count the writer read) also counts the failure, refused when the
    count moved meanwhile: the outbox record written with it carries that count as its sequence."""
    write = Write.FAIL if counts_attempt else Write.GIVE_UP
    extra: dict[str, AttributeValue] = {}
    seen: dict[str, AttributeValue | None] = {}
    if failures_seen is not None:
        extra["failures"] = number(failures_seen + 1)
        seen["failures"] = number(failures_seen) if failures_seen else None
    return _update(
        write,
        EventStatus.FAILED,
        now=text(now),
        error=text(cut(error)),
        open_status=text(open_status_value(EventStatus.FAILED, pk)),
        fields=extra,
        seen=seen,
    )


def redispatch_update(
    *, group_id: str, now: str, seen_dispatch_id: str | None, quiet_since: str, dispatch_id: str | None = None
) -> dict[str, Any]:
    return _update(
        Write.REDISPATCH,
        EventStatus.PENDING,
        now=text(now),
        dispatch_id=text(dispatch_id or new_dispatch_id()),
        fields={"group_id": text(group_id)},
        seen={"dispatch_id": text(seen_dispatch_id) if seen_dispatch_id else None},
        quiet_since=text(quiet_since),
    )


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
    return _update(
        Write.REPLAY,
        EventStatus.PENDING,
        expected=selected,
        now=now,
        open_status=open_status,
        dispatch_id=dispatch_id,
        fields={"replayed_by": replayed_by},
    )


@dataclass(slots=True)
class _Request:
    """An UpdateItem's expressions as they are assembled: assignments, removals, conditions and their values."""

    sets: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    values: dict[str, AttributeValue] = field(default_factory=dict)

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


def _update(
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
    """The UpdateItem parameters of one write (no TableName, no Key), derived from its row of LIFECYCLE."""
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
        request.set("#status = :status", status=text(target.value))
        if target not in OPEN_STATUSES:
            request.removes.append("open_status")  # settled: out of the open-events index
        elif open_status is None:
            raise ValueError(f"{write} to {target} keeps the item in the open-events index: its shard is needed")
        else:
            request.set("open_status = :open_status", open_status=open_status)
    if target is EventStatus.PENDING and transition.dispatch_reason is not None:
        request.set("dispatch_reason = :dispatch_reason", dispatch_reason=text(transition.dispatch_reason.value))
        if transition.dispatches:
            if dispatch_id is None:
                raise ValueError(f"{write} dispatches: it needs a fresh dispatch id")
            request.set("dispatch_id = :dispatch_id", dispatch_id=dispatch_id)
            request.set("dispatched_at = :now", now=now)
    if transition.attempts is Attempts.COUNT:
        request.set("attempts = if_not_exists(attempts, :zero) + :one", zero=number(0), one=number(1))
    elif transition.attempts is Attempts.RESET:
        request.set("attempts = :zero", zero=number(0))
    if transition.last_error is LastError.RECORD:
        if error is None:
            raise ValueError(f"{write} records the error: it needs one")
        request.set("last_error = :error", error=error)
    elif transition.last_error is LastError.CLEAR:
        request.removes.append("last_error")
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
        request.require("#status = :expected_status", expected_status=text(source.value))
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
    for name in transition.quiet:
        if quiet_since is None:
            raise ValueError(f"{write} needs the cutoff its {name} must be older than")
        request.require(f"(attribute_not_exists({name}) OR {name} < :quiet_since)", quiet_since=quiet_since)
