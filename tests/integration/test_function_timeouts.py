"""Every local function is held to its timeout as Lambda holds it (inbox_local/invocation.py): an invocation that
overruns counts as failed, its batch comes back, and it writes nothing after its deadline."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from inbox_local import invocation
from inbox_local.invocation import FUNCTION_TIMEOUT_SECONDS, FunctionTimedOut, InvocationFrozen, invoke
from inbox_local.queue_mapping import QueueMapping
from shared import definitions
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process import app
from shared.process.app import SqsRetryQueue, process_batch
from tests.integration.processing_support import FakeGateway, RecordingQueue, make_processor, store_event

SHORT_TIMEOUT_SECONDS = 0.3  # an invocation's timeout in these tests: what is asserted is never a duration
SAFETY_SECONDS = 10.0  # only a broken implementation waits this long


@pytest.fixture(autouse=True)
def _installed() -> None:
    invocation.install()


def put(aws_world: Any, pk: str) -> None:
    aws_world.session.client("dynamodb").put_item(TableName=aws_world.names.control_table, Item={"pk": {"S": pk}})


def exists(aws_world: Any, pk: str) -> bool:
    found = aws_world.session.client("dynamodb").get_item(
        TableName=aws_world.names.control_table, Key={"pk": {"S": pk}}, ConsistentRead=True
    )
    return "Item" in found


def join_overrun_invocations(function: str) -> None:
    for thread in threading.enumerate():
        if thread.name == f"lambda-{function}":
            thread.join(SAFETY_SECONDS)
            assert not thread.is_alive()


def test_every_function_has_the_timeout_the_stack_deploys() -> None:
    assert FUNCTION_TIMEOUT_SECONDS == {
        "ingest": definitions.INGEST_TIMEOUT_SECONDS,
        "process": definitions.PROCESSOR_TIMEOUT_SECONDS,
        "archiver": definitions.ARCHIVER_TIMEOUT_SECONDS,
        "sweeper": definitions.SWEEPER_TIMEOUT_SECONDS,
        "publisher": definitions.PUBLISHER_TIMEOUT_SECONDS,
        "forwarder": definitions.FORWARDER_TIMEOUT_SECONDS,
        "replay": definitions.REPLAY_PAGE_TIMEOUT_SECONDS,
    }


def test_an_invocation_returns_its_result_or_raises_its_error() -> None:
    assert invoke("sweeper", lambda event, context: (event, context.function_name), {"a": 1}) == ({"a": 1}, "sweeper")
    with pytest.raises(ValueError, match="bad"):
        invoke("sweeper", lambda event, context: (_ for _ in ()).throw(ValueError("bad")), {})


def test_time_spent_waiting_on_the_embedded_aws_is_not_charged_to_the_function(aws_world) -> None:
    # Given an embedded AWS that answers slowly (as its serialized DynamoDB does under a burst): each call waits
    # twice the function's whole timeout before it is sent
    def slow_emulation(client: Any, operation: str, params: dict[str, Any], call: Any) -> Any:
        threading.Event().wait(2 * SHORT_TIMEOUT_SECONDS)
        return call()

    invocation.add_call_hook(slow_emulation)
    try:
        # When a function whose own code is quick writes twice through it
        def handler(event: Any, context: Any) -> str:
            put(aws_world, "slow-1")
            put(aws_world, "slow-2")
            return "done"

        result = invoke("sweeper", handler, {}, timeout_seconds=SHORT_TIMEOUT_SECONDS)
    finally:
        invocation._hooks.remove(slow_emulation)
    # Then the emulation's latency did not time it out, and both writes landed
    assert result == "done"
    assert exists(aws_world, "slow-1") and exists(aws_world, "slow-2")


def test_the_function_s_own_time_still_times_it_out_between_slow_aws_calls(aws_world) -> None:
    # Given a function that makes one AWS call, then works on its own past its timeout (a hanging gateway)
    release = threading.Event()

    def handler(event: Any, context: Any) -> None:
        put(aws_world, "own-time-1")
        release.wait(SAFETY_SECONDS)

    # When it is invoked, then it times out: the time outside AWS calls is the function's
    with pytest.raises(FunctionTimedOut):
        invoke("sweeper", handler, {}, timeout_seconds=SHORT_TIMEOUT_SECONDS)
    release.set()
    join_overrun_invocations("sweeper")


def test_an_overrun_invocation_fails_and_writes_nothing_after_its_deadline(aws_world) -> None:
    # Given a function that writes, then waits past its deadline (held by the test), then writes again
    release = threading.Event()
    raised: list[type[BaseException]] = []

    def handler(event: Any, context: Any) -> None:
        put(aws_world, "before-the-deadline")
        release.wait(SAFETY_SECONDS)
        try:
            put(aws_world, "after-the-deadline")
        except BaseException as error:
            raised.append(type(error))
            raise

    # When it is invoked with a short timeout
    with pytest.raises(FunctionTimedOut, match=r"Task timed out after 0\.30 seconds"):
        invoke("sweeper", handler, {}, timeout_seconds=SHORT_TIMEOUT_SECONDS)
    # Then the invocation failed at its deadline; once its thread goes on, its next AWS call is never sent
    release.set()
    join_overrun_invocations("sweeper")
    assert raised == [InvocationFrozen]
    # And what it left is what a real timeout could have left: the write before the deadline, not the one after
    assert exists(aws_world, "before-the-deadline")
    assert not exists(aws_world, "after-the-deadline")


class HangingGateway(FakeGateway):
    """The gateway's API, answering only once the test lets it (after the invocation's deadline)."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = threading.Event()

    def fetch_payment(self, resource_id: str, **kwargs: Any) -> Any:
        self.answer.wait(SAFETY_SECONDS)
        return super().fetch_payment(resource_id, **kwargs)


def test_a_processor_batch_that_overruns_comes_back_whole_and_is_processed_once(aws_world, monkeypatch) -> None:
    # Given three payments' events in the queue (three FIFO groups, run at once), and a gateway that hangs
    gateway = HangingGateway()
    events = {}
    for resource in ("pi_a", "pi_b", "pi_c"):
        gateway.set(resource, PaymentStatus.PAID)
        events[resource] = store_event(aws_world.names, resource_id=resource)
    sqs = aws_world.session.client("sqs")
    queue_url = aws_world.resources["queue_url"]
    for resource, pk in events.items():
        body = json.dumps({"pk": pk, "dispatch_id": pk, "dispatch_reason": "received"})
        sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageGroupId=f"stripe#{resource}",
                         MessageDeduplicationId=pk)  # fmt: skip
    retry_queue = SqsRetryQueue(queue_url, aws_world.resources["dead_letter_url"], sqs=sqs)
    processor = make_processor(aws_world.names, gateway, RecordingQueue())
    processor.queue = retry_queue
    received: list[str] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        received.extend(record["receiptHandle"] for record in event["Records"])
        return process_batch(event, context, processor)

    # And a processor whose guard lets a message start with the little time this test's invocation has
    monkeypatch.setattr(app, "message_reserve_seconds", lambda: SHORT_TIMEOUT_SECONDS / 10)
    mapping = QueueMapping(aws_world.session, queue_url, handler, batch_size=10, concurrency=1,
                           timeout_seconds=SHORT_TIMEOUT_SECONDS)  # fmt: skip

    # When the mapping invokes the processor and the refetches answer only after its deadline
    assert mapping.poll_once() == 3
    gateway.answer.set()
    join_overrun_invocations("process")

    # Then the invocation timed out, nothing of the batch was acknowledged, and nothing was settled after it
    assert (mapping.timeouts, len(received)) == (1, 3)
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "3"
    store = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    assert {store.load_event(pk)["status"] for pk in events.values()} == {"pending"}  # type: ignore[index]
    assert all(store.load_payment(f"stripe#{resource}") is None for resource in events)

    # When the queue's visibility timeout has passed and the processor runs with its own timeout again
    for receipt in received:
        sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt, VisibilityTimeout=0)
    monkeypatch.undo()
    mapping.timeout_seconds = None
    assert mapping.poll_once() == 3

    # Then every event is processed, each payment applied once, and the queue is empty: nothing lost or doubled
    assert {store.load_event(pk)["status"] for pk in events.values()} == {"processed"}  # type: ignore[index]
    for resource in events:
        payment = store.load_payment(f"stripe#{resource}")
        assert payment is not None
        assert (payment.status, payment.version, payment.transitions) == (PaymentStatus.PAID, 1, 1)
    outbox = aws_world.session.client("dynamodb").scan(TableName=aws_world.names.outbox_table)["Items"]
    assert len(outbox) == 3
    assert sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []) == []
    assert mapping.timeouts == 1
