"""The local outbox publisher: the outbox table's stream -> the published events (-> the forwarding URL).

In AWS, a Pipe reads the outbox stream (INSERT records only) into the stack's EventBridge bus. Locally this reads
the same stream with the same filter (`definitions.OUTBOX_PIPE_FILTER_PATTERN`) and:
- keeps every published event, in order, in `published` (the outbox table itself holds them for 7 days too:
  `inbox outbox list`);
- when `INBOX_FORWARD_URL` is set, POSTs each one there, signed with Standard Webhooks (shared/forwarding.py),
  retrying with exponential backoff.

Ordering and blocking: records are handed over in stream order, which keeps each payment's records in sequence
order. A delivery that keeps failing blocks EVERY later event (not only its payment's): the receiver is one
endpoint, so when it is down it is down for every payment, and a strict single line never reorders and needs no
per-payment parking. Nothing is dropped: the stream chunk is read again on the next poll.

Exactly once in effect: after each delivery the publisher records, in the control table, the last sequence
delivered per outbox partition (`outbox-forward#{pk}`), and skips records at or below it. A crash between a
delivery and that checkpoint re-sends that one event after a restart, with the same `webhook-id`: the receiver
dedups by it (Standard Webhooks' contract). Sequences per payment only ever increase at the receiver.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from moto.events.models import EventPattern

from inbox_local.stream_reader import StreamReader
from infra import definitions
from shared.forwarding import DeliveryFailed, Forwarder
from shared.payments.outbox import published_event

CHECKPOINT_PREFIX = "outbox-forward#"
_deserializer = TypeDeserializer()


def _plain(value: Any) -> Any:
    if type(value).__name__ == "Decimal":
        return int(value) if value == int(value) else float(value)
    return value


def event_from_record(record: dict[str, Any]) -> dict[str, Any]:
    """The published event carried by an outbox stream record (its NewImage)."""
    image = record["dynamodb"]["NewImage"]
    item = {name: _plain(_deserializer.deserialize(value)) for name, value in image.items()}
    return {"pk": item["pk"], **published_event(item)}


class OutboxPublisher:
    def __init__(
        self,
        session: Any,
        stream_arn: str,
        control_table: str,
        *,
        forwarder: Forwarder | None = None,
        poll_seconds: float = 0.2,
    ) -> None:
        self.reader = StreamReader(session.client("dynamodbstreams"), stream_arn)
        self.dynamodb = session.client("dynamodb")
        self.control_table = control_table
        self.forwarder = forwarder
        self.poll_seconds = poll_seconds
        self.pattern = EventPattern.load(json.dumps(definitions.OUTBOX_PIPE_FILTER_PATTERN))
        self.published: list[dict[str, Any]] = []  # the events, as published (without the partition key)
        self.failures = 0
        self._checkpoints: dict[str, int] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------------------------------------- checkpoints

    def checkpoint(self, pk: str) -> int:
        if pk not in self._checkpoints:
            response = self.dynamodb.get_item(
                TableName=self.control_table, Key={"pk": {"S": CHECKPOINT_PREFIX + pk}}, ConsistentRead=True
            )
            self._checkpoints[pk] = int(response.get("Item", {}).get("sequence", {}).get("N", "0"))
        return self._checkpoints[pk]

    def save_checkpoint(self, pk: str, sequence: int) -> None:
        self.dynamodb.put_item(
            TableName=self.control_table,
            Item={"pk": {"S": CHECKPOINT_PREFIX + pk}, "sequence": {"N": str(sequence)}},
        )
        self._checkpoints[pk] = sequence

    # -------------------------------------------------------------------------------------------------- publish

    def publish(self, event: dict[str, Any]) -> None:
        """Hand one event over (POST it when forwarding). Raises DeliveryFailed to be tried again later."""
        if self.forwarder is not None:
            self.forwarder.deliver(event)

    def _consume(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            if not self.pattern.matches_event(record):  # type: ignore[arg-type]  # a stream record, not an event
                continue
            full = event_from_record(record)
            pk, sequence = full.pop("pk"), int(full["sequence"])
            if sequence <= self.checkpoint(pk):
                continue  # delivered before (a re-read chunk, or a restart)
            self.publish(full)  # raises: this chunk is read again, from here on nothing later goes out first
            self.save_checkpoint(pk, sequence)
            with self._lock:
                self.published.append(full)

    def poll_once(self) -> int:
        """Publish what the stream holds now. Returns how many stream records were read (published or not)."""
        return self.reader.poll(self._consume)

    def drain(self, *, max_polls: int = 50) -> None:
        """Poll until a poll reads nothing (tests). Delivery failures propagate."""
        for _ in range(max_polls):
            if not self.poll_once():
                return

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.poll_once()
            except DeliveryFailed as error:
                self.failures += 1
                print(f"outbox: delivery failed, retrying later (nothing after it goes first): {error}", flush=True)
            except Exception as error:
                self.failures += 1
                print(f"outbox: {type(error).__name__}: {error}", flush=True)
            stop.wait(self.poll_seconds)
