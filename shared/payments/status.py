"""Canonical payment statuses and the transitions between them, as data.

Anything not in TRANSITIONS is refused: that is what stops a late or re-ordered webhook from regressing a
payment (`paid` never goes back to `pending`, `refunded` never back to `paid`). A payment first seen through a
late event starts in whatever state the gateway reports, and skipping intermediate states forward is allowed.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType


class PaymentStatus(StrEnum):
    PENDING = "pending"
    AUTHORIZED = "authorized"
    PAID = "paid"
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"
    FAILED = "failed"
    CANCELED = "canceled"
    DISPUTED = "disputed"
    CHARGED_BACK = "charged_back"


S = PaymentStatus

# from -> the statuses it may move to. A status moving to itself is not a transition (nothing changes), except
# `partially_refunded` -> `partially_refunded`, which is a further partial refund (the refunded amount grows).
TRANSITIONS: MappingProxyType[PaymentStatus, frozenset[PaymentStatus]] = MappingProxyType(
    {
        S.PENDING: frozenset(
            {S.AUTHORIZED, S.PAID, S.FAILED, S.CANCELED, S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK}
        ),
        # A failed attempt can be retried by the customer (another card, a new boleto): it may still succeed.
        S.FAILED: frozenset(
            {S.PENDING, S.AUTHORIZED, S.PAID, S.CANCELED, S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK}
        ),
        S.AUTHORIZED: frozenset(
            {S.PAID, S.FAILED, S.CANCELED, S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK}
        ),
        S.PAID: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK}),
        S.PARTIALLY_REFUNDED: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK}),
        # A dispute ends won (the money stays: back to paid, or to the refund state it was in) or lost.
        S.DISPUTED: frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED, S.CHARGED_BACK}),
        S.REFUNDED: frozenset(),
        S.CANCELED: frozenset(),
        S.CHARGED_BACK: frozenset(),
    }
)

INTERMEDIATE_STATUSES = frozenset({S.PENDING, S.AUTHORIZED})  # what the sweeper reconciles when stuck
TERMINAL_STATUSES = frozenset(status for status, targets in TRANSITIONS.items() if not targets)


def is_allowed(current: PaymentStatus, target: PaymentStatus) -> bool:
    return target in TRANSITIONS[current]
