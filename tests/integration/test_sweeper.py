"""The sweeper against moto, with the local Pipe and queue mapping in-process: lost dispatches come back."""

from __future__ import annotations

import json
import threading
from typing import Any, cast

import pytest

from shared.inbox.model import StoredBody, build_item
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.providers.base import WebhookRequest
from shared.sweeper import MIN_REMAINING_MS, SweepStore
from tests.integration.operations_support import (
    SerializedClient,
    drain,
    later,
    mapping_for,
    pipe_for,
    real_processor,
    store_event_at,
    sweeper_for,
)
from tests.integration.processing_support import BASE_TIME, FakeGateway, store_event

S = PaymentStatus
STALE = 1000  # seconds after the events were received: beyond the default 900 s threshold


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


def inbox(world) -> InboxStore:
    return InboxStore(world.names.inbox_table)


def item_of(world, pk: str) -> dict[str, Any]:
    found = inbox(world).get(pk)
    assert found is not None, pk
    return found


def stream_records(world) -> list[dict[str, Any]]:
    """Every record of the inbox stream so far, as the Pipe sees them."""
    seen: list[dict[str, Any]] = []
    pipe_for(world).reader.poll(seen.extend)
    return seen


def redispatch_records(world) -> list[dict[str, Any]]:
    return [
        record
        for record in stream_records(world)
        if record["eventName"] == "MODIFY"
        and record["dynamodb"]["NewImage"].get("dispatch_reason", {}).get("S") == "redispatch"
    ]


def test_events_that_arrived_while_the_pipe_was_down_are_processed_after_a_sweep(aws_world, gateway):
    # Given the Pipe is down while five payments' events arrive
    pipe, processor = pipe_for(aws_world), real_processor(aws_world, gateway)
    mapping = mapping_for(aws_world, processor)
    pipe.pause()
    pks = [store_event(aws_world.names, resource_id=f"pi_{n}") for n in range(5)]
    for n in range(5):
        gateway.set(f"pi_{n}", S.PAID)
    assert pipe.poll_once() == 0
    # ... and by the time it is back their stream records are gone (the Pipe dead-lettered them after its retries,
    # or they aged out of the 24 h stream)
    pipe.reader.poll(lambda records: None)
    pipe.resume()
    assert pipe.poll_once() == 0
    assert drain(mapping) == 0
    assert {item_of(aws_world, pk)["status"] for pk in pks} == {"pending"}

    # When the sweeper runs once they have been quiet for longer than the stale threshold
    summary = sweeper_for(aws_world, clock=later(STALE)).run()
    # ... and the Pipe and the queue mapping do their work
    forwarded = pipe.poll_once()
    drain(mapping)

    # Then every event was re-dispatched once and is processed, and every payment is paid
    assert (summary.stuck, summary.redispatched, forwarded) == (5, 5, 5)
    assert summary.oldest_age_s == pytest.approx(STALE - 1)
    for pk in pks:
        item = item_of(aws_world, pk)
        assert item["status"] == "processed", item
        # (settled: its dispatch marks are gone, it is never dispatched again; the summary counted the re-dispatch)
        assert "dispatch_reason" not in item and "dispatch_id" not in item
    payments = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    assert {getattr(payments.load_payment(f"stripe#pi_{n}"), "status", None) for n in range(5)} == {S.PAID}
    # ... and a sweep right after finds nothing stuck
    again = sweeper_for(aws_world, clock=later(STALE + 5)).run()
    assert (again.stuck, again.redispatched, again.oldest_age_s) == (0, 0, 0.0)


def test_a_redispatch_gets_a_new_dispatch_id_so_fifo_deduplication_cannot_swallow_it(aws_world):
    pk = store_event(aws_world.names)
    before = item_of(aws_world, pk)
    sweeper_for(aws_world, clock=later(STALE)).run()
    after = item_of(aws_world, pk)
    assert after["dispatch_id"] != before["dispatch_id"]
    assert after["dispatched_at"] == "2026-11-29T10:16:40.000000Z"  # the sweeper's now
    message = pipe_for(aws_world).message_for(redispatch_records(aws_world)[0])
    assert message["MessageDeduplicationId"] == after["dispatch_id"]
    assert message["MessageGroupId"] == "stripe#pi_1"
    assert json.loads(message["MessageBody"])["dispatch_reason"] == "redispatch"


def test_events_that_are_recent_or_being_retried_are_not_redispatched(aws_world):
    # Given an event received 101 s before the sweep, and an old one whose processing attempt failed 40 s
    # before the sweep (it is backing off, its message hidden in the queue)
    fresh = store_event_at(aws_world.names, STALE - 101, resource_id="pi_fresh")
    retried = store_event_at(aws_world.names, 1, resource_id="pi_retried")
    store = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    store.record_attempt(retried, "GatewayUnavailable: 503", now="2026-11-29T10:16:00.000000Z")
    # When the sweeper runs
    summary = sweeper_for(aws_world, clock=later(STALE)).run(remaining_ms=lambda: 60_000)
    # Then neither is stale: the retried one was received long ago, but activity decides, not age
    assert (summary.stuck, summary.redispatched) == (0, 0)
    assert item_of(aws_world, fresh)["dispatch_reason"] == "received"
    assert item_of(aws_world, retried)["last_attempt_at"] == "2026-11-29T10:16:00.000000Z"
    assert redispatch_records(aws_world) == []


def test_two_sweepers_at_once_redispatch_each_event_once(aws_world):
    # Given three stale pending events
    pks = [store_event(aws_world.names, resource_id=f"pi_{n}") for n in range(3)]
    pipe = pipe_for(aws_world)
    pipe.reader.poll(lambda records: None)  # their first dispatch is long gone
    # When two sweepers run at the same moment, both reading every candidate before either writes
    barrier, lock = threading.Barrier(2, timeout=10), threading.Lock()

    class RacingStore(SweepStore):
        first = True

        def redispatch(self, item, **kwargs):
            if self.first:
                self.first = False
                barrier.wait()
            return super().redispatch(item, **kwargs)

    summaries = []

    def sweep() -> None:
        client: Any = SerializedClient(aws_world.session.client("dynamodb"), lock)
        store = RacingStore(aws_world.names.inbox_table, aws_world.names.payments_table, dynamodb=client)
        summaries.append(sweeper_for(aws_world, clock=later(STALE), store=store).run())

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # Then both saw them stuck, but each event was re-dispatched exactly once: one dispatching write, one message
    assert [s.stuck for s in summaries] == [3, 3]
    assert sum(s.redispatched for s in summaries) == 3
    assert sorted(r["dynamodb"]["Keys"]["pk"]["S"] for r in redispatch_records(aws_world)) == sorted(pks)
    assert pipe.poll_once() == 3


def test_a_run_is_bounded_by_its_item_budget_and_the_next_run_carries_on(aws_world):
    pks = [store_event(aws_world.names, resource_id=f"pi_{n}") for n in range(5)]
    first = sweeper_for(aws_world, clock=later(STALE), max_items=2).run()
    assert (first.redispatched, first.truncated) == (2, True)
    second = sweeper_for(aws_world, clock=later(STALE + 1), max_items=2).run()
    third = sweeper_for(aws_world, clock=later(STALE + 2), max_items=2).run()
    assert (second.redispatched, third.redispatched, third.truncated) == (2, 1, False)
    assert {item_of(aws_world, pk)["dispatch_reason"] for pk in pks} == {"redispatch"}


def test_a_run_stops_when_its_invocation_is_about_to_time_out(aws_world):
    store_event(aws_world.names)
    summary = sweeper_for(aws_world, clock=later(STALE)).run(remaining_ms=lambda: MIN_REMAINING_MS - 1)
    assert (summary.redispatched, summary.truncated) == (0, True)
    assert redispatch_records(aws_world) == []


def test_the_sweep_counts_failed_events_and_the_oldest_pending_age(aws_world):
    # Given one unparseable (failed) event and two pending events received 1 s and 301 s after BASE_TIME
    failed = build_item(
        provider="asaas",
        event_id="evt_bad",
        event=None,
        request=WebhookRequest(body=b"{", headers={}),
        replay_headers=(),
        body=StoredBody(sha256="0", size=1, inline=b"{"),
        received_at=BASE_TIME,
        retention_days=30,
        failure="unparseable body",
    )
    inbox(aws_world).put_new(failed)
    store_event(aws_world.names)
    # When the sweeper runs 100 s later
    summary = sweeper_for(aws_world, clock=later(100)).run()
    # Then it reports one failed event, the oldest pending one's age, and nothing stale yet
    assert (summary.failed, summary.stuck, summary.redispatched) == (1, 0, 0)
    assert summary.oldest_age_s == pytest.approx(99)


def test_the_sweeper_lambda_returns_its_summary(aws_world, monkeypatch):
    from functions.sweeper.handler import lambda_handler
    from inbox_local.lambda_context import LocalLambdaContext
    from shared import sweeper

    monkeypatch.setenv("INBOX_QUEUE_URL", aws_world.resources["queue_url"])
    sweeper.default_sweeper.reset()
    try:
        scheduled = {"source": "aws.events", "detail-type": "Scheduled Event"}
        result = lambda_handler(scheduled, cast(Any, LocalLambdaContext("sweeper")))
    finally:
        sweeper.default_sweeper.reset()
    assert set(result) >= {"redispatched", "stuck", "oldest_age_s", "failed", "reconciled", "truncated"}
