"""The local stand-in for DynamoDB's TTL, which moto never runs: delete the inbox items whose `expires_at` passed.

Exactly what TTL does: one DeleteItem per expired item, conditioned on the item still being expired (an item whose
expiry moved meanwhile stays). The stream's REMOVE records then reach the archiver through the local archive
mapping (inbox_local/archive_mapping.py), as TTL deletions reach it in AWS: the item is deleted first and archived
from its stream image right after. Run by `inbox retention run [--now ISO]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from shared import definitions


@dataclass
class ExpiryResult:
    now: int
    deleted: list[str] = field(default_factory=list)
    kept: int = 0  # found expired, but no longer so when deleted (or already gone)


def expire_items(
    dynamodb: Any,
    table: str,
    now: int,
    *,
    limit: int | None = None,
    partition_key: str = definitions.INBOX_PARTITION_KEY,
    ttl_attribute: str = definitions.INBOX_TTL_ATTRIBUTE,
) -> ExpiryResult:
    """Delete up to `limit` items of `table` (keyed by `partition_key` alone) whose `ttl_attribute` is below `now`
    (epoch seconds). The inbox's by default; the rejected-delivery log's too (`inbox retention run`)."""
    result = ExpiryResult(now=now)
    names = {"#ttl": ttl_attribute, "#pk": partition_key}
    values = {":now": {"N": str(now)}}
    pages = dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="#ttl < :now",
        ProjectionExpression="#pk",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )
    for page in pages:
        for key in page.get("Items", []):
            if limit is not None and len(result.deleted) >= limit:
                return result
            try:
                dynamodb.delete_item(
                    TableName=table,
                    Key=key,
                    ConditionExpression="#ttl < :now",
                    ExpressionAttributeNames={"#ttl": ttl_attribute},
                    ExpressionAttributeValues=values,
                )
            except ClientError as error:
                if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                result.kept += 1
                continue
            result.deleted.append(key[partition_key]["S"])
    return result
