"""Data access for the inbox table and the body bucket. The only module that speaks DynamoDB for events.

Every write to an item is built by shared/inbox/lifecycle.py; the ones that stand alone run here, the settle (and
a failure with its outbox record) run inside shared/payments/store.py's transactions."""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from shared import aws
from shared.definitions import OPEN_EVENTS_SHARDS, open_events_query
from shared.inbox import lifecycle
from shared.inbox.lifecycle import EventStatus, IgnoredReason
from shared.inbox.model import inline_body

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class StorageUnavailable(Exception):
    """DynamoDB or S3 did not take the write (throttled, timed out, failed): retry it. The ingest must not say
    2xx; the processor retries the message."""


class TransitionRefused(Exception):
    """The item was not in a status the write moves it from, or it changed since the writer read it: another
    writer came first. Nothing was written."""


class EventAlreadySettled(TransitionRefused):
    """The inbox item is no longer pending: another delivery of this message finished it. Nothing to do."""


def error_code(error: ClientError) -> str:
    return str(error.response["Error"]["Code"])


def cancellation_reasons(error: ClientError) -> list[str]:
    """The code of each item of a cancelled TransactWriteItems, in the order of the items."""
    return [reason.get("Code", "None") for reason in error.response.get("CancellationReasons", [])]


class PutOutcome(StrEnum):
    STORED = "stored"
    DUPLICATE = "duplicate"


def to_attributes(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(value) for name, value in item.items() if value is not None}


def from_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    item = {name: _deserializer.deserialize(value) for name, value in attributes.items()}
    for name, value in item.items():
        if isinstance(value, Binary):
            item[name] = value.value  # type: ignore[attr-defined]
        elif type(value).__name__ == "Decimal":
            item[name] = int(value) if value == int(value) else float(value)
    return item


class InboxStore:
    def __init__(
        self,
        table_name: str,
        bucket_name: str | None = None,
        *,
        dynamodb: DynamoDBClient | None = None,
        s3: S3Client | None = None,
    ) -> None:
        self.table_name = table_name
        self.bucket_name = bucket_name
        self._dynamodb = dynamodb
        self._s3 = s3

    @property
    def dynamodb(self) -> DynamoDBClient:
        return self._dynamodb or aws.dynamodb()

    @property
    def s3(self) -> S3Client:
        return self._s3 or aws.s3()

    def through(self, dynamodb: DynamoDBClient) -> InboxStore:
        """The same table, bucket and S3 client, through another DynamoDB client (the local stack's fault injection
        hands the ingest one whose writes may be throttled)."""
        return InboxStore(self.table_name, self.bucket_name, dynamodb=dynamodb, s3=self._s3)

    def put_new(self, item: dict[str, Any]) -> PutOutcome:
        """Store the item unless its key exists. The key, not a read-then-write, is what deduplicates."""
        try:
            self.dynamodb.put_item(
                TableName=self.table_name,
                Item=to_attributes(item),
                ConditionExpression=lifecycle.RECEIVE_CONDITION,
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return PutOutcome.DUPLICATE
            raise StorageUnavailable(f"inbox put failed: {error_code(error)}") from error
        except BotoCoreError as error:
            raise StorageUnavailable(f"inbox put failed: {type(error).__name__}") from error
        return PutOutcome.STORED

    def update_request(self, pk: str, update: dict[str, Any]) -> dict[str, Any]:
        """A lifecycle update of the item `pk` as an UpdateItem request (or a transaction's Update item)."""
        return {"TableName": self.table_name, "Key": {"pk": {"S": pk}}, **update}

    def record_attempt(self, pk: str, error: str, *, now: str) -> int:
        """Count a failed attempt on a still-pending item; returns the attempts so far. Never re-dispatches."""
        request = self.update_request(pk, lifecycle.attempt_update(error=error, now=now))
        response = self._update(pk, request, EventAlreadySettled, ReturnValues="UPDATED_NEW")
        return int(response["Attributes"]["attempts"]["N"])

    def record_wait(self, pk: str, *, until: str, waiting_for: lifecycle.WaitingFor, now: str) -> None:
        """Note on a still-pending item that it waits for its source until `until` (no attempt counted): the
        sweeper does not take it for lost meanwhile. EventAlreadySettled when it is not pending any more."""
        request = self.update_request(pk, lifecycle.wait_update(until=until, waiting_for=waiting_for, now=now))
        self._update(pk, request, EventAlreadySettled)

    def settle(
        self, pk: str, outcome: EventStatus, *, note: str, now: str, ignored_reason: IgnoredReason | None = None
    ) -> None:
        """pending -> processed | ignored with nothing else to write (no payment change): one conditional
        UpdateItem, not a transaction. The condition (still pending) is what makes a redelivery harmless; with no
        other item to keep in step there is nothing a transaction would add but its doubled write units."""
        update = lifecycle.settle_update(outcome, note=note, now=now, ignored_reason=ignored_reason)
        self._update(pk, self.update_request(pk, update), EventAlreadySettled)

    def fail(self, pk: str, error: str, *, now: str, counts_attempt: bool) -> None:
        """pending -> failed, with the reason (no outbox record: shared/payments/store.py writes that one)."""
        update = lifecycle.fail_update(pk, error=error, now=now, counts_attempt=counts_attempt)
        self._update(pk, self.update_request(pk, update), EventAlreadySettled)

    def redispatch(self, pk: str, *, group_id: str, seen_dispatch_id: str | None, now: str, quiet_since: str) -> bool:
        """Dispatch a still-pending event again, unless anyone dispatched or attempted it since it was read (two
        sweepers at once re-dispatch it once). True when this call re-dispatched it."""
        update = lifecycle.redispatch_update(
            group_id=group_id, now=now, seen_dispatch_id=seen_dispatch_id, quiet_since=quiet_since
        )
        try:
            self._update(pk, self.update_request(pk, update), TransitionRefused)
        except TransitionRefused:
            return False
        return True

    def replay(self, pk: str, *, selected: EventStatus, now: str, replayed_by: str) -> bool:
        """Set an event in the `selected` status back to pending with a fresh dispatch id (the lifecycle's replay
        write), stamped `replayed_by`. True when it is pending now by this replayer's write: this call's, or an
        earlier one of the same replayer (`replayed_by`, e.g. the same workflow execution retrying a page), so that
        applying a page again reports what the first application did. False when the item left the selected status
        otherwise (the processor, another replay): nothing was written."""
        update = lifecycle.replay_update(
            selected=lifecycle.text_value(selected.value),
            open_status=lifecycle.text_value(lifecycle.open_status_value(EventStatus.PENDING, pk)),
            dispatch_id=lifecycle.text_value(lifecycle.new_dispatch_id()),
            now=lifecycle.text_value(now),
            replayed_by=lifecycle.text_value(replayed_by),
        )
        try:
            self._update(
                pk, self.update_request(pk, update), TransitionRefused, ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
        except TransitionRefused as refused:
            current = getattr(refused.__cause__, "response", {}).get("Item", {})
            return bool(current.get("replayed_by") == {"S": replayed_by})
        return True

    def _update(self, pk: str, request: dict[str, Any], refused: type[TransitionRefused], **options: Any) -> Any:
        try:
            return self.dynamodb.update_item(**request, **options)
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                raise refused(pk) from error
            raise StorageUnavailable(f"inbox update failed: {error_code(error)}") from error
        except BotoCoreError as error:
            raise StorageUnavailable(f"inbox update failed: {type(error).__name__}") from error

    def put_body(self, key: str, body: bytes) -> None:
        if not self.bucket_name:
            raise StorageUnavailable("no body bucket configured for a body too large for an item")
        try:
            self.s3.put_object(Bucket=self.bucket_name, Key=key, Body=body)
        except (ClientError, BotoCoreError) as error:
            raise StorageUnavailable(f"body upload failed: {type(error).__name__}") from error

    def get(self, pk: str, *, consistent: bool = True) -> dict[str, Any] | None:
        response = self.dynamodb.get_item(TableName=self.table_name, Key={"pk": {"S": pk}}, ConsistentRead=consistent)
        return from_attributes(response["Item"]) if "Item" in response else None

    def read_body(self, item: dict[str, Any]) -> bytes:
        """The raw body as received: from the item (shared/inbox/model.py `inline_body`: compressed or not) or the
        body bucket."""
        body = inline_body(item)
        if body is not None:
            return body
        response = self.s3.get_object(Bucket=str(self.bucket_name), Key=item["body_s3_key"])
        return response["Body"].read()

    def open_events(
        self, status: EventStatus, *, received_before: str | None = None, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Events still `pending` or `failed`, oldest first within each shard of the sparse index.

        The index only holds open events, so this costs what is open, not what the table holds."""
        returned = 0
        for shard in range(OPEN_EVENTS_SHARDS):
            query = open_events_query(self.table_name, status, shard, received_before=received_before)
            for page in self.dynamodb.get_paginator("query").paginate(**query):
                for attributes in page.get("Items", []):
                    yield from_attributes(attributes)
                    returned += 1
                    if limit is not None and returned >= limit:
                        return

    def scan(self, *, page_size: int = 500) -> Iterator[dict[str, Any]]:
        """Every item, for operators' listings on small tables (the CLI) — never on a hot path."""
        paginator = self.dynamodb.get_paginator("scan")
        for page in paginator.paginate(TableName=self.table_name, PaginationConfig={"PageSize": page_size}):
            for attributes in page.get("Items", []):
                yield from_attributes(attributes)
