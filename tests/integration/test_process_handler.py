"""The processor Lambda's handler on a real (moto) SQS FIFO batch: partial failures keep each payment's order
and never hold up the other payments."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.process.handler import lambda_handler
from inbox_local.gateway_simulator import running_simulator
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.queue_mapping import lambda_sqs_record
from shared.gateway.registry import reset_gateway_clients
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.process.app import default_processor
from tests.integration.processing_support import store_event


@pytest.fixture
def gateway(aws_world, monkeypatch):
    with running_simulator(seed=5) as simulator:
        for name, value in simulator.environment().items():
            monkeypatch.setenv(name, value)
        aws_world.store_api_keys(simulator.api_keys)
        monkeypatch.setenv("INBOX_QUEUE_URL", aws_world.resources["queue_url"])
        monkeypatch.setenv("INBOX_DLQ_URL", aws_world.resources["dead_letter_url"])
        reset_gateway_clients()
        default_processor.reset()
        yield simulator
        reset_gateway_clients()
        default_processor.reset()


def enqueue(aws_world, pk: str, group: str) -> None:
    aws_world.session.client("sqs").send_message(
        QueueUrl=aws_world.resources["queue_url"],
        MessageBody=json.dumps({"pk": pk, "dispatch_id": pk, "dispatch_reason": "received"}),
        MessageGroupId=group,
        MessageDeduplicationId=pk,
    )


def receive(aws_world, max_messages: int = 10) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = (
        aws_world.session.client("sqs")
        .receive_message(
            QueueUrl=aws_world.resources["queue_url"],
            MaxNumberOfMessages=max_messages,
            MessageSystemAttributeNames=["All"],
        )
        .get("Messages", [])
    )
    return messages


def test_a_failing_payment_holds_only_its_own_group(aws_world, gateway):
    # Given payment A is unknown to the gateway (its webhook raced the API) and payment B is paid
    known = gateway.create_payment("stripe", 1990)
    gateway.transition("stripe", known, PaymentStatus.PAID)
    a1 = store_event(aws_world.names, resource_id="pi_unknown", amount=1990)
    a2 = store_event(aws_world.names, resource_id="pi_unknown", amount=1990)
    b1 = store_event(aws_world.names, resource_id=known, amount=1990)
    for pk, group in ((a1, "stripe#pi_unknown"), (a2, "stripe#pi_unknown"), (b1, f"stripe#{known}")):
        enqueue(aws_world, pk, group)
    messages = receive(aws_world)
    assert len(messages) == 3
    event = {"Records": [lambda_sqs_record(m, "arn:aws:sqs:us-east-1:123456789012:q.fifo") for m in messages]}
    ids = {json.loads(m["Body"])["pk"]: m["MessageId"] for m in messages}

    # When the processor handles the batch
    response = lambda_handler(event, LocalLambdaContext("process"))

    # Then A's two messages are reported failed (A1 retried with backoff, A2 skipped to keep the order),
    # and B's payment is applied
    assert {failure["itemIdentifier"] for failure in response["batchItemFailures"]} == {ids[a1], ids[a2]}
    inbox = InboxStore(aws_world.names.inbox_table)
    settled_b1, retried_a1, skipped_a2 = inbox.get(b1), inbox.get(a1), inbox.get(a2)
    assert settled_b1 is not None and retried_a1 is not None and skipped_a2 is not None
    assert settled_b1["status"] == "processed"
    assert retried_a1["attempts"] == 1
    assert "ResourceNotFound" in retried_a1["last_error"]
    assert skipped_a2["attempts"] == 0  # skipped, not attempted
    # And A2, released at once, still cannot overtake A1, which waits out its backoff
    assert receive(aws_world) == []
    # When A1's backoff ends, A1 and A2 come back together, in order (A2 did not wait a visibility timeout)
    a1_receipt = next(m["ReceiptHandle"] for m in messages if m["MessageId"] == ids[a1])
    aws_world.session.client("sqs").change_message_visibility(
        QueueUrl=aws_world.resources["queue_url"], ReceiptHandle=a1_receipt, VisibilityTimeout=0
    )
    assert [json.loads(m["Body"])["pk"] for m in receive(aws_world)] == [a1, a2]


def test_a_malformed_message_is_parked_in_the_dead_letter_queue_and_acknowledged(aws_world, gateway):
    sqs = aws_world.session.client("sqs")
    sqs.send_message(
        QueueUrl=aws_world.resources["queue_url"],
        MessageBody="not json",
        MessageGroupId="g",
        MessageDeduplicationId="m",
    )
    messages = receive(aws_world)
    event = {"Records": [lambda_sqs_record(m, "arn:aws:sqs:us-east-1:123456789012:q.fifo") for m in messages]}
    assert lambda_handler(event, LocalLambdaContext("process")) == {"batchItemFailures": []}
    parked = sqs.receive_message(QueueUrl=aws_world.resources["dead_letter_url"]).get("Messages", [])
    assert [m["Body"] for m in parked] == ["not json"]
