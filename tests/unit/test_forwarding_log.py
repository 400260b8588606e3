"""The forwarding log's rules, without AWS: what an attempt's item holds and how big it can get, which endpoint
it names, which answers count as "reached the endpoint", that a failing log never touches the delivery, and the
resend's period bounds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from inbox_cli.outbox import in_period, period_bound
from shared import definitions
from shared.forwarding import Forwarder, forward_in_order, worst_delivery_seconds
from shared.forwarding_log import (
    REDACTED,
    Answer,
    ForwardLog,
    attempt_item,
    bounded_headers,
    endpoint_label,
    payment_of,
    reached_endpoint,
)
from shared.inbox.store import to_attributes
from tests.outage_endpoint import OUTAGE_BODY, OUTAGE_HEADER, OutageEndpoint

SECRET = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
EVENT = {
    "id": "tr_0123",
    "type": "payment.status_changed",
    "sequence": 3,
    "provider": "stripe",
    "resource_id": "pi_1",
    "new_status": "paid",
}
WHEN = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _dynamodb_item_bytes(item: dict[str, Any]) -> int:
    """DynamoDB's item size, upper bound: names plus UTF-8 values (numbers at most 21 bytes), nested maps too
    (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)."""

    def size(value: Any) -> int:
        if isinstance(value, dict):
            return 3 + sum(len(k.encode()) + 1 + size(v) for k, v in value.items())
        if isinstance(value, bool):
            return 1
        if isinstance(value, int | float):
            return 21
        return len(str(value).encode())

    return sum(len(name.encode()) + size(value) for name, value in item.items())


# ---------------------------------------------------------------------------------------------------- the item
def test_an_item_holds_the_attempt_and_the_answer_keyed_by_webhook_id_and_time() -> None:
    # Given a 500 with a header and a body
    answer = Answer(status=500, latency_ms=12.6, headers=(("X-Outage", "maintenance"),), body_head=b'{"error":"x"}')
    # When its item is built
    item = attempt_item(EVENT, url="https://hooks.example.com/in", answer=answer, attempted_at=WHEN, sender="forwarder")
    # Then everything an operator asks about is there, keyed for one Query per event, oldest first
    assert item[definitions.FORWARD_LOG_PARTITION_KEY] == "tr_0123"
    assert item[definitions.FORWARD_LOG_SORT_KEY] == "2026-12-01T12:00:00.123456Z"
    assert item["payment"] == "stripe#pi_1" and item["sequence"] == 3 and item["event_type"] == EVENT["type"]
    assert item["status"] == 500 and item["latency_ms"] == 13
    assert item["response_headers"] == {"x-outage": "maintenance"}
    assert item["response_body"] == '{"error":"x"}' and item["response_body_truncated"] is False
    assert "error" not in item
    # And it expires after the default retention
    assert item[definitions.FORWARD_LOG_TTL_ATTRIBUTE] == int(WHEN.timestamp()) + 30 * 86_400
    assert to_attributes(item)  # serializable as it is (no floats, no nulls)


def test_a_connection_error_is_status_zero_with_its_error() -> None:
    answer = Answer(status=0, latency_ms=3, error="ConnectionRefusedError: " + "x" * 1000)
    item = attempt_item(EVENT, url="http://h/", answer=answer, attempted_at=WHEN, sender="resend", retention_days=2)
    assert item["status"] == 0 and item["sender"] == "resend"
    assert (
        item["error"].startswith("ConnectionRefusedError") and len(item["error"]) == definitions.FORWARD_LOG_ERROR_CHARS
    )
    assert item[definitions.FORWARD_LOG_TTL_ATTRIBUTE] == int(WHEN.timestamp()) + 2 * 86_400


def test_the_body_is_cut_at_4_kb_and_binary_or_cut_characters_never_fail() -> None:
    # Given a body of 5,000 two-byte characters and one of raw bytes
    long_text = ("é" * 5000).encode()
    binary = bytes(range(256)) * 20
    for body in (long_text, binary):
        answer = Answer(status=502, latency_ms=1, body_head=body, body_truncated=True)
        item = attempt_item(EVENT, url="http://h/", answer=answer, attempted_at=WHEN, sender="forwarder")
        # Then at most the first 4 KB's characters are kept, flagged as cut
        assert len(item["response_body"]) <= definitions.FORWARD_LOG_BODY_BYTES
        assert item["response_body_truncated"] is True
    assert item["response_body"].startswith("\x00\x01\x02")


def test_the_worst_answer_still_makes_a_small_item() -> None:
    # Given an endpoint answering 1,000 long headers with multibyte values and a binary body
    headers = tuple((f"x-header-{n}-" + "n" * 200, "€" * 5000) for n in range(1000))
    answer = Answer(
        status=500,
        latency_ms=9_999_999,
        headers=headers,
        body_head=b"\xff" * 5000,
        body_truncated=True,
        error="e" * 9999,
    )
    item = attempt_item(
        {**EVENT, "id": "tr_" + "0" * 32}, url="https://h/p", answer=answer, attempted_at=WHEN, sender="forwarder"
    )
    # Then the item is bounded far below DynamoDB's 400 KB (and below 64 KB, a few write units)
    assert len(item["response_headers"]) == definitions.FORWARD_LOG_MAX_HEADERS
    assert _dynamodb_item_bytes(item) < 64 * 1024


def test_headers_are_bounded_lower_cased_joined_and_secret_bearing_ones_redacted() -> None:
    kept = bounded_headers(
        [
            ("Content-Type", "text/plain"),
            ("Set-Cookie", "session=abc"),
            ("Set-Cookie", "other=def"),
            ("X-Api-Token", "tok_live_123"),
            ("Via", "a"),
            ("Via", "b"),
            ("", "nameless"),
            ("X-Long", "v" * 1000),
        ]
    )
    assert kept["content-type"] == "text/plain"
    assert kept["set-cookie"] == REDACTED and kept["x-api-token"] == REDACTED
    assert "abc" not in json.dumps(kept) and "tok_live" not in json.dumps(kept)
    assert kept["via"] == "a, b"
    assert "" not in kept
    assert len(kept["x-long"]) == definitions.FORWARD_LOG_HEADER_VALUE_CHARS


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("https://user:pass@hooks.example.com:8443/in/x?token=s3cret#frag", "https://hooks.example.com:8443/in/x"),
        ("https://hooks.example.com/in?sig=abc", "https://hooks.example.com/in"),
        ("http://[::1]:9000/hook", "http://[::1]:9000/hook"),
        ("http://127.0.0.1/", "http://127.0.0.1/"),
    ],
)
def test_the_endpoint_is_logged_without_credentials_or_query(url: str, logged: str) -> None:
    assert endpoint_label(url) == logged


def test_the_payment_is_the_source_and_the_resource() -> None:
    assert payment_of(EVENT) == "stripe#pi_1"
    assert payment_of({**EVENT, "source": "stripe-br"}) == "stripe-br#pi_1"
    assert payment_of({"type": "webhook.failed", "provider": "stripe", "resource_id": None}) is None


# ------------------------------------------------------------------------------------------- reached or not
@pytest.mark.parametrize(
    ("sequence", "checkpoint", "statuses", "reached"),
    [
        (3, 2, [], False),  # not attempted yet
        (3, 2, [500, 500], False),  # refused so far
        (3, 2, [500, 204], True),  # a 2xx whose checkpoint was not written (a crash between the two)
        (3, 3, [], True),  # checkpointed, forwarded before the log existed
        (3, 5, [500, 500, 500], False),  # refused, and the checkpoint moved past it: a batch given up
        (3, 5, [503, 200], True),
        (1, 0, [302], False),  # a redirect is not an acknowledgement
    ],
)
def test_reached_endpoint(sequence: int, checkpoint: int, statuses: list[int], reached: bool) -> None:
    assert reached_endpoint(sequence, checkpoint, statuses) is reached


# ------------------------------------------------------------------------------------- a log that fails
class _BrokenDynamoDB:
    def __init__(self) -> None:
        self.puts = 0

    def put_item(self, **_kwargs: Any) -> None:
        self.puts += 1
        raise RuntimeError("ProvisionedThroughputExceeded: the item was {'response_body': 'secret answer'}")


@pytest.fixture
def endpoint() -> Iterator[OutageEndpoint]:
    server = OutageEndpoint(fail_first=2).start()
    yield server
    server.stop()


def test_a_failing_log_changes_nothing_in_the_delivery(endpoint: OutageEndpoint) -> None:
    # Given a forwarder whose log cannot be written
    broken = _BrokenDynamoDB()
    warnings: list[str] = []
    log = ForwardLog(broken, "log", warn=warnings.append)  # type: ignore[arg-type]
    forwarder = Forwarder(url=endpoint.url, secrets=(SECRET,), max_attempts=3, sleep=lambda _: None, record=log.record)
    saved: list[tuple[str, int]] = []
    # When it forwards an event the endpoint refuses twice, then accepts
    sent = forward_in_order(
        [{"pk": "stripe#pi_1", **EVENT}],
        deliver=forwarder.deliver,
        delivered=lambda _pk: 0,
        save=lambda pk, sequence: saved.append((pk, sequence)),
    )
    # Then the delivery and its checkpoint happened as without a log; each attempt's record was dropped, warned
    assert [event["id"] for event in sent] == ["tr_0123"] and saved == [("stripe#pi_1", 3)]
    assert endpoint.requests == 3 and broken.puts == 3 and log.write_failures == 3 and log.written == 0
    # And the warning names the event and the error's type, never the error's text (it may quote the answer)
    assert warnings == ["forwarding log: attempt of tr_0123 not recorded (RuntimeError)"] * 3


def test_each_attempt_reaches_the_recorder_with_its_answer(endpoint: OutageEndpoint) -> None:
    recorded: list[tuple[str, Answer]] = []
    forwarder = Forwarder(
        url=endpoint.url,
        secrets=(SECRET,),
        max_attempts=3,
        sleep=lambda _: None,
        record=lambda event, url, answer, _started: recorded.append((url, answer)),
    )
    forwarder.deliver(EVENT)
    assert [answer.status for _url, answer in recorded] == [500, 500, 204]
    first = recorded[0][1]
    assert OUTAGE_HEADER in first.headers and first.body_head == OUTAGE_BODY
    assert first.latency_ms >= 0 and first.error is None


def test_a_refused_connection_is_recorded_as_status_zero() -> None:
    recorded: list[Answer] = []
    forwarder = Forwarder(
        url="http://127.0.0.1:9/unreachable",
        secrets=(SECRET,),
        max_attempts=1,
        timeout_seconds=2,
        record=lambda _event, _url, answer, _started: recorded.append(answer),
    )
    assert forwarder.post_once(EVENT) == 0
    assert recorded[0].status == 0 and recorded[0].error


def test_the_log_write_counts_in_the_worst_delivery_time() -> None:
    plain = Forwarder(url="http://h/", secrets=(SECRET,), max_attempts=3, timeout_seconds=5)
    logged = Forwarder(url="http://h/", secrets=(SECRET,), max_attempts=3, timeout_seconds=5, record=lambda *_: None)
    assert worst_delivery_seconds(logged) > worst_delivery_seconds(plain)


# ------------------------------------------------------------------------------------------ resend periods
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("90s", NOW - timedelta(seconds=90)),
        ("15m", NOW - timedelta(minutes=15)),
        (" 1h ", NOW - timedelta(hours=1)),
        ("2d", NOW - timedelta(days=2)),
        ("2026-11-30T10:00:00Z", datetime(2026, 11, 30, 10, tzinfo=UTC)),
        ("2026-11-30T10:00:00", datetime(2026, 11, 30, 10, tzinfo=UTC)),  # naive: UTC
        ("2026-11-30T10:00:00-03:00", datetime(2026, 11, 30, 13, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
    ],
)
def test_a_period_bound_is_iso_8601_or_a_time_ago(text: str, moment: datetime) -> None:
    assert period_bound(text, now=NOW) == moment


@pytest.mark.parametrize("text", ["yesterday", "1w", "-1h", "h", "2026-13-01"])
def test_a_period_bound_that_is_neither_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="ISO-8601"):
        period_bound(text, now=NOW)


def test_the_period_is_the_publication_time_since_inclusive_until_exclusive() -> None:
    record = {"created_at": "2026-12-01T11:00:00.000000Z"}
    at = datetime(2026, 12, 1, 11, tzinfo=UTC)
    assert in_period(record, None, None)
    assert in_period(record, at, None) and not in_period(record, at + timedelta(microseconds=1), None)
    assert not in_period(record, None, at) and in_period(record, None, at + timedelta(seconds=1))
