"""A body already gone from the body bucket: S3's answer by the function's grants, and the archive going on.

The local S3 answers a function's calls from its declared grants (shared/definitions/s3_grants.py,
inbox_local/s3_access.py): without s3:ListBucket a missing key is AccessDenied, as S3 answers it; the archiver is
granted ListBucket, so a body its lifecycle rule expired is NoSuchKey, archived as missing, counted, and the shard
goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from inbox_local import invocation, s3_access
from inbox_local.invocation import invoke
from shared import definitions, retention
from shared.definitions import s3_grants
from shared.definitions.s3_grants import LIST_BUCKET, Bucket
from shared.inbox.model import body_object_key
from tests.integration.processing_support import BASE_TIME
from tests.integration.test_retention import archive, expire, keep, lines_by_pk, mapping


@pytest.fixture
def world(aws_world: Any) -> Iterator[Any]:
    """The integration world with the local S3 answering the functions from their grants, as the local stack's."""
    invocation.install()
    s3_access.install({aws_world.names.body_bucket: Bucket.BODIES, aws_world.names.archive_bucket: Bucket.ARCHIVE})
    retention.default_archiver.reset()
    yield aws_world
    retention.default_archiver.reset()
    s3_access.uninstall_buckets(aws_world.names.body_bucket, aws_world.names.archive_bucket)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The archiver's metric counts, by name."""
    names: list[str] = []
    monkeypatch.setattr(retention, "count_for_provider", lambda name, provider, value=1: names.append(name))
    return names


def without_list_bucket(function: str) -> tuple[s3_grants.S3Grant, ...]:
    """The function's declared grants, ListBucket taken out (what the archiver had before)."""
    return tuple(
        replace(grant, actions=tuple(action for action in grant.actions if action != LIST_BUCKET))
        for grant in s3_grants.s3_grants(function)
    )


def get_body(world: Any, key: str) -> Any:
    return world.session.client("s3").get_object(Bucket=world.names.body_bucket, Key=key)


def error_of(call: Any) -> tuple[str, int]:
    with pytest.raises(ClientError) as raised:
        call()
    response = raised.value.response
    return response["Error"]["Code"], response["ResponseMetadata"]["HTTPStatusCode"]


def test_a_missing_key_is_access_denied_without_list_bucket_and_no_such_key_with_it(world, monkeypatch):
    # Given a key the body bucket does not hold
    key = body_object_key("stripe", "stripe#evt_gone", b"{}", BASE_TIME)

    def read(event: Any, context: Any) -> Any:
        return get_body(world, key)

    # When the archiver, with its declared grants (GetObject and ListBucket), reads it: S3's 404 NoSuchKey
    assert error_of(lambda: invoke("archiver", read, {})) == ("NoSuchKey", 404)
    # When the archiver's grants lack ListBucket (nothing else changed): 403 AccessDenied, as S3 answers
    monkeypatch.setitem(s3_grants.FUNCTION_S3_GRANTS, "archiver", without_list_bucket("archiver"))
    assert error_of(lambda: invoke("archiver", read, {})) == ("AccessDenied", 403)
    # And HeadObject the same way: a bare 403 (a HEAD has no body)
    head = world.session.client("s3").head_object
    assert error_of(lambda: invoke("archiver", lambda e, c: head(Bucket=world.names.body_bucket, Key=key), {})) == (
        "403",
        403,
    )
    # And a call outside any function (the CLI, this test) is not a role's: moto's own answer
    assert error_of(lambda: get_body(world, key)) == ("NoSuchKey", 404)


def test_an_action_outside_a_functions_grants_is_refused(world):
    # Given a body the ingest stored
    s3 = world.session.client("s3")
    key = body_object_key("stripe", "stripe#evt_1", b"{}", BASE_TIME)
    put = invoke(
        "ingest", lambda e, c: s3.put_object(Bucket=world.names.body_bucket, Key=key, Body=b"{}"), {}
    )  # granted: PutObject on the body bucket
    assert put["ResponseMetadata"]["HTTPStatusCode"] == 200
    # When the ingest reads it back, or the archiver writes outside the archive prefix: refused, nothing written
    assert error_of(lambda: invoke("ingest", lambda e, c: get_body(world, key), {})) == ("AccessDenied", 403)
    outside = {"Bucket": world.names.archive_bucket, "Key": "elsewhere/x", "Body": b"x"}
    assert error_of(lambda: invoke("archiver", lambda e, c: s3.put_object(**outside), {})) == ("AccessDenied", 403)
    assert "Contents" not in s3.list_objects_v2(Bucket=world.names.archive_bucket)
    # And what the grants allow is answered as S3 would: the archiver reads the body
    assert invoke("archiver", lambda e, c: get_body(world, key), {})["Body"].read() == b"{}"


def test_a_body_already_gone_is_archived_as_missing_and_the_shard_goes_on(world, counted):
    # Given a large event whose body lives in the body bucket, and a small one, both expired
    gone = keep(world, "stripe", "evt_big", b'{"id": "evt_big", "padding": "' + b"x" * 300_000 + b'"}', in_s3=True)
    small = keep(world, "asaas", "evt_small", b'{"id": "evt_small"}', days_old=1)
    line_key = None
    # And the body bucket's lifecycle already expired the large body (retention lowered, or TTL deleting late)
    s3 = world.session.client("s3")
    for entry in s3.list_objects_v2(Bucket=world.names.body_bucket).get("Contents", []):
        line_key = entry["Key"]
        s3.delete_object(Bucket=world.names.body_bucket, Key=entry["Key"])
    assert line_key is not None
    expire(world)
    # When the archiver's mapping delivers the batch (through the local runtime's invocation, held to its grants)
    archive_mapping = mapping(world)
    assert archive_mapping.poll_once() == 2
    # Then the batch succeeded: both items are archived, the large one's line saying what is missing
    lines = lines_by_pk(world)
    assert set(lines) == {gone, small}
    missing = lines[gone]
    assert missing["body"] is None
    assert missing["body_error"] == "NoSuchKey"
    assert "no longer holds" in missing["body_missing"]
    assert missing["body_s3_key"] == line_key
    assert missing["body_sha256"] == line_key.rsplit("/", 1)[-1]  # the digest of what was received, from its key
    assert lines[small]["body"] == '{"id": "evt_small"}'
    # And it was counted once, on the metric the archive-incomplete alarm watches
    assert counted == [definitions.METRIC_ARCHIVED_INCOMPLETE]
    # And the shard goes on: a later TTL removal is archived by the next poll
    later = keep(world, "asaas", "evt_later", b'{"id": "evt_later"}', days_old=1)
    expire(world)
    assert archive_mapping.poll_once() == 1
    assert later in lines_by_pk(world)
    assert archive_mapping.failures == 0


def test_without_list_bucket_the_missing_body_is_still_archived_and_says_access_denied(world, counted, monkeypatch):
    # Given the archiver's grants without ListBucket, and an expired item whose body is gone
    monkeypatch.setitem(s3_grants.FUNCTION_S3_GRANTS, "archiver", without_list_bucket("archiver"))
    gone = keep(world, "stripe", "evt_big", b'{"padding": "' + b"y" * 300_000 + b'"}', days_old=1, in_s3=True)
    s3 = world.session.client("s3")
    for entry in s3.list_objects_v2(Bucket=world.names.body_bucket).get("Contents", []):
        s3.delete_object(Bucket=world.names.body_bucket, Key=entry["Key"])
    expire(world)
    # When it is archived
    assert mapping(world).poll_once() == 1
    # Then S3's answer is on the line (AccessDenied: the two cannot be told apart without ListBucket), and the
    # batch did not fail: one record never holds up its shard
    line = lines_by_pk(world)[gone]
    assert (line["body"], line["body_error"]) == (None, "AccessDenied")
    assert counted == [definitions.METRIC_ARCHIVED_INCOMPLETE]


def test_a_record_whose_image_cannot_be_decoded_is_archived_as_what_can_be_said(world, counted):
    # Given a TTL removal whose image holds an undecodable binary attribute, beside a sound one
    sound = keep(world, "asaas", "evt_ok", b"{}", days_old=1)
    expire(world)
    records: list[dict[str, Any]] = []
    mapping(world).reader.poll(records.extend)
    removal = next(mapping(world).stamp_ttl_identity(r) for r in records if r["eventName"] == "REMOVE")
    broken = {
        **removal,
        "dynamodb": {
            **removal["dynamodb"],
            "Keys": {"pk": {"S": "asaas#evt_broken"}},
            "OldImage": {"pk": {"S": "asaas#evt_broken"}, "body_zlib": {"B": "not base64!"}},
            "SequenceNumber": str(int(removal["dynamodb"]["SequenceNumber"]) + 1),
        },
    }
    # When the archiver gets both in one batch
    from functions.archiver.handler import lambda_handler

    result = invoke("archiver", lambda_handler, {"Records": [removal, broken]})
    # Then both are archived: the broken one as its key and why
    assert result["archived"] == 2
    lines = lines_by_pk(world)
    assert "undecodable" in lines["asaas#evt_broken"]["archive_error"]
    assert lines[sound]["status"] == "pending"
    assert counted == [definitions.METRIC_ARCHIVED_INCOMPLETE]
    assert sorted(key.split("/")[1] for key in archive(world)) == ["provider=asaas", "provider=unknown"]
