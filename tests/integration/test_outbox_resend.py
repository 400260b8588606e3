"""`inbox outbox resend`: what the forwarding gave up on (or never reached) goes out from the outbox table, in order,
past each payment's checkpoint, nothing delivered twice."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from inbox_cli.main import cli
from inbox_cli.outbox import outbox_records, resend
from inbox_cli.target import Target
from inbox_local.forward_secret import ENV_FORWARD_SECRET, ENV_FORWARD_SECRET_PREVIOUS
from shared import definitions
from shared.forwarding import DeliveryFailed, ForwardCheckpoints, Forwarder
from tests.integration.test_outbox import PREVIOUS_SECRET, SECRET, Receiver, receiver, three_payments

__all__ = ["receiver"]  # the fixture, shared with test_outbox.py


def local_target(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's local target on the moto world (the real one also points boto3 at the running stack's port)."""
    names = world.names
    target = Target(
        "http://127.0.0.1:1",
        names.inbox_table,
        names.payments_table,
        names.body_bucket,
        local=True,
        outbox_table=names.outbox_table,
        control_table=names.control_table,
    )
    monkeypatch.setattr("inbox_cli.main.resolve", lambda _stack: target)


def checkpoints(world: Any) -> ForwardCheckpoints:
    return ForwardCheckpoints(world.session.client("dynamodb"), world.names.control_table)


def forwarder(url: str) -> Forwarder:
    return Forwarder(
        url=url, secrets=(SECRET, PREVIOUS_SECRET), max_attempts=2, timeout_seconds=5, sleep=lambda _: None
    )


def test_resend_sends_only_what_is_past_each_checkpoint_in_order(aws_world: Any, receiver: Receiver) -> None:
    # Given three payments of four transitions: pi_a all forwarded, pi_b two of four, pi_c none (its batch was
    # dead-lettered, say)
    three_payments(aws_world)
    marks = checkpoints(aws_world)
    marks.save("stripe#pi_a", 4)
    marks.save("stripe#pi_b", 2)
    records = outbox_records(aws_world.names.outbox_table)
    assert len(records) == 12
    # When resend runs, then runs again
    sent = resend(records, forwarder(receiver.url), checkpoints(aws_world))
    again = resend(records, forwarder(receiver.url), checkpoints(aws_world))
    # Then exactly pi_b's 3 and 4 and pi_c's 1 to 4 went, in order, verified; the second run sent nothing
    assert [(e["resource_id"], e["sequence"]) for e in sent] == [("pi_b", 3), ("pi_b", 4)] + [
        ("pi_c", n) for n in (1, 2, 3, 4)
    ]
    assert again == []
    assert receiver.requests == 6 and receiver.bad_signatures == 0
    assert [(e["resource_id"], e["sequence"]) for e in receiver.order] == [
        (e["resource_id"], e["sequence"]) for e in sent
    ]


def test_resend_stops_at_the_first_refusal_and_resumes_from_there(aws_world: Any, receiver: Receiver) -> None:
    three_payments(aws_world)
    records = outbox_records(aws_world.names.outbox_table)
    receiver.fail_next = 100
    with pytest.raises(DeliveryFailed):
        resend(records, forwarder(receiver.url), checkpoints(aws_world))
    receiver.fail_next = 0
    assert len(resend(records, forwarder(receiver.url), checkpoints(aws_world))) == 12
    assert len(receiver.accepted) == 12


def test_the_command_resends_against_the_local_stack(
    aws_world: Any, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    three_payments(aws_world)
    checkpoints(aws_world).save("stripe#pi_a", 4)
    monkeypatch.setenv(ENV_FORWARD_SECRET, SECRET)
    monkeypatch.setenv(ENV_FORWARD_SECRET_PREVIOUS, PREVIOUS_SECRET)
    local_target(aws_world, monkeypatch)
    result = CliRunner().invoke(cli, ["outbox", "resend", "--url", receiver.url])
    assert result.exit_code == 0, result.output
    assert "sent 8 of 12" in result.output
    assert len(receiver.accepted) == 8


def test_the_command_needs_a_url(aws_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(definitions.ENV_FORWARD_URL, raising=False)
    local_target(aws_world, monkeypatch)
    result = CliRunner().invoke(cli, ["outbox", "resend"])
    assert result.exit_code != 0 and "--url" in result.output


def test_the_command_without_a_forwarding_secret_says_so(aws_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_FORWARD_SECRET, raising=False)
    local_target(aws_world, monkeypatch)
    result = CliRunner().invoke(cli, ["outbox", "resend", "--url", "http://127.0.0.1:9/hooks"])
    assert result.exit_code != 0 and "INBOX_FORWARD_SECRET" in result.output
    assert not isinstance(result.exception, ValueError)  # a message, not a traceback
