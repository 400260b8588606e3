"""The published contract, twice: docs/events.schema.json (for receivers) and the pydantic models the downstream
functions check every event with (shared/payments/events.py). They accept the real events and refuse the same
broken ones; a broken event fails its batch before anything is published."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest

from shared.payments import outbox
from shared.payments.events import ContractViolation, check_published
from shared.payments.model import Payment
from shared.payments.outbox import published_event
from shared.payments.publishing import BusPublisher
from shared.payments.status import PaymentStatus
from tests.integration.test_downstream_functions import FlakyEvents, stream_records
from tests.integration.test_outbox import SCHEMA, outbox_items, three_payments

FAILED = outbox.webhook_failed(
    {"pk": "stripe#evt_9", "provider": "stripe", "event_id": "evt_9", "event_type": "charge.succeeded"},
    failure=1,
    last_error="ResourceNotFound: pi_9",
    attempts=8,
    failed_at="2026-11-29T12:00:00.123Z",
)

# The API confirmed a status a signed payload applied (shared/process/confirm.py).
VERIFIED = outbox.payment_verified(
    Payment(
        "stripe", "pi_9", PaymentStatus.PAID, "succeeded", 1000, "BRL", 0, 3, 2, None, "evt_9", "2026-11-29T12:00:00Z"
    ),
    created_at="2026-11-29T12:00:01.5Z",
)


def real_events(world: Any) -> list[dict[str, Any]]:
    three_payments(world)
    return [published_event(item) for item in outbox_items(world)] + [
        published_event(FAILED),
        published_event(VERIFIED),
    ]


def schema_accepts(event: dict[str, Any]) -> bool:
    return not list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(event))


def model_accepts(event: dict[str, Any]) -> bool:
    try:
        check_published(event)
    except ContractViolation:
        return False
    return True


BREAKAGES = {
    "unknown status": lambda e: e.update(new_status="settled") if "new_status" in e else e.update(type="x"),
    "sequence 0": lambda e: e.update(sequence=0),
    "sequence as text": lambda e: e.update(sequence="3"),
    "wrong schema version": lambda e: e.update(schema_version="2"),
    "id of the other kind": lambda e: e.update(id="xx_" + "0" * 32),
    "timestamp with an offset": lambda e: e.update(created_at="2026-11-29T12:00:00+00:00"),
    "a required field missing": lambda e: e.pop("id"),
    "amount as a float": lambda e: e.update(amount=10.5) if "amount" in e else e.update(attempts=1.5),
}


def test_every_real_event_meets_both(aws_world: Any) -> None:
    events = real_events(aws_world)
    assert {e["type"] for e in events} == {"payment.status_changed", "webhook.failed", "payment.verified"}
    for event in events:
        assert schema_accepts(event), event
        assert model_accepts(event), event


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_both_refuse_the_same_broken_events(aws_world: Any, breakage: str) -> None:
    for event in real_events(aws_world):
        broken = copy.deepcopy(event)
        BREAKAGES[breakage](broken)
        assert not schema_accepts(broken), (breakage, broken)
        assert not model_accepts(broken), (breakage, broken)


def test_unknown_properties_are_allowed_by_both(aws_world: Any) -> None:
    for event in real_events(aws_world):
        extended = {**event, "a_future_optional_field": 1}
        assert schema_accepts(extended) and model_accepts(extended)


def test_a_broken_record_fails_the_batch_before_anything_is_published(aws_world: Any) -> None:
    # Given the stream's twelve records, the eleventh of them corrupted (a bug in the outbox writer, say)
    three_payments(aws_world)
    records = stream_records(aws_world)
    records[10]["dynamodb"]["NewImage"]["new_status"] = {"S": "settled"}
    bus = FlakyEvents({})
    # When the publisher handles the batch
    with pytest.raises(ContractViolation, match="new_status"):
        BusPublisher(events=bus, bus_name="bus").publish(records)
    # Then not even the first ten went out: the Pipe retries the batch, then dead-letters it (an alarm fires)
    assert bus.calls == []
