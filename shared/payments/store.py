"""Data access for processing: the payment projection and the inbox item's settlement, in one transaction.

The inbox item's writes are the lifecycle's (shared/inbox/lifecycle.py builds each, shared/inbox/store.py runs
the ones that stand alone); this module composes the settle and a failure's outbox record into its transactions."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from shared import aws
from shared.definitions import ENV_OUTBOX_TABLE
from shared.inbox import lifecycle
from shared.inbox.lifecycle import EventStatus, IgnoredReason, WaitingFor
from shared.inbox.model import iso_utc
from shared.inbox.store import (
    EventAlreadySettled,
    InboxStore,
    StorageUnavailable,
    cancellation_reasons,
    error_code,
    from_attributes,
    to_attributes,
)
from shared.payments import outbox
from shared.payments.model import Payment

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class VersionConflict(Exception):
    """The payment changed between our read and our write (another event of it was applied): decide again."""


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

    @property
    def inbox(self) -> InboxStore:
        """The inbox item's own writes (the lifecycle's), on this store's client."""
        return InboxStore(self.inbox_table, dynamodb=self.dynamodb)

    # ------------------------------------------------------------------------------------------------ reads

    # `consistent=False`: an eventually consistent read, half the read units, which may return the item as it
    # was before a write that completed just before (DynamoDB: "Read consistency"). The processor reads so only
    # where every write that follows is conditioned on what it read, and reads again consistently before acting
    # on what a stale copy could have misled it into (shared/process/service.py, docs/cost.md).

    def load_event(self, pk: str, *, consistent: bool = True) -> dict[str, Any] | None:
        return self.inbox.get(pk, consistent=consistent)

    def load_payment(self, key: str, *, consistent: bool = True) -> Payment | None:
        response = self.dynamodb.get_item(
            TableName=self.payments_table, Key={"pk": {"S": key}}, ConsistentRead=consistent
        )
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
        ignored_reason: IgnoredReason | None = None,
        verify_item: dict[str, Any] | None = None,
        confirms: bool = False,
    ) -> None:
        """With a payment to write, one transaction: the payment's new state, conditioned on the version we decided
        from, and the inbox item pending -> processed | ignored. Either both happen or neither does.

        A transition (a payment written with the outcome `processed`: an Apply decision; a Touch is `ignored`)
        also writes its `payment.status_changed` outbox record in the same transaction, conditioned on not
        existing yet: published exactly once, and only if the transition commits.

        Without a payment to write (an event nobody handles, or one that changes nothing) there is nothing to keep
        in step with the item: a plain conditional update (shared/inbox/store.py `settle`), half a transaction's
        write units.

        `verify_item`: the inbox item that will verify a payment just confirmed from a payload
        (shared/inbox/model.py `build_verify_item`), put in the same transaction (conditioned on not existing): the
        payment is never left unverified without something on its way to verify it, whatever crashes after.
        `confirms`: the write marks an unverified payment verified (the API agreed; the event is `processed`, but no
        transition): its `payment.verified` outbox record goes in the same transaction instead."""
        if payment is None:
            self.inbox.settle(event_pk, outcome, note=note, now=now, ignored_reason=ignored_reason)
            return
        items: list[Any] = []
        condition = "attribute_not_exists(pk)" if expected_version is None else "version = :expected"
        put: dict[str, Any] = {
            "TableName": self.payments_table,
            "Item": to_attributes(payment.to_item()),
            "ConditionExpression": condition,
        }
        if expected_version is not None:
            put["ExpressionAttributeValues"] = {":expected": {"N": str(expected_version)}}
        items.append({"Put": put})
        if outcome is EventStatus.PROCESSED and self.outbox_table and not confirms:  # a confirmation is no transition
            record = outbox.status_changed(
                payment,
                occurred_at=payment.last_event_at or now,
                source_event_id=payment.last_event_id,
                created_at=now,
            )
            items.append({"Put": self._outbox_put(record)})
        if confirms and self.outbox_table:
            items.append({"Put": self._outbox_put(outbox.payment_verified(payment, created_at=now))})
        if verify_item is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self.inbox_table,
                        "Item": to_attributes(verify_item),
                        "ConditionExpression": lifecycle.RECEIVE_CONDITION,
                    }
                }
            )
        settle = lifecycle.settle_update(outcome, note=note, now=now, ignored_reason=ignored_reason)
        items.append({"Update": self.inbox.update_request(event_pk, settle)})  # last: its refusal is reasons[-1]
        try:
            self.dynamodb.transact_write_items(TransactItems=items)
        except ClientError as error:
            code = error_code(error)
            if code != "TransactionCanceledException":
                raise StorageUnavailable(code) from error
            reasons = cancellation_reasons(error)
            if reasons and reasons[-1] == "ConditionalCheckFailed":
                raise EventAlreadySettled(event_pk) from error
            if reasons and reasons[0] == "ConditionalCheckFailed":
                raise VersionConflict(payment.key) from error
            raise StorageUnavailable(f"transaction cancelled: {reasons}") from error
        except BotoCoreError as error:
            raise StorageUnavailable(type(error).__name__) from error

    def put_payment(
        self, payment: Payment, *, expected_version: int, transition: bool = True, confirms: bool = False
    ) -> None:
        """The payment (a reconciliation: no inbox item), conditioned on the version we decided from.

        When it is a transition (`transition`: an Apply decision; a Touch is not), one transaction with its
        `payment.status_changed` outbox record (occurred_at = now: no event caused it); when it `confirms` an
        unverified payment, with its `payment.verified` record."""
        put: dict[str, Any] = {
            "TableName": self.payments_table,
            "Item": to_attributes(payment.to_item()),
            "ConditionExpression": "version = :expected",
            "ExpressionAttributeValues": {":expected": {"N": str(expected_version)}},
        }
        try:
            records: list[dict[str, Any]] = []
            if self.outbox_table and transition and payment.previous_status is not None:
                records.append(
                    outbox.status_changed(
                        payment, occurred_at=payment.updated_at, source_event_id=None, created_at=payment.updated_at
                    )
                )
            if self.outbox_table and confirms:
                records.append(outbox.payment_verified(payment, created_at=payment.updated_at))
            if records:
                items: list[Any] = [{"Put": put}, *({"Put": self._outbox_put(record)} for record in records)]
                self.dynamodb.transact_write_items(TransactItems=items)
            else:
                self.dynamodb.put_item(**put)
        except ClientError as error:
            code = error_code(error)
            if code == "ConditionalCheckFailedException":
                raise VersionConflict(payment.key) from error
            if code == "TransactionCanceledException":
                reasons = cancellation_reasons(error)
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    raise VersionConflict(payment.key) from error
                raise StorageUnavailable(f"transaction cancelled: {reasons}") from error
            raise StorageUnavailable(code) from error
        except BotoCoreError as error:
            raise StorageUnavailable(type(error).__name__) from error

    def _outbox_put(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "TableName": self.outbox_table,
            "Item": outbox_attributes(record),
            "ConditionExpression": "attribute_not_exists(pk)",
        }

    def record_attempt(self, event_pk: str, error: str, *, now: str | None = None) -> int:
        """Count a failed attempt on a still-pending item; returns the attempts so far. Never re-dispatches.

        `last_attempt_at` tells the sweeper the event is being worked on (it is not stale)."""
        return self.inbox.record_attempt(event_pk, error, now=now or iso_utc(datetime.now(UTC)))

    def record_wait(self, event_pk: str, *, until: str, waiting_for: WaitingFor, now: str) -> None:
        """The event waits for its source (an open circuit, the rate limit) until `until`: `wait_until` tells the
        sweeper it is not lost. No attempt is counted."""
        self.inbox.record_wait(event_pk, until=until, waiting_for=waiting_for, now=now)

    def mark_failed(self, event_pk: str, error: str, *, now: str, count_attempt: bool) -> None:
        """pending -> failed, with the reason. Failed events wait in the sparse index for a replay.

        With an outbox, one transaction with the `webhook.failed` outbox record: the item counts its failures
        (`failures`, a replayed event can fail again), and the record's sequence is that count, so the update is
        conditioned on the count we read as well as on the item still being pending."""
        if not self.outbox_table:
            self.inbox.fail(event_pk, error, now=now, counts_attempt=count_attempt)
            return
        item = self.load_event(event_pk)
        if item is None or item.get("status") != EventStatus.PENDING.value:
            raise EventAlreadySettled(event_pk)
        failures = int(item.get("failures") or 0)
        update = lifecycle.fail_update(
            event_pk, error=error, now=now, counts_attempt=count_attempt, failures_seen=failures
        )
        record = outbox.webhook_failed(
            item,
            failure=failures + 1,
            last_error=lifecycle.cut(error),
            attempts=int(item.get("attempts") or 0) + (1 if count_attempt else 0),
            failed_at=now,
        )
        try:
            items: list[Any] = [
                {"Update": self.inbox.update_request(event_pk, update)},
                {"Put": self._outbox_put(record)},
            ]
            self.dynamodb.transact_write_items(TransactItems=items)
        except ClientError as failure:
            code = error_code(failure)
            reasons = cancellation_reasons(failure)
            if code == "TransactionCanceledException" and reasons and reasons[0] == "ConditionalCheckFailed":
                raise EventAlreadySettled(event_pk) from failure
            raise StorageUnavailable(f"{code}: {reasons}" if reasons else code) from failure
        except BotoCoreError as failure:
            raise StorageUnavailable(type(failure).__name__) from failure
