"""The local stack's emulations of the schedule and of the archiver's TTL-deletion stream records."""

from __future__ import annotations

import pytest

from inbox_local.archive_mapping import TTL_USER_IDENTITY, ArchiveMapping
from inbox_local.schedule import Schedule
from inbox_local.stream_reader import as_delivered


def test_a_schedule_calls_its_function_with_a_scheduled_event():
    calls = []

    def handler(event, context):
        calls.append((event, context))
        return {"ok": True}

    schedule = Schedule("sweeper", handler, 10)
    assert schedule.fire() == {"ok": True}
    [(event, context)] = calls
    assert (event["source"], event["detail-type"]) == ("aws.events", "Scheduled Event")
    assert context.function_name == "sweeper"
    with pytest.raises(ValueError):
        Schedule("sweeper", lambda event, context: None, 0)


def test_local_removals_carry_the_identity_ttl_deletions_have_in_aws():
    removal = {"eventName": "REMOVE", "dynamodb": {}}
    assert ArchiveMapping.stamp_ttl_identity(removal)["userIdentity"] == TTL_USER_IDENTITY
    assert "userIdentity" not in removal  # the record read from the stream is not changed
    other = {"eventName": "REMOVE", "userIdentity": {"type": "IAMUser"}}
    assert ArchiveMapping.stamp_ttl_identity(other) is other
    insert = {"eventName": "INSERT"}
    assert "userIdentity" not in ArchiveMapping.stamp_ttl_identity(insert)


def test_stream_records_are_delivered_as_lambda_delivers_them():
    from datetime import UTC, datetime

    raw = {
        "eventName": "REMOVE",
        "dynamodb": {
            "ApproximateCreationDateTime": datetime(2026, 1, 1, tzinfo=UTC),
            "OldImage": {"body": {"B": b"\x00\xff"}},
        },
    }
    record = as_delivered(raw, "arn:stream")
    assert record["dynamodb"]["OldImage"]["body"] == {"B": "AP8="}  # base64 text, as in a Lambda event
    assert record["dynamodb"]["ApproximateCreationDateTime"] == 1767225600.0
    assert record["eventSourceARN"] == "arn:stream"
