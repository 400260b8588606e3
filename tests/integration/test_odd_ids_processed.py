"""Ids SQS would refuse as FIFO group ids (a space, non-ASCII, 200 characters) still end processed: ingest -> the
Pipe -> the FIFO queue -> the processor, on moto holding AWS's limits (inbox_local/aws_limits.py)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox_local import aws_limits
from shared import aws
from shared.inbox.model import fifo_group_id, is_valid_fifo_id, resource_key
from shared.inbox.store import InboxStore
from tests.integration.operations_support import drain, mapping_for, pipe_for, real_processor
from tests.integration.processing_support import FakeGateway, store_event
from tests.integration.test_ingest_handler import deliver, signed_delivery

ODD_IDS = {"space": "pay with space", "non-ascii": "pagamento-ção-✓", "200 characters": "p" * 200}


@pytest.mark.parametrize("provider", ["generic", "standard"])
@pytest.mark.parametrize("odd", list(ODD_IDS.values()), ids=list(ODD_IDS))
def test_an_event_with_an_odd_resource_and_event_id_ends_processed(aws_world: Any, provider: str, odd: str) -> None:
    # Given a signed delivery whose event id and payment (resource) id SQS would refuse as group ids
    transactions: list[list[dict[str, Any]]] = []
    aws.dynamodb().meta.events.register(
        "provide-client-params.dynamodb.TransactWriteItems",
        lambda params, **_: transactions.append(params["TransactItems"]),
    )
    request = signed_delivery(provider, event_id=f"evt {odd}", resource_id=odd)
    # When it is ingested, the Pipe forwards the stream and the processor drains the queue
    assert deliver(provider, request)[0] == 200
    assert pipe_for(aws_world).poll_once() == 1
    assert drain(mapping_for(aws_world, real_processor(aws_world, FakeGateway()))) == 1
    # Then the event is processed, its payment is stored, and the item's group is the payment key's derived id
    (item,) = InboxStore(aws_world.names.inbox_table).scan()
    assert item["status"] == "processed", item.get("last_error")
    assert item["group_id"] == fifo_group_id(resource_key(provider, odd))
    assert is_valid_fifo_id(item["group_id"])
    payment = aws_world.session.client("dynamodb").get_item(
        TableName=aws_world.names.payments_table, Key={"pk": {"S": resource_key(provider, odd)}}
    )
    assert payment["Item"]["status"]["S"] == "paid"
    # ... and the processor's transaction stayed within TransactWriteItems' limits (100 actions, 4 MB)
    assert transactions
    for actions in transactions:
        aws_limits.check_transaction(actions)
        assert len(actions) <= aws_limits.DYNAMODB_MAX_TRANSACTION_ACTIONS


def test_an_event_with_no_resource_is_a_group_of_its_own_derived_from_its_key(aws_world: Any) -> None:
    # Given an event with no resource and an event id SQS would refuse as a group id
    odd_id = "evt with space " + "é" * 100
    pk = store_event(aws_world.names, provider="generic", event_id=odd_id, resource_id="")  # "": no resource
    # When its item is stored, Then its group is its own key, derived into a valid group id
    (item,) = InboxStore(aws_world.names.inbox_table).scan()
    assert item["pk"] == pk
    assert item["group_id"] == fifo_group_id(pk)
    assert is_valid_fifo_id(item["group_id"])
