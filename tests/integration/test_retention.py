"""Retention against moto: expired items end up in the archive (redacted when configured), through the stream."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from datetime import timedelta
from typing import Any, cast

import pytest

from functions.archiver.handler import lambda_handler as archiver_handler
from inbox_local.archive_mapping import ArchiveMapping
from inbox_local.expiry import expire_items
from inbox_local.lambda_context import LocalLambdaContext
from shared import retention
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, StoredBody, body_object_key, build_item, compress_body, event_key
from shared.inbox.store import InboxStore
from shared.providers.base import NormalizedEvent, WebhookRequest
from tests.integration.processing_support import BASE_TIME

RETENTION_DAYS = 30
EXPIRED = int((BASE_TIME + timedelta(days=RETENTION_DAYS, hours=1)).timestamp())
KEY = re.compile(r"^archive/provider=(\w+)/date=(\d{4}-\d{2}-\d{2})/(\d+)-(\d+)\.jsonl\.gz$")


@pytest.fixture(autouse=True)
def _fresh_archiver():
    retention.default_archiver.reset()
    yield
    retention.default_archiver.reset()


def keep(
    world,
    provider: str,
    event_id: str,
    body: bytes,
    *,
    days_old: int = 0,
    in_s3: bool = False,
    compressed: bool = False,
) -> str:
    """Store a pending event received `days_old` days before BASE_TIME (it expires RETENTION_DAYS after); its body
    inline as items were written before compression (raw `body`), or `compressed` as the ingest writes it now."""
    received = BASE_TIME - timedelta(days=days_old)
    pk = event_key(provider, event_id)
    store = InboxStore(world.names.inbox_table, world.names.body_bucket)
    digest = hashlib.sha256(body).hexdigest()
    if in_s3:
        key = body_object_key(provider, pk, body, received)
        store.put_body(key, body)
        stored_body = StoredBody(sha256=digest, size=len(body), s3_key=key)
    elif compressed:
        stored_body = StoredBody(sha256=digest, size=len(body), inline=compress_body(body), compressed=True)
    else:
        stored_body = StoredBody(sha256=digest, size=len(body), inline=body)
    event = NormalizedEvent(event_id, "payment.updated", "pay_1", received, "paid", 1000, "BRL")
    item = build_item(
        provider=provider,
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=body, headers={"asaas-access-token": "x"}),
        replay_headers=(),
        body=stored_body,
        received_at=received,
        retention_days=RETENTION_DAYS,
    )
    store.put_new(item)
    return pk


def archive(world) -> dict[str, list[dict[str, Any]]]:
    s3 = world.session.client("s3")
    listing = s3.list_objects_v2(Bucket=world.names.archive_bucket).get("Contents", [])
    return {
        entry["Key"]: [
            json.loads(line)
            for line in gzip.decompress(
                s3.get_object(Bucket=world.names.archive_bucket, Key=entry["Key"])["Body"].read()
            ).splitlines()
        ]
        for entry in listing
    }


def lines_by_pk(world) -> dict[str, dict[str, Any]]:
    return {line["pk"]: line for lines in archive(world).values() for line in lines}


def mapping(world) -> ArchiveMapping:
    return ArchiveMapping(world.session, world.resources["stream_arn"], archiver_handler)


def expire(world, now: int = EXPIRED):
    return expire_items(world.session.client("dynamodb"), world.names.inbox_table, now)


def test_expired_items_are_deleted_as_ttl_would_and_then_archived(aws_world):
    # Given two events old enough to expire and one that is not
    old = keep(aws_world, "asaas", "evt_old", b'{"id": "evt_old"}', days_old=1)
    old_stripe = keep(aws_world, "stripe", "evt_old2", b'{"id": "evt_old2"}', days_old=2)
    young = keep(aws_world, "asaas", "evt_young", b'{"id": "evt_young"}', days_old=-5)
    # When the TTL emulation runs at a moment past the first two's expires_at
    result = expire(aws_world)
    # Then exactly those are deleted from the table ...
    assert sorted(result.deleted) == sorted([old, old_stripe])
    inbox = InboxStore(aws_world.names.inbox_table)
    assert inbox.get(old) is None and inbox.get(old_stripe) is None
    assert inbox.get(young) is not None
    # ... before anything is archived: as in AWS, the stream record is what carries the item to the archive
    assert archive(aws_world) == {}
    # When the archiver's event source mapping delivers the stream's TTL deletions
    assert mapping(aws_world).poll_once() == 2
    # Then the archive holds them, one object per provider and received day, named after the batch
    objects = archive(aws_world)
    matches = [KEY.match(key) for key in objects]
    partitions = sorted(match.groups()[:2] for match in matches if match)
    assert len(partitions) == len(objects)
    assert partitions == [("asaas", "2026-11-28"), ("stripe", "2026-11-27")]
    lines = lines_by_pk(aws_world)
    assert set(lines) == {old, old_stripe}
    line = lines[old]
    assert (line["body"], line["body_encoding"], line["event_id"], line["status"]) == (
        '{"id": "evt_old"}',
        "utf-8",
        "evt_old",
        "pending",
    )
    assert line["headers"] == {}
    assert line["stream_sequence_number"].isdigit()
    assert line["ttl_removed_at"].endswith("Z")


def test_redaction_applies_to_the_archive_only(aws_world, monkeypatch):
    # Given redaction of personal data is configured, and an Asaas event carrying a customer's data
    monkeypatch.setenv("INBOX_REDACT_FIELDS", "email,cpfCnpj,name")
    body = json.dumps(
        {"id": "evt_1", "payment": {"id": "pay_1", "customer": {"name": "Ana", "email": "a@b.c", "cpfCnpj": "1"}}}
    ).encode()
    pk = keep(aws_world, "asaas", "evt_1", body, days_old=1)
    # When it expires and is archived
    expire(aws_world)
    mapping(aws_world).poll_once()
    # Then the archived body has those values replaced, and says how many
    line = lines_by_pk(aws_world)[pk]
    assert json.loads(line["body"]) == {
        "id": "evt_1",
        "payment": {"id": "pay_1", "customer": {"name": "[redacted]", "email": "[redacted]", "cpfCnpj": "[redacted]"}},
    }
    assert line["redacted_values"] == 3
    assert line["body_sha256"] == hashlib.sha256(body).hexdigest()  # the original's, for the record


def test_bodies_from_the_body_bucket_and_binary_bodies_are_archived_inline(aws_world):
    large = json.dumps({"id": "evt_big", "padding": "x" * 300_000}).encode()
    big = keep(aws_world, "stripe", "evt_big", large, days_old=1, in_s3=True)
    binary = keep(aws_world, "stripe", "evt_bin", b"\x00\xff\xfe", days_old=1)
    expire(aws_world)
    mapping(aws_world).poll_once()
    lines = lines_by_pk(aws_world)
    assert lines[big]["body"].encode() == large
    assert lines[big]["body_s3_key"].startswith("bodies/stripe/")
    assert (lines[binary]["body_encoding"], base64.b64decode(lines[binary]["body"])) == ("base64", b"\x00\xff\xfe")


def test_a_retried_batch_overwrites_the_same_objects(aws_world):
    keep(aws_world, "asaas", "evt_1", b"{}", days_old=1)
    keep(aws_world, "stripe", "evt_2", b"{}", days_old=1)
    expire(aws_world)
    delivered: list[dict[str, Any]] = []
    mapping(aws_world).reader.poll(delivered.extend)
    batch = {"Records": [ArchiveMapping.stamp_ttl_identity(record) for record in delivered]}
    first = archiver_handler(batch, cast(Any, LocalLambdaContext("archiver")))
    before = archive(aws_world)
    # When the same batch is delivered again (the mapping retries it)
    second = archiver_handler(batch, cast(Any, LocalLambdaContext("archiver")))
    # Then the same objects are rewritten with the same content: no duplicates
    assert first["objects"] == second["objects"]
    assert archive(aws_world) == before
    assert len(before) == 2


def test_a_failing_archive_write_is_retried_with_the_same_records(aws_world, monkeypatch):
    pk = keep(aws_world, "asaas", "evt_1", b"{}", days_old=1)
    expire(aws_world)
    calls = []

    def flaky(event, context):
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("S3 unavailable")
        return archiver_handler(event, context)

    archive_mapping = ArchiveMapping(aws_world.session, aws_world.resources["stream_arn"], flaky)
    with pytest.raises(RuntimeError):
        archive_mapping.poll_once()
    assert archive(aws_world) == {}
    assert archive_mapping.poll_once() == 1
    assert list(lines_by_pk(aws_world)) == [pk]
    assert calls[0] == calls[1]


def test_the_archive_filter_lets_through_removals_only(aws_world):
    # Given events that were inserted and modified but never expired
    pk = keep(aws_world, "asaas", "evt_1", b"{}")
    aws_world.session.client("dynamodb").update_item(
        TableName=aws_world.names.inbox_table,
        Key={"pk": {"S": pk}},
        UpdateExpression="SET attempts = :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    # Then nothing reaches the archiver
    assert mapping(aws_world).poll_once() == 0
    assert archive(aws_world) == {}


def test_compressed_bodies_and_bodies_written_before_compression_are_both_archived_as_received(aws_world):
    # Given an event stored as the ingest stores it now (body zlib-compressed) and one stored before compression
    body = json.dumps({"id": "evt_new", "object": "event", "data": {"object": {"status": "succeeded"}}}).encode()
    new = keep(aws_world, "stripe", "evt_new", body, days_old=1, compressed=True)
    old = keep(aws_world, "stripe", "evt_old", b'{"id": "evt_old"}', days_old=1)
    stored = InboxStore(aws_world.names.inbox_table).get(new)
    assert stored is not None and BODY_ZLIB_ATTRIBUTE in stored and "body" not in stored
    # When both expire and the archiver takes the TTL deletions
    expire(aws_world)
    assert mapping(aws_world).poll_once() == 2
    # Then each line carries the raw body as received, and never the compressed attribute
    lines = lines_by_pk(aws_world)
    assert (lines[new]["body"].encode(), lines[new]["body_encoding"]) == (body, "utf-8")
    assert lines[old]["body"] == '{"id": "evt_old"}'
    assert all(BODY_ZLIB_ATTRIBUTE not in line for line in lines.values())
