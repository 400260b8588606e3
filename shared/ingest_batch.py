"""Storing the several events of one delivery (Adyen's `notificationItems`, Efí's `{"pix": [...]}`): every new
one or none, and each only once.

One TransactWriteItems of conditional puts (`attribute_not_exists(pk)`, the same condition as the single put in
shared/inbox/store.py): the transaction is atomic, so a crash, a timeout or a throttle leaves either all of the
delivery's new items or none of them, and the gateway's retry of a 5xx finds the same state. What a transaction
refuses and how it is met:
- an item that exists already (`ConditionalCheckFailed` in its cancellation reason): stored before, by an earlier
  attempt whose answer was lost or by another delivery repeating that event (Efí groups Pix of one key as it
  pleases). It is a duplicate; the transaction is retried with only the other items, so that an event seen
  before never makes the whole delivery fail forever;
- a conflict with another transaction on the same items (`TransactionConflict`: two identical deliveries at
  once): retried, at most `MAX_ROUNDS` rounds in all; the loser then finds the winner's items and counts them as
  duplicates;
- anything else (throttling, a validation error): StorageUnavailable, the 5xx the gateway retries.
Two actions on one item are refused by DynamoDB: events repeated inside one delivery are deduplicated here
first (the first one is kept, the others are duplicates).

Limits (TransactWriteItems API reference, docs/aws-limits.md): at most 100 actions and 4 MB of items. The ingest
refuses a delivery with more than MAX_EVENTS_PER_DELIVERY events before writing anything (413), and keeps the sum of
the inline body copies under MULTI_EVENT_INLINE_BODY_BUDGET_BYTES (above it the body goes to S3 once).

This module speaks DynamoDB through the inbox store's table, client and item encoding (shared/inbox/store.py),
adding the one write the store does not have: a put of many.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.definitions import MAX_EVENTS_PER_DELIVERY, RECEIVE_CONDITION
from shared.inbox.store import (
    InboxStore,
    PutOutcome,
    StorageUnavailable,
    cancellation_reasons,
    error_code,
    to_attributes,
)

MAX_ROUNDS = 4  # a round per cause: duplicates found, then up to three conflicts with a concurrent delivery
CONFLICT_BACKOFF_SECONDS = 0.05
_DUPLICATE = "ConditionalCheckFailed"
_CONFLICT = "TransactionConflict"
_UNTOUCHED = ("None", "", None)


class TooManyEvents(ValueError):
    """A delivery with more events than one transaction can store: refused whole, never partly stored."""


def put_all_new(
    store: InboxStore, items: Sequence[dict[str, Any]], *, sleep: Callable[[float], None] = time.sleep
) -> list[PutOutcome]:
    """Store every item whose key is new, all in one transaction; the outcome of each item, in order.
    Raises TooManyEvents (nothing written) or StorageUnavailable (nothing written by this call)."""
    if len(items) > MAX_EVENTS_PER_DELIVERY:
        raise TooManyEvents(f"{len(items)} events in one delivery; at most {MAX_EVENTS_PER_DELIVERY}")
    outcomes: dict[str, PutOutcome] = {}
    pending: list[dict[str, Any]] = []
    for item in items:
        if item["pk"] in outcomes:
            continue
        outcomes[item["pk"]] = PutOutcome.DUPLICATE  # until a transaction stores it
        pending.append(item)
    for round_number in range(1, MAX_ROUNDS + 1):
        if not pending:
            break
        reasons = _transact(store, pending)
        if reasons is None:
            for item in pending:
                outcomes[item["pk"]] = PutOutcome.STORED
            pending = []
            break
        if round_number == MAX_ROUNDS:
            break
        if _CONFLICT in reasons:
            sleep(CONFLICT_BACKOFF_SECONDS * round_number)
            continue
        # Only duplicates refused it (checked in _transact): the others are tried again without them.
        pending = [item for item, reason in zip(pending, reasons, strict=True) if reason != _DUPLICATE]
    if pending:
        raise StorageUnavailable(f"inbox transaction of {len(pending)} events kept conflicting; retry")
    return [outcomes[item["pk"]] for item in items]


def _transact(store: InboxStore, items: list[dict[str, Any]]) -> list[str] | None:
    """Write `items` in one transaction: None when written, else the per-item cancellation reasons of a
    transaction refused only for duplicates or conflicts. Anything else raises StorageUnavailable."""
    actions = [
        {"Put": {"TableName": store.table_name, "Item": to_attributes(item), "ConditionExpression": RECEIVE_CONDITION}}
        for item in items
    ]
    try:
        store.dynamodb.transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
    except ClientError as error:
        code = error_code(error)
        if code == "TransactionCanceledException":
            reasons = [str(reason) for reason in cancellation_reasons(error)]
            known = len(reasons) == len(items) and all(
                reason in (_DUPLICATE, _CONFLICT) or reason in _UNTOUCHED for reason in reasons
            )
            if known and any(reason in (_DUPLICATE, _CONFLICT) for reason in reasons):
                return reasons
        if code == "TransactionConflictException":
            return [_CONFLICT] * len(items)
        raise StorageUnavailable(f"inbox transaction failed: {code}") from error
    except BotoCoreError as error:
        raise StorageUnavailable(f"inbox transaction failed: {type(error).__name__}") from error
    return None
