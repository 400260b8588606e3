"""inbox_local/moto_speedups.py only caches: moto answers every call byte for byte as it does without it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.core import serialize

from inbox_local import moto_speedups


def _raw_answers() -> list[str]:
    """The bodies moto sends for a DynamoDB, Streams, SQS and S3 conversation (successes and errors)."""
    bodies: list[str] = []

    def keep(http_response: Any, **_: Any) -> None:
        bodies.append(http_response.content.decode())

    with mock_aws():
        session = boto3.session.Session(region_name="us-east-1")
        dynamodb, sqs, s3 = session.client("dynamodb"), session.client("sqs"), session.client("s3")
        for client in (dynamodb, sqs, s3):
            client.meta.events.register("after-call.*.*", lambda http_response, **kw: keep(http_response))
            client.meta.events.register("after-call-error.*.*", lambda **kw: None)
        dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
                {"AttributeName": "n", "AttributeType": "N"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by-g",
                    "KeySchema": [
                        {"AttributeName": "g", "KeyType": "HASH"},
                        {"AttributeName": "n", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        for n in range(5):
            dynamodb.put_item(
                TableName="t",
                Item={
                    "pk": {"S": f"p{n}"},
                    "g": {"S": "x"},
                    "n": {"N": str(n)},
                    "b": {"B": b"\x00\x01z"},
                    "m": {"M": {"l": {"L": [{"S": "a"}, {"NULL": True}, {"BOOL": False}]}, "ss": {"SS": ["q", "r"]}}},
                },
            )
        dynamodb.update_item(
            TableName="t",
            Key={"pk": {"S": "p1"}},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": "done"}},
            ReturnValues="ALL_NEW",
        )
        dynamodb.get_item(TableName="t", Key={"pk": {"S": "p2"}}, ConsistentRead=True)
        dynamodb.query(
            TableName="t",
            IndexName="by-g",
            KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": {"S": "x"}},
            Limit=2,
        )
        dynamodb.scan(TableName="t")
        with pytest.raises(dynamodb.exceptions.ConditionalCheckFailedException):
            dynamodb.put_item(TableName="t", Item={"pk": {"S": "p0"}}, ConditionExpression="attribute_not_exists(pk)")
        with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
            dynamodb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": "t",
                            "Item": {"pk": {"S": "p3"}},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    }
                ]
            )
        dynamodb.describe_table(TableName="t")
        streams = session.client("dynamodbstreams")
        streams.meta.events.register("after-call.*.*", lambda http_response, **kw: keep(http_response))
        arn = dynamodb.describe_table(TableName="t")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
        streams.get_records(ShardIterator=iterator["ShardIterator"])
        url = sqs.create_queue(QueueName="q.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="{}", MessageGroupId="g", MessageDeduplicationId="d")
        sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        s3.create_bucket(Bucket="speedup-bucket")
        s3.put_object(Bucket="speedup-bucket", Key="k", Body=b"v")
        s3.list_objects_v2(Bucket="speedup-bucket")
    return [_without_volatile(body) for body in bodies]


def _without_volatile(body: str) -> str:
    """A body with what differs from one run to the next (ids, times, receipt handles) blanked."""
    try:
        document = json.loads(body)
    except ValueError:
        return re.sub(r"<(RequestId|LastModified|MessageId|ReceiptHandle|SentTimestamp)>[^<]*<", r"<\1>*<", body)

    def blank(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: ("*" if key in VOLATILE_KEYS else blank(item)) for key, item in value.items()}
        if isinstance(value, list):
            return [blank(item) for item in value]
        return value

    return json.dumps(blank(document), sort_keys=True)


VOLATILE_KEYS = {
    "CreationDateTime",
    "CreationRequestDateTime",
    "ApproximateCreationDateTime",
    "eventID",
    "SequenceNumber",
    "LatestStreamLabel",
    "LatestStreamArn",
    "StreamArn",
    "StreamLabel",
    "ShardIterator",
    "NextShardIterator",
    "ShardId",
    "StartingSequenceNumber",
    "TableId",
    "ReceiptHandle",
    "MessageId",
    "SentTimestamp",
    "ApproximateFirstReceiveTimestamp",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "SequenceNumberRange",
    "Shards",
    "MD5OfMessageAttributes",
    "SizeBytes",  # moto counts the record's sequence number, which grows
}


def test_moto_answers_the_same_with_and_without_the_cached_serializer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the speed-ups installed (tests/conftest.py does) and moto's own value picking
    moto_speedups.install()
    cached: Callable[..., Any] = serialize.ResponseSerializer.get_value
    original = cached.__wrapped__  # type: ignore[attr-defined]
    # When the same conversation runs with the cache, then without it
    with_cache = _raw_answers()
    monkeypatch.setattr(serialize.ResponseSerializer, "get_value", original)
    without_cache = _raw_answers()
    # Then every answer is the same
    assert len(with_cache) == len(without_cache) > 15
    assert with_cache == without_cache


def test_batch_answers_as_before_once_its_package_runs_on_first_use() -> None:
    # Given the speed-ups installed: moto.batch's package code deferred until one of its names is asked for
    moto_speedups.install()
    # When Batch is called (moto's backend lookup asks the package for its backends)
    with mock_aws():
        batch = boto3.session.Session(region_name="us-east-1").client("batch")
        environments = batch.describe_compute_environments()["computeEnvironments"]
    # Then it answers as moto does
    assert environments == []
