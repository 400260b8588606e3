"""`failed` means an event that should have changed a payment and could not; a well-formed event with nothing to
apply settles `ignored`, with its reason from a closed set (definitions.IgnoredReason) stored on the item and counted
by source and reason (EventsIgnored, the no-payment alarm's metric). Against moto, through the real processor."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

import pytest

from shared import definitions
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.process.service import Outcome
from tests.integration.processing_support import (
    BASE_TIME,
    FakeGateway,
    RecordingQueue,
    make_processor,
    run,
    store_event,
)

S = PaymentStatus


@pytest.fixture(autouse=True)
def _metrics_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.setenv("POWERTOOLS_DEV", "false")


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def processor(aws_world, gateway):
    return make_processor(aws_world.names, gateway, RecordingQueue())


def item(aws_world, pk: str) -> dict[str, Any]:
    found = InboxStore(aws_world.names.inbox_table).get(pk)
    assert found is not None
    return found


def ignored_counts(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    """The EventsIgnored metrics printed (EMF) since the last call: their source and reason dimensions."""
    counts = []
    for line in capsys.readouterr().out.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        if definitions.METRIC_EVENTS_IGNORED in document:
            counts.append({"source": document["source"], "reason": document["reason"]})
    return counts


def test_a_routed_payment_event_that_names_no_payment_is_ignored_with_its_reason_and_counted(
    aws_world, gateway, processor, capsys
):
    # Given a signed, well-formed Stripe charge event stored with no payment (what a driver that could not find
    # the resource leaves)
    pk = store_event(aws_world.names, event_type="charge.refunded", resource_id=None, status=None, amount=None)
    capsys.readouterr()
    # When it is processed
    outcome = run(processor, pk)
    # Then it settles ignored, not failed, with the reason no_payment on the item, and nothing was asked of the gateway
    assert outcome is Outcome.IGNORED
    stored = item(aws_world, pk)
    assert stored["status"] == "ignored"
    assert stored["ignored_reason"] == "no_payment"
    assert "last_error" not in stored
    assert gateway.fetches == 0
    # And it is counted once by its source and reason (the metric the ignored-no-payment alarm reads)
    assert ignored_counts(capsys) == [{"source": "stripe", "reason": "no_payment"}]


def test_an_event_time_event_stating_no_status_has_nothing_to_apply(aws_world, processor, capsys):
    # Given a Standard Webhooks payment event (no API to ask) that names a payment but states no status
    pk = store_event(aws_world.names, provider="standard", event_type="payment.updated", status=None)
    capsys.readouterr()
    # When it is processed, then it is ignored: nothing to apply, no payment written
    assert run(processor, pk) is Outcome.IGNORED
    assert item(aws_world, pk)["ignored_reason"] == "nothing_to_apply"
    assert ignored_counts(capsys) == [{"source": "standard", "reason": "nothing_to_apply"}]


def test_a_status_nobody_maps_still_fails(aws_world, processor):
    # Given a Standard Webhooks payment event stating a status that is not a canonical one
    pk = store_event(aws_world.names, provider="standard", event_type="payment.updated", status="settled-ish")
    # When it is processed, then it failed (it should have changed the payment and could not), with no reason code
    assert run(processor, pk) is Outcome.FAILED
    stored = item(aws_world, pk)
    assert stored["status"] == "failed"
    assert "not a canonical payment status" in stored["last_error"]
    assert "ignored_reason" not in stored


def test_an_amount_the_gateway_contradicts_still_fails(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID, amount=1000)
    pk = store_event(aws_world.names, amount=5)
    assert run(processor, pk) is Outcome.FAILED
    assert "ignored_reason" not in item(aws_world, pk)


def test_an_unrouted_type_is_ignored_as_such_and_not_counted_per_source(aws_world, processor, capsys):
    # Given an event of a type no handler routes (Stripe's setup_intent.created: not a payment)
    pk = store_event(aws_world.names, event_type="setup_intent.created", resource_id=None, status=None, amount=None)
    capsys.readouterr()
    # When it is processed, then it is ignored with the reason unrouted_type; a routine reason is not a metric
    assert run(processor, pk) is Outcome.IGNORED
    assert item(aws_world, pk)["ignored_reason"] == "unrouted_type"
    assert ignored_counts(capsys) == []


def test_the_ordering_defences_name_their_reason(aws_world, gateway, processor):
    # Given a refunded payment (refetch) and a paid payment of a sender without an API (event time)
    gateway.set("pi_1", S.REFUNDED)
    run(processor, store_event(aws_world.names, event_type="charge.refunded", status="refunded"))
    newer = store_event(
        aws_world.names,
        provider="standard",
        event_type="payment.paid",
        status="paid",
        occurred_at=BASE_TIME + timedelta(minutes=5),
    )
    run(processor, newer)
    # When a late refetch-provider event and an older event-time event arrive
    late = store_event(aws_world.names, event_type="payment_intent.processing", status="processing")
    older = store_event(aws_world.names, provider="standard", event_type="payment.pending", status="pending")
    # Then each is ignored: already in that state, and not newer than the last applied event
    assert run(processor, late) is Outcome.IGNORED
    assert item(aws_world, late)["ignored_reason"] == "no_change"
    assert run(processor, older) is Outcome.IGNORED
    assert item(aws_world, older)["ignored_reason"] == "not_newer"


def test_a_processed_event_carries_no_ignored_reason(aws_world, gateway, processor):
    gateway.set("pi_1", S.PAID)
    pk = store_event(aws_world.names)
    assert run(processor, pk) is Outcome.PROCESSED
    assert "ignored_reason" not in item(aws_world, pk)


def test_the_cli_lists_ignored_events_with_their_reason(aws_world, processor, monkeypatch):
    # Given an ignored event (a type nobody routes), in the inbox the CLI reads
    from click.testing import CliRunner

    from inbox_cli.main import cli
    from inbox_local.config import LocalEndpoints, aws_environment

    ignored = store_event(aws_world.names, event_type="setup_intent.created", resource_id=None, status=None)
    run(processor, ignored)
    # (the CLI's local target sets the local stack's AWS variables for good: undone after this test)
    for name, value in aws_environment(LocalEndpoints.from_environ()).items():
        monkeypatch.setenv(name, os.environ.get(name, value))
    # When `inbox events list --status ignored --json` runs
    result = CliRunner().invoke(cli, ["events", "list", "--status", "ignored", "--json"])
    # Then each ignored event is listed with its reason
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(row["event_type"], row["ignored_reason"]) for row in rows] == [("setup_intent.created", "unrouted_type")]
    # And the table shows the column
    table = CliRunner().invoke(cli, ["events", "list", "--status", "ignored"]).output
    assert "IGNORED_REASON" in table and "unrouted_type" in table
