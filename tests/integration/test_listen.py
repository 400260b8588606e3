"""`inbox listen` against moto: the temporary queue and rule on a deployed stack's bus (tags, policy, pattern), the
whole path (processor -> outbox -> publisher -> bus -> the listener's rule -> queue -> signed POST -> a Standard
Webhooks receiver; moto delivers EventBridge -> SQS, it does not evaluate the queue policy), retries while the
endpoint is down, removal on exit and of leftovers; and the local stack's outbox stream read from its end.

README's `inbox listen --stack NAME --forward-to URL` runs here as the CLI command itself, in this process (where
moto is), stopped by a SIGTERM like a terminal's."""

from __future__ import annotations

import base64
import json
import os
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import click
import pytest
from botocore.exceptions import ClientError
from click.testing import CliRunner

from inbox_cli.listen import (
    HEARTBEAT_SECONDS,
    LEFTOVER_AFTER_SECONDS,
    RESOURCE_PREFIX,
    TAG_CREATED_AT,
    TAG_HEARTBEAT_AT,
    TAG_MARKER,
    TAG_STACK,
    TARGET_ID,
    BusSubscriber,
    OutboxListener,
    Relay,
    iso,
    listen_to_bus,
    relay_to,
)
from inbox_cli.main import cli
from inbox_cli.receiver import ReceiverCore, ReceiverServer
from shared import definitions
from shared.payments.outbox import transition_id
from shared.payments.publishing import BusPublisher
from shared.payments.status import PaymentStatus as S
from shared.process.service import Outcome
from tests.integration.processing_support import FakeGateway, RecordingQueue, make_processor, run, store_event

STACK = "WebhookInboxProd"
BUS = f"{STACK}-events"
SECRET = "whsec_" + base64.b64encode(b"listen-integration-secret-32byte").decode()
README_COMMAND = "inbox listen --stack NAME --forward-to URL [--secret whsec_...]"


@pytest.fixture
def receiver() -> Iterator[ReceiverServer]:
    server = ReceiverServer(ReceiverCore([SECRET])).start()
    yield server
    server.stop()


@pytest.fixture
def bus(aws_world: Any) -> Any:
    aws_world.session.client("events").create_event_bus(Name=BUS)
    return aws_world


def subscriber(world: Any, *, clock: Callable[[], float] = time.time, stack: str = STACK) -> BusSubscriber:
    return BusSubscriber(world.session.client("sqs"), world.session.client("events"), stack, BUS, clock=clock)


def listener_queues(world: Any) -> list[str]:
    urls = world.session.client("sqs").list_queues(QueueNamePrefix=RESOURCE_PREFIX).get("QueueUrls", [])
    return [str(url) for url in urls]


def queued_or_in_flight(world: Any) -> int:
    """Messages in the listener's queues, received or not (SQS's approximate counts)."""
    sqs = world.session.client("sqs")
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    return sum(
        int(value)
        for url in listener_queues(world)
        for value in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"].values()
    )


def listener_rules(world: Any) -> list[str]:
    rules = world.session.client("events").list_rules(EventBusName=BUS, NamePrefix=RESOURCE_PREFIX)["Rules"]
    return [rule["Name"] for rule in rules]


def publish_transitions(world: Any, resource_id: str, statuses: list[S]) -> None:
    """The stack's real path up to the bus: the processor applies each webhook (one outbox record per transition),
    and the publisher puts the outbox stream's new records on the bus, as the outbox Pipe hands them over."""
    from inbox_local.stream_reader import StreamReader

    gateway = FakeGateway()
    processor = make_processor(world.names, gateway, RecordingQueue())
    for status in statuses:
        gateway.set(resource_id, status)
        assert run(processor, store_event(world.names, resource_id=resource_id, status=status.value)) is (
            Outcome.PROCESSED
        )
    reader = StreamReader(world.session.client("dynamodbstreams"), world.resources["outbox_stream_arn"])
    publisher = BusPublisher(events=world.session.client("events"), bus_name=BUS)

    def publish(records: list[dict[str, Any]]) -> None:
        publisher.publish(records)

    while reader.poll(publish):
        pass


def until(condition: Callable[[], bool], *, timeout: float = 90) -> Callable[[], bool]:
    """A `keep_going` for the listener: go on until `condition()` holds (or the timeout passes)."""
    deadline = time.monotonic() + timeout
    return lambda: not condition() and time.monotonic() < deadline


# ------------------------------------------------------------------------------------------- subscription


def test_subscribing_creates_a_tagged_queue_and_rule_that_only_that_rule_may_send_to(bus):
    # When a listener subscribes to the stack's bus
    made = subscriber(bus).subscribe("abc123")
    sqs, events = bus.session.client("sqs"), bus.session.client("events")
    # Then its queue and its rule exist, named after the session
    assert made.rule_name == made.queue_url.rsplit("/", 1)[-1] == "inbox-listen-abc123"
    # And both carry the marker, the stack and the creation time
    queue_tags = sqs.list_queue_tags(QueueUrl=made.queue_url)["Tags"]
    rule_tags = {t["Key"]: t["Value"] for t in events.list_tags_for_resource(ResourceARN=made.rule_arn)["Tags"]}
    for tags in (queue_tags, rule_tags):
        assert tags[TAG_MARKER] == "abc123" and tags[TAG_STACK] == STACK and tags[TAG_CREATED_AT]
    # And the rule matches the stack's source and the two published types, and targets the queue
    rule = events.describe_rule(Name=made.rule_name, EventBusName=BUS)
    assert json.loads(rule["EventPattern"]) == {
        "source": [definitions.OUTBOX_EVENT_SOURCE],
        "detail-type": ["payment.status_changed", "payment.verified", "webhook.failed"],
    }
    targets = events.list_targets_by_rule(Rule=made.rule_name, EventBusName=BUS)["Targets"]
    assert targets == [{"Id": TARGET_ID, "Arn": made.queue_arn}]
    # And the queue's policy lets that rule (and nothing else) send to it
    attributes = sqs.get_queue_attributes(QueueUrl=made.queue_url, AttributeNames=["All"])["Attributes"]
    allow = json.loads(attributes["Policy"])["Statement"][0]
    assert allow["Principal"] == {"Service": "events.amazonaws.com"} and allow["Action"] == "sqs:SendMessage"
    assert allow["Condition"] == {"ArnEquals": {"aws:SourceArn": made.rule_arn}}
    assert attributes["SqsManagedSseEnabled"] == "true"


def test_the_heartbeat_re_dates_both_resources(bus):
    now = [1_780_000_000.0]
    sub = subscriber(bus, clock=lambda: now[0])
    made = sub.subscribe()
    now[0] += HEARTBEAT_SECONDS
    sub.heartbeat(made)
    queue_tags = bus.session.client("sqs").list_queue_tags(QueueUrl=made.queue_url)["Tags"]
    rule_tags = bus.session.client("events").list_tags_for_resource(ResourceARN=made.rule_arn)["Tags"]
    assert queue_tags[TAG_HEARTBEAT_AT] == iso(now[0])
    assert {"Key": TAG_HEARTBEAT_AT, "Value": iso(now[0])} in rule_tags
    assert queue_tags[TAG_CREATED_AT] == iso(now[0] - HEARTBEAT_SECONDS)


def test_a_subscription_that_fails_half_way_removes_what_it_created(bus, monkeypatch):
    # Given an operator who may create queues and rules but not add targets
    sub = subscriber(bus)

    def denied(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "PutTargets")

    monkeypatch.setattr(sub.events, "put_targets", denied)
    # When the listener subscribes, Then it fails, And neither the queue nor the rule is left
    with pytest.raises(ClientError):
        sub.subscribe()
    assert listener_queues(bus) == [] and listener_rules(bus) == []


# ------------------------------------------------------------------------------------------- the whole path


def test_published_events_reach_the_local_endpoint_signed_and_the_resources_go_on_exit(bus, receiver):
    # Given a listener on the stack's bus forwarding to a Standard Webhooks receiver
    lines: list[str] = []
    relay = relay_to(receiver.url, SECRET, lines.append)
    published = threading.Event()

    def publish_once_ready(_subscription: Any) -> None:
        # When the stack applies two transitions of a payment and publishes them on its bus
        publish_transitions(bus, "pi_listen_1", [S.PENDING, S.PAID])
        # And something else is on the bus too: not one of the stack's events
        bus.session.client("events").put_events(
            Entries=[
                {
                    "EventBusName": BUS,
                    "Source": "someone-else",
                    "DetailType": "payment.status_changed",
                    "Detail": json.dumps({"id": "x", "type": "payment.status_changed"}),
                }
            ]
        )
        published.set()

    made = listen_to_bus(
        subscriber(bus),
        relay,
        keep_going=until(lambda: len(receiver.core.events) >= 2),
        wait_seconds=1,
        echo=lines.append,
        on_ready=publish_once_ready,
    )
    assert published.is_set()
    # Then the receiver verified both (signature, webhook-id = the event id) and nothing else came
    core = receiver.core
    assert core.rejected == 0 and core.mismatched_ids == [] and core.in_order
    assert [(e["resource_id"], e["sequence"], e["new_status"]) for e in core.events] == [
        ("pi_listen_1", 1, "pending"),
        ("pi_listen_1", 2, "paid"),
    ]
    # And one line per event was printed, with the endpoint's status
    forwarded = [line for line in lines if "payment.status_changed" in line]
    assert len(forwarded) == 2 and all("stripe#pi_listen_1" in line and line.endswith("-> 200") for line in forwarded)
    # And on exit the rule and the queue are gone
    assert listener_rules(bus) == [] and listener_queues(bus) == []
    assert made.rule_name in lines[-1]


def test_while_the_endpoint_is_down_the_event_is_retried_until_taken_and_only_then_deleted(bus):
    # Given a receiver that answers 500 to its first three requests
    server = ReceiverServer(ReceiverCore([SECRET]), fail_first=3).start()
    try:
        lines: list[str] = []
        relay = relay_to(server.url, SECRET, lines.append)
        listen_to_bus(
            subscriber(bus),
            relay,
            keep_going=until(lambda: len(server.core.events) >= 1),
            wait_seconds=1,
            echo=lines.append,
            on_ready=lambda _sub: publish_transitions(bus, "pi_listen_2", [S.PAID]),
        )
    finally:
        server.stop()
    # Then the event arrived once, after three refused attempts each followed by a longer pause
    assert [e["resource_id"] for e in server.core.events] == ["pi_listen_2"] and server.core.duplicates == 0
    attempts = [line.rsplit("-> ", 1)[1] for line in lines if "pi_listen_2" in line]
    assert attempts == ["500, retrying in 0.5 s", "500, retrying in 1.0 s", "500, retrying in 2.0 s", "200"]


def test_ctrl_c_removes_the_rule_and_the_queue(bus):
    def interrupted() -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        listen_to_bus(subscriber(bus), relay_to("http://127.0.0.1:9/", SECRET, print), keep_going=interrupted)
    assert listener_rules(bus) == [] and listener_queues(bus) == []


def test_resources_it_cannot_remove_are_reported_with_when_they_will_go(bus, monkeypatch):
    # Given an operator whose DeleteRule is denied
    sub = subscriber(bus)

    def denied(**_kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DeleteRule")

    monkeypatch.setattr(sub.events, "delete_rule", denied)
    # When the listener stops, Then it says what is left and when the next listener removes it
    with pytest.raises(click.ClickException, match=r"could not remove rule and queue inbox-listen-\w+ .*1 h old"):
        listen_to_bus(sub, relay_to("http://127.0.0.1:9/", SECRET, print), keep_going=lambda: False)


# ---------------------------------------------------------------------------------------------- leftovers


def test_the_next_listener_removes_a_killed_runs_leftovers_and_keeps_live_ones(bus):
    now = time.time()
    # Given a run killed two hours ago, one started ten minutes ago, and another stack's old one
    killed = subscriber(bus, clock=lambda: now - 2 * 3600).subscribe("killed")
    alive = subscriber(bus, clock=lambda: now - 600).subscribe("alive")
    other = subscriber(bus, clock=lambda: now - 2 * 3600, stack="WebhookInboxStaging").subscribe("other")
    # When the next listener starts (and stops at once)
    lines: list[str] = []
    listen_to_bus(subscriber(bus), relay_to("http://127.0.0.1:9/", SECRET, print), keep_going=lambda: False,
                  echo=lines.append)  # fmt: skip
    # Then the killed run's rule and queue are gone, the live one's and the other stack's are kept
    assert sorted(listener_rules(bus)) == sorted([alive.rule_name, other.rule_name])
    assert sorted(listener_queues(bus)) == sorted([alive.queue_url, other.queue_url])
    assert killed.rule_name not in listener_rules(bus)
    assert sum("leftover" in line for line in lines) == 2  # its rule and its queue, each said
    assert LEFTOVER_AFTER_SECONDS < 2 * 3600


# ------------------------------------------------------------------------------- the CLI, README's command


def test_the_readme_command_forwards_a_published_event_and_sigterm_cleans_up(bus, receiver):
    # Given a CloudFormation stack NAME with the bus among its outputs, as `cdk deploy` leaves it
    outputs = {
        definitions.OUTPUT_API_URL: "https://abc123.execute-api.us-east-1.amazonaws.com/",
        definitions.OUTPUT_INBOX_TABLE: bus.names.inbox_table,
        definitions.OUTPUT_BODY_BUCKET: bus.names.body_bucket,
        definitions.OUTPUT_EVENT_BUS: BUS,
    }
    template = {
        "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    bus.session.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
    words = shlex.split(
        README_COMMAND.replace("NAME", STACK).replace("URL", receiver.url).replace("[--secret whsec_...]", "")
    )
    words += ["--secret", SECRET]

    def publish_then_stop() -> None:
        deadline = time.monotonic() + 90  # a loaded machine: publishing runs the processor
        while not listener_queues(bus) and time.monotonic() < deadline:
            time.sleep(0.05)
        # When a payment's transition is published while it runs
        publish_transitions(bus, "pi_listen_cli", [S.PAID])
        while not receiver.core.events and time.monotonic() < deadline:
            time.sleep(0.05)
        # (and the listener has the endpoint's answer: it deletes the message once it has printed its line; a
        # SIGTERM between the endpoint's receipt and its answer stops a forward not yet counted, as documented)
        while queued_or_in_flight(bus) and time.monotonic() < deadline:
            time.sleep(0.05)
        # And the terminal sends SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    helper = threading.Thread(target=publish_then_stop, daemon=True)
    helper.start()
    try:
        result = CliRunner().invoke(cli, words[1:])
    finally:
        signal.signal(signal.SIGTERM, previous)
        helper.join(timeout=5)
    # Then it exits cleanly, having forwarded the event signed (the receiver verified it)
    assert result.exit_code == 0, result.output
    assert [e["resource_id"] for e in receiver.core.events] == ["pi_listen_cli"] and receiver.core.rejected == 0
    assert "Ready: forwarding payment.status_changed, payment.verified, webhook.failed from bus" in result.output
    assert "stripe#pi_listen_cli" in result.output and "-> 200" in result.output
    assert "Stopped: 1 event(s) forwarded." in result.output
    # And the rule and the queue are gone
    assert listener_rules(bus) == [] and listener_queues(bus) == []


# --------------------------------------------------------------------------------------- the local outbox


def test_the_local_outbox_listener_forwards_only_what_is_written_after_it_starts(aws_world, receiver):
    # Given a payment already published before the listener starts
    gateway = FakeGateway()
    processor = make_processor(aws_world.names, gateway, RecordingQueue())
    gateway.set("pi_before", S.PAID)
    run(processor, store_event(aws_world.names, resource_id="pi_before", status="paid"))
    lines: list[str] = []
    listener = OutboxListener(
        aws_world.session.client("dynamodbstreams"),
        aws_world.resources["outbox_stream_arn"],
        relay_to(receiver.url, SECRET, lines.append),
    )
    listener.poll_once()  # opens the stream at its end
    # When a payment changes after it started
    gateway.set("pi_after", S.PENDING)
    run(processor, store_event(aws_world.names, resource_id="pi_after", status="pending"))
    gateway.set("pi_after", S.PAID)
    run(processor, store_event(aws_world.names, resource_id="pi_after", status="paid"))
    while listener.poll_once() == 0.0:
        pass
    # Then only the new transitions are forwarded, verified, in order
    assert [(e["resource_id"], e["sequence"]) for e in receiver.core.events] == [("pi_after", 1), ("pi_after", 2)]
    assert receiver.core.rejected == 0 and len(lines) == 2


class ScriptedEndpoint:
    """An HTTP endpoint answering the given statuses in turn (then 200), recording each request's webhook-id."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[tuple[str, int]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                status = endpoint.statuses.pop(0) if endpoint.statuses else 200
                endpoint.requests.append((str(self.headers["webhook-id"]), status))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_local_outbox_listener_retries_without_resending_what_went_through(aws_world):
    # Given a listener whose endpoint takes the first event, then refuses the next once
    endpoint = ScriptedEndpoint(200, 503)
    try:
        listener = OutboxListener(
            aws_world.session.client("dynamodbstreams"),
            aws_world.resources["outbox_stream_arn"],
            relay_to(endpoint.url, SECRET, lambda _line: None),
        )
        listener.poll_once()
        gateway = FakeGateway()
        processor = make_processor(aws_world.names, gateway, RecordingQueue())
        for status in (S.PENDING, S.PAID):
            gateway.set("pi_retry", status)
            run(processor, store_event(aws_world.names, resource_id="pi_retry", status=status.value))
        # When it polls: the second event is refused, and the pause before its retry is the backoff's first
        assert listener.poll_once() == 0.5
        # And polls again: the same stream records are read again
        listener.poll_once()
    finally:
        endpoint.stop()
    # Then the first event was not sent again with the retried second
    first, second = transition_id("stripe#pi_retry", 1), transition_id("stripe#pi_retry", 2)
    assert endpoint.requests == [(first, 200), (second, 503), (second, 200)]


def test_relay_is_the_forwarders_post(receiver):
    """The listener signs with the forwarder's code: `Relay` holds a `shared.forwarding.Forwarder`."""
    relay = relay_to(receiver.url, SECRET, lambda _line: None)
    assert isinstance(relay, Relay)
    assert relay.deliver({"id": "tr_1", "type": "payment.status_changed", "provider": "stripe", "sequence": 1,
                          "resource_id": "pi_1", "new_status": "paid"})  # fmt: skip
    assert relay.forwarder.attempts == 1 and receiver.core.events[0]["id"] == "tr_1"
