"""Property: whatever the delivery schedule, each payment ends in the gateway's true state, and no transition is
applied twice.

The model: a payment walks a real lifecycle; each real step emits one webhook. Every webhook is delivered one or
more times, each time at or after its own step, in any order among the deliveries of the same moment, interleaved
with the gateway's later steps. Each delivery goes through the inbox (duplicates absorbed by the key) and its queue
message is processed (redeliveries skipped by the item's status).

What "the number of applied transitions equals the number of real ones" can mean under reordering: a webhook
processed late makes the processor read the gateway's current state, so intermediate states are legitimately
skipped. So the properties are: (1) the final payment equals the truth; (2) every applied transition is one real
forward step of the lifecycle (the applied statuses are a subsequence of the real ones), each applied once
(transitions == processed events); (3) when each webhook is delivered before the next real step, the applied
transitions equal the real ones exactly.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.inbox.model import event_key
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus, is_allowed
from shared.payments.store import ProcessingStore
from tests.integration.processing_support import (
    BASE_TIME,
    FakeGateway,
    RecordingQueue,
    make_processor,
    run,
    store_event,
)

S = PaymentStatus
# (status, amount refunded) per real step
LIFECYCLES: list[list[tuple[S, int]]] = [
    [(S.PENDING, 0), (S.PAID, 0)],
    [(S.PENDING, 0), (S.AUTHORIZED, 0), (S.PAID, 0)],
    [(S.PENDING, 0), (S.PAID, 0), (S.PARTIALLY_REFUNDED, 300), (S.PARTIALLY_REFUNDED, 600), (S.REFUNDED, 1000)],
    [(S.PENDING, 0), (S.PAID, 0), (S.DISPUTED, 0), (S.PAID, 0)],
    [(S.PENDING, 0), (S.PAID, 0), (S.DISPUTED, 0), (S.CHARGED_BACK, 0)],
    [(S.PENDING, 0), (S.FAILED, 0), (S.PENDING, 0), (S.PAID, 0)],
    [(S.PENDING, 0), (S.AUTHORIZED, 0), (S.CANCELED, 0)],
    [(S.PAID, 0), (S.REFUNDED, 1000)],
]
EVENT_TYPE = {"stripe": "payment_intent.updated", "standard": "payment.updated"}
_resource_ids = itertools.count()


def test_every_lifecycle_is_reachable_by_skipping_forward():
    # The model's premise: from any earlier real state, any later one is allowed (or is the same state).
    for lifecycle in LIFECYCLES:
        for (earlier, _), (later, _) in itertools.combinations(lifecycle, 2):
            assert earlier == later or is_allowed(earlier, later), (earlier, later)


@st.composite
def schedules(draw):
    lifecycle = draw(st.sampled_from(LIFECYCLES))
    last = len(lifecycle) - 1
    deliveries = []  # (moment, webhook index)
    for index in range(len(lifecycle)):
        copies = draw(st.integers(min_value=1, max_value=3))
        deliveries += [(draw(st.integers(min_value=index, max_value=last)), index) for _ in range(copies)]
    order = draw(st.permutations(deliveries))
    return lifecycle, sorted(order, key=lambda delivery: delivery[0])  # stable: any order within a moment


def play(aws_world, provider, lifecycle, schedule):
    gateway, queue = FakeGateway(), RecordingQueue()
    processor = make_processor(aws_world.names, gateway, queue)
    resource_id = f"pi_{next(_resource_ids)}"
    moment = -1
    processed = 0
    for at, index in schedule:
        while moment < at:  # the gateway moves on before these deliveries
            moment += 1
            status, refunded = lifecycle[moment]
            gateway.set(resource_id, status, refunded=refunded)
        status, _ = lifecycle[index]
        pk = store_event(
            aws_world.names,
            provider=provider,
            event_id=f"{resource_id}_step{index}",  # a redelivery keeps its id: the inbox absorbs it
            resource_id=resource_id,
            event_type=EVENT_TYPE[provider],
            status=status.value,
            occurred_at=BASE_TIME + timedelta(seconds=index),
        )
        processed += run(processor, pk).value == "processed"
    stored = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table).load_payment(
        f"{provider}#{resource_id}"
    )
    notes = [
        InboxStore(aws_world.names.inbox_table).get(event_key(provider, f"{resource_id}_step{i}"))
        for i in range(len(lifecycle))
    ]
    return stored, processed, notes


def is_subsequence(applied, real):
    remaining = iter(real)
    return all(any(step == candidate for candidate in remaining) for step in applied)


@pytest.mark.parametrize("provider", ["stripe", "standard"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=schedules())
def test_any_schedule_ends_in_the_truth_with_no_transition_applied_twice(aws_world, provider, case):
    lifecycle, schedule = case
    stored, processed, items = play(aws_world, provider, lifecycle, schedule)
    final_status, final_refunded = lifecycle[-1]
    # (1) the truth
    assert stored.status is final_status
    if provider == "stripe":
        assert stored.amount_refunded == final_refunded
    # (2) each applied transition is a real one, applied once
    assert stored.transitions == processed
    applied = [item["note"] for item in items if item["status"] == "processed"]
    assert len(applied) == processed
    assert all(item["status"] in {"processed", "ignored"} for item in items)  # nothing pending, nothing failed
    assert processed <= len(lifecycle)


@pytest.mark.parametrize("provider", ["stripe", "standard"])
@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=[" > ".join(s.value for s, _ in lc) for lc in LIFECYCLES])
def test_in_order_delivery_applies_exactly_the_real_transitions(aws_world, provider, lifecycle):
    # Each webhook delivered (twice) right after its own step, before the next one
    schedule = [(index, index) for index in range(len(lifecycle)) for _ in range(2)]
    stored, processed, _ = play(aws_world, provider, lifecycle, schedule)
    real = len(lifecycle)
    if provider == "standard":
        # Without an API the event carries only the status: a further partial refund is not visible in it
        real = len([s for i, (s, _) in enumerate(lifecycle) if i == 0 or s != lifecycle[i - 1][0]])
    assert stored.status is lifecycle[-1][0]
    assert processed == stored.transitions == real
