"""The six invariants of a chaos run (inbox_cli/chaos/invariants.py): pure functions over what the run collected,
each shown holding and breaking."""

from __future__ import annotations

from inbox_cli.chaos.deliveries import SentWebhook
from inbox_cli.chaos.invariants import (
    acknowledged_events_settled,
    dead_letter_queue_empty,
    every_transition_in_the_outbox_once,
    every_webhook_acknowledged,
    matches_the_gateway,
    no_transition_applied_twice,
)
from inbox_cli.simulate import Truth
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus

STRIPE = "stripe#pi_1"
STANDARD = "standard#100000000001"


def payment(key: str, status: str = "paid", *, transitions: int = 2, version: int = 2, refunded: int = 0) -> Payment:
    provider, resource_id = key.split("#")
    return Payment(
        provider=provider,
        resource_id=resource_id,
        status=PaymentStatus(status),
        provider_status=None,
        amount=1990,
        currency="BRL",
        amount_refunded=refunded,
        version=version,
        transitions=transitions,
        last_event_at=None,
        last_event_id=None,
        updated_at="2026-01-01T00:00:00Z",
    )


# ------------------------------------------------------------------------ 1. acknowledged -> processed or ignored


def test_acknowledged_events_all_settled_hold_even_when_the_replay_recovered_one():
    # Given two acknowledged events, one of which failed and was then recovered by the replay
    statuses = {"stripe#evt_1": "processed", "stripe#evt_2": "ignored"}
    # When the invariant is checked
    verdict = acknowledged_events_settled({"stripe#evt_1", "stripe#evt_2"}, statuses, {"stripe#evt_2"})
    # Then it holds, and says one was settled after the replay
    assert verdict.ok and verdict.detail == "2/2 (1 after the replay)"


def test_an_acknowledged_event_failed_or_missing_breaks_it():
    # Given an acknowledged event left failed, and one the inbox does not have at all
    verdict = acknowledged_events_settled({"stripe#evt_1", "stripe#evt_2"}, {"stripe#evt_1": "failed"}, set())
    # Then the invariant fails, naming both
    assert not verdict.ok and verdict.detail == "0/2"
    assert verdict.examples == [
        {"pk": "stripe#evt_1", "status": "failed"},
        {"pk": "stripe#evt_2", "status": "missing"},
    ]


# ---------------------------------------------------------------------------------- 2. no transition applied twice


def test_transitions_equal_to_processed_events_hold_and_a_touch_is_allowed_only_by_event_time():
    # Given a refetched payment written once per processed event, and an event-time payment written once more
    # (a newer event stated the status it already had: ignored, its watermark moved)
    payments = {STRIPE: payment(STRIPE), STANDARD: payment(STANDARD, version=3)}
    processed = {STRIPE: 2, STANDARD: 2}
    # When the invariant is checked
    verdict = no_transition_applied_twice(payments, processed, {STANDARD: 1}, {STANDARD})
    # Then it holds
    assert verdict.ok and verdict.detail == "2/2 payments"


def test_a_transition_applied_twice_or_an_unexplained_write_breaks_it():
    # Given a payment with more transitions than processed events, and a refetched one written once more than
    # its transitions (a refetched payment is only written by transitions)
    payments = {STRIPE: payment(STRIPE, version=3), "asaas#pay_1": payment("asaas#pay_1", transitions=3, version=3)}
    processed = {STRIPE: 2, "asaas#pay_1": 2}
    # When the invariant is checked (with ignored events for the refetched payment: they explain nothing)
    verdict = no_transition_applied_twice(payments, processed, {STRIPE: 4}, set())
    # Then it fails for both
    assert not verdict.ok and verdict.detail == "0/2 payments"
    assert {example["payment"] for example in verdict.examples} == {STRIPE, "asaas#pay_1"}


def test_an_event_time_payment_written_more_often_than_its_events_allow_breaks_it():
    # Given an event-time payment with two writes beyond its transitions but only one ignored event
    verdict = no_transition_applied_twice(
        {STANDARD: payment(STANDARD, version=4)}, {STANDARD: 2}, {STANDARD: 1}, {STANDARD}
    )
    # Then the invariant fails
    assert not verdict.ok


def test_a_payment_confirmed_from_its_payload_may_be_corrected_and_verified_once_per_verification():
    # Given a payment confirmed from its payload whose one verification item corrected it (a transition of its own)
    # and one whose verification agreed (a write of `verified`, no transition)
    corrected = "stripe#pi_corrected"
    payments = {corrected: payment(corrected, transitions=3, version=3), STRIPE: payment(STRIPE, version=3)}
    processed = {corrected: 2, STRIPE: 2}
    # When the invariant is checked with their verification items
    verdict = no_transition_applied_twice(payments, processed, {}, set(), {corrected: 1, STRIPE: 1})
    # Then it holds
    assert verdict.ok and verdict.detail == "2/2 payments"


def test_a_verification_explains_one_transition_or_write_not_more():
    # Given payments with one verification item each: one with two transitions beyond its processed events, one
    # with two writes beyond its transitions
    twice = "stripe#pi_twice"
    payments = {twice: payment(twice, transitions=4, version=4), STRIPE: payment(STRIPE, version=4)}
    # When the invariant is checked, Then both break it
    verdict = no_transition_applied_twice(payments, {twice: 2, STRIPE: 2}, {}, set(), {twice: 1, STRIPE: 1})
    assert not verdict.ok and {example["payment"] for example in verdict.examples} == {twice, STRIPE}
    # And without the verification items the agreeing payment's write is unexplained too
    assert not no_transition_applied_twice({STRIPE: payment(STRIPE, version=3)}, {STRIPE: 2}, {}, set()).ok


def test_processed_events_without_a_stored_payment_break_it():
    verdict = no_transition_applied_twice({STRIPE: None}, {STRIPE: 1}, {}, set())
    assert not verdict.ok and verdict.examples == [{"payment": STRIPE, "processed_events": 1, "stored": None}]


# --------------------------------------------------------------------------------------- 3. the gateway's truth


def test_payments_equal_to_the_truth_hold_and_an_event_time_truth_compares_the_status_only():
    # Given a refetched payment refunded in part, and an event-time one whose events carry no refunded amount
    payments = {STRIPE: payment(STRIPE, "partially_refunded", refunded=500), STANDARD: payment(STANDARD, "refunded")}
    truths = [Truth("stripe", "pi_1", "partially_refunded", 500), Truth("standard", "100000000001", "refunded", None)]
    # When the invariant is checked
    verdict = matches_the_gateway(truths, payments)
    # Then it holds
    assert verdict.ok and verdict.detail == "2/2"


def test_a_payment_differing_from_the_truth_breaks_it():
    # Given a payment refunded less than the gateway says, and one the inbox never stored
    payments = {STRIPE: payment(STRIPE, "partially_refunded", refunded=400), "asaas#pay_1": None}
    truths = [Truth("stripe", "pi_1", "partially_refunded", 500), Truth("asaas", "pay_1", "paid", 0)]
    # When the invariant is checked
    verdict = matches_the_gateway(truths, payments)
    # Then it fails for both, saying what the gateway and the inbox hold
    assert not verdict.ok and verdict.detail == "0/2"
    assert verdict.examples[0] == {
        "provider": "stripe",
        "resource_id": "pi_1",
        "gateway": {"status": "partially_refunded", "amount_refunded": 500},
        "inbox": {"status": "partially_refunded", "amount_refunded": 400},
    }
    assert verdict.examples[1]["inbox"] is None


# ---------------------------------------------------------------------------------------- 4. dead-letter queue


def test_a_drained_dead_letter_queue_holds_and_a_message_left_breaks_it():
    assert dead_letter_queue_empty(3, []).ok
    left = dead_letter_queue_empty(2, [{"pk": "stripe#evt_1", "status": "failed"}])
    assert not left.ok and left.detail == "2 drained, 1 left" and left.examples[0]["pk"] == "stripe#evt_1"


# ----------------------------------------------------------------------------------- 5. every webhook acknowledged


def test_every_webhook_acknowledged_in_the_end_holds_even_after_refusals():
    # Given a webhook refused twice (503) before a later delivery was acknowledged
    sent = SentWebhook("stripe", "pi_1", "payment_intent.created", b"{}", statuses=[503, 503, 200])
    assert every_webhook_acknowledged([sent]).ok


def test_a_webhook_never_acknowledged_breaks_it():
    refused = SentWebhook("asaas", "pay_1", "PAYMENT_CREATED", b"{}", statuses=[503, 0])
    verdict = every_webhook_acknowledged([refused, SentWebhook("stripe", "pi_1", "x", b"{}", statuses=[200])])
    assert not verdict.ok and verdict.detail == "1/2"
    assert verdict.examples == [{"provider": "asaas", "resource_id": "pay_1", "statuses": [503, 0]}]


def test_a_refetch_verified_notification_is_stored_at_least_once_per_payment():
    # Given Cielo notifications acknowledged for two payments, one of them delivered (and stored) three times:
    # its body has no identity, so each delivery is an item of its own, every one settled
    hinted = [("cielo", "p1"), ("cielo", "p2")]
    stored = [("cielo", "p1"), ("cielo", "p1"), ("cielo", "p1"), ("cielo", "p2")]
    statuses = {"cielo#n_1": "processed", "cielo#n_2": "ignored", "cielo#n_3": "ignored", "cielo#n_4": "processed"}
    # Then the invariant holds: repeats are stored, and settled, not "twice"
    assert acknowledged_events_settled(set(statuses), statuses, set(), hinted=hinted, stored=stored).ok


def test_an_acknowledged_refetch_verified_notification_with_nothing_stored_breaks_it():
    statuses = {"zoop#n_1": "processed"}
    verdict = acknowledged_events_settled(
        set(statuses), statuses, set(), hinted=[("zoop", "t1"), ("zoop", "t2")], stored=[("zoop", "t1")]
    )
    assert not verdict.ok and verdict.detail == "1/1; 1 refetch-verified payments with no stored delivery"
    assert verdict.examples == [{"provider": "zoop", "resource_id": "t2", "status": "no delivery stored"}]


# -------------------------------------------------------------------------------------------------- 6. the outbox


def test_one_outbox_record_per_transition_holds():
    payments = {STRIPE: payment(STRIPE, transitions=2), "asaas#pay_1": None}
    assert every_transition_in_the_outbox_once(payments, {STRIPE: [1, 2]}).ok


def test_a_missing_or_repeated_outbox_record_breaks_it():
    payments = {STRIPE: payment(STRIPE, transitions=2), "asaas#pay_1": payment("asaas#pay_1", transitions=1)}
    verdict = every_transition_in_the_outbox_once(payments, {STRIPE: [1, 1, 2], "asaas#pay_1": []})
    assert not verdict.ok and verdict.detail == "0/2 payments"
    assert verdict.examples[0] == {"payment": "asaas#pay_1", "outbox_sequences": [], "expected": [1]}
