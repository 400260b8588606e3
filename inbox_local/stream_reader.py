"""Reading the inbox table's DynamoDB stream as AWS's pollers do (the Pipe, Lambda event source mappings).

Shard by shard from TRIM_HORIZON; a chunk of records is only passed over once its consumer returned, so a consumer
that raises sees the same records again on the next poll (at least once, like the real pollers). Records are
handed over in the JSON shape Lambda and Pipes deliver: binary attributes as base64 text, times as epoch seconds.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from inbox_local.config import REGION


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return value.timestamp()
    return str(value)


def as_delivered(raw_record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A record from GetRecords (boto3: bytes, datetimes) as the AWS pollers deliver it (plain JSON)."""
    record: dict[str, Any] = json.loads(json.dumps(raw_record, default=_json_default))
    record.setdefault("eventSourceARN", stream_arn)
    record.setdefault("awsRegion", REGION)
    return record


Consumer = Callable[[list[dict[str, Any]]], None]


TRIM_HORIZON = "TRIM_HORIZON"
LATEST = "LATEST"


class StreamReader:
    """`starting_position`: TRIM_HORIZON (every record the stream holds, the pollers' way) or LATEST (only what is
    written after the first poll: the shards open then are read from their end; a shard that opens later holds only
    newer records, so it is read from its start)."""

    def __init__(
        self, streams: Any, stream_arn: str, *, limit: int = 1000, starting_position: str = TRIM_HORIZON
    ) -> None:
        self._streams = streams
        self.stream_arn = stream_arn
        self.limit = limit
        self.starting_position = starting_position
        self._iterators: dict[str, str | None] = {}
        self._polled = False

    def poll(self, consume: Consumer) -> int:
        """Hand each shard's new records (if any) to `consume`, then move past them. Returns how many were read."""
        read = 0
        shards = self._streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        position = TRIM_HORIZON if self._polled else self.starting_position
        self._polled = True
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id not in self._iterators:
                self._iterators[shard_id] = self._streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard_id, ShardIteratorType=position
                )["ShardIterator"]
            iterator = self._iterators[shard_id]
            if iterator is None:
                continue
            response = self._streams.get_records(ShardIterator=iterator, Limit=self.limit)
            records = [as_delivered(raw, self.stream_arn) for raw in response.get("Records", [])]
            if records:
                consume(records)  # raises: the iterator stays, these records are read again
                read += len(records)
            self._iterators[shard_id] = response.get("NextShardIterator")
        return read
