"""The AWS side of downstream, against moto: the publisher Lambda's work (outbox stream batch -> the event bus, in
order, failed entries retried) and the forwarder Lambda's (outbox stream batch -> signed POSTs, in order,
checkpointed, within its time budget, secrets from Secrets Manager with rotation)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from functions.forwarder import handler as forwarder_handler
from functions.publisher import handler as publisher_handler
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.stream_reader import StreamReader
from shared import definitions, forwarding
from shared.forwarding import DeliveryFailed, ForwardCheckpoints, Forwarder, forward_stream_batch
from shared.payments.outbox import published_event
from shared.payments.publishing import BusPublisher, PublishFailed, outbox_events, publish_outbox_batch
from shared.roots import AwsClients
from tests.integration.test_outbox import (
    PREVIOUS_SECRET,
    SECRET,
    Receiver,
    assert_each_payment_in_order,
    outbox_items,
    receiver,
    three_payments,
)

__all__ = ["receiver"]  # the fixture, shared with test_outbox.py


@pytest.fixture
def lambda_context() -> LocalLambdaContext:
    return LocalLambdaContext("downstream", timeout_seconds=120)


BUS = "webhook-inbox-test-events"


def stream_records(world: Any) -> list[dict[str, Any]]:
    """Every record of the outbox stream so far, as a Pipe hands them over (the stream's record shape)."""
    reader = StreamReader(world.session.client("dynamodbstreams"), world.resources["outbox_stream_arn"])
    records: list[dict[str, Any]] = []
    while reader.poll(records.extend):
        pass
    return records


def bus_with_a_queue(world: Any) -> Callable[[], list[dict[str, Any]]]:
    """A bus with a rule sending every webhook-inbox event to a queue; returns a function draining that queue."""
    events, sqs = world.session.client("events"), world.session.client("sqs")
    events.create_event_bus(Name=BUS)
    queue_url = sqs.create_queue(QueueName="bus-tap")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="tap", EventBusName=BUS, EventPattern=json.dumps({"source": ["webhook-inbox"]}))
    events.put_targets(Rule="tap", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": queue_arn}])

    def drain() -> list[dict[str, Any]]:
        received: list[dict[str, Any]] = []
        while True:
            batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return received
            received.extend(json.loads(message["Body"]) for message in batch)

    return drain


# ------------------------------------------------------------------------------------------------- publisher
def test_the_publisher_puts_every_outbox_record_on_the_bus_in_order(aws_world: Any) -> None:
    # Given three payments' twelve transitions in the outbox, and a bus with a rule tapping it
    three_payments(aws_world)
    drain = bus_with_a_queue(aws_world)
    publisher = BusPublisher(events=aws_world.session.client("events"), bus_name=BUS)
    # When the publisher handles the stream's records as the Pipe would hand them
    answer = publish_outbox_batch(stream_records(aws_world), publisher)
    # Then each is on the bus once: source, detail-type = its type, detail = the documented event
    received = drain()
    assert answer == {"published": 12} and len(received) == 12
    assert {(e["source"], e["detail-type"]) for e in received} == {("webhook-inbox", "payment.status_changed")}
    details = [e["detail"] for e in received]
    expected = {item["id"]: published_event(item) for item in outbox_items(aws_world)}
    assert {d["id"]: d for d in details} == expected
    assert_each_payment_in_order(details)


class FlakyEvents:
    """PutEvents that refuses some entries (by id) a number of times, recording every call's ids."""

    def __init__(self, refusals: dict[str, int]) -> None:
        self.refusals = dict(refusals)
        self.calls: list[list[str]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        ids = [json.loads(entry["Detail"])["id"] for entry in Entries]
        self.calls.append(ids)
        results = []
        for event_id in ids:
            if self.refusals.get(event_id, 0) > 0:
                self.refusals[event_id] -= 1
                results.append({"ErrorCode": "ThrottlingException", "ErrorMessage": "slow down"})
            else:
                results.append({"EventId": f"bus-{event_id}"})
        return {"FailedEntryCount": sum(1 for r in results if "ErrorCode" in r), "Entries": results}


def test_entries_the_bus_refuses_are_retried_in_order_and_only_they(aws_world: Any) -> None:
    # Given twelve records, and a bus that throttles the 2nd and the 5th entry twice
    three_payments(aws_world)
    records = stream_records(aws_world)
    ids = [item["id"] for item in outbox_items(aws_world)]
    order = [json.loads(BusPublisher(events=None, bus_name=BUS).entry(e)["Detail"])["id"] for e in _events(records)]
    flaky = FlakyEvents({order[1]: 2, order[4]: 2})
    # When the batch is published
    published = BusPublisher(events=flaky, bus_name=BUS, sleep=lambda _: None).publish(records)
    # Then: first call of ten, two retries of just those two (in order), then the last two
    assert published == 12 and sorted(order) == sorted(ids)
    assert flaky.calls == [order[:10], [order[1], order[4]], [order[1], order[4]], order[10:]]


def test_a_bus_that_keeps_refusing_fails_the_batch_for_the_pipe_to_retry(aws_world: Any) -> None:
    three_payments(aws_world)
    records = stream_records(aws_world)
    first = json.loads(BusPublisher(events=None, bus_name=BUS).entry(_events(records)[0])["Detail"])["id"]
    flaky = FlakyEvents({first: 100})
    with pytest.raises(PublishFailed, match="ThrottlingException"):
        BusPublisher(events=flaky, bus_name=BUS, sleep=lambda _: None, max_rounds=3).publish(records)
    assert len(flaky.calls) == 3  # the chunk, then two retries of the refused entry; never the later chunk


def test_only_inserts_are_published(aws_world: Any) -> None:
    three_payments(aws_world)
    records = stream_records(aws_world)
    removal = {**records[0], "eventName": "REMOVE"}
    flaky = FlakyEvents({})
    assert BusPublisher(events=flaky, bus_name=BUS).publish([removal]) == 0
    assert flaky.calls == []


def _events(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return outbox_events(records)


def test_the_publisher_handler_reads_its_bus_from_the_environment(
    aws_world: Any, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    three_payments(aws_world)
    drain = bus_with_a_queue(aws_world)
    monkeypatch.setenv("INBOX_EVENT_BUS_NAME", BUS)
    assert publisher_handler.lambda_handler(stream_records(aws_world), lambda_context) == {"published": 12}
    assert len(drain()) == 12


# ------------------------------------------------------------------------------------------------- forwarder
def forwarder(url: str, secrets: tuple[str, ...] = (SECRET, PREVIOUS_SECRET)) -> Forwarder:
    return Forwarder(url=url, secrets=secrets, max_attempts=2, timeout_seconds=5, sleep=lambda _: None)


def test_the_forwarder_delivers_a_batch_in_order_once_and_a_retried_batch_sends_nothing_again(
    aws_world: Any, receiver: Receiver
) -> None:
    three_payments(aws_world)
    records = stream_records(aws_world)
    checkpoints = ForwardCheckpoints(aws_world.session.client("dynamodb"), aws_world.names.control_table)
    # When the Pipe hands the batch over, then hands it over again (a retry after a timeout, say)
    first = forward_stream_batch(
        records, remaining_seconds=lambda: 100, forwarder=forwarder(receiver.url), checkpoints=checkpoints
    )
    fresh = ForwardCheckpoints(aws_world.session.client("dynamodb"), aws_world.names.control_table)  # new container
    again = forward_stream_batch(
        records, remaining_seconds=lambda: 100, forwarder=forwarder(receiver.url), checkpoints=fresh
    )
    # Then every event arrived once, in order per payment, and the retry sent nothing
    assert first == {"forwarded": 12} and again == {"forwarded": 0}
    assert receiver.requests == 12 and len(receiver.accepted) == 12
    assert_each_payment_in_order(receiver.order)


def test_the_forwarder_starts_no_delivery_it_may_not_finish_and_the_retry_resumes(
    aws_world: Any, receiver: Receiver
) -> None:
    three_payments(aws_world)
    records = stream_records(aws_world)
    checkpoints = ForwardCheckpoints(aws_world.session.client("dynamodb"), aws_world.names.control_table)
    delivery = forwarder(receiver.url)
    needed = forwarding.worst_delivery_seconds(delivery) + forwarding.FORWARDER_START_MARGIN_SECONDS
    clock = iter([needed + 1] * 5 + [needed - 1] * 100)  # time for five deliveries, then not
    # When the invocation runs short of time
    with pytest.raises(DeliveryFailed, match="no time left"):
        forward_stream_batch(
            records, remaining_seconds=lambda: next(clock), forwarder=delivery, checkpoints=checkpoints
        )
    assert receiver.requests == 5
    # Then the Pipe's retry resumes after the fifth, nothing sent twice
    assert forward_stream_batch(
        records, remaining_seconds=lambda: 100, forwarder=delivery, checkpoints=checkpoints
    ) == {"forwarded": 7}
    assert receiver.requests == 12
    assert_each_payment_in_order(receiver.order)


def test_the_forwarder_handler_signs_with_both_secrets_of_its_secrets_manager_pair(
    aws_world: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    # Given the forwarding secret in Secrets Manager during a rotation (current and previous)
    three_payments(aws_world)
    aws_world.session.client("secretsmanager").create_secret(
        Name="stack/forward-signing", SecretString=json.dumps({"current": SECRET, "previous": PREVIOUS_SECRET})
    )
    monkeypatch.setenv(definitions.ENV_FORWARD_URL, receiver.url)
    monkeypatch.setenv(definitions.ENV_FORWARD_SECRET_NAME, "stack/forward-signing")
    monkeypatch.setenv(definitions.ENV_CONTROL_TABLE, aws_world.names.control_table)
    dynamodb = aws_world.session.client("dynamodb")
    forwarding.default_forwarder_root.install(
        forwarding.build_forwarder(
            forwarding.ForwarderSettings.from_environ(),
            forwarding.LogSettings.from_environ(),
            clients=AwsClients(dynamodb=dynamodb),
        )
    )
    # When the handler gets the Pipe's batch
    answer = forwarder_handler.lambda_handler(stream_records(aws_world), lambda_context)
    # Then all twelve arrived, and each verifies with either secret alone (the official library)
    assert answer == {"forwarded": 12}
    assert receiver.bad_signatures == 0 and len(receiver.raw) == 12  # (the receiver holds the previous secret)
    for body, headers in receiver.raw:
        assert len(headers["webhook-signature"].split()) == 2
        for secret in (SECRET, PREVIOUS_SECRET):
            assert Webhook(secret).verify(body, headers)["id"] == headers["webhook-id"]


def test_a_missing_forwarding_secret_fails_the_batch_without_sending(
    aws_world: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_payments(aws_world)
    monkeypatch.setenv(definitions.ENV_FORWARD_URL, receiver.url)
    monkeypatch.setenv(definitions.ENV_FORWARD_SECRET_NAME, "stack/absent")
    from shared.secrets import SecretUnavailable

    with pytest.raises(SecretUnavailable):
        forward_stream_batch(stream_records(aws_world), remaining_seconds=lambda: 100)
    assert receiver.requests == 0
