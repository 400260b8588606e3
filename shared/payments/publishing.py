"""Publishing the outbox to the stack's EventBridge bus: what functions/publisher runs for each batch the outbox
Pipe hands it (the outbox table's stream, INSERT records only, one shard's records in commit order).

Each record becomes one bus event: `source` = OUTBOX_EVENT_SOURCE, `detail-type` = the event's type
(`payment.status_changed`, `payment.verified`, `webhook.failed`), `detail` = the event exactly as documented in
docs/events.md (the same dict the local publisher and the forwarder send). Rules on the bus route on any of them.

Delivery is at least once. PutEvents takes ten entries per call, in the records' order; entries it reports
failed (throttling, an internal error) are retried, in order, a few times with backoff inside the invocation.
If some still fail, PublishFailed makes the Pipe retry the whole batch: entries that had gone through are
published again, with the same `id` (receivers dedup by it, as the Standard Webhooks forwarding does).
EventBridge itself does not promise delivery order to targets; `sequence` (per payment) says the order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.backoff import Backoff
from shared.definitions import ENV_EVENT_BUS_NAME, OUTBOX_EVENT_SOURCE
from shared.payments.outbox import event_from_stream_record
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, text

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_events.type_defs import PutEventsRequestEntryTypeDef

MAX_ENTRIES_PER_CALL = 10  # PutEvents' limit
INSERT = "INSERT"


class PublishFailed(Exception):
    """Some events could not be put on the bus: the Pipe retries the batch."""


def outbox_events(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The published events of a batch of outbox stream records, in order, each with its partition `pk`. Only
    INSERT records are events (the Pipe's filter says so too; a TTL's REMOVE is not). Each is checked against the
    published contract (shared/payments/events.py): ContractViolation fails the batch before anything goes out."""
    from shared.payments.events import check_published  # noqa: PLC0415 - pydantic: the downstream functions only

    events = [event_from_stream_record(record) for record in records if record.get("eventName") == INSERT]
    for event in events:
        check_published(event)
    return events


@dataclass
class BusPublisher:
    events: EventBridgeClient
    bus_name: str
    source: str = OUTBOX_EVENT_SOURCE
    max_rounds: int = 4  # PutEvents calls per chunk: the first and the retries of its failed entries
    base_delay_seconds: float = 0.2  # then 0.4, 0.8: a throttled bus gets room, the invocation stays short
    sleep: Callable[[float], None] = time.sleep

    def entry(self, event: dict[str, Any]) -> PutEventsRequestEntryTypeDef:
        detail = {name: value for name, value in event.items() if name != "pk"}
        return {
            "EventBusName": self.bus_name,
            "Source": self.source,
            "DetailType": str(detail["type"]),
            "Detail": json.dumps(detail, sort_keys=True, separators=(",", ":"), default=str),
        }

    def publish(self, records: Iterable[dict[str, Any]]) -> int:
        """Put every event of the batch on the bus, in order. Returns how many. PublishFailed if some did not."""
        entries = [self.entry(event) for event in outbox_events(records)]
        for start in range(0, len(entries), MAX_ENTRIES_PER_CALL):
            self._put(entries[start : start + MAX_ENTRIES_PER_CALL])
        return len(entries)

    def _put(self, entries: list[PutEventsRequestEntryTypeDef]) -> None:
        pending = entries
        errors: set[str] = set()
        for round_ in range(self.max_rounds):
            if round_:
                self.sleep(Backoff(base=self.base_delay_seconds).delay(round_))
            response = self.events.put_events(Entries=pending)
            if not response.get("FailedEntryCount"):
                return
            results = response["Entries"]
            errors = {str(result.get("ErrorCode")) for result in results if result.get("ErrorCode")}
            pending = [entry for entry, result in zip(pending, results, strict=True) if result.get("ErrorCode")]
        raise PublishFailed(f"{len(pending)} of {len(entries)} events not accepted by the bus: {sorted(errors)}")


@dataclass(frozen=True, slots=True)
class PublisherSettings(EnvironmentSettings):
    event_bus_name: str = text(ENV_EVENT_BUS_NAME)


def build_publisher(
    settings: PublisherSettings, *, clients: AwsClients = SHARED_CLIENTS, wrap: Wrap = unwrapped
) -> BusPublisher:
    """The publisher's composition root: the bus of `settings`, through the EventBridge client of `clients` (the
    shared one, made here: the publisher's first batch needs it). `wrap` is applied to the publisher."""
    events = clients.events
    if events is None:
        from shared import aws  # noqa: PLC0415 - boto3 stays off the import path of what reads outbox events

        events = aws.events()
    return wrap(BusPublisher(events=events, bus_name=settings.event_bus_name))


def publisher_from_environ(wrap: Wrap = unwrapped) -> BusPublisher:
    """The publisher's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_publisher(PublisherSettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first batch.
default_publisher: Root[BusPublisher] = Root(publisher_from_environ)


def publish_outbox_batch(records: list[dict[str, Any]], publisher: BusPublisher | None = None) -> dict[str, int]:
    """The publisher Lambda's work: one Pipe batch onto the bus."""
    published = (publisher or default_publisher()).publish(records)
    return {"published": published}
