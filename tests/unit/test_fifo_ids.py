"""FIFO group ids: one derivation (shared/inbox/model.py `fifo_group_id`) that SQS always accepts."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.inbox.model import (
    FIFO_ID_MAX_LENGTH,
    fifo_group_id,
    is_valid_fifo_id,
)
from shared.process.app import SqsRetryQueue
from shared.process.messages import Delivery, ReconcileMessage
from shared.sweeper import Sweeper, SweeperSettings, SweepStore, SweepSummary, dispatch_group, stale_events

ODD_KEYS = [
    "standard#pay with space",
    "generic#pagamento-ção",
    "generic#" + "x" * 200,
    "",
    "stripe#tab\tand\nnewline",
    "stripe#emoji-\U0001f4b3",
]


def test_valid_keys_are_kept_as_they_are() -> None:
    # Given keys made only of SQS's characters, up to 128 of them
    keys = ["stripe#pi_3Nx", "asaas#pay_123", string.punctuation + string.ascii_letters, "k" * FIFO_ID_MAX_LENGTH]
    # When their group ids are derived, Then they are the keys themselves (items stored earlier keep their group)
    assert [fifo_group_id(key) for key in keys] == keys


@pytest.mark.parametrize("key", ODD_KEYS)
def test_an_odd_key_becomes_a_valid_readable_hashed_id(key: str) -> None:
    # Given a key SQS would refuse as a group id (a space, non-ASCII, 200 characters, empty)
    assert not is_valid_fifo_id(key)
    # When its group id is derived
    group = fifo_group_id(key)
    # Then it is valid, within 128 characters, starts with the readable part and ends with the key's digest
    assert is_valid_fifo_id(group)
    assert len(group) <= FIFO_ID_MAX_LENGTH
    readable, _, digest = group.rpartition("~")
    assert len(digest) == 64 and set(digest) <= set(string.hexdigits)
    assert readable == "".join(c if c.isascii() and c.isprintable() and c != " " else "_" for c in key)[:63]


def test_the_length_limit_is_sqs_s_128() -> None:
    # Given a key of 128 valid characters and one of 129
    # When derived, Then the first is kept and the second is hashed into 128 characters
    assert fifo_group_id("a" * 128) == "a" * 128
    assert fifo_group_id("a" * 129) != "a" * 129
    assert len(fifo_group_id("a" * 129)) == FIFO_ID_MAX_LENGTH


@given(st.text(max_size=300))
def test_every_key_gets_a_valid_id_and_deriving_again_keeps_it(key: str) -> None:
    # Given any text at all, When its group id is derived, Then SQS accepts it, and deriving it again is a no-op
    group = fifo_group_id(key)
    assert is_valid_fifo_id(group)
    assert fifo_group_id(group) == group


@given(st.text(max_size=80), st.text(max_size=80))
def test_different_keys_get_different_groups(first: str, second: str) -> None:
    # Given two different keys, When their group ids are derived, Then they differ (no accidental shared group)
    if first != second:
        assert fifo_group_id(first) != fifo_group_id(second)


def test_keys_that_differ_only_where_characters_are_replaced_still_differ() -> None:
    # Given keys whose readable prefixes are the same ("_" replaces both the space and the accent)
    # When derived, Then the digest keeps them apart, and a key already spelled with "_" is kept as it is
    assert len({fifo_group_id("p#a b"), fifo_group_id("p#a\u00e7b"), fifo_group_id("p#a_b")}) == 3
    assert fifo_group_id("p#a_b") == "p#a_b"


def test_the_sweeper_groups_and_redispatches_with_the_same_derivation() -> None:
    # Given an item stored before ids were derived (its group id is a raw key SQS refuses), a new one of the same
    # payment, and one with no group id at all
    old = {"pk": "generic#e1", "group_id": "generic#pay with space", "received_at": "2026-01-01T00:00:00Z"}
    new = {
        "pk": "generic#e2",
        "group_id": fifo_group_id("generic#pay with space"),
        "received_at": "2026-01-01T00:00:01Z",
    }
    bare = {"pk": "generic#evt é", "received_at": "2026-01-01T00:00:00Z"}
    # When the sweeper decides where they go
    # Then the old and the new item are in one valid group, and the bare item's group is its key, derived
    assert dispatch_group(old) == dispatch_group(new) == fifo_group_id("generic#pay with space")
    assert dispatch_group(bare) == fifo_group_id("generic#evt é")
    # ... and a recent activity of the new item holds the old one back as waiting in the same group
    new["last_attempt_at"] = "2026-01-01T01:00:00Z"
    result = stale_events([old, new], cutoff="2026-01-01T00:30:00Z")
    assert (result.chosen, result.waiting) == ([], 1)


class _RecordingSqs:
    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []

    def send_message(self, **request: object) -> dict[str, object]:
        self.sent.append(request)
        return {"MessageId": "m"}

    def send_message_batch(self, **request: object) -> dict[str, object]:
        entries = list(request["Entries"])  # type: ignore[call-overload]
        self.sent.extend(entries)
        return {"Successful": [{"Id": entry["Id"]} for entry in entries], "Failed": []}


def test_reconcile_requests_go_to_the_payment_s_derived_group() -> None:
    # Given payments whose resource ids SQS would refuse as group ids
    sqs = _RecordingSqs()
    sweeper = Sweeper(SweeperSettings("inbox", "payments", "queue"), SweepStore("inbox", "payments"), sqs=sqs)  # type: ignore[arg-type]
    messages = [ReconcileMessage("standard", "pay with space"), ReconcileMessage("standard", "p" * 200)]
    # When the sweeper sends their reconciliation requests
    sweeper._send(messages, SweepSummary())
    # Then each goes to its payment's derived group: the one its webhooks' inbox items carry
    assert [entry["MessageGroupId"] for entry in sqs.sent] == [fifo_group_id(message.key) for message in messages]
    assert all(is_valid_fifo_id(str(entry["MessageDeduplicationId"])) for entry in sqs.sent)


@pytest.mark.parametrize("group", ["", "standard#pay with space", "standard#ok"])
def test_the_processor_dead_letters_into_a_valid_group(group: str) -> None:
    # Given a delivery with no group, an odd one or a valid one
    sqs = _RecordingSqs()
    queue = SqsRetryQueue("queue", "dlq", sqs=sqs)  # type: ignore[arg-type]
    # When it is dead-lettered
    queue.dead_letter(Delivery(receipt_handle="r", message_group_id=group, receive_count=9, body="{}"))
    # Then its group is the derived one (a valid group unchanged) and its dedup id is valid
    (sent,) = sqs.sent
    assert sent["MessageGroupId"] == fifo_group_id(group)
    assert is_valid_fifo_id(str(sent["MessageGroupId"])) and is_valid_fifo_id(str(sent["MessageDeduplicationId"]))
