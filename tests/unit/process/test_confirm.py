"""Confirming a payment from its signed payload: eligibility, when a source is behind, the same-second rule, and
what a verification from the API does (pure: no I/O)."""

from __future__ import annotations

import json

import pytest

from shared.definitions import (
    BODY_BINDING_TRUST,
    CONFIRM_ALWAYS,
    CONFIRM_NEVER,
    CONFIRM_WHEN_BEHIND,
    DEFAULT_CONFIRM_BEHIND_SECONDS,
    PROVIDER_CATALOG,
    SourcesInvalid,
    SourceSpec,
    catalog_problems,
    parse_sources,
    provider_entry,
)
from shared.definitions import RECONCILE_INDEX_PK as RECONCILE_KEY
from shared.gateway.ratelimit import RateLimiter
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus
from shared.process.confirm import PayloadConfirmation, SourceConfirmation, is_behind, payload_observation
from shared.process.decide import Apply, Ignore, NeedsRefetch, Observation, Touch, Verification, decide
from shared.process.router import InboxEvent
from shared.providers.paddle.client import payload_status as paddle_payload_status
from shared.providers.stripe.client import payload_status

S = PaymentStatus
NOW = "2026-11-29T12:00:00.000000Z"
T0 = 1_800_000_000.0  # epoch seconds of "now" in the behind tests


def payment(status: S, *, verified: bool = True, last_event_at: str = "2026-11-29T10:00:05Z", **changes) -> Payment:
    base = Payment("stripe", "pi_1", status, None, 1000, "BRL", 0, 2, 1, last_event_at, "evt_0", NOW)
    return base.evolve(verified=verified, **changes)


def from_payload(status: S, *, at: str = "2026-11-29T10:00:09Z", event_id: str = "evt_1") -> Observation:
    return Observation("stripe", "pi_1", status, status.value, 1000, "BRL", 0, event_id, at, True, verified=False)


def from_api(status: S, *, refunded: int = 0) -> Observation:
    return Observation("stripe", "pi_1", status, status.value, 1000, "BRL", refunded, None, None, False)


def event(event_type: str = "payment_intent.succeeded", status: str | None = "succeeded", **changes) -> InboxEvent:
    values = {
        "pk": "stripe#evt_1",
        "provider": "stripe",
        "event_id": "evt_1",
        "event_type": event_type,
        "resource_id": "pi_1",
        "occurred_at": "2026-11-29T10:00:09Z",
        "provider_status": status,
        "amount": 1000,
        "currency": "BRL",
        "attempts": 0,
        "received_at": "2026-11-29T10:00:10.000000Z",
        **changes,
    }
    return InboxEvent(**values)


# ------------------------------------------------------------------------------------------------- eligibility


def test_stripe_and_paddle_are_eligible_and_every_provider_that_is_binds_the_body_and_refetches():
    eligible = {entry.id for entry in PROVIDER_CATALOG if entry.confirms_from_payload}
    assert eligible == {"stripe", "paddle"}
    for entry in PROVIDER_CATALOG:
        if entry.confirms_from_payload:
            assert entry.trust in BODY_BINDING_TRUST
            assert entry.refetch_client is not None and entry.ordering == "refetch"


@pytest.mark.parametrize("provider", ["asaas", "mercadopago", "cielo", "eduzz", "iugu"])
def test_the_catalog_check_refuses_eligibility_where_the_trust_class_does_not_bind_the_body_or_there_is_no_api(
    provider,
):
    # Given a token-authenticated, a signed-fields, a refetch-verified, an event-time and a token provider
    entry = provider_entry(provider)._replace(payload_status_from="shared.providers.stripe.client:payload_status")
    # Then declaring it eligible is a catalog problem that names it
    problems = catalog_problems((entry,))
    assert any(
        problem.startswith(f"{provider}: only a provider whose scheme binds the whole body") for problem in problems
    )


@pytest.mark.parametrize(
    ("event_type", "status", "stated"),
    [
        ("payment_intent.succeeded", "succeeded", "paid"),
        ("payment_intent.amount_capturable_updated", "requires_capture", "authorized"),
        ("payment_intent.processing", "processing", "pending"),
        ("payment_intent.canceled", "canceled", "canceled"),
        ("payment_intent.payment_failed", "requires_payment_method", "failed"),
        ("payment_intent.created", "requires_payment_method", "pending"),
        ("payment_intent.requires_action", "requires_payment_method", None),  # ambiguous without last_payment_error
        ("charge.succeeded", "succeeded", None),  # a charge may be uncaptured: the refetch reads it
        ("charge.refunded", "refunded", None),
        ("charge.dispute.created", "disputed", None),
        ("v1.payment_intent.succeeded", None, None),  # a thin event states nothing
        ("payment_intent.succeeded", "some_new_status", None),
    ],
)
def test_stripe_states_a_payment_status_only_in_its_snapshot_payment_intent_events(event_type, status, stated):
    assert payload_status(event_type, status) == stated


@pytest.mark.parametrize(
    ("event_type", "status", "stated"),
    [
        ("transaction.completed", "completed", "paid"),
        ("transaction.paid", "paid", "paid"),
        ("transaction.billed", "billed", "pending"),
        ("transaction.past_due", "past_due", "failed"),
        ("transaction.canceled", "canceled", "canceled"),
        ("transaction.updated", "something_new", None),
        ("adjustment.created", None, None),  # a refund or chargeback: the refetch reads what it did
    ],
)
def test_paddle_states_a_payment_status_in_its_transaction_events(event_type, status, stated):
    assert paddle_payload_status(event_type, status) == stated


# --------------------------------------------------------------------------------------------------- sources


def test_sources_default_to_when_behind_for_an_eligible_provider_and_never_for_the_others():
    stripe, asaas = parse_sources([{"name": "stripe-br", "provider": "stripe"}, {"name": "a", "provider": "asaas"}])
    assert (stripe.confirm_mode, stripe.behind_seconds) == (CONFIRM_WHEN_BEHIND, DEFAULT_CONFIRM_BEHIND_SECONDS)
    assert asaas.confirm_mode == CONFIRM_NEVER


def test_a_source_sets_its_mode_and_threshold_and_they_round_trip():
    [source] = parse_sources(
        [{"name": "s", "provider": "stripe", "confirm_from_payload": "always", "confirm_behind_seconds": 5}]
    )
    assert (source.confirm_mode, source.behind_seconds) == (CONFIRM_ALWAYS, 5)
    assert parse_sources([source.document()]) == (source,)


def test_confirming_from_the_payload_of_an_ineligible_provider_is_refused_naming_the_source_and_why():
    with pytest.raises(SourcesInvalid) as refused:
        parse_sources([{"name": "asaas-br", "provider": "asaas", "confirm_from_payload": "when_behind"}])
    message = str(refused.value)
    assert "'asaas-br'" in message and "'confirm_from_payload'" in message
    assert "binds the whole body" in message and "providers that do: paddle, stripe" in message
    # ... while `never` is accepted for any provider
    assert (
        parse_sources([{"name": "a", "provider": "asaas", "confirm_from_payload": "never"}])[0].confirm_mode == "never"
    )


@pytest.mark.parametrize(
    "option",
    [
        {"confirm_from_payload": "sometimes"},
        {"confirm_from_payload": True},
        {"confirm_behind_seconds": 0},
        {"confirm_behind_seconds": 3601},
        {"confirm_behind_seconds": 2.5},
        {"confirm_behind_seconds": True},
    ],
)
def test_bad_confirmation_options_are_refused(option):
    with pytest.raises(SourcesInvalid, match="confirm_"):
        parse_sources([{"name": "s", "provider": "stripe", **option}])


# ------------------------------------------------------------------------------------------------------ behind

WHEN_BEHIND = SourceConfirmation(CONFIRM_WHEN_BEHIND, 30, payload_status)


@pytest.mark.parametrize(
    ("setting", "received_ago", "next_free_in", "behind"),
    [
        (WHEN_BEHIND, 1, None, False),  # fresh, nothing seen of the schedule
        (WHEN_BEHIND, 1, 5, False),  # the next slot is near
        (WHEN_BEHIND, 1, 31, True),  # the next slot is further than 30 s away
        (WHEN_BEHIND, 30, None, True),  # it has waited 30 s since receipt
        (WHEN_BEHIND, None, None, False),
        (SourceConfirmation(CONFIRM_ALWAYS, 30, payload_status), 0, None, True),
        (SourceConfirmation(CONFIRM_NEVER, 30, payload_status), 3600, 3600, False),
        (SourceConfirmation(CONFIRM_ALWAYS, 30, None), 0, None, False),  # not eligible: never
    ],
)
def test_a_source_is_behind_when_its_next_slot_or_the_events_wait_passes_its_threshold(
    setting, received_ago, next_free_in, behind
):
    received_at = None if received_ago is None else T0 - received_ago
    next_free_at = None if next_free_in is None else T0 + next_free_in
    assert is_behind(setting, now=T0, received_at=received_at, next_free_at=next_free_at) is behind


class Schedule:
    def __init__(self, at: float | None) -> None:
        self.at = at
        self.asked = 0

    def next_free_at(self) -> float | None:
        self.asked += 1
        return self.at


def test_the_confirmation_reads_the_limiters_schedule_and_the_events_receipt():
    schedule = Schedule(None)
    confirmation = PayloadConfirmation(lambda source: WHEN_BEHIND, lambda source: schedule)
    received = 1_795_946_410.0  # 2026-11-29T10:00:10Z
    # Given a fresh event and a schedule with room: refetched as usual
    assert confirmation.now(event(), now=received + 2) is None
    # When the schedule's next slot is 40 s away: confirmed from the payload, unverified, ordered by event time
    schedule.at = received + 42
    seen = confirmation.now(event(), now=received + 2)
    assert seen is not None and (seen.status, seen.verified, seen.ordered_by_event_time) == (S.PAID, False, True)
    # ... and so when the event has waited 30 s, whatever the schedule says
    schedule.at = None
    assert confirmation.now(event(), now=received + 30) is not None
    # ... but never an event whose payload states no status a payment may be confirmed with
    assert confirmation.now(event(event_type="charge.refunded", status="refunded"), now=received + 60) is None


def test_a_refusal_longer_than_the_threshold_confirms_instead_of_waiting_a_shorter_one_does_not():
    confirmation = PayloadConfirmation(lambda source: WHEN_BEHIND)
    assert confirmation.instead_of_waiting(event(), retry_after=45.0) is not None
    assert confirmation.instead_of_waiting(event(), retry_after=2.0) is None
    always = PayloadConfirmation(lambda source: SourceConfirmation(CONFIRM_ALWAYS, 30, payload_status))
    assert always.instead_of_waiting(event(), retry_after=45.0) is None  # `always` already confirmed it
    assert PayloadConfirmation(lambda source: None).now(event(), now=T0) is None  # a source that never confirms


def test_a_payload_observation_needs_a_payment_and_an_event_time():
    assert payload_observation(event(resource_id=None), payload_status) is None
    assert payload_observation(event(occurred_at=None), payload_status) is None


def test_the_limiter_tells_its_next_free_slot_from_memory_without_a_read():
    class NoTable:
        def __getattr__(self, name):
            raise AssertionError(f"the control table was called: {name}")

    limiter = RateLimiter("control", "stripe", 1.0, burst=1, dynamodb=NoTable(), clock=lambda: T0)  # type: ignore[arg-type]
    assert limiter.next_free_at() is None  # nothing seen yet
    limiter._seen_tat = T0 + 3.0  # what its last write left
    assert limiter.next_free_at() == pytest.approx(T0 + 3.0)
    limiter._seen_blocked_until = T0 + 60.0  # a 429's Retry-After
    assert limiter.next_free_at() == pytest.approx(T0 + 60.0)


# --------------------------------------------------------------------------------------- applying the payload


def test_a_payload_applies_unverified_in_event_time_order():
    first = decide(None, from_payload(S.PENDING), now=NOW)
    assert isinstance(first, Apply) and first.payment.verified is False
    paid = decide(payment(S.PENDING), from_payload(S.PAID), now=NOW)
    assert isinstance(paid, Apply) and (paid.payment.status, paid.payment.verified) == (S.PAID, False)
    older = decide(payment(S.PENDING), from_payload(S.PAID, at="2026-11-29T10:00:01Z"), now=NOW)
    assert isinstance(older, Ignore) and older.code.value == "not_newer"
    assert isinstance(decide(payment(S.PAID), from_payload(S.PENDING), now=NOW), Ignore)  # the state machine


@pytest.mark.parametrize(
    ("current", "stated"),
    [(S.FAILED, S.PENDING), (S.PENDING, S.FAILED), (S.CANCELED, S.PAID), (S.PAID, S.DISPUTED)],
)
def test_two_events_of_one_second_whose_order_matters_wait_for_the_refetch(current, stated):
    # Given the payment's last event at 10:00:05 and a payload of the same second whose order the statuses cannot
    # tell (each may follow the other, or neither)
    with pytest.raises(NeedsRefetch):
        decide(payment(current), from_payload(stated, at="2026-11-29T10:00:05Z"), now=NOW)


def test_two_events_of_one_second_whose_order_does_not_matter_end_in_the_later_status_either_way():
    same_second = "2026-11-29T10:00:05Z"
    forward = decide(payment(S.PENDING), from_payload(S.PAID, at=same_second), now=NOW)
    assert isinstance(forward, Apply) and forward.payment.status is S.PAID
    backward = decide(payment(S.PAID), from_payload(S.PENDING, at=same_second), now=NOW)
    assert isinstance(backward, Ignore) and backward.code.value == "transition_refused"
    again = decide(payment(S.PAID), from_payload(S.PAID, at=same_second), now=NOW)
    assert isinstance(again, Ignore) and again.code.value == "no_change"


def test_the_same_second_rule_is_only_for_payloads_events_of_providers_without_an_api_keep_their_order():
    no_api = Observation("standard", "pi_1", S.PAID, "paid", 1000, "BRL", 0, "evt_1", "2026-11-29T10:00:05Z", True)
    assert isinstance(decide(payment(S.FAILED), no_api, now=NOW), Ignore)  # not newer, as before


# ------------------------------------------------------------------------------------------------ verification


def test_a_verification_that_agrees_marks_the_payment_verified_without_a_transition():
    decision = decide(payment(S.PAID, verified=False), from_api(S.PAID), now=NOW)
    assert isinstance(decision, Touch) and decision.verification is Verification.CONFIRMED
    assert (decision.payment.verified, decision.payment.transitions, decision.payment.version) == (True, 1, 3)


def test_a_verification_that_disagrees_applies_the_gateways_status_as_a_transition():
    decision = decide(payment(S.PAID, verified=False), from_api(S.REFUNDED), now=NOW)
    assert isinstance(decision, Apply) and decision.verification is Verification.CORRECTED
    corrected = decision.payment
    assert (corrected.status, corrected.previous_status, corrected.verified, corrected.transitions) == (
        S.REFUNDED,
        S.PAID,
        True,
        2,
    )


def test_a_verification_the_state_machine_refuses_flags_the_payment_and_applies_nothing():
    decision = decide(payment(S.PAID, verified=False), from_api(S.PENDING), now=NOW)
    assert isinstance(decision, Touch) and decision.verification is Verification.REFUSED
    flagged = decision.payment
    assert (flagged.status, flagged.verified, flagged.verification_refused) == (S.PAID, False, S.PENDING)
    assert RECONCILE_KEY not in flagged.to_item()  # out of the sweeper's list: an operator decides
    # ... and the same answer again changes nothing more (no second count, no write)
    assert isinstance(decide(flagged, from_api(S.PENDING), now=NOW), Ignore)
    # ... while the gateway coming round to the payment's status clears the flag
    cleared = decide(flagged, from_api(S.PAID), now=NOW)
    assert isinstance(cleared, Touch) and (cleared.payment.verified, cleared.payment.verification_refused) == (
        True,
        None,
    )


def test_an_unverified_payment_is_in_the_sweepers_unverified_partition_whatever_its_status():
    item = payment(S.PAID, verified=False).to_item()
    assert (item[RECONCILE_KEY], item["verified"]) == ("stripe#unverified", False)
    assert RECONCILE_KEY not in payment(S.PAID).to_item()
    assert payment(S.PENDING).to_item()[RECONCILE_KEY] == "stripe#pending"


def test_payments_written_before_verification_existed_read_as_verified():
    item = payment(S.PAID).to_item()
    del item["verified"]
    assert Payment.from_item(item).verified is True
    assert Payment.from_item(payment(S.PAID, verified=False).to_item()).verified is False


def test_a_sources_spec_without_options_is_what_default_sources_declare():
    assert SourceSpec("stripe", "stripe").confirm_mode == CONFIRM_WHEN_BEHIND
    assert SourceSpec("cielo", "cielo").confirm_mode == CONFIRM_NEVER


def test_every_eligible_providers_payload_reading_loads_from_its_client_module():
    from shared.gateway.registry import payload_reader

    for entry in PROVIDER_CATALOG:
        if entry.payload_status_from is not None:
            assert entry.payload_status_from.startswith(f"shared.providers.{entry.id}.client:")
            assert callable(payload_reader(entry.payload_status_from))
    for outside in ("os.path:join", "shared.providers.stripe.driver:driver"):
        with pytest.raises(ValueError, match="not a gateway module reference"):
            payload_reader(outside)


def test_the_deployments_confirmation_follows_each_declared_sources_setting(monkeypatch):
    from shared.process.confirm import declared_confirmation
    from shared.sources import reset_declared_sources

    # Given a Stripe source that always confirms, one that never does, and an Asaas one (not eligible)
    declaration = [
        {"name": "stripe-fast", "provider": "stripe", "confirm_from_payload": "always"},
        {"name": "stripe-safe", "provider": "stripe", "confirm_from_payload": "never"},
        {"name": "asaas", "provider": "asaas"},
    ]
    monkeypatch.setenv("INBOX_SOURCES", json.dumps(declaration))
    reset_declared_sources()
    try:
        confirmation = declared_confirmation()
        # Then only the first source's event is confirmed from its payload
        seen = confirmation.now(event(source="stripe-fast"), now=T0)
        assert seen is not None and (seen.source, seen.status, seen.verified) == ("stripe-fast", S.PAID, False)
        assert confirmation.now(event(source="stripe-safe"), now=T0) is None
        assert confirmation.now(event(source="asaas", provider="asaas"), now=T0) is None
        assert confirmation.now(event(source="undeclared"), now=T0) is None
    finally:
        monkeypatch.delenv("INBOX_SOURCES")
        reset_declared_sources()


def test_only_the_inboxs_own_verification_items_are_processed_as_verifications():
    from shared.process.service import is_verification

    own = event(event_type="webhook-inbox.verify", event_id="verify:pi_1:1", pk="stripe#verify:pi_1:1")
    assert is_verification(own)
    # A sender naming its event so (a generic sender chooses its types) is an ordinary event, ignored as unrouted
    assert not is_verification(event(event_type="webhook-inbox.verify", event_id="verify:x:1", provider="generic"))
    assert not is_verification(event(event_type="webhook-inbox.verify", event_id="evt_1"))
