"""Emulation of the archiver's event source mapping: inbox stream -> TTL-deletion filter -> archiver handler.

The filter is the stack's own (`definitions.ARCHIVE_FILTER_PATTERN`: REMOVE records made by the DynamoDB service,
i.e. TTL deletions). moto's stream records carry no `userIdentity` at all, and moto never expires items: locally the
only thing that deletes inbox items is the TTL emulation (`inbox retention run`, inbox_local/expiry.py). So this
mapping stamps every REMOVE record with the identity AWS gives TTL deletions before applying the filter. The one
difference from AWS: a DeleteItem you issue by hand against the local stack is archived too (in AWS it is not).

As in AWS, the item is already gone when its record reaches the archiver; a batch whose handler raises is read
again on the next poll (the same batch, so the same archive object names: the retry overwrites them).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from moto.events.models import EventPattern

from inbox_local.invocation import invoke
from inbox_local.stream_reader import StreamReader
from shared import definitions

TTL_USER_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

Handler = Callable[[dict[str, Any], Any], Any]


class ArchiveMapping:
    def __init__(
        self,
        session: Any,
        stream_arn: str,
        handler: Handler,
        *,
        batch_size: int = definitions.ARCHIVER_BATCH_SIZE,
        poll_seconds: float = 0.5,
    ) -> None:
        self.reader = StreamReader(session.client("dynamodbstreams"), stream_arn)
        self.handler = handler
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        self.pattern = EventPattern.load(json.dumps(definitions.ARCHIVE_FILTER_PATTERN))
        self.delivered = 0
        self.failures = 0

    def matches(self, record: dict[str, Any]) -> bool:
        return bool(self.pattern.matches_event(record))  # type: ignore[arg-type]  # a stream record, not an event

    @staticmethod
    def stamp_ttl_identity(record: dict[str, Any]) -> dict[str, Any]:
        if record.get("eventName") == "REMOVE" and "userIdentity" not in record:
            return {**record, "userIdentity": dict(TTL_USER_IDENTITY)}
        return record

    def poll_once(self) -> int:
        """Deliver the TTL deletions the stream holds now, in batches. Returns how many records were delivered."""
        delivered = 0

        def deliver(records: list[dict[str, Any]]) -> None:
            nonlocal delivered
            matching = [r for r in map(self.stamp_ttl_identity, records) if self.matches(r)]
            for start in range(0, len(matching), self.batch_size):
                batch = matching[start : start + self.batch_size]
                invoke("archiver", self.handler, {"Records": batch})  # held to the archiver's timeout
                delivered += len(batch)

        try:
            self.reader.poll(deliver)
        finally:
            self.delivered += delivered
        return delivered

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.poll_once()
            except Exception as error:  # the mapping retries the batch, as Lambda's does
                self.failures += 1
                print(f"archiver: {type(error).__name__}: {error}", flush=True)
            stop.wait(self.poll_seconds)
