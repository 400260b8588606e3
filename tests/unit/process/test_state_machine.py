"""The state machine and the pure decision: transitions as data, regressions refused."""

from __future__ import annotations

import pytest

from shared.payments.model import Payment
from shared.payments.status import TERMINAL_STATUSES, TRANSITIONS, PaymentStatus, is_allowed
from shared.process.decide import Apply, Ignore, Observation, Touch, decide

S = PaymentStatus
NOW = "2026-11-29T12:00:00.000000Z"


def payment(status: S, *, version: int = 1, last_event_at: str | None = "2026-11-29T10:00:00.000000Z") -> Payment:
    return Payment("stripe", "pi_1", status, None, 1000, "BRL", 0, version, version, last_event_at, "evt_0", NOW)


def seen(status: S, *, at: str | None = "2026-11-29T11:00:00.000000Z", by_time: bool = False, refunded: int = 0):
    return Observation("stripe", "pi_1", status, status.value, 1000, "BRL", refunded, "evt_1", at, by_time)


def test_every_canonical_status_has_a_row():
    assert set(TRANSITIONS) == set(PaymentStatus)


@pytest.mark.parametrize(
    ("current", "target"),
    [(S.PAID, S.PENDING), (S.REFUNDED, S.PAID), (S.PAID, S.AUTHORIZED), (S.CANCELED, S.PAID), (S.CHARGED_BACK, S.PAID)],
)
def test_regressions_are_refused(current, target):
    assert not is_allowed(current, target)
    decision = decide(payment(current), seen(target), now=NOW)
    assert isinstance(decision, Ignore)
    assert "refused" in decision.reason


@pytest.mark.parametrize(("current", "target"), [(S.PENDING, S.PAID), (S.PENDING, S.REFUNDED), (S.AUTHORIZED, S.PAID)])
def test_skipping_intermediate_states_forward_is_allowed(current, target):
    decision = decide(payment(current, version=3), seen(target), now=NOW)
    assert isinstance(decision, Apply)
    assert decision.payment.status is target
    assert decision.payment.version == 4


def test_a_payment_first_seen_through_a_late_event_starts_in_the_reported_state():
    decision = decide(None, seen(S.REFUNDED), now=NOW)
    assert isinstance(decision, Apply)
    assert (decision.payment.status, decision.payment.version) == (S.REFUNDED, 1)


def test_terminal_statuses_accept_nothing():
    assert {S.REFUNDED, S.CANCELED, S.CHARGED_BACK} == TERMINAL_STATUSES


def test_the_same_status_changes_nothing_but_a_further_partial_refund_does():
    assert isinstance(decide(payment(S.PAID), seen(S.PAID), now=NOW), Ignore)
    current = payment(S.PARTIALLY_REFUNDED).evolve(amount_refunded=100)
    assert isinstance(decide(current, seen(S.PARTIALLY_REFUNDED, refunded=100), now=NOW), Ignore)
    further = decide(current, seen(S.PARTIALLY_REFUNDED, refunded=300), now=NOW)
    assert isinstance(further, Apply)
    assert further.payment.amount_refunded == 300


def test_without_an_api_an_event_older_than_the_last_applied_one_is_ignored():
    current = payment(S.PENDING, last_event_at="2026-11-29T10:00:00.000000Z")
    older = seen(S.PAID, at="2026-11-29T09:59:59.000000Z", by_time=True)
    assert isinstance(decide(current, older, now=NOW), Ignore)
    newer = seen(S.PAID, at="2026-11-29T10:00:01.000000Z", by_time=True)
    decision = decide(current, newer, now=NOW)
    assert isinstance(decision, Apply)
    assert decision.payment.last_event_at == "2026-11-29T10:00:01.000000Z"


def test_with_an_api_the_gateway_state_wins_even_when_the_event_is_older():
    # The webhook is only a hint: a late event's refetch still reads the current truth
    current = payment(S.PENDING, last_event_at="2026-11-29T10:00:00.000000Z")
    decision = decide(current, seen(S.PAID, at="2026-11-29T09:00:00.000000Z"), now=NOW)
    assert isinstance(decision, Apply)
    assert decision.payment.last_event_at == "2026-11-29T10:00:00.000000Z"  # never moves backwards


def test_without_an_api_a_newer_event_of_the_same_status_moves_the_watermark():
    # paid(t1) applied; paid(t3) arrives before disputed(t2): t3 must still fence t2 off
    current = payment(S.PAID, last_event_at="2026-11-29T10:00:01.000000Z")
    decision = decide(current, seen(S.PAID, at="2026-11-29T10:00:03.000000Z", by_time=True), now=NOW)
    assert isinstance(decision, Touch)
    assert decision.payment.transitions == current.transitions
    assert decision.payment.last_event_at == "2026-11-29T10:00:03.000000Z"
    later = decide(decision.payment, seen(S.DISPUTED, at="2026-11-29T10:00:02.000000Z", by_time=True), now=NOW)
    assert isinstance(later, Ignore)


def test_without_an_api_the_payments_last_event_again_moves_nothing():
    # Given a payment whose last event is evt_0, and that event posted again with a later time (a captured copy
    # whose inbox item is gone: its key is free again, and a time nobody signed can be anything up to the receipt)
    current = payment(S.PAID)
    replayed = Observation(
        "stripe", "pi_1", S.PAID, "paid", 1000, "BRL", 0, "evt_0", "2026-11-29T11:59:00.000000Z", True
    )
    # Then it is ignored: neither the status nor the watermark moves
    decision = decide(current, replayed, now=NOW)
    assert isinstance(decision, Ignore) and "already applied" in decision.reason
    # (a refetched observation is the gateway's truth, whatever event led to it: not concerned)
    refetched = Observation("stripe", "pi_1", S.REFUNDED, "refunded", 1000, "BRL", 1000, "evt_0", None, False)
    assert isinstance(decide(current, refetched, now=NOW), Apply)
