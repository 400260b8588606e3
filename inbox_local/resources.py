"""Create the local stack's AWS resources in moto from the same definitions the CDK stack uses."""

from __future__ import annotations

from typing import Any

from inbox_local.config import LocalNames
from shared import definitions


def inbox_table_spec(name: str) -> dict[str, Any]:
    key_attributes = {definitions.INBOX_PARTITION_KEY}
    for _, pk, sk in definitions.INBOX_GLOBAL_INDEXES:
        key_attributes |= {pk, sk}
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": definitions.INBOX_PARTITION_KEY, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in sorted(key_attributes)],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": definitions.inbox_index_projection(index),
            }
            for index, pk, sk in definitions.INBOX_GLOBAL_INDEXES
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }


def simple_table_spec(name: str, partition_key: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": partition_key, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": partition_key, "AttributeType": "S"}],
    }


def payments_table_spec(name: str) -> dict[str, Any]:
    """The payments table with its sparse reconcile index (only payments in an intermediate status are in it)."""
    spec = simple_table_spec(name, definitions.PAYMENTS_PARTITION_KEY)
    for index, pk, sk in definitions.PAYMENTS_GLOBAL_INDEXES:
        spec["AttributeDefinitions"] += [{"AttributeName": a, "AttributeType": "S"} for a in (pk, sk)]
        spec.setdefault("GlobalSecondaryIndexes", []).append(
            {
                "IndexName": index,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": definitions.RECONCILE_INDEX_PROJECTION},
            }
        )
    return spec


def outbox_table_spec(name: str) -> dict[str, Any]:
    """The outbox: one partition per payment, records ordered by the payment's transition number; streamed."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": definitions.OUTBOX_PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": definitions.OUTBOX_SORT_KEY, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": definitions.OUTBOX_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": definitions.OUTBOX_SORT_KEY, "AttributeType": "N"},
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": definitions.OUTBOX_STREAM_VIEW_TYPE},
    }


def rejected_table_spec(name: str) -> dict[str, Any]:
    """The rejected-delivery log: keyed by rejection id, listed newest first through its per-day index."""
    index = definitions.REJECTED_BY_DAY_INDEX
    pk, sk = definitions.REJECTED_BY_DAY_INDEX_PK, definitions.REJECTED_BY_DAY_INDEX_SK
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": definitions.REJECTED_PARTITION_KEY, "KeyType": "HASH"}],
        "AttributeDefinitions": [
            {"AttributeName": a, "AttributeType": "S"} for a in (definitions.REJECTED_PARTITION_KEY, pk, sk)
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index,
                "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
                "Projection": {
                    "ProjectionType": "INCLUDE",
                    "NonKeyAttributes": list(definitions.REJECTED_INDEX_INCLUDED_ATTRIBUTES),
                },
            }
        ],
    }


def forward_log_table_spec(name: str) -> dict[str, Any]:
    """The forwarding log: one partition per published event (its webhook-id), attempts ordered by time."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": definitions.FORWARD_LOG_PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": definitions.FORWARD_LOG_SORT_KEY, "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [
            {"AttributeName": definitions.FORWARD_LOG_PARTITION_KEY, "AttributeType": "S"},
            {"AttributeName": definitions.FORWARD_LOG_SORT_KEY, "AttributeType": "S"},
        ],
    }


def queue_attributes(dead_letter_arn: str | None) -> dict[str, str]:
    import json  # noqa: PLC0415

    attributes = {
        "FifoQueue": "true",
        "DeduplicationScope": "messageGroup",
        "FifoThroughputLimit": "perMessageGroupId",
        "VisibilityTimeout": str(definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS),
        "MessageRetentionPeriod": str(definitions.QUEUE_RETENTION_DAYS * 86_400),
    }
    if dead_letter_arn:
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": definitions.QUEUE_MAX_RECEIVE_COUNT}
        )
    return attributes


def provision(session: Any, names: LocalNames) -> dict[str, str]:
    """Create tables, bucket and queues. Returns the ARNs/URLs the runtime needs (stream ARN, queue URLs)."""
    dynamodb = session.client("dynamodb")
    dynamodb.create_table(**inbox_table_spec(names.inbox_table))
    dynamodb.update_time_to_live(
        TableName=names.inbox_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": definitions.INBOX_TTL_ATTRIBUTE},
    )
    dynamodb.create_table(**payments_table_spec(names.payments_table))
    dynamodb.create_table(**simple_table_spec(names.control_table, definitions.CONTROL_PARTITION_KEY))
    dynamodb.update_time_to_live(
        TableName=names.control_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": definitions.CONTROL_TTL_ATTRIBUTE},
    )
    dynamodb.create_table(**outbox_table_spec(names.outbox_table))
    dynamodb.update_time_to_live(
        TableName=names.outbox_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": definitions.OUTBOX_TTL_ATTRIBUTE},
    )
    dynamodb.create_table(**rejected_table_spec(names.rejected_table))
    dynamodb.update_time_to_live(
        TableName=names.rejected_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": definitions.REJECTED_TTL_ATTRIBUTE},
    )
    dynamodb.create_table(**forward_log_table_spec(names.forward_log_table))
    dynamodb.update_time_to_live(
        TableName=names.forward_log_table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": definitions.FORWARD_LOG_TTL_ATTRIBUTE},
    )
    session.client("s3").create_bucket(Bucket=names.body_bucket)
    session.client("s3").create_bucket(Bucket=names.archive_bucket)

    sqs = session.client("sqs")
    dead_letter_url = sqs.create_queue(QueueName=names.dead_letter_queue, Attributes=queue_attributes(None))["QueueUrl"]
    dead_letter_arn = sqs.get_queue_attributes(QueueUrl=dead_letter_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(QueueName=names.queue, Attributes=queue_attributes(dead_letter_arn))["QueueUrl"]
    stream_arn = dynamodb.describe_table(TableName=names.inbox_table)["Table"]["LatestStreamArn"]
    outbox_stream_arn = dynamodb.describe_table(TableName=names.outbox_table)["Table"]["LatestStreamArn"]
    return {
        "stream_arn": stream_arn,
        "queue_url": queue_url,
        "dead_letter_url": dead_letter_url,
        "outbox_stream_arn": outbox_stream_arn,
    }
