"""The sweeper's rules, without AWS: what is stale, what waits, what the settings refuse, what the queue carries."""

from __future__ import annotations

import random

import pytest

from shared import definitions
from shared.backoff import MAX_BACKOFF_SECONDS
from shared.definitions import RECONCILE_INDEX_PK as RECONCILE_KEY
from shared.definitions import RECONCILE_INDEX_SK as CHECKED_AT
from shared.payments.model import Payment
from shared.payments.status import INTERMEDIATE_STATUSES, PaymentStatus
from shared.process.messages import DispatchMessage, ReconcileMessage, backoff_seconds, parse_message
from shared.settings import ConfigurationError
from shared.sweeper import Staleness, SweeperSettings, last_activity, last_work, stale_events

CUTOFF = "2026-11-29T10:00:00.000000Z"
BEFORE = "2026-11-29T09:00:00.000000Z"
AFTER = "2026-11-29T10:05:00.000000Z"


def pending(pk: str, group: str | None = None, **marks: str) -> dict[str, str]:
    return {"pk": pk, "group_id": group or pk, "received_at": BEFORE, **marks}


def test_an_event_quiet_since_before_the_cutoff_is_stale():
    # Given a pending event received and dispatched an hour before the cutoff, never attempted
    quiet = pending("stripe#evt_1", dispatched_at=BEFORE)
    # When the rule is applied
    result = stale_events([quiet], CUTOFF)
    # Then it is re-dispatched
    assert [item["pk"] for item in result.chosen] == ["stripe#evt_1"]
    assert result.waiting == result.waiting_for_source == 0


@pytest.mark.parametrize("mark", ["dispatched_at", "last_attempt_at"])
def test_a_recent_dispatch_or_attempt_means_the_event_is_not_stale(mark):
    # Given an old event that was re-dispatched (or attempted) after the cutoff
    busy = pending("stripe#evt_1", **{mark: AFTER})
    # Then it is left alone
    assert stale_events([busy], CUTOFF) == Staleness([], 0, 0)
    assert last_activity(busy) == AFTER


def test_an_event_written_before_dispatched_at_existed_falls_back_to_received_at():
    legacy = {"pk": "stripe#evt_old", "received_at": BEFORE}
    assert last_activity(legacy) == BEFORE
    assert len(stale_events([legacy], CUTOFF).chosen) == 1


def test_a_stale_event_behind_a_busy_event_of_its_payment_waits_its_turn():
    # Given two pending events of one payment: the first is being retried (attempted after the cutoff), the
    # second is queued behind it in the FIFO group and has had nothing happen to it since before the cutoff
    retried = pending("stripe#evt_1", group="stripe#pi_1", last_attempt_at=AFTER)
    queued = pending("stripe#evt_2", group="stripe#pi_1", dispatched_at=BEFORE)
    other = pending("stripe#evt_3", group="stripe#pi_2", dispatched_at=BEFORE)
    # When the rule is applied
    result = stale_events([retried, queued, other], CUTOFF)
    # Then only the event of the quiet payment is re-dispatched; the queued one is counted as waiting
    assert [item["pk"] for item in result.chosen] == ["stripe#evt_3"]
    assert result.waiting == 1 and result.waiting_for_source == 0


WAIT_ENDS = "2026-11-29T10:10:00.000000Z"  # after the cutoff: the wait is over only then


def test_an_event_waiting_for_its_source_is_neither_stale_nor_stuck():
    # Given an event received long ago whose message waits for its source's circuit until after the cutoff
    waiting = pending("stripe#evt_1", dispatched_at=BEFORE, wait_until=WAIT_ENDS)
    # When the rule is applied
    result = stale_events([waiting], CUTOFF)
    # Then it is not re-dispatched, nor counted as waiting behind its group (which stuck counts): it waits for its
    # source
    assert result == Staleness([], 0, 1)
    assert last_activity(waiting) == WAIT_ENDS and last_work(waiting) == BEFORE


def test_events_behind_a_waiting_event_in_their_group_wait_for_the_source_too():
    # Given a payment whose first event waits for its source and whose second is queued behind it (FIFO: its
    # message is not handed out before the first's), and an event of another payment whose wait is long over
    head = pending("stripe#evt_1", group="stripe#pi_1", wait_until=WAIT_ENDS)
    behind = pending("stripe#evt_2", group="stripe#pi_1", dispatched_at=BEFORE)
    over = pending("stripe#evt_3", group="stripe#pi_2", wait_until=BEFORE)
    # When the rule is applied
    result = stale_events([head, behind, over], CUTOFF)
    # Then the payment held by the wait is left alone, and the event whose wait ended before the cutoff is stale
    assert [item["pk"] for item in result.chosen] == ["stripe#evt_3"]
    assert (result.waiting, result.waiting_for_source) == (0, 2)


def test_a_wait_in_a_group_being_retried_keeps_its_events_waiting_for_the_source():
    # Given one event of a payment attempted after the cutoff and another of it that waits for the source
    attempted = pending("stripe#evt_1", group="stripe#pi_1", last_attempt_at=AFTER)
    waits = pending("stripe#evt_2", group="stripe#pi_1", wait_until=WAIT_ENDS)
    # Then the one being worked on is not counted at all, the waiting one waits for its source
    assert stale_events([attempted, waits], CUTOFF) == Staleness([], 0, 1)


def test_the_stale_threshold_must_exceed_the_processors_longest_backoff():
    # The processor's backoff cap was lowered to 600 s so that the default 900 s threshold exceeds it
    assert MAX_BACKOFF_SECONDS == 600
    assert definitions.DEFAULT_STALE_AFTER_SECONDS > MAX_BACKOFF_SECONDS
    rng = random.Random(3)
    assert max(backoff_seconds(attempt, 5, rng=rng) for attempt in range(1, 30)) == MAX_BACKOFF_SECONDS
    with pytest.raises(ConfigurationError, match="longest backoff"):
        SweeperSettings("inbox", "payments", "queue", stale_after_seconds=MAX_BACKOFF_SECONDS)


def test_settings_come_from_the_environment_with_defaults():
    settings = SweeperSettings.from_environ({"INBOX_TABLE": "i", "PAYMENTS_TABLE": "p", "INBOX_QUEUE_URL": "q"})
    assert (settings.stale_after_seconds, settings.reconcile_after_seconds, settings.max_items) == (900, 3600, 500)
    custom = SweeperSettings.from_environ(
        {
            "INBOX_TABLE": "i",
            "PAYMENTS_TABLE": "p",
            "INBOX_QUEUE_URL": "q",
            definitions.ENV_STALE_AFTER: "1200",
            definitions.ENV_RECONCILE_AFTER: "7200",
            definitions.ENV_SWEEP_MAX_ITEMS: "50",
        }
    )
    assert (custom.stale_after_seconds, custom.reconcile_after_seconds, custom.max_items) == (1200, 7200, 50)
    with pytest.raises(ConfigurationError, match="INBOX_QUEUE_URL"):
        SweeperSettings.from_environ({"INBOX_TABLE": "i", "PAYMENTS_TABLE": "p"})
    with pytest.raises(ConfigurationError, match="integer"):
        SweeperSettings.from_environ(
            {"INBOX_TABLE": "i", "PAYMENTS_TABLE": "p", "INBOX_QUEUE_URL": "q", definitions.ENV_STALE_AFTER: "soon"}
        )


def a_payment(status: PaymentStatus) -> Payment:
    return Payment("stripe", "pi_1", status, None, 1000, "BRL", 0, 3, 1, None, None, "2026-11-29T10:00:00.000000Z")


@pytest.mark.parametrize("status", list(PaymentStatus))
def test_only_payments_in_an_intermediate_status_are_in_the_reconcile_index(status):
    item = a_payment(status).to_item()
    if status in INTERMEDIATE_STATUSES:
        assert item[RECONCILE_KEY] == f"stripe#{status.value}"
        assert item[CHECKED_AT] == item["updated_at"]
    else:
        assert RECONCILE_KEY not in item
        assert CHECKED_AT not in item
    assert Payment.from_item(item) == a_payment(status)  # the index attributes do not leak into the model


def test_a_reconcile_message_round_trips_and_dispatch_messages_still_parse():
    message = ReconcileMessage("asaas", "pay_1")
    assert parse_message(message.to_body()) == message
    assert message.key == "asaas#pay_1"
    assert parse_message('{"pk": "stripe#evt_1", "dispatch_id": "d"}') == DispatchMessage("stripe#evt_1", "d")


@pytest.mark.parametrize(
    "body",
    ['{"kind": "reconcile", "provider": "stripe"}', '{"kind": "reconcile", "resource_id": 3}', "[]", "not json"],
)
def test_malformed_messages_are_refused(body):
    with pytest.raises(ValueError):
        parse_message(body)
