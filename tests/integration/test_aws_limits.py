"""The emulation refuses what AWS refuses (inbox_local/aws_limits.py, installed for every in-process moto by
tests/conftest.py and in the local stack's embedded AWS), and our requests stay within those limits."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from inbox_local import aws_limits
from inbox_local.queue_mapping import QueueMapping
from shared import definitions
from shared.inbox.model import StoredBody, build_item
from shared.inbox.store import InboxStore, to_attributes
from shared.providers.base import NormalizedEvent, WebhookRequest

MIB = 1_048_576


def _error(raised: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]


@pytest.fixture
def sqs(aws_world: Any) -> Any:
    return aws_world.session.client("sqs")


@pytest.fixture
def queue(aws_world: Any) -> str:
    return str(aws_world.resources["queue_url"])


def _send(sqs: Any, queue: str, *, group: str = "g", dedup: str = "d", body: str = "{}") -> Any:
    return sqs.send_message(QueueUrl=queue, MessageBody=body, MessageGroupId=group, MessageDeduplicationId=dedup)


# SQS ids -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", ["has space", "pagamento-ção", "x" * 129, "tab\t"])
def test_a_group_id_sqs_refuses_is_refused(sqs: Any, queue: str, group: str) -> None:
    # Given a group id with a space, non-ASCII, 129 characters or a control character
    # When it is sent, Then the queue refuses it as SQS does
    with pytest.raises(ClientError) as raised:
        _send(sqs, queue, group=group)
    code, message = _error(raised)
    assert code == "InvalidParameterValue"
    assert "MessageGroupId" in message


def test_a_deduplication_id_sqs_refuses_is_refused(sqs: Any, queue: str) -> None:
    # Given a deduplication id with a space, When sent, Then refused
    with pytest.raises(ClientError) as raised:
        _send(sqs, queue, dedup="a b")
    assert _error(raised)[0] == "InvalidParameterValue"
    assert "MessageDeduplicationId" in _error(raised)[1]


def test_ids_of_128_documented_characters_are_accepted(sqs: Any, queue: str) -> None:
    # Given ids of exactly 128 characters drawn from the documented punctuation, When sent, Then accepted
    punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    group = punctuation * 3 + "AZaz09" + "x" * 26
    assert len(group) == 128
    assert _send(sqs, queue, group=group, dedup=group[::-1])["MessageId"]


def test_a_batch_entry_with_a_bad_group_id_is_refused(sqs: Any, queue: str) -> None:
    # Given a SendMessageBatch whose second entry has a group id with a space
    entries = [
        {"Id": str(index), "MessageBody": "{}", "MessageGroupId": group, "MessageDeduplicationId": f"d{index}"}
        for index, group in enumerate(["ok", "not ok"])
    ]
    # When sent, Then the queue refuses it
    with pytest.raises(ClientError) as raised:
        sqs.send_message_batch(QueueUrl=queue, Entries=entries)
    assert _error(raised)[0] == "InvalidParameterValue"


# SQS sizes and batch lengths ---------------------------------------------------------------------------------


def test_a_message_over_1_mib_in_utf8_is_refused_though_its_characters_are_fewer(sqs: Any, queue: str) -> None:
    # Given a body of 600,000 characters that are 1,200,000 bytes in UTF-8 (moto alone counts characters)
    body = "é" * 600_000
    # When sent, Then refused: SQS's limit is bytes
    with pytest.raises(ClientError) as raised:
        _send(sqs, queue, body=body)
    assert _error(raised) == (
        "InvalidParameterValue",
        f"One or more parameters are invalid. Reason: Message must be shorter than {MIB} bytes.",
    )


def test_a_message_of_exactly_1_mib_is_accepted(sqs: Any, queue: str) -> None:
    # Given a body of exactly 1 MiB, When sent, Then accepted
    assert _send(sqs, queue, body="a" * MIB)["MessageId"]


def _entries(count: int, body: str = "{}") -> list[dict[str, str]]:
    return [
        {"Id": str(index), "MessageBody": body, "MessageGroupId": "g", "MessageDeduplicationId": f"d{index}"}
        for index in range(count)
    ]


def test_a_send_batch_of_eleven_entries_is_refused(sqs: Any, queue: str) -> None:
    # Given eleven entries, When sent as one batch, Then refused
    with pytest.raises(ClientError) as raised:
        sqs.send_message_batch(QueueUrl=queue, Entries=_entries(11))
    assert _error(raised)[0] == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"


def test_a_send_batch_over_1_mib_in_total_is_refused(sqs: Any, queue: str) -> None:
    # Given three entries of 400,000 bytes each (each one within 1 MiB, 1,200,000 bytes in all)
    # When sent as one batch, Then refused as too long
    with pytest.raises(ClientError) as raised:
        sqs.send_message_batch(QueueUrl=queue, Entries=_entries(3, "é" * 200_000))
    assert _error(raised)[0] == "AWS.SimpleQueueService.BatchRequestTooLong"


def test_a_delete_batch_of_eleven_entries_is_refused(sqs: Any, queue: str) -> None:
    # Given eleven receipt handles, When deleted as one batch, Then refused (moto alone deletes them)
    entries = [{"Id": str(index), "ReceiptHandle": f"handle-{index}"} for index in range(11)]
    with pytest.raises(ClientError) as raised:
        sqs.delete_message_batch(QueueUrl=queue, Entries=entries)
    assert _error(raised)[0] == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"


def test_a_visibility_batch_of_eleven_entries_is_refused(sqs: Any, queue: str) -> None:
    entries = [{"Id": str(index), "ReceiptHandle": f"h{index}", "VisibilityTimeout": 1} for index in range(11)]
    with pytest.raises(ClientError) as raised:
        sqs.change_message_visibility_batch(QueueUrl=queue, Entries=entries)
    assert _error(raised)[0] == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"


@pytest.mark.parametrize("count", [0, 11])
def test_receive_takes_1_to_10_messages(sqs: Any, queue: str, count: int) -> None:
    # Given a MaxNumberOfMessages outside 1..10, When received, Then refused (moto checks this one itself)
    with pytest.raises(ClientError) as raised:
        sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=count)
    assert _error(raised)[0] == "InvalidParameterValue"


def test_the_queue_mapping_refuses_a_fifo_batch_size_lambda_refuses(aws_world: Any, queue: str) -> None:
    # Given the processor's batch size as the stack deploys it, and one over Lambda's FIFO maximum
    assert definitions.PROCESSOR_BATCH_SIZE <= aws_limits.LAMBDA_FIFO_MAX_BATCH_SIZE
    QueueMapping(
        aws_world.session,
        queue,
        lambda event, context: None,
        batch_size=definitions.PROCESSOR_BATCH_SIZE,
        concurrency=1,
    )
    # When a mapping of eleven is made on the FIFO queue, Then it is refused, as CreateEventSourceMapping would
    with pytest.raises(ValueError, match="BatchSize 11 refused"):
        QueueMapping(aws_world.session, queue, lambda event, context: None, batch_size=11, concurrency=1)


# DynamoDB item size and transactions -------------------------------------------------------------------------


@pytest.fixture
def dynamodb(aws_world: Any) -> Any:
    return aws_world.session.client("dynamodb")


def _binary(size: int) -> dict[str, bytes]:
    return {"B": b"\x00" * size}


def test_the_item_size_follows_dynamodb_s_documented_rules() -> None:
    # Given attributes of each documented kind
    # Then: a string is its UTF-8 bytes; a number 1 byte per 2 significant digits + 1; a binary its raw bytes
    # (not its base64); null and booleans 1; a list or map 3 + 1 per element + the elements
    assert aws_limits.dynamodb_item_bytes({"s": {"S": "ção"}}) == 1 + 5
    assert aws_limits.dynamodb_item_bytes({"n": {"N": "-0012300.4500"}}) == 1 + 4 + 1  # 1230045: 7 significant digits
    assert aws_limits.dynamodb_item_bytes({"b": {"B": base64.b64encode(b"abcd").decode()}}) == 1 + 4
    assert aws_limits.dynamodb_item_bytes({"t": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert aws_limits.dynamodb_item_bytes({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert aws_limits.dynamodb_item_bytes({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + (1 + 1 + 1)


def test_an_item_over_400_kb_is_refused(aws_world: Any, dynamodb: Any) -> None:
    # Given an item whose binary attribute alone makes it 1 byte over 400 KB (409,600 bytes)
    item = {definitions.CONTROL_PARTITION_KEY: {"S": "k"}, "b": _binary(409_600 - 3 - 1 + 1)}
    assert aws_limits.dynamodb_item_bytes(item) == 409_601
    # When put, Then refused with DynamoDB's error
    with pytest.raises(ClientError) as raised:
        dynamodb.put_item(TableName=aws_world.names.control_table, Item=item)
    assert _error(raised) == ("ValidationException", "Item size has exceeded the maximum allowed size")


def test_an_item_of_exactly_400_kb_is_accepted_though_moto_alone_would_refuse_it(aws_world: Any, dynamodb: Any) -> None:
    # Given an item of exactly 409,600 bytes, most of it binary (moto's own rule counts it as base64 text)
    key = definitions.CONTROL_PARTITION_KEY
    item = {key: {"S": "k"}, "b": _binary(409_600 - len(key) - 1 - 1)}
    assert aws_limits.dynamodb_item_bytes(item) == 409_600
    # When put, Then DynamoDB would take it, and so does the emulation
    dynamodb.put_item(TableName=aws_world.names.control_table, Item=item)


def test_an_update_that_grows_an_item_past_400_kb_is_refused(aws_world: Any, dynamodb: Any) -> None:
    # Given an item of 300,000 bytes of binary
    key = {definitions.CONTROL_PARTITION_KEY: {"S": "k"}}
    dynamodb.put_item(TableName=aws_world.names.control_table, Item=key | {"b": _binary(300_000)})
    # When an update adds 200,000 more, Then it is refused with DynamoDB's error
    with pytest.raises(ClientError) as raised:
        dynamodb.update_item(
            TableName=aws_world.names.control_table,
            Key=key,
            UpdateExpression="SET c = :c",
            ExpressionAttributeValues={":c": _binary(200_000)},
        )
    assert _error(raised) == ("ValidationException", "Item size to update has exceeded the maximum allowed size")


def _puts(table: str, count: int, size: int) -> list[dict[str, Any]]:
    key = definitions.CONTROL_PARTITION_KEY
    return [
        {"Put": {"TableName": table, "Item": {key: {"S": f"k{index}"}, "b": _binary(size)}}} for index in range(count)
    ]


def test_a_transaction_over_4_mb_in_all_is_refused_and_writes_nothing(aws_world: Any, dynamodb: Any) -> None:
    # Given eleven puts of 390,000 bytes each: each item within 400 KB, 4,290,000 bytes in all (over 4 MB)
    table = aws_world.names.control_table
    # When written in one transaction, Then refused, and nothing is written
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(TransactItems=_puts(table, 11, 390_000))
    assert _error(raised) == ("ValidationException", "Transaction request cannot be larger than 4 MB")
    assert dynamodb.scan(TableName=table)["Count"] == 0


def test_a_transaction_with_an_item_over_400_kb_is_cancelled_and_writes_nothing(aws_world: Any, dynamodb: Any) -> None:
    # Given a transaction of a small put and one of 410,000 bytes
    table = aws_world.names.control_table
    big = {
        "Put": {"TableName": table, "Item": {definitions.CONTROL_PARTITION_KEY: {"S": "big"}, "b": _binary(410_000)}}
    }
    items = [*_puts(table, 1, 10), big]
    # When written, Then cancelled with a ValidationError reason for the big one, and nothing is written
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(TransactItems=items)
    assert _error(raised)[0] == "TransactionCanceledException"
    reasons = [reason["Code"] for reason in raised.value.response["CancellationReasons"]]
    assert reasons == ["None", "ValidationError"]
    assert dynamodb.scan(TableName=table)["Count"] == 0


def test_a_transaction_of_101_actions_is_refused(aws_world: Any, dynamodb: Any) -> None:
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(TransactItems=_puts(aws_world.names.control_table, 101, 1))
    assert _error(raised)[0] == "ValidationException"


def test_a_transaction_with_two_actions_on_one_item_is_refused(aws_world: Any, dynamodb: Any) -> None:
    # Given two puts of the same key (what an event repeated inside one delivery would be, were it not deduplicated
    # first: shared/ingest_batch.py)
    table = aws_world.names.control_table
    twice = _puts(table, 1, 1) * 2
    # When written in one transaction, Then refused as DynamoDB refuses it, and nothing is written
    with pytest.raises(ClientError) as raised:
        dynamodb.transact_write_items(TransactItems=twice)
    assert _error(raised) == (
        "ValidationException",
        "Transaction request cannot include multiple operations on one item",
    )
    assert dynamodb.scan(TableName=table)["Count"] == 0


def test_the_per_delivery_event_cap_is_the_transactions_action_limit() -> None:
    # The ingest refuses a delivery of more events than one TransactWriteItems takes (413), before writing
    assert definitions.MAX_EVENTS_PER_DELIVERY == aws_limits.DYNAMODB_MAX_TRANSACTION_ACTIONS == 100
    # and its inline body copies leave each transaction room under the 4 MB for the items' other attributes
    assert definitions.MULTI_EVENT_INLINE_BODY_BUDGET_BYTES + 100 * 11_264 < aws_limits.DYNAMODB_MAX_TRANSACTION_BYTES


def test_a_body_at_the_inline_threshold_still_fits_its_item(aws_world: Any) -> None:
    # Given a verified delivery whose body is exactly the largest kept inline, with a long odd event id, a long
    # resource id, replay headers and kept query parameters
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    body = b"x" * definitions.INLINE_BODY_LIMIT_BYTES
    event_id, resource_id = "evt é " + "e" * 500, "pay ç " + "r" * 500
    event = NormalizedEvent(event_id, "payment.paid", resource_id, moment, "paid", 10**12, "BRL")
    headers = {f"webhook-h{index}": "v" * 1000 for index in range(8)}
    item = build_item(
        provider="standard",
        event_id=event_id,
        event=event,
        request=WebhookRequest(body=body, headers=headers, query={"token": "q" * 500}),
        replay_headers=tuple(headers),
        replay_query=("token",),
        body=StoredBody(sha256="f" * 64, size=len(body), inline=body),
        received_at=moment,
        retention_days=30,
    )
    # Then its size leaves room for what the processor adds later (attempts, errors), and DynamoDB takes it
    assert aws_limits.dynamodb_item_bytes(to_attributes(item)) < aws_limits.DYNAMODB_MAX_ITEM_BYTES - 100_000
    InboxStore(aws_world.names.inbox_table).put_new(item)


# EventBridge PutEvents ---------------------------------------------------------------------------------------


def test_put_events_over_1_mb_in_all_is_refused(aws_world: Any) -> None:
    # Given entries whose sizes, computed as EventBridge documents, total 1 MiB (detail bytes + source + type)
    events = aws_world.session.client("events")
    detail = '{"a":"' + "é" * 100_000 + '"}'  # 200,008 bytes, 100,008 characters
    entries = [{"Source": "webhook-inbox", "DetailType": "t", "Detail": detail} for _ in range(5)]
    assert sum(aws_limits.put_events_entry_bytes(entry) for entry in entries) > MIB - 50_000
    entries.append({"Source": "webhook-inbox", "DetailType": "t", "Detail": '{"a":"' + "a" * 50_000 + '"}'})
    assert sum(aws_limits.put_events_entry_bytes(entry) for entry in entries) >= MIB
    # When put, Then refused as EventBridge refuses it
    with pytest.raises(ClientError) as raised:
        events.put_events(Entries=entries)
    assert _error(raised) == ("ValidationException", "Total size of the entries in the request is over the limit.")
    # ... and the same without the last entry goes through
    assert events.put_events(Entries=entries[:5])["FailedEntryCount"] == 0


def test_the_documented_put_events_entry_size() -> None:
    # Given an entry with a time, a source, a detail type, a detail and two resources
    entry = {
        "Time": datetime(2026, 1, 1, tzinfo=UTC),
        "Source": "sé",
        "DetailType": "t",
        "Detail": "{}",
        "Resources": ["a", "bc"],
    }
    # Then its size is 14 for the time plus each string's UTF-8 length
    assert aws_limits.put_events_entry_bytes(entry) == 14 + 3 + 1 + 2 + 1 + 2
