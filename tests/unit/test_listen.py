"""`inbox listen`'s pure parts: the signed request (what the Standard Webhooks library verifies), the bus message ->
event, the printed line, the rule and queue policy, and which of a listener's resources are leftovers."""

from __future__ import annotations

import base64
import json
from typing import Any

import click
import pytest
from botocore.exceptions import ClientError
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from inbox_cli import listen
from inbox_cli.listen import (
    TAG_CREATED_AT,
    TAG_HEARTBEAT_AT,
    TAG_MARKER,
    TAG_STACK,
    Relay,
    event_from_bus_message,
    event_line,
    generate_secret,
    is_leftover,
    iso,
    queue_policy,
    resource_tags,
    rule_pattern,
    select_leftovers,
)
from shared.forwarding import Forwarder, event_body, signed_request
from shared.providers.standard.driver import decode_secret

SECRET = "whsec_" + base64.b64encode(b"listen-unit-test-secret-32-bytes").decode()
NOW = 1_780_000_000.0
HOUR = 3600.0
EVENT: dict[str, Any] = {
    "id": "tr_0123456789abcdef0123456789abcdef",
    "transition_id": "tr_0123456789abcdef0123456789abcdef",
    "sequence": 2,
    "schema_version": "1",
    "type": "payment.status_changed",
    "provider": "stripe",
    "resource_id": "pi_123",
    "previous_status": "pending",
    "new_status": "paid",
    "amount": 1990,
    "currency": "brl",
    "amount_refunded": 0,
    "occurred_at": "2026-12-01T10:00:00+00:00",
    "source_event_id": "evt_1",
    "created_at": "2026-12-01T10:00:01+00:00",
}


# --------------------------------------------------------------------------------------------------- signing


def test_the_request_is_signed_so_the_standard_webhooks_library_verifies_it():
    # Given an event and a whsec_ secret
    request = signed_request("http://localhost:3000/hooks", EVENT, (SECRET,))
    headers = {name.lower(): value for name, value in request.header_items()}
    body = request.data
    assert isinstance(body, bytes)
    # When the official library verifies the request as a receiver would
    payload = Webhook(SECRET).verify(body, headers)
    # Then it verifies, the body is the event, the webhook-id is the event id, and it is a JSON POST
    assert payload == EVENT
    assert body == event_body(EVENT)
    assert headers["webhook-id"] == EVENT["id"]
    assert request.get_method() == "POST"
    assert headers["content-type"] == "application/json"


def test_a_receiver_holding_another_secret_refuses_it():
    request = signed_request("http://localhost:3000/hooks", EVENT, (SECRET,))
    headers = {name.lower(): value for name, value in request.header_items()}
    assert isinstance(request.data, bytes)
    with pytest.raises(WebhookVerificationError):
        Webhook(generate_secret()).verify(request.data, headers)


def test_a_generated_secret_is_a_fresh_32_byte_whsec_key():
    first, second = generate_secret(), generate_secret()
    assert first.startswith("whsec_") and first != second
    assert len(decode_secret(first)) == 32


# -------------------------------------------------------------------------------------------- bus -> event


def test_a_bus_message_carries_the_event_as_its_detail():
    # Given the message EventBridge puts in the queue for one published event
    body = json.dumps({"version": "0", "source": "webhook-inbox", "detail-type": EVENT["type"], "detail": EVENT})
    # Then the event forwarded is the detail, exactly
    assert event_from_bus_message(body) == EVENT


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps(["a", "list"]),
        json.dumps({"detail": "text"}),
        json.dumps({"detail": {**EVENT, "id": ""}}),
        json.dumps({"detail": {**EVENT, "type": "payment.created"}}),
    ],
)
def test_a_message_that_is_not_a_published_event_gives_nothing_to_forward(body):
    assert event_from_bus_message(body) is None


def test_the_rule_matches_the_stacks_source_and_the_two_published_types():
    assert rule_pattern() == {
        "source": ["webhook-inbox"],
        "detail-type": ["payment.status_changed", "payment.verified", "webhook.failed"],
    }


def test_only_the_listeners_rule_may_send_to_its_queue():
    queue_arn = "arn:aws:sqs:us-east-1:123456789012:inbox-listen-abc"
    rule_arn = "arn:aws:events:us-east-1:123456789012:rule/Prod-events/inbox-listen-abc"
    allow, deny = queue_policy(queue_arn, rule_arn)["Statement"]
    assert allow["Effect"] == "Allow" and allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert allow["Action"] == "sqs:SendMessage" and allow["Resource"] == queue_arn
    assert allow["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


# -------------------------------------------------------------------------------------------- printed line


def test_one_line_says_time_type_payment_change_and_status():
    line = event_line(EVENT, 200, at=NOW)
    assert "payment.status_changed" in line and "stripe#pi_123" in line
    assert "pending -> paid" in line and line.endswith("-> 200")
    assert line[:8].count(":") == 2  # HH:MM:SS first


def test_a_failed_attempt_says_there_was_no_answer_and_when_it_retries():
    failed = {"id": "wf_1", "type": "webhook.failed", "provider": "asaas", "resource_id": "pay_9",
              "event_type": "PAYMENT_RECEIVED", "last_error": "refetch: not found"}  # fmt: skip
    line = event_line(failed, 0, at=NOW, retry_in=2.0)
    assert "webhook.failed  asaas#pay_9  PAYMENT_RECEIVED: refetch: not found" in line
    assert line.endswith("-> no answer, retrying in 2.0 s")


class AnswersInTurn(Forwarder):
    """A forwarder whose POSTs answer the given statuses in turn (no network)."""

    def __init__(self, *statuses: int) -> None:
        super().__init__(url="http://localhost:3000/hooks", secrets=(SECRET,))
        self.statuses = list(statuses)

    def post_once(self, event: Any) -> int:
        return self.statuses.pop(0)


def test_the_relay_backs_off_exponentially_while_the_endpoint_fails_and_resets_on_success():
    lines: list[str] = []
    relay = Relay(AnswersInTurn(503, 0, 500, 204), lines.append, clock=lambda: NOW)
    outcomes = [relay.deliver(EVENT) for _ in range(4)]
    assert outcomes == [False, False, False, True]
    assert [line.rsplit("-> ", 1)[1] for line in lines] == [
        "503, retrying in 0.5 s",
        "no answer, retrying in 1.0 s",
        "500, retrying in 2.0 s",
        "204",
    ]
    assert relay.pause() == 0.0 and relay.forwarded == 1


def test_the_backoff_is_capped():
    relay = Relay(AnswersInTurn(*[500] * 12), lambda _line: None)
    for _ in range(12):
        relay.deliver(EVENT)
    assert relay.pause() == listen.RETRY_CAP_SECONDS


# ---------------------------------------------------------------------------------------------- leftovers


def tags(*, stack: str = "Prod", created: float, heartbeat: float | None = None) -> dict[str, str]:
    made = resource_tags("s1", stack, created)
    if heartbeat is None:
        del made[TAG_HEARTBEAT_AT]
    else:
        made[TAG_HEARTBEAT_AT] = iso(heartbeat)
    return made


def test_resources_are_tagged_with_the_session_the_stack_and_the_creation_time():
    made = resource_tags("abc", "Prod", NOW)
    assert made == {TAG_MARKER: "abc", TAG_STACK: "Prod", TAG_CREATED_AT: iso(NOW), TAG_HEARTBEAT_AT: iso(NOW)}


@pytest.mark.parametrize(
    ("resource_tags_", "leftover"),
    [
        (tags(created=NOW - 2 * HOUR, heartbeat=NOW - 2 * HOUR), True),  # killed two hours ago
        (tags(created=NOW - 2 * HOUR), True),  # killed before its first heartbeat: dated by its creation
        (tags(created=NOW - 10 * 60, heartbeat=NOW - 10 * 60), False),  # fresh
        (tags(created=NOW - 9 * HOUR, heartbeat=NOW - 4 * 60), False),  # a long session, still alive
        (tags(stack="Staging", created=NOW - 2 * HOUR), False),  # another stack's: its listeners decide
        ({TAG_STACK: "Prod", TAG_CREATED_AT: iso(NOW - 2 * HOUR)}, False),  # not a listener's (no marker)
        ({TAG_MARKER: "s1", TAG_STACK: "Prod", TAG_CREATED_AT: "yesterday"}, False),  # cannot be dated: kept
    ],
)
def test_a_leftover_is_ours_of_this_stack_and_not_kept_alive_for_an_hour(resource_tags_, leftover):
    assert is_leftover(resource_tags_, stack="Prod", now=NOW, older_than=HOUR) is leftover


def test_select_leftovers_keeps_the_order_and_takes_only_leftovers():
    resources = [
        ("old-1", tags(created=NOW - 3 * HOUR)),
        ("fresh", tags(created=NOW - 60)),
        ("old-2", tags(created=NOW - 2 * HOUR, heartbeat=NOW - 61 * 60)),
    ]
    assert select_leftovers(resources, stack="Prod", now=NOW, older_than=HOUR) == ["old-1", "old-2"]


def test_a_live_listener_heartbeats_well_within_the_leftover_age():
    assert listen.HEARTBEAT_SECONDS * 10 <= listen.LEFTOVER_AFTER_SECONDS


# ------------------------------------------------------------------------------------------------- the loop


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, "ReceiveMessage")


def test_the_loop_rides_out_aws_errors_with_a_growing_pause_and_heartbeats_when_due():
    # Given a source that is throttled twice, then answers; a clock that moves 200 s per poll
    outcomes: list[Any] = [client_error("ThrottlingException"), client_error("ThrottlingException"), 0.0, 0.0]
    now = [0.0]
    beats: list[float] = []
    slept: list[float] = []
    lines: list[str] = []

    def poll() -> float:
        now[0] += 200
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return float(outcome)

    # When the loop runs until the source has nothing more to say
    listen.run_listener(
        poll,
        keep_going=lambda: bool(outcomes),
        every=(300.0, lambda: beats.append(now[0])),
        echo=lines.append,
        sleep=slept.append,
        clock=lambda: now[0],
    )
    # Then each error was said and paused after (1 s, then 2 s), and the heartbeat came once 300 s had passed
    assert slept == [1.0, 2.0]
    assert lines == ["error reading the events (ThrottlingException), retrying in 1 s",
                     "error reading the events (ThrottlingException), retrying in 2 s"]  # fmt: skip
    assert beats == [600.0]


def test_a_queue_deleted_from_outside_ends_the_loop():
    def poll() -> float:
        raise client_error("AWS.SimpleQueueService.NonExistentQueue")

    with pytest.raises(click.ClickException, match="deleted from outside"):
        listen.run_listener(poll, sleep=lambda _s: None)
