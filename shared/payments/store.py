"""Data access for processing: the payment projection and the inbox item's settlement, in one transaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import aws
from shared.inbox.model import DispatchReason, EventStatus, iso_utc, open_status_value
from shared.inbox.store import from_attributes, to_attributes
from shared.payments.model import Payment

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class VersionConflict(Exception):
    """The payment changed between our read and our write (another event of it was applied): decide again."""


class EventAlreadySettled(Exception):
    """The inbox item is no longer pending: another delivery of this message finished it. Nothing to do."""


class TransientStoreError(Exception):
    """DynamoDB throttled or failed: retry the message."""


class ProcessingStore:
    def __init__(self, inbox_table: str, payments_table: str, *, dynamodb: DynamoDBClient | None = None) -> None:
        self.inbox_table = inbox_table
        self.payments_table = payments_table
        self._dynamodb = dynamodb

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
        the inbox item pending -> processed | ignored. Either both happen or neither does."""
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
        """The payment alone (a reconciliation: no inbox item), conditioned on the version we decided from."""
        try:
            self.dynamodb.put_item(
                TableName=self.payments_table,
                Item=to_attributes(payment.to_item()),
                ConditionExpression="version = :expected",
                ExpressionAttributeValues={":expected": {"N": str(expected_version)}},
            )
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                raise VersionConflict(payment.key) from error
            raise TransientStoreError(code) from error
        except BotoCoreError as error:
            raise TransientStoreError(type(error).__name__) from error

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
        """pending -> failed, with the reason. Failed events wait in the sparse index for a replay."""
        increment = 1 if count_attempt else 0
        try:
            self.dynamodb.update_item(
                TableName=self.inbox_table,
                Key={"pk": {"S": event_pk}},
                UpdateExpression=(
                    "SET #status = :failed, open_status = :open, last_error = :error, failed_at = :now, "
                    "attempts = if_not_exists(attempts, :zero) + :increment"
                ),
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":failed": {"S": EventStatus.FAILED.value},
                    ":open": {"S": open_status_value(EventStatus.FAILED, event_pk)},
                    ":error": {"S": error[:500]},
                    ":now": {"S": now},
                    ":zero": {"N": "0"},
                    ":increment": {"N": str(increment)},
                    ":pending": {"S": EventStatus.PENDING.value},
                },
            )
        except ClientError as failure:
            if failure.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise EventAlreadySettled(event_pk) from failure
            raise TransientStoreError(failure.response["Error"]["Code"]) from failure
