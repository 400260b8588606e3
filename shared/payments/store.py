"""Data access for processing: the payment projection and the inbox item's settlement, in one transaction."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from shared import aws
from shared.definitions import ENV_OUTBOX_TABLE
from shared.inbox.model import DispatchReason, EventStatus, iso_utc, open_status_value
from shared.inbox.store import from_attributes, to_attributes
from shared.payments import outbox
from shared.payments.model import Payment

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class VersionConflict(Exception):
    """The payment changed between our read and our write (another event of it was applied): decide again."""


class EventAlreadySettled(Exception):
    """The inbox item is no longer pending: another delivery of this message finished it. Nothing to do."""


class TransientStoreError(Exception):
    """DynamoDB throttled or failed: retry the message."""


_outbox_serializer = TypeSerializer()


def outbox_attributes(record: dict[str, Any]) -> dict[str, Any]:
    """An outbox record as DynamoDB attributes, nulls kept (an absent value is published as an explicit null)."""
    return {name: _outbox_serializer.serialize(value) for name, value in record.items()}


class ProcessingStore:
    def __init__(
        self,
        inbox_table: str,
        payments_table: str,
        *,
        dynamodb: DynamoDBClient | None = None,
        outbox_table: str | None = None,
    ) -> None:
        self.inbox_table = inbox_table
        self.payments_table = payments_table
        self._dynamodb = dynamodb
        # The transactional outbox (shared/payments/outbox.py). Taken from OUTBOX_TABLE when not given: every
        # function and the local stack set it. Without one (some unit tests), nothing is published.
        self.outbox_table = outbox_table or os.environ.get(ENV_OUTBOX_TABLE) or None

    @property
    def dynamodb(self) -> DynamoDBClient:
        return self._dynamodb or aws.dynamodb()

    # ------------------------------------------------------------------------------------------------ reads

    def load_event(self, pk: str) -> dict[str, Any] | None:
        response = self.dynamodb.get_item(TableName=self.inbox_table, Key={"pk": {"S": pk}}, ConsistentRead=True)
        return from_attributes(response["Item"]) if "Item" in response else None

    def load_payment(self, key: str) -> Payment | None:
        response = self.dynamodb.get_item(TableName=self.payments_table, Key={"pk": {"S": key}}, ConsistentRead=True)
        return Payment.from_item(from_attributes(response["Item"])) if "Item" in response else None

    # ----------------------------------------------------------------------------------------------- writes

    def settle(
        self,
        event_pk: str,
        outcome: EventStatus,
        *,
        now: str,
        note: str,
        payment: Payment | None = None,
        expected_version: int | None = None,
    ) -> None:
        """One transaction: the payment's new state (if any), conditioned on the version we decided from, and
        the inbox item pending -> processed | ignored. Either both happen or neither does.

        A transition (a payment written with the outcome `processed`: an Apply decision; a Touch is `ignored`)
        also writes its `payment.status_changed` outbox record in the same transaction, conditioned on not
        existing yet: published exactly once, and only if the transition commits."""
        items: list[Any] = []
        if payment is not None:
            condition = "attribute_not_exists(pk)" if expected_version is None else "version = :expected"
            put: dict[str, Any] = {
                "TableName": self.payments_table,
                "Item": to_attributes(payment.to_item()),
                "ConditionExpression": condition,
            }
            if expected_version is not None:
                put["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
            items.append({"Put": put})
            if outcome is EventStatus.PROCESSED and self.outbox_table:
                record = outbox.status_changed(
                    payment,
                    occurred_at=payment.last_event_at or now,
                    source_event_id=payment.last_event_id,
                    created_at=now,
                )
                items.append({"Put": self._outbox_put(record)})
        items.append({"Update": self._settle_event_update(event_pk, outcome, now=now, note=note)})
        try:
            self.dynamodb.transact_write_items(TransactItems=items)
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code != "TransactionCanceledException":
                raise TransientStoreError(code) from error
            reasons = [reason.get("Code", "None") for reason in error.response.get("CancellationReasons", [])]
            if reasons and reasons[-1] == "ConditionalCheckFailed":
                raise EventAlreadySettled(event_pk) from error
            if payment is not None and reasons and reasons[0] == "ConditionalCheckFailed":
                raise VersionConflict(payment.key) from error
            raise TransientStoreError(f"transaction cancelled: {reasons}") from error
        except BotoCoreError as error:
            raise TransientStoreError(type(error).__name__) from error

    def put_payment(self, payment: Payment, *, expected_version: int) -> None:
        """The payment (a reconciliation: no inbox item), conditioned on the version we decided from.

        When it is a transition (its `transitions` moved past the stored payment's), one transaction with its
        `payment.status_changed` outbox record (occurred_at = now: no event caused it)."""
        put: dict[str, Any] = {
            "TableName": self.payments_table,
            "Item": to_attributes(payment.to_item()),
            "ConditionExpression": "version = :expected",
            "ExpressionAttributeValues": {":expected": {"N": str(expected_version)}},
        }
        try:
            if self.outbox_table and payment.previous_status is not None:
                record = outbox.status_changed(
                    payment, occurred_at=payment.updated_at, source_event_id=None, created_at=payment.updated_at
                )
                items: list[Any] = [{"Put": put}, {"Put": self._outbox_put(record)}]
                self.dynamodb.transact_write_items(TransactItems=items)
            else:
                self.dynamodb.put_item(**put)
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                raise VersionConflict(payment.key) from error
            if code == "TransactionCanceledException":
                reasons = [reason.get("Code", "None") for reason in error.response.get("CancellationReasons", [])]
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    raise VersionConflict(payment.key) from error
                raise TransientStoreError(f"transaction cancelled: {reasons}") from error
            raise TransientStoreError(code) from error
        except BotoCoreError as error:
            raise TransientStoreError(type(error).__name__) from error

    def _outbox_put(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "TableName": self.outbox_table,
            "Item": outbox_attributes(record),
            "ConditionExpression": "attribute_not_exists(pk)",
        }

    def _settle_event_update(self, event_pk: str, outcome: EventStatus, *, now: str, note: str) -> dict[str, Any]:
        return {
            "TableName": self.inbox_table,
            "Key": {"pk": {"S": event_pk}},
            "UpdateExpression": (
                "SET #status = :outcome, processed_at = :now, note = :note, "
                "attempts = if_not_exists(attempts, :zero) + :one REMOVE open_status, last_error"
            ),
            "ConditionExpression": "#status = :pending",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":outcome": {"S": outcome.value},
                ":now": {"S": now},
                ":note": {"S": note[:500]},
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
                ":pending": {"S": EventStatus.PENDING.value},
            },
        }

    def record_attempt(self, event_pk: str, error: str, *, now: str | None = None) -> int:
        """Count a failed attempt on a still-pending item; returns the attempts so far. Never re-dispatches.

        `last_attempt_at` tells the sweeper the event is being worked on (it is not stale)."""
        try:
            response = self.dynamodb.update_item(
                TableName=self.inbox_table,
                Key={"pk": {"S": event_pk}},
                UpdateExpression=(
                    "SET attempts = if_not_exists(attempts, :zero) + :one, last_error = :error, "
                    "dispatch_reason = :attempt, last_attempt_at = :now"
                ),
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":zero": {"N": "0"},
                    ":one": {"N": "1"},
                    ":error": {"S": error[:500]},
                    ":attempt": {"S": DispatchReason.ATTEMPT.value},
                    ":pending": {"S": EventStatus.PENDING.value},
                    ":now": {"S": now or iso_utc(datetime.now(UTC))},
                },
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as failure:
            if failure.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise EventAlreadySettled(event_pk) from failure
            raise TransientStoreError(failure.response["Error"]["Code"]) from failure
        return int(response["Attributes"]["attempts"]["N"])

    def mark_failed(self, event_pk: str, error: str, *, now: str, count_attempt: bool) -> None:
        """pending -> failed, with the reason. Failed events wait in the sparse index for a replay.

        With an outbox, one transaction with the `webhook.failed` outbox record: the item counts its failures
        (`failures`, a replayed event can fail again), and the record's sequence is that count, so the update is
        conditioned on the count we read as well as on the item still being pending."""
        increment = 1 if count_attempt else 0
        update: dict[str, Any] = {
            "TableName": self.inbox_table,
            "Key": {"pk": {"S": event_pk}},
            "UpdateExpression": (
                "SET #status = :failed, open_status = :open, last_error = :error, failed_at = :now, "
                "attempts = if_not_exists(attempts, :zero) + :increment"
            ),
            "ConditionExpression": "#status = :pending",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":failed": {"S": EventStatus.FAILED.value},
                ":open": {"S": open_status_value(EventStatus.FAILED, event_pk)},
                ":error": {"S": error[:500]},
                ":now": {"S": now},
                ":zero": {"N": "0"},
                ":increment": {"N": str(increment)},
                ":pending": {"S": EventStatus.PENDING.value},
            },
        }
        if not self.outbox_table:
            try:
                self.dynamodb.update_item(**update)
            except ClientError as failure:
                if failure.response["Error"]["Code"] == "ConditionalCheckFailedException":
                    raise EventAlreadySettled(event_pk) from failure
                raise TransientStoreError(failure.response["Error"]["Code"]) from failure
            return
        item = self.load_event(event_pk)
        if item is None or item.get("status") != EventStatus.PENDING.value:
            raise EventAlreadySettled(event_pk)
        failures = int(item.get("failures") or 0)
        update["UpdateExpression"] += ", failures = :failures"
        counted = "failures = :previous" if failures else "attribute_not_exists(failures)"
        update["ConditionExpression"] = f"#status = :pending AND {counted}"
        update["ExpressionAttributeValues"][":failures"] = {"N": str(failures + 1)}
        if failures:
            update["ExpressionAttributeValues"][":previous"] = {"N": str(failures)}
        record = outbox.webhook_failed(
            item,
            failure=failures + 1,
            last_error=error[:500],
            attempts=int(item.get("attempts") or 0) + increment,
            failed_at=now,
        )
        try:
            items: list[Any] = [{"Update": update}, {"Put": self._outbox_put(record)}]
            self.dynamodb.transact_write_items(TransactItems=items)
        except ClientError as failure:
            code = failure.response["Error"]["Code"]
            reasons = [reason.get("Code", "None") for reason in failure.response.get("CancellationReasons", [])]
            if code == "TransactionCanceledException" and reasons and reasons[0] == "ConditionalCheckFailed":
                raise EventAlreadySettled(event_pk) from failure
            raise TransientStoreError(f"{code}: {reasons}" if reasons else code) from failure
        except BotoCoreError as failure:
            raise TransientStoreError(type(failure).__name__) from failure
