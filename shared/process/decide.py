"""What an observation of a payment does to the stored payment. Pure: no I/O, fully property-tested."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from shared.definitions import IgnoredReason
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus, is_allowed
from shared.sub_account import SubAccount


@dataclass(frozen=True, slots=True)
class Observation:
    """The payment as a source reports it: the gateway's API now (refetch), or the event itself (no API)."""

    provider: str
    resource_id: str
    status: PaymentStatus
    provider_status: str | None
    amount: int | None
    currency: str | None
    amount_refunded: int
    event_id: str | None  # the event that led to this observation (None for a reconciliation)
    event_occurred_at: str | None  # ISO-8601 UTC; orders events when there is no API to ask
    ordered_by_event_time: bool  # True when the observation comes from the event, not from the gateway's API
    account: SubAccount | None = None  # the gateway sub-account the payment was read from (None: the source's own)
    source: str = ""  # the source (account) of the payment; "" means the provider's default source
    # False: read from a signed payload the gateway's API has not confirmed (shared/process/confirm.py); what it
    # applies is unverified. True: read from the API, or from the event of a provider that has none.
    verified: bool = True

    def __post_init__(self) -> None:
        if not self.source:
            object.__setattr__(self, "source", self.provider)


class Verification(StrEnum):
    """What the gateway's API said of a payment whose status was applied from a payload (counted, logged)."""

    CONFIRMED = "confirmed"  # the same status: the payment is verified
    CORRECTED = "corrected"  # another status the state machine allows: applied, a transition like any other
    REFUSED = "refused"  # a status the state machine refuses (a regression): not applied, the payment is flagged


class NeedsRefetch(Exception):
    """A payload observation that cannot be ordered by event time: another event of the payment was applied in the
    same second of event time, and the two statuses do not say which came last. The refetch decides."""


class Apply(NamedTuple):
    payment: Payment
    previous: Payment | None
    reason: str
    verification: Verification | None = None  # set when the observation verified an unverified payment


class Touch(NamedTuple):
    """No transition, but the payment records that a newer event was seen (its `last_event_at` watermark), so
    that an older event arriving later cannot apply. Only for observations ordered by event time."""

    payment: Payment
    previous: Payment
    reason: str
    code: IgnoredReason = IgnoredReason.NO_CHANGE  # the event is ignored: the payment was already in that state
    verification: Verification | None = None  # set when the observation verified an unverified payment


class Ignore(NamedTuple):
    reason: str  # for a human: what was compared
    code: IgnoredReason  # the closed set's reason, stored and counted


Decision = Apply | Touch | Ignore


def _newer(first: str | None, second: str | None) -> str | None:
    if first is None:
        return second
    if second is None:
        return first
    return max(first, second)  # ISO-8601 UTC strings of one format sort in time order


def same_second(first: str | None, second: str | None) -> bool:
    """Whether two ISO-8601 UTC times fall in the same second (a payload's time is signed to the second)."""
    return first is not None and second is not None and first[:19] == second[:19]


def _order_independent(current: PaymentStatus, seen: PaymentStatus) -> bool:
    """Whether two statuses of one second end the same whichever came last: the state machine allows one way only
    (pending -> paid, never back), so the payment ends in the later one either way."""
    return is_allowed(current, seen) != is_allowed(seen, current)


def _verify(current: Payment, seen: Observation, *, now: str) -> Decision:
    """The gateway's API on a payment whose status came from a payload: it confirms it, corrects it (a transition),
    or reports a status the state machine refuses (the payment keeps its status and is flagged)."""
    further_refund = seen.status is PaymentStatus.PARTIALLY_REFUNDED and seen.amount_refunded > current.amount_refunded
    if seen.status == current.status and not further_refund:
        return Touch(
            current.evolve(
                provider_status=seen.provider_status,
                amount=seen.amount if seen.amount is not None else current.amount,
                currency=seen.currency or current.currency,
                amount_refunded=seen.amount_refunded,
                version=current.version + 1,
                updated_at=now,
                verified=True,
                verification_refused=None,
                account=current.account or seen.account,
            ),
            current,
            f"verified: {current.status.value}",
            verification=Verification.CONFIRMED,
        )
    if seen.status == current.status or is_allowed(current.status, seen.status):
        applied = _transition(current, seen, now=now)
        return Apply(
            applied.payment,
            current,
            f"corrected by the gateway: {applied.reason}",
            verification=Verification.CORRECTED,
        )
    if current.verification_refused == seen.status:
        return Ignore(
            f"gateway still says {seen.status.value}; refused from {current.status.value} (already flagged)",
            IgnoredReason.TRANSITION_REFUSED,
        )
    return Touch(
        current.evolve(version=current.version + 1, updated_at=now, verification_refused=seen.status),
        current,
        f"gateway says {seen.status.value}; transition {current.status.value} -> {seen.status.value} refused: flagged",
        IgnoredReason.TRANSITION_REFUSED,
        verification=Verification.REFUSED,
    )


def decide(current: Payment | None, seen: Observation, *, now: str) -> Decision:
    """What `seen` does to `current`. Raises NeedsRefetch for a payload observation of the same second of event
    time as the payment's last event whose order the statuses cannot tell."""
    if current is None:
        # First sight, possibly through a late event: start in whatever state the source reports.
        return Apply(
            Payment(
                source=seen.source,
                provider=seen.provider,
                resource_id=seen.resource_id,
                status=seen.status,
                provider_status=seen.provider_status,
                amount=seen.amount,
                currency=seen.currency,
                amount_refunded=seen.amount_refunded,
                version=1,
                transitions=1,
                last_event_at=seen.event_occurred_at,
                last_event_id=seen.event_id,
                updated_at=now,
                account=seen.account,
                verified=seen.verified,
            ),
            None,
            "first seen",
        )
    if seen.verified and not current.verified and not seen.ordered_by_event_time:
        return _verify(current, seen, now=now)
    if seen.ordered_by_event_time and seen.event_id is not None and seen.event_id == current.last_event_id:
        # The event that last moved the payment, again: a redelivery or a captured copy posted after its inbox item
        # was gone (retention). It changes nothing, and its time (unsigned for some classes) moves no watermark.
        return Ignore(f"already applied: {seen.event_id} is the payment's last event", IgnoredReason.NOT_NEWER)
    if not seen.verified and same_second(seen.event_occurred_at, current.last_event_at):
        # Two events of one second cannot be ordered by their time (Stripe signs whole seconds).
        if seen.status == current.status:
            return Ignore(f"no change: already {current.status.value}", IgnoredReason.NO_CHANGE)
        if not _order_independent(current.status, seen.status):
            raise NeedsRefetch(f"{current.status.value} and {seen.status.value} in the same second")
        if not is_allowed(current.status, seen.status):
            return Ignore(
                f"transition {current.status.value} -> {seen.status.value} refused", IgnoredReason.TRANSITION_REFUSED
            )
        return _transition(current, seen, now=now)
    if (
        seen.ordered_by_event_time
        and current.last_event_at is not None
        and (seen.event_occurred_at is None or seen.event_occurred_at <= current.last_event_at)
    ):
        return Ignore(
            f"event is not newer than the last applied one ({current.last_event_at})", IgnoredReason.NOT_NEWER
        )
    if seen.status == current.status:
        further_refund = (
            seen.status is PaymentStatus.PARTIALLY_REFUNDED and seen.amount_refunded > current.amount_refunded
        )
        if not further_refund:
            if seen.ordered_by_event_time:
                return Touch(
                    current.evolve(
                        version=current.version + 1,
                        last_event_at=seen.event_occurred_at,
                        last_event_id=seen.event_id,
                        updated_at=now,
                    ),
                    current,
                    f"no change: already {current.status.value} (newer event recorded)",
                )
            return Ignore(f"no change: already {current.status.value}", IgnoredReason.NO_CHANGE)
    elif not is_allowed(current.status, seen.status):
        return Ignore(
            f"transition {current.status.value} -> {seen.status.value} refused", IgnoredReason.TRANSITION_REFUSED
        )
    return _transition(current, seen, now=now)


def _transition(current: Payment, seen: Observation, *, now: str) -> Apply:
    return Apply(
        current.evolve(
            status=seen.status,
            provider_status=seen.provider_status,
            amount=seen.amount if seen.amount is not None else current.amount,
            currency=seen.currency or current.currency,
            amount_refunded=seen.amount_refunded,
            version=current.version + 1,
            transitions=current.transitions + 1,
            last_event_at=_newer(current.last_event_at, seen.event_occurred_at),
            last_event_id=seen.event_id or current.last_event_id,
            updated_at=now,
            previous_status=current.status,
            # An object lives in one account for good: the first account seen stays, a later event fills a gap.
            account=current.account or seen.account,
            verified=seen.verified,
            verification_refused=None,
        ),
        current,
        f"{current.status.value} -> {seen.status.value}",
    )
