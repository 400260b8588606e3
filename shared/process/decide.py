"""What an observation of a payment does to the stored payment. Pure: no I/O, fully property-tested."""

from __future__ import annotations

from dataclasses import dataclass

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

    def __post_init__(self) -> None:
        if not self.source:
            object.__setattr__(self, "source", self.provider)


@dataclass(frozen=True, slots=True)
class Apply:
    payment: Payment
    previous: Payment | None
    reason: str


@dataclass(frozen=True, slots=True)
class Touch:
    """No transition, but the payment records that a newer event was seen (its `last_event_at` watermark), so
    that an older event arriving later cannot apply. Only for observations ordered by event time."""

    payment: Payment
    previous: Payment
    reason: str
    code: IgnoredReason = IgnoredReason.NO_CHANGE  # the event is ignored: the payment was already in that state


@dataclass(frozen=True, slots=True)
class Ignore:
    reason: str  # for a human: what was compared
    code: IgnoredReason  # the closed set's reason, stored and counted


Decision = Apply | Touch | Ignore


def _newer(first: str | None, second: str | None) -> str | None:
    if first is None:
        return second
    if second is None:
        return first
    return max(first, second)  # ISO-8601 UTC strings of one format sort in time order


def decide(current: Payment | None, seen: Observation, *, now: str) -> Decision:
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
            ),
            None,
            "first seen",
        )
    if seen.ordered_by_event_time and seen.event_id is not None and seen.event_id == current.last_event_id:
        # The event that last moved the payment, again: a redelivery or a captured copy posted after its inbox item
        # was gone (retention). It changes nothing, and its time (unsigned for some classes) moves no watermark.
        return Ignore(f"already applied: {seen.event_id} is the payment's last event", IgnoredReason.NOT_NEWER)
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
        ),
        current,
        f"{current.status.value} -> {seen.status.value}",
    )
