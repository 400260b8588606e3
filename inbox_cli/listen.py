"""`inbox listen`: the events the stack publishes, forwarded to a local URL for as long as it runs (`stripe listen`'s
idea, for `payment.status_changed` and `webhook.failed`). Nothing is exposed: the listener pulls, then POSTs locally.

Where the events come from:
- a deployed stack (`--stack NAME`): a temporary SQS queue and an EventBridge rule on the stack's bus (output
  `EventBusName`) matching the stack's source (`webhook-inbox`) and those two detail-types, targeting the queue;
  the queue's policy lets only that rule send to it (`aws:SourceArn`). The listener long-polls the queue.
- the local stack (`make run`, no `--stack`): the local outbox table's stream, read from its end (events written
  after the start; the stack's own publisher reads the same stream independently).

Each event (the bus event's `detail`: the event exactly as docs/events.md documents it) is POSTed signed with
Standard Webhooks by the forwarder's own code (`shared.forwarding.signed_request`, `Forwarder.post_once`), with
`--secret` or a `whsec_` secret generated for the session and printed at start. One line per attempt: time,
type, payment, the local endpoint's status.

Delivery while the listener runs: at least once, nothing dropped. A 2xx deletes the queue message (moves past
the stream record); anything else (or no answer) leaves the event where it is and retries it after an exponential
pause (0.5 s doubling up to 30 s, as the forwarder's backoff), for as long as the listener runs. From the queue,
the failed message and the rest of its batch are made visible again at once (visibility 0), and the next poll
takes them again; from the stream, the same records are read again, skipping those already delivered. Standard
queues and EventBridge do not keep order: the receiver orders by `sequence` and dedups by `webhook-id`, as with
the stack's own forwarding. What is still undelivered when the listener stops is not forwarded by it (its queue
is deleted); the stack's outbox keeps every event 7 days (`inbox outbox list`).

Temporary resources and leftovers (a deployed stack). SQS queues and EventBridge rules have no expiry of their
own, so both are named `inbox-listen-<session>` and tagged at creation (`TAG_MARKER` = the session,
`TAG_STACK`, `TAG_CREATED_AT`); a running listener refreshes `TAG_HEARTBEAT_AT` every `HEARTBEAT_SECONDS`. On exit
(Ctrl-C, SIGTERM) it removes its rule (target first) and then its queue. At start it removes leftovers of killed
runs: a queue or rule with the marker, of the same stack, whose last heartbeat (or, without one, creation) is older
than `LEFTOVER_AFTER_SECONDS`. A live listener's heartbeat is never that old, so another listener's resources are
never taken while it runs; a resource whose tags say nothing readable is left alone.
"""

from __future__ import annotations

import base64
import json
import os
import secrets as token_source
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError

from inbox_cli.target import resolve
from inbox_local.stream_reader import LATEST, StreamReader
from shared import definitions
from shared.backoff import Backoff
from shared.forwarding import Forwarder
from shared.payments.outbox import PAYMENT_VERIFIED, STATUS_CHANGED, WEBHOOK_FAILED
from shared.payments.publishing import outbox_events
from shared.providers.standard.driver import SECRET_PREFIX, decode_secret

LISTENED_TYPES: tuple[str, ...] = (STATUS_CHANGED, PAYMENT_VERIFIED, WEBHOOK_FAILED)
RESOURCE_PREFIX = "inbox-listen-"
TARGET_ID = "inbox-listen"  # the rule's one target
TAG_MARKER = "webhook-inbox:listen-session"
TAG_STACK = "webhook-inbox:stack"
TAG_CREATED_AT = "webhook-inbox:created-at"
TAG_HEARTBEAT_AT = "webhook-inbox:heartbeat-at"
LEFTOVER_AFTER_SECONDS = 3600.0
HEARTBEAT_SECONDS = 300.0  # a twelfth of the leftover age: a dozen heartbeats missed before anything is taken
RECEIVE_WAIT_SECONDS = 20  # SQS long polling's maximum
RECEIVE_BATCH = 10  # ReceiveMessage's maximum
POST_TIMEOUT_SECONDS = 10.0
# A batch is worked one POST after the other: its last message must still be ours (invisible) when its turn comes.
VISIBILITY_TIMEOUT_SECONDS = int(RECEIVE_BATCH * POST_TIMEOUT_SECONDS * 2)
RETRY_BASE_SECONDS = 0.5
RETRY_CAP_SECONDS = 30.0
DELIVERY_BACKOFF = Backoff(base=RETRY_BASE_SECONDS, cap=RETRY_CAP_SECONDS)  # a failed local delivery
READ_BACKOFF = Backoff(base=1.0, cap=RETRY_CAP_SECONDS)  # a failed read of the events
LOCAL_IDLE_SECONDS = 0.5
SECRET_BYTES = 32
NOT_OURS_ERRORS = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


# ------------------------------------------------------------------------------------------------- pure parts


def generate_secret() -> str:
    """A fresh Standard Webhooks secret: `whsec_` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(token_source.token_bytes(SECRET_BYTES)).decode()


def session_id() -> str:
    return uuid.uuid4().hex[:12]


def resource_name(session: str) -> str:
    """The queue's and the rule's name (queue names: 80 characters, rule names: 64, both `[-_A-Za-z0-9]`)."""
    return f"{RESOURCE_PREFIX}{session}"


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_tags(session: str, stack: str, now: float) -> dict[str, str]:
    return {TAG_MARKER: session, TAG_STACK: stack, TAG_CREATED_AT: iso(now), TAG_HEARTBEAT_AT: iso(now)}


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def is_leftover(tags: Mapping[str, str], *, stack: str, now: float, older_than: float = LEFTOVER_AFTER_SECONDS) -> bool:
    """A listener's queue or rule nobody keeps alive: our marker, this stack, last heartbeat (else creation) older
    than `older_than`. Without the marker it is not a listener's; of another stack, that stack's listeners decide;
    with no readable time it cannot be dated, so it stays."""
    if not tags.get(TAG_MARKER) or tags.get(TAG_STACK) != stack:
        return False
    last_alive = _epoch(tags.get(TAG_HEARTBEAT_AT)) or _epoch(tags.get(TAG_CREATED_AT))
    return last_alive is not None and now - last_alive > older_than


def select_leftovers(
    resources: Iterable[tuple[str, Mapping[str, str]]], *, stack: str, now: float, older_than: float
) -> list[str]:
    """The names (or URLs) among `(name, tags)` that are leftovers, in the order given."""
    return [name for name, tags in resources if is_leftover(tags, stack=stack, now=now, older_than=older_than)]


def rule_pattern(source: str = definitions.OUTBOX_EVENT_SOURCE) -> dict[str, list[str]]:
    """The stack's published events: its source, the two documented detail-types."""
    return {"source": [source], "detail-type": list(LISTENED_TYPES)}


def queue_policy(queue_arn: str, rule_arn: str) -> dict[str, Any]:
    """Only this rule may send (EventBridge uses the queue's resource policy for SQS targets), and only over TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FromTheListenerRule",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}},
            },
            {
                "Sid": "TlsOnly",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def event_from_bus_message(body: str) -> dict[str, Any] | None:
    """The published event carried by an EventBridge -> SQS message (the bus event; its `detail`). None when the
    message is not one of ours (nothing to forward)."""
    try:
        envelope = json.loads(body)
    except ValueError:
        return None
    detail = envelope.get("detail") if isinstance(envelope, dict) else None
    if not isinstance(detail, dict) or not detail.get("id") or detail.get("type") not in LISTENED_TYPES:
        return None
    return detail


def payment_of(event: Mapping[str, Any]) -> str:
    return f"{event.get('provider') or '-'}#{event.get('resource_id') or '-'}"


def event_line(event: Mapping[str, Any], status: int, *, at: float, retry_in: float | None = None) -> str:
    """One line per POST: time, type, payment, what happened, the local endpoint's answer."""
    if event.get("type") == STATUS_CHANGED:
        what = f"{event.get('previous_status') or '-'} -> {event.get('new_status')}"
        what += "" if event.get("verified", True) else " (unverified)"
    elif event.get("type") == PAYMENT_VERIFIED:
        what = f"verified: {event.get('status')}"
    else:
        what = f"{event.get('event_type') or '-'}: {str(event.get('last_error') or '')[:60]}"
    answer = str(status) if status else "no answer"
    line = f"{time.strftime('%H:%M:%S', time.localtime(at))}  {event.get('type')}  {payment_of(event)}  {what}"
    line += f"  -> {answer}"
    if retry_in is not None:
        line += f", retrying in {retry_in:.1f} s"
    return line


# --------------------------------------------------------------------------------------------------- delivery


@dataclass
class Relay:
    """Signed POSTs of single events, one printed line each, and the pause to take after a failure."""

    forwarder: Forwarder
    echo: Callable[[str], None]
    clock: Callable[[], float] = time.time
    consecutive_failures: int = 0
    forwarded: int = 0

    def deliver(self, event: Mapping[str, Any]) -> bool:
        status = self.forwarder.post_once(event)
        accepted = 200 <= status < 300
        if accepted:
            self.consecutive_failures = 0
            self.forwarded += 1
        else:
            self.consecutive_failures += 1
        self.echo(event_line(event, status, at=self.clock(), retry_in=None if accepted else self.pause()))
        return accepted

    def pause(self) -> float:
        if not self.consecutive_failures:
            return 0.0
        return DELIVERY_BACKOFF.delay(self.consecutive_failures)


def relay_to(url: str, secret: str, echo: Callable[[str], None]) -> Relay:
    decode_secret(secret)  # ValueError now, not at the first event
    return Relay(Forwarder(url=url, secrets=(secret,), timeout_seconds=POST_TIMEOUT_SECONDS), echo)


# ------------------------------------------------------------------------------------- a deployed stack's bus


@dataclass(frozen=True)
class Subscription:
    session: str
    stack: str
    bus: str
    queue_url: str
    queue_arn: str
    rule_name: str
    rule_arn: str


@dataclass
class BusSubscriber:
    """Creates, keeps alive and removes a listener's queue and rule (clients injected: boto3's or moto's)."""

    sqs: Any
    events: Any
    stack: str
    bus: str
    clock: Callable[[], float] = time.time

    def subscribe(self, session: str | None = None) -> Subscription:
        session = session or session_id()
        name = resource_name(session)
        tags = resource_tags(session, self.stack, self.clock())
        created: list[Callable[[], None]] = []  # undo steps, for a subscription that fails half-way
        try:
            return self._subscribe(session, name, tags, created)
        except BaseException:
            for undo in reversed(created):
                try:
                    undo()
                except Exception as error:
                    click.echo(f"could not remove {name} ({type(error).__name__}): the next run removes it", err=True)
            raise

    def _subscribe(
        self, session: str, name: str, tags: dict[str, str], created: list[Callable[[], None]]
    ) -> Subscription:
        # Tagged in the same call as created: a run killed right after leaves a resource the next run can date.
        queue_url = self.sqs.create_queue(
            QueueName=name,
            Attributes={
                "SqsManagedSseEnabled": "true",
                "VisibilityTimeout": str(VISIBILITY_TIMEOUT_SECONDS),
                "ReceiveMessageWaitTimeSeconds": str(RECEIVE_WAIT_SECONDS),
            },
            tags=tags,
        )["QueueUrl"]
        created.append(lambda: self._delete_queue(queue_url))
        queue_arn = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        rule_arn = self.events.put_rule(
            Name=name,
            EventBusName=self.bus,
            EventPattern=json.dumps(rule_pattern()),
            State="ENABLED",
            Description=f"inbox listen session {session}: the stack's published events to a temporary queue",
            Tags=[{"Key": key, "Value": value} for key, value in tags.items()],
        )["RuleArn"]
        created.append(lambda: self._delete_rule(name))
        # The policy before the target: no event reaches a queue that would refuse it.
        self.sqs.set_queue_attributes(
            QueueUrl=queue_url, Attributes={"Policy": json.dumps(queue_policy(queue_arn, rule_arn))}
        )
        self.events.put_targets(Rule=name, EventBusName=self.bus, Targets=[{"Id": TARGET_ID, "Arn": queue_arn}])
        return Subscription(session, self.stack, self.bus, queue_url, queue_arn, name, rule_arn)

    def heartbeat(self, subscription: Subscription) -> None:
        stamp = iso(self.clock())
        self.sqs.tag_queue(QueueUrl=subscription.queue_url, Tags={TAG_HEARTBEAT_AT: stamp})
        self.events.tag_resource(ResourceARN=subscription.rule_arn, Tags=[{"Key": TAG_HEARTBEAT_AT, "Value": stamp}])

    def unsubscribe(self, subscription: Subscription) -> None:
        """The rule first (no more events sent), then the queue."""
        self._delete_rule(subscription.rule_name)
        self._delete_queue(subscription.queue_url)

    def remove_leftovers(self, older_than: float = LEFTOVER_AFTER_SECONDS) -> list[str]:
        """Delete the leftovers of killed runs (see `is_leftover`). Returns the names removed."""
        now = self.clock()
        rules = [(rule["Name"], self._rule_tags(rule["Arn"])) for rule in self._listener_rules()]
        queues = [(url, self._queue_tags(url)) for url in self._listener_queues()]
        removed = []
        for name in select_leftovers(rules, stack=self.stack, now=now, older_than=older_than):
            self._delete_rule(name)
            removed.append(f"rule {name}")
        for url in select_leftovers(queues, stack=self.stack, now=now, older_than=older_than):
            self._delete_queue(url)
            removed.append(f"queue {url.rsplit('/', 1)[-1]}")
        return removed

    def _listener_rules(self) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = []
        for page in self.events.get_paginator("list_rules").paginate(EventBusName=self.bus, NamePrefix=RESOURCE_PREFIX):
            rules.extend(page.get("Rules", []))
        return rules

    def _listener_queues(self) -> list[str]:
        urls: list[str] = []
        for page in self.sqs.get_paginator("list_queues").paginate(QueueNamePrefix=RESOURCE_PREFIX):
            urls.extend(page.get("QueueUrls", []))
        return urls

    def _rule_tags(self, arn: str) -> dict[str, str]:
        return {tag["Key"]: tag["Value"] for tag in self.events.list_tags_for_resource(ResourceARN=arn).get("Tags", [])}

    def _queue_tags(self, url: str) -> dict[str, str]:
        return dict(self.sqs.list_queue_tags(QueueUrl=url).get("Tags", {}))

    def _delete_rule(self, name: str) -> None:
        self.events.remove_targets(Rule=name, EventBusName=self.bus, Ids=[TARGET_ID])
        self.events.delete_rule(Name=name, EventBusName=self.bus)

    def _delete_queue(self, url: str) -> None:
        self.sqs.delete_queue(QueueUrl=url)


@dataclass
class BusListener:
    """Long-polls a subscription's queue and relays each event; see the module's doc for what a failure does."""

    sqs: Any
    subscription: Subscription
    relay: Relay
    wait_seconds: int = RECEIVE_WAIT_SECONDS
    echo: Callable[[str], None] = click.echo

    def poll_once(self) -> float:
        """One receive and its batch. Returns the pause to take before the next poll (0: poll again now)."""
        queue_url = self.subscription.queue_url
        messages = self.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=RECEIVE_BATCH, WaitTimeSeconds=self.wait_seconds
        ).get("Messages", [])
        for index, message in enumerate(messages):
            event = event_from_bus_message(message["Body"])
            if event is None:
                self.echo(f"skipped a message that is not a published event: {message['Body'][:80]}")
            elif not self.relay.deliver(event):
                self._release(messages[index:])
                return self.relay.pause()
            self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return 0.0

    def _release(self, messages: list[dict[str, Any]]) -> None:
        """Visible again at once: the next receive (after the pause) takes them, nothing waits for a timeout. An
        entry the batch reports failed stays invisible until the queue's visibility timeout: later, not lost."""
        self.sqs.change_message_visibility_batch(
            QueueUrl=self.subscription.queue_url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"], "VisibilityTimeout": 0}
                for index, message in enumerate(messages)
            ],
        )


# --------------------------------------------------------------------------------------- the local stack's outbox


class _Undelivered(Exception):
    """The endpoint did not take an event: read the same stream records again after the pause."""


@dataclass
class OutboxListener:
    """Reads the local outbox table's stream from its end and relays each new event (in the stream's order)."""

    streams: Any
    stream_arn: str
    relay: Relay
    reader: StreamReader = field(init=False)
    _delivered: set[str] = field(default_factory=set, init=False)  # ids of the chunk being worked

    def __post_init__(self) -> None:
        self.reader = StreamReader(self.streams, self.stream_arn, starting_position=LATEST)

    def poll_once(self) -> float:
        try:
            read = self.reader.poll(self._consume)
        except _Undelivered:
            return self.relay.pause()
        return 0.0 if read else LOCAL_IDLE_SECONDS

    def _consume(self, records: list[dict[str, Any]]) -> None:
        for event in outbox_events(records):  # INSERT records, checked against the published contract
            event.pop("pk")
            if event["id"] in self._delivered:
                continue  # delivered before a later event of this chunk failed
            if not self.relay.deliver(event):
                raise _Undelivered
            self._delivered.add(str(event["id"]))
        self._delivered.clear()


def local_outbox_stream(dynamodb: Any, outbox_table: str) -> str:
    return str(dynamodb.describe_table(TableName=outbox_table)["Table"]["LatestStreamArn"])


# --------------------------------------------------------------------------------------------------- the loop


def run_listener(
    poll_once: Callable[[], float],
    *,
    keep_going: Callable[[], bool] = lambda: True,
    every: tuple[float, Callable[[], None]] | None = None,
    echo: Callable[[str], None] = click.echo,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Poll until `keep_going()` says no (or Ctrl-C / SIGTERM raise KeyboardInterrupt through it). `every` =
    (seconds, task): the heartbeat. An error of the source (AWS throttling, a network blip) is printed and the poll
    retried after a pause; a queue that no longer exists ends the run."""
    last_task = clock()
    errors = 0
    while keep_going():
        try:
            pause = poll_once()
            if every is not None and clock() - last_task >= every[0]:
                every[1]()  # raises like a poll: retried after the next one
                last_task = clock()
            errors = 0
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code"))
            if code in NOT_OURS_ERRORS:
                raise click.ClickException("the listener's queue was deleted from outside: stopping") from None
            errors += 1
            pause = READ_BACKOFF.delay(errors)
            echo(f"error reading the events ({code}), retrying in {pause:.0f} s")
        except BotoCoreError as error:
            errors += 1
            pause = READ_BACKOFF.delay(errors)
            echo(f"error reading the events ({type(error).__name__}), retrying in {pause:.0f} s")
        if pause:
            sleep(pause)


def listen_to_bus(
    subscriber: BusSubscriber,
    relay: Relay,
    *,
    keep_going: Callable[[], bool] = lambda: True,
    wait_seconds: int = RECEIVE_WAIT_SECONDS,
    echo: Callable[[str], None] = click.echo,
    on_ready: Callable[[Subscription], None] = lambda _subscription: None,
) -> Subscription:
    """A deployed stack's whole session: remove leftovers, subscribe, listen, and unsubscribe however it ends."""
    for removed in subscriber.remove_leftovers():
        echo(f"removed a leftover of an earlier listener: {removed}")
    with _signals_held():  # a Ctrl-C half-way through would leave what was created so far
        subscription = subscriber.subscribe()
    try:
        on_ready(subscription)
        listener = BusListener(subscriber.sqs, subscription, relay, wait_seconds=wait_seconds, echo=echo)
        run_listener(
            listener.poll_once,
            keep_going=keep_going,
            every=(HEARTBEAT_SECONDS, lambda: subscriber.heartbeat(subscription)),
            echo=echo,
        )
    finally:
        with _signals_held():
            try:
                subscriber.unsubscribe(subscription)
            except (ClientError, BotoCoreError) as error:
                raise click.ClickException(
                    f"could not remove rule and queue {subscription.rule_name} ({type(error).__name__}); the next "
                    f"`inbox listen` on this stack removes them once they are {LEFTOVER_AFTER_SECONDS / 3600:.0f} h old"
                ) from None
        echo(f"removed rule and queue {subscription.rule_name}")
    return subscription


def listen_to_outbox(
    dynamodb: Any,
    streams: Any,
    outbox_table: str,
    relay: Relay,
    *,
    keep_going: Callable[[], bool] = lambda: True,
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """The local stack's session: its outbox stream, opened at its end, relayed until stopped."""
    listener = OutboxListener(streams, local_outbox_stream(dynamodb, outbox_table), relay)
    listener.poll_once()  # opens the shards at their end: what is written from now on is forwarded
    on_ready()
    run_listener(listener.poll_once, keep_going=keep_going)


class _signals_held:
    """Ctrl-C / SIGTERM ignored while the resources are removed (a second Ctrl-C would otherwise leave them)."""

    def __enter__(self) -> None:
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return  # signals only reach the main thread (and only it may set handlers)
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, signal.SIG_IGN)

    def __exit__(self, *_exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


# ------------------------------------------------------------------------------------------------------ the CLI


@click.command()
@click.option("--stack", default=None, help="A deployed stack (default: `inbox --stack`, else the local stack).")
@click.option("--forward-to", "url", required=True, help="Where to POST each event, e.g. http://localhost:3000/hooks")
@click.option("--secret", default=None, help="whsec_<base64> to sign with (default: a new one, printed at start).")
@click.pass_context
def listen(ctx: click.Context, stack: str | None, url: str, secret: str | None) -> None:
    """Forward the events the stack publishes (payment.status_changed, webhook.failed) to URL, signed with
    Standard Webhooks, one line per event, until Ctrl-C. A deployed stack: through a temporary queue and rule on
    its bus, removed on exit. The local stack: its outbox."""
    if not url.startswith(("http://", "https://")):
        raise click.BadParameter("an http:// or https:// URL", param_hint="--forward-to")
    given_secret = secret
    secret = secret or generate_secret()
    try:
        relay = relay_to(url, secret, click.echo)
    except ValueError:
        raise click.BadParameter("not a whsec_<base64> secret", param_hint="--secret") from None
    stack = stack or ctx.find_root().obj
    target = resolve(stack)
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM ends it like Ctrl-C: through the clean-up

    def ready(where: str) -> None:
        click.echo(f"Ready: forwarding {', '.join(LISTENED_TYPES)} from {where} to {url}")
        if given_secret is None:
            click.echo(f"Signing secret: {secret}  (generated for this session; verify webhook-signature with it)")
        else:
            click.echo("Signing with the --secret given (Standard Webhooks).")
        click.echo("Ctrl-C to stop.")

    import boto3  # noqa: PLC0415 - the CLI's other commands do not pay for it

    try:
        if target.local:
            if not target.outbox_table:
                raise click.ClickException("the local stack has no outbox table")
            listen_to_outbox(
                boto3.client("dynamodb"),
                boto3.client("dynamodbstreams"),
                target.outbox_table,
                relay,
                on_ready=lambda: ready(f"the local stack's outbox ({os.environ.get('AWS_ENDPOINT_URL', 'local')})"),
            )
        else:
            if not target.event_bus_name:
                raise click.ClickException(f"stack {stack} has no output {definitions.OUTPUT_EVENT_BUS}")
            subscriber = BusSubscriber(boto3.client("sqs"), boto3.client("events"), str(stack), target.event_bus_name)
            listen_to_bus(
                subscriber, relay, on_ready=lambda sub: ready(f"bus {sub.bus} (rule and queue {sub.rule_name})")
            )
    except KeyboardInterrupt:
        click.echo(f"Stopped: {relay.forwarded} event(s) forwarded.")
