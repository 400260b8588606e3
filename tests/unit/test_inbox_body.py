"""The inbox item's body as stored (compressed or not) and read back through its one accessor, and the settle's
write: a transaction only when there is a payment to keep in step with the item."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.inbox.lifecycle import EventStatus
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, compress_body, inline_body
from shared.inbox.store import EventAlreadySettled
from shared.payments.store import ProcessingStore

BODY = b'{"id": "evt_1", "object": "event", "data": {"object": {"status": "succeeded"}}}' * 4


def test_a_compressed_body_reads_back_as_the_raw_bytes():
    # Given an item as the ingest writes it now
    item = {"pk": "stripe#evt_1", BODY_ZLIB_ATTRIBUTE: compress_body(BODY), "body_size": len(BODY)}
    # Then the accessor gives the raw bytes (the ones whose signature was verified)
    assert inline_body(item) == BODY


def test_an_item_written_before_compression_reads_back_unchanged():
    assert inline_body({"pk": "stripe#evt_1", "body": BODY, "body_size": len(BODY)}) == BODY


def test_a_body_in_the_bucket_is_not_inline():
    assert inline_body({"pk": "stripe#evt_1", "body_s3_key": "bodies/x", "body_size": 10}) is None


def test_a_compressed_body_never_inflates_past_its_recorded_size():
    # Given an attribute that inflates to far more than the size the item records (corrupt, or not ours)
    bomb = zlib.compress(b"\0" * (1024 * 1024))
    # Then reading it is refused, after decompressing at most one byte past the recorded size
    with pytest.raises(ValueError, match="decompresses past"):
        inline_body({"pk": "stripe#evt_1", BODY_ZLIB_ATTRIBUTE: bomb, "body_size": 100})


class RecordingDynamoDB:
    def __init__(self, failure: str | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.failure = failure

    def update_item(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("update_item", request))
        if self.failure:
            raise ClientError({"Error": {"Code": self.failure, "Message": ""}}, "UpdateItem")
        return {}

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        self.calls.append(("transact_write_items", request))
        return {}


def test_a_settle_without_a_payment_is_one_conditional_update_not_a_transaction():
    # Given an event that changes no payment (nobody handles it, or it changes nothing)
    dynamodb = RecordingDynamoDB()
    store = ProcessingStore("inbox", "payments", dynamodb=dynamodb, outbox_table="outbox")  # type: ignore[arg-type]
    # When it is settled
    store.settle("stripe#evt_1", EventStatus.IGNORED, now="2026-12-01T00:00:00.000000Z", note="no change")
    # Then one UpdateItem moved it, conditioned on its still being pending: half a transaction's write units
    ((operation, request),) = dynamodb.calls
    assert operation == "update_item"
    assert request["Key"] == {"pk": {"S": "stripe#evt_1"}} and "ConditionExpression" in request


def test_a_settle_without_a_payment_that_comes_second_finds_the_event_settled():
    # Given another delivery of the message settled the event first (the condition fails)
    dynamodb = RecordingDynamoDB(failure="ConditionalCheckFailedException")
    store = ProcessingStore("inbox", "payments", dynamodb=dynamodb)  # type: ignore[arg-type]
    # Then this one is told so, as a transaction's refusal told it
    with pytest.raises(EventAlreadySettled):
        store.settle("stripe#evt_1", EventStatus.PROCESSED, now="2026-12-01T00:00:00.000000Z", note="x")
