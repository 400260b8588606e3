"""The inbox item's lifecycle at run time: the one owner of every write to an inbox item.

The table of writes (which statuses each moves an item from and to, what it sets and stamps) and the composer that
derives each write's DynamoDB request from its row are in shared/definitions/lifecycle.py, because the
stack's replay workflow embeds the replay's request and infra/ may import only that module. This module is what
every Lambda writes through: it fills in the values of each write (fresh dispatch ids, cut error texts, the
item's open-events shard) and re-exports the table, so callers have one place to import the lifecycle from:

- the ingest's conditional put (`received_attributes`, `RECEIVE_CONDITION`; executed by shared/inbox/store.py),
- the processor's attempt, wait and failure (`attempt_update`, `wait_update`, `fail_update`; executed by
  shared/inbox/store.py, or the failure composed with an outbox record by shared/payments/store.py) and its
  settle (`settle_update`: the owner builds the transaction item, shared/payments/store.py composes it with the
  payment's write),
- the sweeper's re-dispatch (`redispatch_update`; executed by shared/inbox/store.py),
- the replay (`replay_update`, from shared/definitions/lifecycle.py): infra/replay_definition.py embeds its request, the
  varying values given as Step Functions paths.

Stdlib only and no I/O, on purpose: the Lambdas carry it.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

from shared.definitions import (
    DISPATCHING_REASONS,
    LIFECYCLE,
    OPEN_STATUSES,
    RECEIVE_CONDITION,
    REPLAYABLE_STATUSES,
    WAIT_UNTIL,
    Attempts,
    AttributeValue,
    DispatchReason,
    EventStatus,
    IgnoredReason,
    LastError,
    Transition,
    WaitingFor,
    Write,
    allowed_transitions,
    compose_update,
    number_value,
    open_status_value,
    replay_update,
    text_value,
    writes_between,
)

__all__ = [
    "DISPATCHING_REASONS",
    "LIFECYCLE",
    "MAX_TEXT_LENGTH",
    "OPEN_STATUSES",
    "RECEIVE_CONDITION",
    "REPLAYABLE_STATUSES",
    "WAIT_UNTIL",
    "Attempts",
    "AttributeValue",
    "DispatchReason",
    "EventStatus",
    "IgnoredReason",
    "LastError",
    "Transition",
    "WaitingFor",
    "Write",
    "allowed_transitions",
    "attempt_update",
    "cut",
    "fail_update",
    "new_dispatch_id",
    "number_value",
    "open_status_value",
    "received_attributes",
    "redispatch_update",
    "replay_update",
    "settle_update",
    "text_value",
    "wait_update",
    "writes_between",
]

MAX_TEXT_LENGTH: Final = 500  # `last_error` and `note` are cut to this: an item is at most 400 KB


# A dispatch id is the queue message's deduplication id (the Pipe copies it): it only has to differ from every
# other dispatch within SQS FIFO's 5-minute deduplication window. 96 random bits, as 16 URL-safe base64 characters
# (letters, digits, `-`, `_`: all in SQS's alphabet for the id), where a uuid's 32 hex digits stored 16 bytes more
# in every pending item (and its open-events index entry) for 26 bits nobody needs.
DISPATCH_ID_BYTES: Final = 12


def new_dispatch_id() -> str:
    return secrets.token_urlsafe(DISPATCH_ID_BYTES)


def cut(message: str) -> str:
    return message[:MAX_TEXT_LENGTH]


def received_attributes(
    pk: str, status: EventStatus, *, received_at: str, error: str | None = None, note: str | None = None
) -> dict[str, Any]:
    """The lifecycle attributes of a newly received item (plain Python values: the item is serialized whole): a
    failed one's `error`, an ignored one's `note`."""
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
    if note is not None:
        attributes["note"] = cut(note)
    if status is EventStatus.PENDING and transition.dispatch_reason is not None:
        # Every later dispatching write stamps `dispatched_at` (and the processor's attempts `last_attempt_at`):
        # the sweeper re-dispatches a pending event when none of them nor `received_at` changed for its stale
        # threshold (shared/sweeper.py `last_activity`). At receipt it would equal `received_at`: not stored.
        attributes.update(dispatch_id=new_dispatch_id(), dispatch_reason=transition.dispatch_reason.value)
    return attributes


def attempt_update(*, error: str, now: str) -> dict[str, Any]:
    return compose_update(Write.ATTEMPT, EventStatus.PENDING, now=text_value(now), error=text_value(cut(error)))


def wait_update(*, until: str, waiting_for: WaitingFor, now: str) -> dict[str, Any]:
    """The event waits for its source until `until` (its message is hidden until then): no attempt counted."""
    return compose_update(
        Write.WAIT,
        EventStatus.PENDING,
        now=text_value(now),
        fields={WAIT_UNTIL: text_value(until), "waiting_for": text_value(waiting_for.value)},
    )


def settle_update(
    outcome: EventStatus, *, note: str, now: str, ignored_reason: IgnoredReason | None = None
) -> dict[str, Any]:
    """pending -> processed | ignored; an ignored one records why, from the closed set (definitions.IgnoredReason)."""
    fields: dict[str, AttributeValue] = {"note": text_value(cut(note))}
    if ignored_reason is not None:
        if outcome is not EventStatus.IGNORED:
            raise ValueError(f"an ignored reason on a {outcome.value} event")
        fields["ignored_reason"] = text_value(IgnoredReason(ignored_reason).value)
    return compose_update(Write.SETTLE, outcome, now=text_value(now), fields=fields)


def fail_update(
    pk: str, *, error: str, now: str, counts_attempt: bool, failures_seen: int | None = None
) -> dict[str, Any]:
    """pending -> failed. `failures_seen` (the count the writer read) also counts the failure, refused when the
    count moved meanwhile: the outbox record written with it carries that count as its sequence."""
    write = Write.FAIL if counts_attempt else Write.GIVE_UP
    extra: dict[str, AttributeValue] = {}
    seen: dict[str, AttributeValue | None] = {}
    if failures_seen is not None:
        extra["failures"] = number_value(failures_seen + 1)
        seen["failures"] = number_value(failures_seen) if failures_seen else None
    return compose_update(
        write,
        EventStatus.FAILED,
        now=text_value(now),
        error=text_value(cut(error)),
        open_status=text_value(open_status_value(EventStatus.FAILED, pk)),
        fields=extra,
        seen=seen,
    )


def redispatch_update(
    *, group_id: str, now: str, seen_dispatch_id: str | None, quiet_since: str, dispatch_id: str | None = None
) -> dict[str, Any]:
    return compose_update(
        Write.REDISPATCH,
        EventStatus.PENDING,
        now=text_value(now),
        dispatch_id=text_value(dispatch_id or new_dispatch_id()),
        fields={"group_id": text_value(group_id)},
        seen={"dispatch_id": text_value(seen_dispatch_id) if seen_dispatch_id else None},
        quiet_since=text_value(quiet_since),
    )
