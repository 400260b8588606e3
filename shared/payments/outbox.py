"""The transactional outbox: what the service publishes downstream, written in the transaction that causes it.

One outbox item per published event, in the outbox table (`OUTBOX_TABLE`):
- `pk` = the payment key `{source}#{resource_id}` for `payment.status_changed` (every record of one payment
  shares a partition, so the table's stream hands them over in commit order), `failed#{inbox pk}` for
  `webhook.failed`, `verified#{payment key}` for `payment.verified` (the API confirmed a status a payload applied);
- `sequence` (number, sort key) = the payment's `transitions` after the change (1 for the first sighting), or the
  event's failure count for `webhook.failed`, or the transition verified for `payment.verified`;
- `id` = a deterministic message id (`tr_...` / `wf_...`): the `webhook-id` of every delivery, the receivers'
  dedup key. For a status change it is also `transition_id`;
- `expires_at` (epoch seconds, TTL): the outbox is a hand-over buffer, not an archive.

The item's attributes other than `pk` and `expires_at` are the event as published (schema: docs/events.schema.json).
The Put is conditioned on `attribute_not_exists(pk)`: a record is written once, and only if its transaction commits.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from shared.definitions import OUTBOX_RETENTION_DAYS, source_of
from shared.inbox.store import from_attributes
from shared.payments.model import Payment

SCHEMA_VERSION = "1"
STATUS_CHANGED = "payment.status_changed"
WEBHOOK_FAILED = "webhook.failed"
PAYMENT_VERIFIED = "payment.verified"
OUTBOX_RETENTION_SECONDS = OUTBOX_RETENTION_DAYS * 86_400
FAILED_PREFIX = "failed#"
VERIFIED_PREFIX = "verified#"
# Attributes of the outbox item that are storage, not part of the published event.
STORAGE_ATTRIBUTES = frozenset({"pk", "expires_at"})


def message_id(prefix: str, partition: str, sequence: int) -> str:
    """Deterministic: the same change always has the same id, whoever computes it and however often."""
    return prefix + hashlib.sha256(f"{partition}#{sequence}".encode()).hexdigest()[:32]


def transition_id(payment_key: str, sequence: int) -> str:
    return message_id("tr_", payment_key, sequence)


def _expires_at(now_epoch: float | None) -> int:
    return int((time.time() if now_epoch is None else now_epoch) + OUTBOX_RETENTION_SECONDS)


def status_changed(
    payment: Payment,
    *,
    occurred_at: str,
    source_event_id: str | None,
    created_at: str,
    now_epoch: float | None = None,
) -> dict[str, Any]:
    """The outbox item for the transition that produced `payment` (its `transitions` is the sequence)."""
    sequence = payment.transitions
    identifier = transition_id(payment.key, sequence)
    return {
        "pk": payment.key,
        "sequence": sequence,
        "id": identifier,
        "transition_id": identifier,
        "schema_version": SCHEMA_VERSION,
        "type": STATUS_CHANGED,
        "provider": payment.provider,
        "source": payment.source,
        "resource_id": payment.resource_id,
        "previous_status": payment.previous_status.value if payment.previous_status else None,
        "new_status": payment.status.value,
        "amount": payment.amount,
        "currency": payment.currency,
        "amount_refunded": payment.amount_refunded,
        "occurred_at": occurred_at,
        "source_event_id": source_event_id,
        # False: applied from a signed payload, not yet confirmed by the gateway's API (docs/events.md).
        "verified": payment.verified,
        "created_at": created_at,
        "expires_at": _expires_at(now_epoch),
    }


def payment_verified(payment: Payment, *, created_at: str, now_epoch: float | None = None) -> dict[str, Any]:
    """The outbox item saying the gateway's API confirmed the status a signed payload applied to `payment` (its
    transition `transitions`, published earlier with `verified: false`). Once per transition: a payment becomes
    unverified again only through a new transition."""
    partition = VERIFIED_PREFIX + payment.key
    sequence = payment.transitions
    return {
        "pk": partition,
        "sequence": sequence,
        "id": message_id("pv_", partition, sequence),
        "transition_id": transition_id(payment.key, sequence),
        "schema_version": SCHEMA_VERSION,
        "type": PAYMENT_VERIFIED,
        "provider": payment.provider,
        "source": payment.source,
        "resource_id": payment.resource_id,
        "status": payment.status.value,
        "amount": payment.amount,
        "currency": payment.currency,
        "amount_refunded": payment.amount_refunded,
        "verified": True,
        "created_at": created_at,
        "expires_at": _expires_at(now_epoch),
    }


def webhook_failed(
    event_item: dict[str, Any],
    *,
    failure: int,
    last_error: str,
    attempts: int,
    failed_at: str,
    now_epoch: float | None = None,
) -> dict[str, Any]:
    """The outbox item for an inbox event that ended failed (its `failure`-th failure: a replay can fail again)."""
    partition = FAILED_PREFIX + str(event_item["pk"])
    return {
        "pk": partition,
        "sequence": failure,
        "id": message_id("wf_", partition, failure),
        "schema_version": SCHEMA_VERSION,
        "type": WEBHOOK_FAILED,
        "provider": event_item.get("provider"),
        "source": source_of(event_item),
        "event_id": event_item.get("event_id"),
        "event_type": event_item.get("event_type"),
        "resource_id": event_item.get("resource_id"),
        "last_error": last_error,
        "attempts": attempts,
        "failed_at": failed_at,
        "created_at": failed_at,
        "expires_at": _expires_at(now_epoch),
    }


def published_event(item: dict[str, Any]) -> dict[str, Any]:
    """The event as published: the outbox item without its storage attributes. Absent attributes (DynamoDB
    stores no nulls) come back as explicit nulls so every event has the schema's full shape."""
    event = {name: value for name, value in item.items() if name not in STORAGE_ATTRIBUTES}
    if event.get("type") == STATUS_CHANGED:
        for name in ("previous_status", "amount", "currency", "source_event_id"):
            event.setdefault(name, None)
        event.setdefault("verified", True)  # records written before payloads could confirm: all from the API
    elif event.get("type") == PAYMENT_VERIFIED:
        for name in ("amount", "currency"):
            event.setdefault(name, None)
    elif event.get("type") == WEBHOOK_FAILED:
        for name in ("provider", "event_id", "event_type", "resource_id"):
            event.setdefault(name, None)
    return event


def event_from_stream_record(record: dict[str, Any]) -> dict[str, Any]:
    """The published event carried by an outbox stream record (its NewImage), with its partition `pk` (which
    the caller pops: it is the ordering key, not part of the event). The same for a Pipe's batch in AWS and the
    local stream reader: both hand over the stream's record shape."""
    image = record["dynamodb"]["NewImage"]
    item = from_attributes(image)  # the one typed-JSON reader: numbers as int/float, like every other item
    return {"pk": item["pk"], **published_event(item)}
