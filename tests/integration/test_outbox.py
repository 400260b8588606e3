"""The transactional outbox: every transition published exactly once, in order, also across crashes; forwarding
signed with Standard Webhooks; a receiver that fails for a while gets everything once it recovers."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar, cast

import jsonschema
import pytest
from aws_lambda_powertools.utilities import parameters
from standardwebhooks.webhooks import Webhook

from inbox_local.dev_secrets import put_signing_secrets
from inbox_local.outbox_publisher import OutboxPublisher
from shared import forwarding
from shared.forwarding import DeliveryFailed, Forwarder, ForwarderRoot
from shared.inbox.store import from_attributes
from shared.payments import outbox
from shared.payments.outbox import published_event
from shared.payments.status import PaymentStatus as S
from shared.process.service import Outcome
from shared.roots import AwsClients, Wrap
from shared.secrets import SecretUnavailable
from tests.integration.processing_support import FakeGateway, RecordingQueue, make_processor, run, store_event

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "events.schema.json").read_text())
SECRET = "whsec_" + base64.b64encode(b"outbox-test-secret-key-32-bytes!").decode()
PREVIOUS_SECRET = "whsec_" + base64.b64encode(b"the-previous-secret-of-32-bytes!").decode()
NEW_SECRET = "whsec_" + base64.b64encode(b"the-rotated-in-secret-of-32-byte").decode()
T = TypeVar("T")


def outbox_items(world: Any) -> list[dict[str, Any]]:
    items = world.session.client("dynamodb").scan(TableName=world.names.outbox_table)["Items"]
    return sorted((from_attributes(i) for i in items), key=lambda i: (i["pk"], i["sequence"]))


def lifecycle(world: Any, gateway: FakeGateway, resource_id: str, statuses: list[S]) -> None:
    """Drive one payment through `statuses`, one webhook each, the gateway's truth moving along."""
    processor = make_processor(world.names, gateway, RecordingQueue())
    for status in statuses:
        gateway.set(resource_id, status, refunded=1000 if status is S.REFUNDED else 0)
        assert run(processor, store_event(world.names, resource_id=resource_id, status=status.value)) is (
            Outcome.PROCESSED
        )


# ------------------------------------------------------------------------------------------------ the outbox


def test_every_transition_writes_one_schema_valid_record_in_sequence(aws_world: Any) -> None:
    lifecycle(aws_world, FakeGateway(), "pi_1", [S.PENDING, S.PAID, S.REFUNDED])
    records = [published_event(item) for item in outbox_items(aws_world)]
    assert [(r["sequence"], r["previous_status"], r["new_status"]) for r in records] == [
        (1, None, "pending"),
        (2, "pending", "paid"),
        (3, "paid", "refunded"),
    ]
    assert len({r["transition_id"] for r in records}) == 3
    assert all(r["transition_id"] == outbox.transition_id("stripe#pi_1", r["sequence"]) for r in records)
    assert records[2]["amount_refunded"] == 1000
    for record in records:
        jsonschema.validate(record, SCHEMA)
    assert all(item["expires_at"] > 0 for item in outbox_items(aws_world))


def test_an_event_that_changes_nothing_publishes_nothing(aws_world: Any) -> None:
    gateway = FakeGateway()
    lifecycle(aws_world, gateway, "pi_1", [S.PAID])
    processor = make_processor(aws_world.names, gateway, RecordingQueue())
    assert run(processor, store_event(aws_world.names, resource_id="pi_1")) is Outcome.IGNORED
    assert len(outbox_items(aws_world)) == 1


def test_a_redelivery_after_the_commit_adds_no_record(aws_world: Any) -> None:
    """The processor died after its transaction, before acknowledging: the message comes back."""
    gateway = FakeGateway()
    gateway.set("pi_1", S.PAID)
    processor = make_processor(aws_world.names, gateway, RecordingQueue())
    pk = store_event(aws_world.names)
    assert run(processor, pk) is Outcome.PROCESSED
    before = outbox_items(aws_world)
    assert run(processor, pk) is Outcome.SKIPPED
    assert outbox_items(aws_world) == before


def test_a_transition_that_does_not_commit_publishes_nothing(aws_world: Any) -> None:
    """The outbox Put is in the settle transaction: cancelled with it (here: the item was settled meanwhile)."""
    gateway = FakeGateway()
    gateway.set("pi_1", S.PAID)
    processor = make_processor(aws_world.names, gateway, RecordingQueue())
    pk = store_event(aws_world.names)
    aws_world.session.client("dynamodb").update_item(
        TableName=aws_world.names.inbox_table,
        Key={"pk": {"S": pk}},
        UpdateExpression="SET #s = :ignored",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":ignored": {"S": "ignored"}},
    )
    assert run(processor, pk) is Outcome.SKIPPED
    assert outbox_items(aws_world) == []


def test_a_failed_event_publishes_webhook_failed(aws_world: Any) -> None:
    gateway = FakeGateway()  # knows nothing: ResourceNotFound until attempts run out
    processor = make_processor(aws_world.names, gateway, RecordingQueue(), max_attempts=1)
    pk = store_event(aws_world.names, resource_id="pi_unknown")
    assert run(processor, pk) is Outcome.FAILED
    [item] = outbox_items(aws_world)
    assert item["pk"] == f"failed#{pk}" and item["sequence"] == 1
    event = published_event(item)
    jsonschema.validate(event, SCHEMA)
    assert event["type"] == "webhook.failed" and event["resource_id"] == "pi_unknown"
    assert event["attempts"] == 1 and "ResourceNotFound" in event["last_error"]


# ------------------------------------------------------------------------------------------------ publishing


class Receiver:
    """A loopback HTTP receiver that verifies like a customer would, dedups by webhook-id, and can fail."""

    def __init__(self, secret: str) -> None:
        self.webhook = Webhook(secret)
        self.fail_next = 0
        self.requests = 0
        self.accepted: dict[str, dict[str, Any]] = {}
        self.order: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self.raw: list[tuple[bytes, dict[str, str]]] = []  # every verified request: body and headers
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.requests += 1
                if receiver.fail_next > 0:
                    receiver.fail_next -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                try:
                    event = receiver.webhook.verify(body, dict(self.headers.items()))
                except Exception:
                    receiver.bad_signatures += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                receiver.raw.append((body, {k.lower(): v for k, v in self.headers.items()}))
                if self.headers["webhook-id"] not in receiver.accepted:  # dedup by webhook-id
                    receiver.accepted[self.headers["webhook-id"]] = event
                    receiver.order.append(event)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(PREVIOUS_SECRET)  # verifies with the PREVIOUS secret: the rotation's second signature
    yield server
    server.close()


def quick(*, max_attempts: int) -> Wrap:
    """A Wrap for the tests: each forwarder the root hands out makes `max_attempts` POSTs a round, without sleeping
    between them; everything else as the root built it (its secrets, its log)."""

    def wrap(part: T) -> T:
        if isinstance(part, Forwarder):
            return cast(T, replace(part, max_attempts=max_attempts, sleep=lambda _: None, timeout_seconds=5))
        return part

    return wrap


def forwarding_root(
    world: Any, url: str, *, max_attempts: int = 3, log_table: str = "", secrets: tuple[str, ...] | None = None
) -> ForwarderRoot:
    """The forwarder's root as the local stack builds it (inbox_local/runtime.py): its pair in Secrets Manager under
    the local name (default: SECRET and PREVIOUS_SECRET, a rotation), the world's DynamoDB client, the forwarding
    log in `log_table` (none when empty)."""
    world.set_forwarding_secrets(*(secrets or (SECRET, PREVIOUS_SECRET)))
    dynamodb = world.session.client("dynamodb")
    return forwarding.build_forwarder(
        forwarding.ForwarderSettings(
            forward_url=url,
            forward_secret_name=world.names.forward_secret_name,
            control_table=world.names.control_table,
        ),
        forwarding.LogSettings(forward_log_table=log_table),
        clients=AwsClients(dynamodb=dynamodb, dynamodb_best_effort=dynamodb),
        wrap=quick(max_attempts=max_attempts),
    )


def publisher(world: Any, root: ForwarderRoot | None, **options: Any) -> OutboxPublisher:
    return OutboxPublisher(
        world.session, world.resources["outbox_stream_arn"], world.names.control_table, forwarding=root, **options
    )


def three_payments(world: Any) -> None:
    gateway = FakeGateway()
    for resource_id in ("pi_a", "pi_b", "pi_c"):
        lifecycle(world, gateway, resource_id, [S.PENDING, S.AUTHORIZED, S.PAID, S.REFUNDED])


def assert_each_payment_in_order(events: list[dict[str, Any]]) -> None:
    by_payment: dict[str, list[int]] = {}
    for event in events:
        by_payment.setdefault(event["resource_id"], []).append(event["sequence"])
    assert by_payment == {r: [1, 2, 3, 4] for r in ("pi_a", "pi_b", "pi_c")}


def test_the_publisher_publishes_every_record_once_in_order(aws_world: Any) -> None:
    three_payments(aws_world)
    local = publisher(aws_world, None)
    local.drain()
    local.drain()  # nothing new: nothing again
    assert len(local.published) == 12 == len({e["id"] for e in local.published})
    assert_each_payment_in_order(local.published)
    for event in local.published:
        jsonschema.validate(event, SCHEMA)


def test_a_forwarded_event_verifies_with_the_standardwebhooks_library(aws_world: Any) -> None:
    lifecycle(aws_world, FakeGateway(), "pi_1", [S.PAID])
    [record] = [published_event(i) for i in outbox_items(aws_world)]
    body = forwarding.event_body(record)
    headers = forwarding.signature_headers(record["id"], body, (SECRET, PREVIOUS_SECRET))
    assert headers["webhook-id"] == record["transition_id"]
    assert len(headers["webhook-signature"].split(" ")) == 2  # both secrets sign during a rotation
    for secret in (SECRET, PREVIOUS_SECRET):
        assert Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(Exception):  # noqa: B017 - the library's own verification error
        Webhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(body, headers)


def test_a_receiver_that_fails_for_a_while_gets_every_event_once(aws_world: Any, receiver: Receiver) -> None:
    three_payments(aws_world)
    local = publisher(aws_world, forwarding_root(aws_world, receiver.url, max_attempts=3))
    receiver.fail_next = 7  # the first delivery fails 3 times, again 3 times, then once more and succeeds
    with pytest.raises(DeliveryFailed):
        local.poll_once()
    with pytest.raises(DeliveryFailed):
        local.poll_once()
    assert receiver.order == []  # nothing later went out first
    local.drain()
    assert receiver.bad_signatures == 0
    assert len(receiver.accepted) == 12
    assert_each_payment_in_order(receiver.order)
    assert receiver.requests == 12 + 7  # retried, never re-sent once accepted


def signatures(headers: dict[str, str]) -> list[str]:
    return headers["webhook-signature"].split(" ")


def test_the_local_publisher_signs_with_the_pair_in_secrets_manager_and_picks_a_rotation_up(
    aws_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the local publisher forwarding with the forwarder's root, its pair in Secrets Manager being SECRET alone,
    # and a receiver holding SECRET
    server = Receiver(SECRET)
    try:
        gateway = FakeGateway()
        local = publisher(aws_world, forwarding_root(aws_world, server.url, secrets=(SECRET,)))
        lifecycle(aws_world, gateway, "pi_1", [S.PAID])
        local.drain()
        assert len(signatures(server.raw[0][1])) == 1
        # When the operator rotates the pair in Secrets Manager (NEW_SECRET current, SECRET previous)
        put_signing_secrets(
            aws_world.session.client("secretsmanager"), aws_world.names.forward_secret_name, NEW_SECRET, SECRET
        )
        # Then, within the cache's five minutes, the next delivery is still signed with the cached pair alone
        lifecycle(aws_world, gateway, "pi_2", [S.PAID])
        local.drain()
        assert len(signatures(server.raw[1][1])) == 1
        # And once the cache has expired, the next chunk's forwarder signs with both: either secret alone verifies
        parameters.clear_caches()
        lifecycle(aws_world, gateway, "pi_3", [S.PAID])
        local.drain()
        body, headers = server.raw[2]
        assert len(signatures(headers)) == 2
        for secret in (NEW_SECRET, SECRET):
            assert Webhook(secret).verify(body, headers)["resource_id"] == "pi_3"
        assert server.bad_signatures == 0 and len(server.accepted) == 3
    finally:
        server.close()


def test_a_forwarding_secret_that_cannot_be_read_holds_the_events_back_until_it_can(
    aws_world: Any, receiver: Receiver
) -> None:
    # Given the local publisher's root naming a forwarding secret that is not (yet) in Secrets Manager
    root = forwarding_root(aws_world, receiver.url)
    aws_world.session.client("secretsmanager").delete_secret(
        SecretId=aws_world.names.forward_secret_name, ForceDeleteWithoutRecovery=True
    )
    parameters.clear_caches()
    local = publisher(aws_world, root)
    lifecycle(aws_world, FakeGateway(), "pi_1", [S.PENDING, S.PAID])
    # When the publisher polls: the root cannot hand out a forwarder
    with pytest.raises(SecretUnavailable):
        local.poll_once()
    # Then nothing went, and once the secret is there the same events go, in order
    assert receiver.requests == 0 and local.published == []
    aws_world.set_forwarding_secrets(SECRET, PREVIOUS_SECRET)
    local.drain()
    assert [e["sequence"] for e in receiver.order] == [1, 2] and receiver.bad_signatures == 0


class Crash(Exception):
    pass


def test_a_publisher_crash_mid_way_resumes_without_loss_or_duplicates(aws_world: Any, receiver: Receiver) -> None:
    three_payments(aws_world)
    crashing = publisher(aws_world, forwarding_root(aws_world, receiver.url))
    checkpoint = crashing.save_checkpoint
    saved = 0

    def dies_after_five(pk: str, sequence: int) -> None:
        nonlocal saved
        if saved == 5:
            raise Crash("after the POST, before the checkpoint")  # the process dies here
        checkpoint(pk, sequence)
        saved += 1

    crashing.save_checkpoint = dies_after_five  # type: ignore[method-assign]
    with pytest.raises(Crash):
        crashing.drain()
    assert len(receiver.accepted) == 6

    restarted = publisher(aws_world, forwarding_root(aws_world, receiver.url))  # a new process: nothing in memory
    restarted.drain()
    assert len(receiver.accepted) == 12
    assert receiver.requests == 13  # exactly the one event whose checkpoint was lost is sent twice, same id
    assert_each_payment_in_order(receiver.order)
    assert len(restarted.published) == 7  # the one whose checkpoint was lost, then the rest
