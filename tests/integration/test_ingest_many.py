"""Several events in one delivery, against moto: one inbox item each, all stored or none, and each only once."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models import DynamoDBBackend

from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.faults import FaultInjector
from inbox_local.senders import sender_for
from shared.definitions import MAX_EVENTS_PER_DELIVERY, MULTI_EVENT_INLINE_BODY_BUDGET_BYTES
from shared.inbox.model import inline_body
from shared.inbox.store import InboxStore, PutOutcome, StorageUnavailable
from shared.ingest_batch import put_all_new
from shared.providers.base import WebhookRequest
from tests.integration.test_ingest_handler import deliver, stored_items

NOW = 1_718_221_503


def adyen_delivery(*psp_references: str, reason: str = "") -> WebhookRequest:
    """One signed Adyen delivery holding one CAPTURE item per pspReference (each item signed, as Adyen does)."""
    sender = sender_for("adyen")
    items: list[Any] = []
    for index, psp in enumerate(psp_references):
        body = sender.sample_body(
            event_id=psp, resource_id=f"pay_{psp}", status="paid", amount=1000 + index, occurred_at=NOW + index
        )
        item = json.loads(body)["notificationItems"][0]
        item["NotificationRequestItem"]["reason"] = reason
        items.append(item)
    body = json.dumps({"live": "false", "notificationItems": items}).encode()
    return sender.sign(body, DEV_SECRETS["adyen"], now=NOW)


def event_ids(aws_world: Any) -> list[str]:
    return sorted(item["event_id"] for item in stored_items(aws_world))


class TestOneItemPerEvent:
    def test_a_delivery_of_three_items_is_three_pending_events_each_re_verifiable(self, aws_world):
        # Given an authentic Adyen delivery of three notification items
        request = adyen_delivery("A", "B", "C")
        # When Adyen posts it
        status, answer = deliver("adyen", request)
        # Then it is accepted as Adyen documents, and each item is its own pending event of its own payment
        assert (status, answer) == (200, {"received": True, "notificationResponse": "[accepted]"})
        items = stored_items(aws_world)
        assert len(items) == 3
        assert {item["resource_id"] for item in items} == {"pay_A", "pay_B", "pay_C"}
        assert {item["status"] for item in items} == {"pending"}
        # and each keeps the whole delivery's raw body, so any one of them can be re-verified later
        assert {inline_body(item) for item in items} == {request.body}

    def test_a_retry_of_the_same_delivery_stores_nothing_twice(self, aws_world):
        # Given a delivery already stored (its answer lost: Adyen retries)
        request = adyen_delivery("A", "B")
        assert deliver("adyen", request)[0] == 200
        before = stored_items(aws_world)
        # When the same delivery comes again
        status, answer = deliver("adyen", request)
        # Then it is acknowledged as a duplicate and nothing changed
        assert (status, answer["duplicate"]) == (200, True)
        assert stored_items(aws_world) == before

    def test_an_event_stored_by_an_earlier_delivery_does_not_block_the_new_ones(self, aws_world):
        # Given event B already stored, alone, by an earlier delivery
        assert deliver("adyen", adyen_delivery("B"))[0] == 200
        [earlier] = stored_items(aws_world)
        # When a delivery of A, B and C comes (the transaction is cancelled for B: ConditionalCheckFailed)
        status, answer = deliver("adyen", adyen_delivery("A", "B", "C"))
        # Then A and C are stored, B is left as it was, and the delivery is accepted (not a 5xx forever)
        assert (status, answer) == (200, {"received": True, "notificationResponse": "[accepted]"})
        items = {item["resource_id"]: item for item in stored_items(aws_world)}
        assert sorted(items) == ["pay_A", "pay_B", "pay_C"]
        assert items["pay_B"] == earlier

    def test_an_event_repeated_inside_one_delivery_is_stored_once(self, aws_world):
        # Given a delivery holding the same item twice (DynamoDB refuses two actions on one item)
        status, _ = deliver("adyen", adyen_delivery("A", "A", "B"))
        # Then each event is stored once
        assert status == 200
        assert [item["resource_id"] for item in sorted(stored_items(aws_world), key=lambda i: i["resource_id"])] == [
            "pay_A",
            "pay_B",
        ]


class TestAllOrNothing:
    def test_a_storage_failure_stores_none_and_the_retry_stores_all(self, aws_world, monkeypatch):
        # Given DynamoDB throttling the delivery's transaction (every try botocore makes of it)
        original = DynamoDBBackend.transact_write_items
        outage = {"on": True}

        def throttled_once(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
            if outage["on"]:
                from moto.dynamodb.exceptions import DynamodbException

                raise DynamodbException("ProvisionedThroughputExceededException", "throttled")
            original(self, transact_items)

        monkeypatch.setattr(DynamoDBBackend, "transact_write_items", throttled_once)
        request = adyen_delivery("A", "B", "C")
        # When it is delivered, Then 503 and no event at all is stored (never part of a delivery)
        assert deliver("adyen", request)[0] == 503
        assert stored_items(aws_world) == []
        # When Adyen retries after the outage, Then every event is stored, once
        outage["on"] = False
        assert deliver("adyen", request) == (200, {"received": True, "notificationResponse": "[accepted]"})
        assert len(stored_items(aws_world)) == 3

    def test_a_cancelled_transaction_writes_none_of_its_items(self, aws_world):
        # Given B stored already, and a spy on what each transaction leaves behind
        store = InboxStore(aws_world.names.inbox_table)
        deliver("adyen", adyen_delivery("B"))
        items = _items_of(aws_world, adyen_delivery("A", "B", "C"))
        seen: list[int] = []
        real = store.dynamodb

        class Spy:
            def transact_write_items(self, **request: Any) -> Any:
                try:
                    return real.transact_write_items(**request)
                finally:
                    seen.append(len(stored_items(aws_world)))

        spy_store = InboxStore(store.table_name, dynamodb=Spy())  # type: ignore[arg-type]
        # When the three are put together
        outcomes = put_all_new(spy_store, items)
        # Then the first transaction (cancelled for B) wrote nothing: still 1 item; the second wrote A and C
        assert seen == [1, 3]
        assert outcomes == [PutOutcome.STORED, PutOutcome.DUPLICATE, PutOutcome.STORED]

    def test_a_delivery_with_more_events_than_a_transaction_holds_is_refused_whole_and_recorded(self, aws_world):
        # Given an authentic delivery of one event more than one transaction stores
        request = adyen_delivery(*(f"P{index}" for index in range(MAX_EVENTS_PER_DELIVERY + 1)))
        # When it is delivered
        status, answer = deliver("adyen", request)
        # Then 413 with a clear reason, nothing stored, and the refusal is in the rejected-delivery log
        assert status == 413
        assert f"at most {MAX_EVENTS_PER_DELIVERY}" in answer["error"]
        assert stored_items(aws_world) == []
        dynamodb = aws_world.session.client("dynamodb")
        records = dynamodb.scan(TableName=aws_world.names.rejected_table)["Items"]
        assert [record["reason"]["S"] for record in records] == ["too_many_events"]

    def test_a_delivery_of_exactly_the_limit_is_stored(self, aws_world):
        request = adyen_delivery(*(f"P{index}" for index in range(MAX_EVENTS_PER_DELIVERY)))
        assert deliver("adyen", request)[0] == 200
        assert len(stored_items(aws_world)) == MAX_EVENTS_PER_DELIVERY

    def test_a_body_whose_copies_exceed_the_budget_is_kept_once_in_s3(self, aws_world):
        # Given a delivery of 50 events whose body, copied into each item, would exceed the inline budget
        request = adyen_delivery(*(f"P{index}" for index in range(50)), reason="x" * 1000)
        assert len(request.body) * 50 > MULTI_EVENT_INLINE_BODY_BUDGET_BYTES
        # When it is delivered
        assert deliver("adyen", request)[0] == 200
        # Then every item points at one S3 object holding the raw body
        items = stored_items(aws_world)
        keys = {item.get("body_s3_key") for item in items}
        assert len(items) == 50 and len(keys) == 1 and None not in keys
        store = InboxStore(aws_world.names.inbox_table, aws_world.names.body_bucket)
        assert store.read_body(items[0]) == request.body


def test_two_identical_deliveries_at_once_store_each_event_once(aws_world):
    # Given the same delivery of three events posted twice at the same moment (a gateway's retry racing it)
    request = adyen_delivery("A", "B", "C")
    barrier = threading.Barrier(2)
    answers: list[int] = []

    def post() -> None:
        barrier.wait()
        answers.append(deliver("adyen", request)[0])

    workers = [threading.Thread(target=post) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # Then both are acknowledged, and each event is stored exactly once
    assert answers == [200, 200]
    assert event_ids(aws_world) == sorted({item["event_id"] for item in stored_items(aws_world)})
    assert len(stored_items(aws_world)) == 3


class Cancelling:
    """A DynamoDB client whose every transaction is cancelled with these reasons (one per item)."""

    def __init__(self, *reasons: str) -> None:
        self.reasons = reasons
        self.calls = 0

    def transact_write_items(self, **_: Any) -> Any:
        self.calls += 1
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": reason} for reason in self.reasons],
            },
            "TransactWriteItems",
        )


def test_an_unknown_refusal_is_a_storage_failure_not_a_duplicate(aws_world):
    # Given a transaction refused for a reason that is neither a duplicate nor a conflict (throttling)
    store = InboxStore(aws_world.names.inbox_table, dynamodb=Cancelling("ThrottlingError", "None"))  # type: ignore[arg-type]
    items = _items_of(aws_world, adyen_delivery("A", "B"))
    # Then it is StorageUnavailable (a 5xx: the gateway retries), never counted as stored or duplicate
    with pytest.raises(StorageUnavailable, match="TransactionCanceledException"):
        put_all_new(store, items)


def test_the_local_stacks_throttle_fault_cancels_a_delivery_of_several_events_whole(aws_world):
    # Given the local stack's ingest throttle (the fault `inbox chaos` and the ingest fuzz use) on every write: it
    # used to throttle PutItem only, so a delivery of several events (one TransactWriteItems) went through it
    injector = FaultInjector()
    store = injector.throttled_inbox_store(InboxStore(aws_world.names.inbox_table))
    injector.configure({"ingest_throttle_rate": 1.0})
    items = _items_of(aws_world, adyen_delivery("A", "B"))
    # When the delivery's events are stored, Then the transaction is cancelled as a throttled one is (a 5xx the
    # gateway retries), the fault is counted once, and nothing is written
    with pytest.raises(StorageUnavailable, match="TransactionCanceledException"):
        put_all_new(store, items)
    assert injector.counters()["ingest_throttle"] == 1
    assert stored_items(aws_world) == []


def test_conflicts_are_retried_then_given_up_as_a_storage_failure(aws_world):
    # Given a transaction that always conflicts with another one
    conflicting = Cancelling("TransactionConflict", "None")
    store = InboxStore(aws_world.names.inbox_table, dynamodb=conflicting)  # type: ignore[arg-type]
    items = _items_of(aws_world, adyen_delivery("A", "B"))
    with pytest.raises(StorageUnavailable, match="kept conflicting"):
        put_all_new(store, items, sleep=lambda _: None)
    assert conflicting.calls == 4  # bounded: MAX_ROUNDS transactions, then the gateway's retry takes over


def _items_of(aws_world: Any, request: WebhookRequest) -> list[dict[str, Any]]:
    """The items the ingest would build for `request` (to drive put_all_new directly)."""
    from datetime import UTC, datetime

    from shared.inbox.model import StoredBody, build_item
    from shared.providers.registry import get_driver

    driver = get_driver("adyen")
    body = StoredBody(sha256="0" * 64, size=len(request.body), inline=request.body)
    return [
        build_item(
            provider="adyen",
            event_id=event.event_id,
            event=event,
            request=request,
            replay_headers=(),
            body=body,
            received_at=datetime.fromtimestamp(NOW, UTC),
            retention_days=30,
        )
        for event in driver.parse_many(request)  # type: ignore[attr-defined]
    ]
