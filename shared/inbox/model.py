"""The inbox item: how a received event is laid out in DynamoDB.

Plain dicts of Python values (str, int, bytes, dict); `shared.inbox.store` converts them to DynamoDB's wire
format. Field names and meanings are the data model in docs/architecture.md.
"""

from __future__ import annotations

import hashlib
import string
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

# The statuses, and the writes that move an item between them, are the lifecycle's (shared/definitions/lifecycle.py's
# table, shared/inbox/lifecycle.py at run time); named here too for the readers of the item's layout.
from shared.definitions import VERIFY_EVENT_TYPE, source_key
from shared.inbox.dictionaries import current_dictionary, stream_dictionary
from shared.inbox.lifecycle import (
    OPEN_STATUSES,
    DispatchReason,
    EventStatus,
    open_status_value,
    received_attributes,
)

if TYPE_CHECKING:  # annotations only: the stores (in every function's asset) must not pull in the drivers' base
    from shared.providers.base import NormalizedEvent, WebhookRequest

__all__ = [
    "BODY_ZLIB_ATTRIBUTE",
    "FIFO_ID_CHARACTERS",
    "FIFO_ID_MAX_LENGTH",
    "INLINE_BODY_BREAK_EVEN_BYTES",
    "OPEN_STATUSES",
    "DispatchReason",
    "EventStatus",
    "StoredBody",
    "body_object_key",
    "build_item",
    "build_verify_item",
    "compress_body",
    "event_key",
    "fifo_group_id",
    "inline_body",
    "is_valid_fifo_id",
    "iso_utc",
    "open_status_value",
    "resource_key",
]


def event_key(source: str, event_id: str) -> str:
    """The inbox item's `pk`, the dedup key: one event of one source. A default source is named after its
    provider, so a default deployment's keys are `{provider}#{event_id}` as before sources existed."""
    return source_key(source, event_id)


def resource_key(source: str, resource_id: str) -> str:
    """One payment of one source: the payments table's `pk`, and the FIFO group of its events (`fifo_group_id` of
    it: the inbox item's `group_id`, the events-by-group index's key)."""
    return source_key(source, resource_id)


# SQS's rule for MessageGroupId and MessageDeduplicationId: 1 to 128 characters, each an ASCII letter, digit or
# one of !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ (exactly `string.punctuation`). SQS API reference, SendMessage.
FIFO_ID_MAX_LENGTH = 128
FIFO_ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
_HASHED_PREFIX_LENGTH = FIFO_ID_MAX_LENGTH - 1 - 64  # room for "~" and a sha256 hex digest


def is_valid_fifo_id(value: str) -> bool:
    return 0 < len(value) <= FIFO_ID_MAX_LENGTH and all(character in FIFO_ID_CHARACTERS for character in value)


def fifo_group_id(key: str) -> str:
    """The SQS FIFO MessageGroupId for a key (an event's or a payment's), the one rule every sender uses.

    Keys come from senders (a resource id with a space, an accent, 200 characters), and SQS refuses such a group
    id. A key that is already a valid id is kept as it is (so every id stored before this rule keeps its group);
    any other becomes a readable prefix (the key's first characters, each invalid one as `_`) + `~` + the sha256
    of the whole key: always valid and at most 128 characters. Two different keys never share a group by accident:
    kept keys are distinct, derived ones differ unless sha256 collides, and a kept key equals a derived one only
    if it spells out another key's digest. Idempotent (a derived id is valid, so it is kept): normalizing a
    stored group id again never moves it to another group.
    """
    if is_valid_fifo_id(key):
        return key
    readable = "".join(c if c in FIFO_ID_CHARACTERS else "_" for c in key[:_HASHED_PREFIX_LENGTH])
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{readable}~{digest}"


def iso_utc(moment: datetime) -> str:
    """ISO-8601 UTC with microseconds and a Z: sorts lexically in time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StoredBody(NamedTuple):
    """Where the raw body lives: inline bytes (zlib-compressed when `compressed`), or an S3 key for bodies whose
    inline copy would cost more than an S3 object (or not fit an item)."""

    sha256: str
    size: int
    inline: bytes | None = None
    s3_key: str | None = None
    compressed: bool = False


# Inline bodies are stored zlib-compressed (RFC 1950) under this attribute when that is smaller: a DynamoDB write
# is billed per KB of the whole item, and JSON compresses to about a third (Stripe's documented event example:
# 1,863 bytes -> 671), to a sixth with the provider's preset dictionary (shared/inbox/dictionaries.py: 292).
# Items written before compression keep their raw `body`; `inline_body` reads every form (plain zlib, any
# dictionary ever used, raw). The signature was verified on the raw bytes before anything is stored. The body's
# digest is not stored: it is the digest of what `inline_body` returns (the S3 key of a bucket body carries it).
BODY_ZLIB_ATTRIBUTE = "body_zlib"
# A compressed body up to this many bytes is kept in the item; a larger one goes to the body bucket. The break-even
# of an S3 PUT (per delivery, duplicates included: the object is written before the dedup put) against the write
# units and storage each KB of inline body costs: `inbox_cli.cost.inline_body_break_even_bytes` computes it from
# prices.json, and tests/unit/test_cost_model.py keeps this figure at or below it.
INLINE_BODY_BREAK_EVEN_BYTES = 3 * 1024
# A stored body never decompresses past this (a corrupt or foreign attribute cannot make a reader allocate more):
# above API Gateway's 10 MB payload limit, so every body the front door accepted fits.
_MAX_DECOMPRESSED_BYTES = 10 * 1024 * 1024


def compress_body(body: bytes, provider: str | None = None) -> bytes:
    """zlib (RFC 1950) at its highest level, with `provider`'s preset dictionary when it has one
    (shared/inbox/dictionaries.py: the stream names it, so any reader finds it again)."""
    zdict = current_dictionary(provider)
    compressor = zlib.compressobj(9) if zdict is None else zlib.compressobj(9, zdict=zdict)
    return compressor.compress(body) + compressor.flush()


def inline_body(item: Mapping[str, Any]) -> bytes | None:
    """The raw body kept in the item (compressed or, in items written before compression, as it was), or None when
    it lives in the body bucket (`body_s3_key`). The one reader of an item's inline body: every consumer (the CLI,
    the console, the archiver) goes through it, or through `InboxStore.read_body`, which also reads the bucket."""
    compressed = item.get(BODY_ZLIB_ATTRIBUTE)
    if compressed is not None:
        limit = item.get("body_size")
        limit = limit if isinstance(limit, int) and 0 <= limit <= _MAX_DECOMPRESSED_BYTES else _MAX_DECOMPRESSED_BYTES
        stream = bytes(compressed)
        zdict = stream_dictionary(stream)  # the preset dictionary its header names, if any
        inflater = zlib.decompressobj() if zdict is None else zlib.decompressobj(zdict=zdict)
        raw = inflater.decompress(stream, limit + 1)
        if len(raw) > limit or not inflater.eof:
            raise ValueError(f"the stored body of {item.get('pk')} decompresses past its {limit} bytes")
        return raw
    body = item.get("body")
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if isinstance(body, str):  # an image from a reader that kept binary as text: not ours, but readable
        return body.encode("utf-8")
    return None


def body_object_key(source: str, pk: str, body: bytes, received: datetime) -> str:
    # The body's own hash is part of the key: a redelivery with a different body (new envelope id, new
    # timestamp) never overwrites the body the stored item points at.
    day = received.astimezone(UTC).strftime("%Y/%m/%d")
    key_hash = hashlib.sha256(pk.encode()).hexdigest()[:32]
    return f"bodies/{source}/{day}/{key_hash}/{hashlib.sha256(body).hexdigest()}"


def build_item(
    *,
    source: str | None = None,
    provider: str,
    event_id: str,
    event: NormalizedEvent | None,
    request: WebhookRequest,
    replay_headers: tuple[str, ...],
    body: StoredBody,
    replay_query: tuple[str, ...] = (),
    received_at: datetime,
    retention_days: int,
    failure: str | None = None,
    failure_proves_nothing: bool = False,
) -> dict[str, Any]:
    """The item for a verified delivery to `source` (default: the provider's default source): pending when
    parsed; when not, failed with the reason, or, for a body its scheme does not bind
    (`failure_proves_nothing`), ignored with the reason as its note."""
    source = source or provider
    pk = event_key(source, event_id)
    status = EventStatus.PENDING
    if failure:
        status = EventStatus.IGNORED if failure_proves_nothing else EventStatus.FAILED
    # Every attribute is paid for by each write of the item (billed per KB of the whole item), so nothing here is
    # derivable from the rest: the source is the key's first part (`source_of`), the body's digest is the body's,
    # the payment's key `{source}#{resource_id}` is the group id (or, for a key SQS refuses, what it hashes to).
    item: dict[str, Any] = {
        "pk": pk,
        "provider": provider,
        "event_id": event_id,
        # status, open_status, attempts, received_at, and the dispatch (dispatch_id, dispatch_reason) of a pending
        # one, or the failure (last_error) of an unparseable one
        **received_attributes(
            pk,
            status,
            received_at=iso_utc(received_at),
            error=failure if status is EventStatus.FAILED else None,
            note=f"unauthenticated body: {failure}" if status is EventStatus.IGNORED else None,
        ),
        "expires_at": int(received_at.timestamp()) + retention_days * 86_400,
        "body_size": body.size,
        "headers": {name: request.headers[name] for name in replay_headers if name in request.headers},
        # the FIFO group, and the key of the events-by-group index: the payment's, or the event's own when it is
        # about no payment (a FIFO group of its own)
        "group_id": fifo_group_id(pk),
    }
    if body.inline is not None:
        item[BODY_ZLIB_ATTRIBUTE if body.compressed else "body"] = body.inline
    else:
        item["body_s3_key"] = body.s3_key
    # Only the query parameters the driver names are kept: some providers put the secret itself in the URL.
    kept_query = {name: request.query[name] for name in replay_query if name in request.query}
    if kept_query:
        item["query"] = kept_query
    if failure:
        item["event_type"] = "unparseable"
        return item
    assert event is not None
    item.update(event_type=event.event_type, occurred_at=iso_utc(event.occurred_at))
    if event.resource_id:
        item["resource_id"] = event.resource_id
        item["group_id"] = fifo_group_id(resource_key(source, event.resource_id))
    for name in ("provider_status", "amount", "currency"):
        value = getattr(event, name)
        if value is not None:
            item[name] = value
    if event.account is not None:
        item.update(event.account.to_attributes())
    return item


VERIFY_ID_PREFIX = "verify:"


def verify_event_id(resource_id: str, transitions: int) -> str:
    """The event id of a payment's verification item: one per period the payment is unverified, which starts at
    the transition that made it so (`transitions`, never reused by the payment)."""
    return f"{VERIFY_ID_PREFIX}{resource_id}:{transitions}"


def build_verify_item(
    *,
    source: str,
    provider: str,
    resource_id: str,
    transitions: int,
    account_attributes: Mapping[str, Any],
    received_at: str,
    expires_at: int,
) -> dict[str, Any]:
    """The inbox's own item that verifies a payment confirmed from a payload (shared/process/confirm.py): pending
    and dispatched like a received event, in the payment's FIFO group (so the Pipe queues it behind the payment's
    earlier events, the rate limit's waits and the sweeper's re-dispatch apply to it as to any event), with no
    body and no event time (it is no delivery: nothing to re-verify, and it stays out of the events-by-group
    index). Processing it refetches the payment (shared/process/service.py)."""
    event_id = verify_event_id(resource_id, transitions)
    pk = event_key(source, event_id)
    return {
        "pk": pk,
        "provider": provider,
        "event_id": event_id,
        "event_type": VERIFY_EVENT_TYPE,
        "resource_id": resource_id,
        **received_attributes(pk, EventStatus.PENDING, received_at=received_at),
        "expires_at": expires_at,
        "body": b"",
        "body_size": 0,
        "group_id": fifo_group_id(resource_key(source, resource_id)),
        **account_attributes,
    }
