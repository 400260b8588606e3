"""The inbox item's body as stored (compressed or not) and read back through its one accessor, and the settle's
write: a transaction only when there is a payment to keep in step with the item."""

from __future__ import annotations

import hashlib
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.item_size import item_bytes, write_units
from shared.definitions import LIFECYCLE, PROVIDERS, Write
from shared.inbox import dictionaries, lifecycle
from shared.inbox.dictionaries import CURRENT, DICTIONARIES, UnknownDictionary, dictionary
from shared.inbox.lifecycle import EventStatus
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, StoredBody, build_item, compress_body, inline_body
from shared.inbox.store import EventAlreadySettled, to_attributes
from shared.payments.store import ProcessingStore
from shared.providers.base import WebhookRequest
from shared.providers.registry import get_driver

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


# ------------------------------------------------------------------------------------------ preset dictionaries
# Each dictionary ever used, by file: its bytes can never change (an item compressed with it needs exactly them).
PINNED_DICTIONARIES = {"stripe-1.zdict": "e07a722fc57798f614e6620019396cc0f64a9243b38bf4f4093d2aa3aaf53638"}


def stripe_event(event_id: str = "evt_3Q9zXkLkdIwHu7ix0ab1CdEf") -> bytes:
    """A Stripe PaymentIntent event as Stripe prints it, grown to the documented example's 1,863 bytes."""
    from bench.item_sizes import pad_stripe_body
    from inbox_cli.simulate.wire import sample_body

    raw = sample_body(
        "stripe",
        event_id=event_id,
        resource_id="pi_3Q9zXkLkdIwHu7ix1gh2IjKl",
        status="paid",
        amount=1990,
        occurred_at=1764590400,
    )
    return pad_stripe_body(raw, 1863)


def test_every_dictionary_ever_used_is_still_there_unchanged():
    # Given the registry of dictionaries (append only) and the digests pinned when each was added
    # Then each file is there with its bytes, under the id its bytes give, and none was dropped
    assert set(DICTIONARIES.values()) == set(PINNED_DICTIONARIES)
    for dict_id, name in DICTIONARIES.items():
        data = (Path(dictionaries.__file__).parent / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == PINNED_DICTIONARIES[name]
        assert zlib.adler32(data) == dict_id and dictionary(dict_id) == data
    # And every provider's current one is registered, for a provider of the catalog
    assert set(CURRENT.values()) <= set(DICTIONARIES) and set(CURRENT) <= set(PROVIDERS)


def test_a_stripe_body_is_compressed_with_its_dictionary_named_in_the_stream_and_reads_back():
    # Given a Stripe event of the documented example's size
    body = stripe_event()
    # When the ingest compresses it for Stripe
    stored = compress_body(body, "stripe")
    # Then the zlib header names the dictionary (RFC 1950 FDICT + DICTID), and the one reader needs nothing else
    assert stored[1] & 0x20 and int.from_bytes(stored[2:6], "big") == CURRENT["stripe"]
    assert inline_body({"pk": "stripe#evt_1", BODY_ZLIB_ATTRIBUTE: stored, "body_size": len(body)}) == body
    # And it is well under half of what plain zlib keeps (the field names are the dictionary's)
    assert len(stored) < 0.6 * len(zlib.compress(body, 9)) and len(stored) < 400


def test_bodies_compressed_before_the_dictionary_and_other_providers_bodies_read_as_before():
    body = stripe_event()
    for stored in (zlib.compress(body, 6), compress_body(body, "asaas"), compress_body(body)):
        assert not stored[1] & 0x20  # plain zlib: no dictionary named
        assert inline_body({"pk": "p#1", BODY_ZLIB_ATTRIBUTE: stored, "body_size": len(body)}) == body


def test_a_body_naming_an_unknown_dictionary_is_refused_not_misread():
    # Given a stream compressed with a dictionary this code never had
    compressor = zlib.compressobj(9, zdict=b'"unknown": null,')
    stored = compressor.compress(BODY) + compressor.flush()
    with pytest.raises(UnknownDictionary):
        inline_body({"pk": "stripe#evt_1", BODY_ZLIB_ATTRIBUTE: stored, "body_size": len(BODY)})


def test_the_documented_stripe_event_is_one_write_unit_when_received_and_when_settled():
    # Given the item the ingest writes for a Stripe event of the documented example's size, as DynamoDB sizes it
    body = stripe_event()
    item = build_item(
        provider="stripe",
        event_id="evt_3Q9zXkLkdIwHu7ix0ab1CdEf",
        event=get_driver("stripe").parse(WebhookRequest(body=body, headers={}, query={})),
        request=WebhookRequest(body=body, headers={"stripe-signature": "t=1764590400,v1=" + "a" * 64}, query={}),
        replay_headers=("stripe-signature",),
        body=StoredBody(sha256="", size=len(body), inline=compress_body(body, "stripe"), compressed=True),
        received_at=datetime(2026, 12, 1, tzinfo=UTC),
        retention_days=30,
    )
    received = to_attributes(item)
    # When it is settled (the settle's request applied to it)
    settled = dict(received)
    update = lifecycle.settle_update(EventStatus.PROCESSED, note="pending -> paid", now="2026-12-01T00:00:01.000000Z")
    for name in ("open_status", "last_error", *LIFECYCLE[Write.SETTLE].clears):
        settled.pop(name, None)
    settled |= {
        "status": {"S": "processed"},
        "attempts": {"N": "1"},
        "processed_at": {"S": "2026-12-01T00:00:01.000000Z"},
        "note": update["ExpressionAttributeValues"][":note"],
    }
    # Then both are at most 1 KB: one write unit for the put, for a plain settle, two for a transactional one
    assert item_bytes(received) <= 1024 and item_bytes(settled) <= 1024
    assert write_units(max(item_bytes(received), item_bytes(settled))) == 1
