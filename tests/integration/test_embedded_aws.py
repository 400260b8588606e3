"""The local stack's TransactWriteItems (conditions first, no table copies) keeps DynamoDB's all-or-nothing."""

from __future__ import annotations

import pytest
from moto.dynamodb.models import DynamoDBBackend

from inbox_local.embedded_aws import transact_write_items_conditions_first
from shared.inbox.model import EventStatus
from shared.inbox.store import EventAlreadySettled
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore, VersionConflict
from tests.integration.processing_support import store_event


@pytest.fixture
def store(aws_world, monkeypatch):
    monkeypatch.setattr(DynamoDBBackend, "transact_write_items", transact_write_items_conditions_first)
    return ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)


def a_payment(version: int) -> Payment:
    return Payment("stripe", "pi_1", PaymentStatus.PAID, "succeeded", 1000, "BRL", 0, version, 1, None, None, "t")


def test_both_writes_apply_together(aws_world, store):
    pk = store_event(aws_world.names)
    store.settle(pk, EventStatus.PROCESSED, now="t", note="n", payment=a_payment(1))
    assert store.load_payment("stripe#pi_1").version == 1
    assert store.load_event(pk)["status"] == "processed"


def test_a_failed_version_condition_writes_nothing(aws_world, store):
    pk = store_event(aws_world.names)
    store.settle(pk, EventStatus.PROCESSED, now="t", note="n", payment=a_payment(1))
    other = store_event(aws_world.names)
    with pytest.raises(VersionConflict):
        store.settle(other, EventStatus.PROCESSED, now="t", note="n", payment=a_payment(9), expected_version=5)
    assert store.load_event(other)["status"] == "pending"  # the inbox half did not apply either
    assert store.load_payment("stripe#pi_1").version == 1


def test_a_settled_event_cannot_be_settled_again_and_the_payment_is_untouched(aws_world, store):
    pk = store_event(aws_world.names)
    store.settle(pk, EventStatus.PROCESSED, now="t", note="n", payment=a_payment(1))
    with pytest.raises(EventAlreadySettled):
        store.settle(pk, EventStatus.PROCESSED, now="t", note="n", payment=a_payment(2), expected_version=1)
    assert store.load_payment("stripe#pi_1").version == 1
