"""Coalescing against moto: one refetch serves the events of one payment in one batch, each event still settling in
order; never across a failure, a retry or a batch; and it never changes where a payment ends."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_local.queue_mapping import lambda_sqs_record
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.app import process_batch
from tests.integration.processing_support import BASE_TIME, FakeGateway, RecordingQueue, make_processor, store_event
from tests.integration.test_processing_properties import LIFECYCLES

S = PaymentStatus
_ids = itertools.count()


def status_of(aws_world, pk: str) -> str:
    item = InboxStore(aws_world.names.inbox_table).get(pk)
    assert item is not None
    return str(item["status"])


def record(pk: str, group: str) -> dict[str, Any]:
    """A queue record as Lambda hands it over (the receipt handle is only used by the recording queue)."""
    return {
        "messageId": f"m-{pk}",
        "receiptHandle": f"r-{pk}",
        "body": json.dumps({"pk": pk}),
        "attributes": {"MessageGroupId": group, "ApproximateReceiveCount": "1"},
    }


def test_three_events_of_one_payment_in_one_sqs_batch_take_one_refetch(aws_world):
    # Given payment pi_1 paid at the gateway, three of its webhooks and one of another payment, in one FIFO batch
    gateway, queue = FakeGateway(), RecordingQueue()
    gateway.set("pi_1", S.PAID)
    gateway.set("pi_2", S.PAID)
    processor = make_processor(aws_world.names, gateway, queue)
    events = [
        (store_event(aws_world.names, resource_id=resource, event_type=kind), f"stripe#{resource}")
        for resource, kind in [
            ("pi_1", "payment_intent.created"),
            ("pi_1", "charge.succeeded"),
            ("pi_2", "payment_intent.succeeded"),
            ("pi_1", "payment_intent.succeeded"),
        ]
    ]
    sqs = aws_world.session.client("sqs")
    url = aws_world.resources["queue_url"]
    for pk, group in events:
        sqs.send_message(
            QueueUrl=url, MessageBody=json.dumps({"pk": pk}), MessageGroupId=group, MessageDeduplicationId=pk
        )
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"])[
        "Messages"
    ]
    assert len(messages) == 4

    # When the processor handles the batch
    response = process_batch(
        {"Records": [lambda_sqs_record(m, "arn:aws:sqs:us-east-1:1:q.fifo") for m in messages]}, None, processor
    )

    # Then nothing failed, pi_1 took one refetch for its three events (pi_2 one of its own)
    assert response == {"batchItemFailures": []}
    assert gateway.fetches == 2
    # And pi_1's first event applied the change, the later two found nothing to change
    assert [status_of(aws_world, pk) for pk, _ in events] == ["processed", "ignored", "processed", "ignored"]
    payment = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment("stripe#pi_1")
    assert payment is not None and (payment.status, payment.version) == (S.PAID, 1)


def test_a_failed_event_is_a_boundary_the_next_event_reads_again(aws_world):
    # Given three events of pi_1 in one batch, the second stating an amount the gateway disagrees with
    gateway, queue = FakeGateway(), RecordingQueue()
    gateway.set("pi_1", S.PAID, amount=1000)
    processor = make_processor(aws_world.names, gateway, queue)
    pks = [store_event(aws_world.names, amount=amount) for amount in (1000, 999, 1000)]
    # When the batch is processed
    response = process_batch({"Records": [record(pk, "stripe#pi_1") for pk in pks]}, None, processor)
    # Then the second is failed (not retried: the group goes on), and the third did not reuse the read before it
    assert response == {"batchItemFailures": []}
    assert [status_of(aws_world, pk) for pk in pks] == ["processed", "failed", "ignored"]
    assert gateway.fetches == 2


def test_a_retry_stops_the_group_and_the_next_batch_reads_again(aws_world):
    # Given pi_1 unknown to the gateway yet (its webhooks raced the API), two of its events in one batch
    gateway, queue = FakeGateway(), RecordingQueue()
    processor = make_processor(aws_world.names, gateway, queue)
    pks = [store_event(aws_world.names) for _ in range(2)]
    batch = {"Records": [record(pk, "stripe#pi_1") for pk in pks]}
    # When the batch runs: the first is retried, the second is not attempted
    assert len(process_batch(batch, None, processor)["batchItemFailures"]) == 2
    assert gateway.fetches == 1
    # And when the payment exists and the same messages come back in a new batch, it is read again there
    gateway.set("pi_1", S.PAID)
    assert process_batch(batch, None, processor) == {"batchItemFailures": []}
    assert gateway.fetches == 2
    assert [status_of(aws_world, pk) for pk in pks] == ["processed", "ignored"]


@st.composite
def batched_schedules(draw):
    """A lifecycle, the batch before which the gateway reaches each step (nondecreasing), and the batches: each step's
    webhook delivered 1-3 times, each copy in a batch at or after its step's, in any order within a batch."""
    lifecycle = draw(st.sampled_from(LIFECYCLES))
    batches = draw(st.integers(min_value=1, max_value=4))
    reached = sorted(draw(st.lists(st.integers(0, batches - 1), min_size=len(lifecycle), max_size=len(lifecycle))))
    reached[0] = 0
    contents: list[list[int]] = [[] for _ in range(batches)]
    for step in range(len(lifecycle)):
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            contents[draw(st.integers(reached[step], batches - 1))].append(step)
    return lifecycle, reached, [draw(st.permutations(content)) for content in contents]


def play(aws_world, lifecycle, reached, batches, *, coalesce: bool):
    gateway, queue = FakeGateway(), RecordingQueue()
    processor = make_processor(aws_world.names, gateway, queue)
    resource_id = f"pi_c{next(_ids)}"
    for number, content in enumerate(batches):
        for step, (status, refunded) in enumerate(lifecycle):
            if reached[step] == number:
                gateway.set(resource_id, status, refunded=refunded)
        pks = [
            store_event(
                aws_world.names,
                event_id=f"{resource_id}_step{step}",  # a redelivery keeps its id: the inbox absorbs it
                resource_id=resource_id,
                event_type="payment_intent.updated",
                status=lifecycle[step][0].value,
                occurred_at=BASE_TIME + timedelta(seconds=step),
            )
            for step in content
        ]
        records = [record(pk, f"stripe#{resource_id}") | {"messageId": f"m{n}"} for n, pk in enumerate(pks)]
        assert process_batch({"Records": records}, None, processor, coalesce=coalesce) == {"batchItemFailures": []}
    stored = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment(
        f"stripe#{resource_id}"
    )
    statuses = {status_of(aws_world, f"stripe#{resource_id}_step{step}") for step in range(len(lifecycle))}
    return stored, statuses, gateway.fetches


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=batched_schedules())
def test_coalescing_never_changes_where_a_payment_ends(aws_world, case):
    # Given the same schedule of batches played with and without coalescing
    lifecycle, reached, batches = case
    coalesced, coalesced_statuses, coalesced_fetches = play(aws_world, lifecycle, reached, batches, coalesce=True)
    plain, plain_statuses, plain_fetches = play(aws_world, lifecycle, reached, batches, coalesce=False)
    # Then the payment ends the same, in the gateway's final state, every event settled either way
    final = (lifecycle[-1][0], lifecycle[-1][1])
    assert (coalesced.status, coalesced.amount_refunded) == (plain.status, plain.amount_refunded) == final
    assert (coalesced.amount, coalesced.currency) == (plain.amount, plain.currency)
    assert coalesced_statuses <= {"processed", "ignored"} and plain_statuses <= {"processed", "ignored"}
    # And never with more refetches: at most one per batch that holds the payment's events
    assert coalesced_fetches <= plain_fetches
    assert coalesced_fetches <= sum(1 for content in batches if content)


@pytest.mark.parametrize("coalesce", [True, False])
def test_a_batch_of_only_redeliveries_reads_nothing(aws_world, coalesce):
    gateway, queue = FakeGateway(), RecordingQueue()
    gateway.set("pi_1", S.PAID)
    processor = make_processor(aws_world.names, gateway, queue)
    pk = store_event(aws_world.names)
    process_batch({"Records": [record(pk, "stripe#pi_1")]}, None, processor, coalesce=coalesce)
    fetches = gateway.fetches
    process_batch({"Records": [record(pk, "stripe#pi_1")] * 2}, None, processor, coalesce=coalesce)
    assert gateway.fetches == fetches
