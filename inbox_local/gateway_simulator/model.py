"""The simulator's payment model, shared by the core and every provider's shape: one payment, its canonical
lifecycle (one `transition` = one gateway step), the webhooks a step produces, and ids drawn reproducibly."""

from __future__ import annotations

import string
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from shared.payments.status import PaymentStatus, is_allowed

S = PaymentStatus
ALPHANUMERIC = string.ascii_letters + string.digits
HEX_UPPER = "0123456789ABCDEF"
HEX_LOWER = "0123456789abcdef"

# One gateway step each. Every pair is also allowed by the canonical TRANSITIONS table (checked at import).
GATEWAY_STEPS: dict[PaymentStatus, frozenset[PaymentStatus]] = {
    S.PENDING: frozenset({S.AUTHORIZED, S.PAID, S.FAILED, S.CANCELED}),
    S.FAILED: frozenset({S.PENDING, S.AUTHORIZED, S.PAID, S.CANCELED}),
    S.AUTHORIZED: frozenset({S.PAID, S.FAILED, S.CANCELED}),
    S.PAID: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED}),
    S.PARTIALLY_REFUNDED: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED}),
    # won: back to the status before the dispute (checked in `transition`); lost: charged back
    S.DISPUTED: frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.CHARGED_BACK}),
}
# A gateway with no dispute status (Paddle, Pagar.me) reports the chargeback itself, straight from paid.
_UNDISPUTED_CHARGEBACK = {S.PAID: S.CHARGED_BACK, S.PARTIALLY_REFUNDED: S.CHARGED_BACK}
assert all(is_allowed(a, b) for a, targets in GATEWAY_STEPS.items() for b in targets)
assert all(is_allowed(a, b) for a, b in _UNDISPUTED_CHARGEBACK.items())

Tokens = Callable[[int, str], str]
"""`tokens(length, alphabet)`: reproducible random text (the simulator's seeded id source)."""


class GatewayStep(NamedTuple):
    """One gateway step the core asks a shape to make: the payment goes from `current` to `target` at `when` (epoch
    s), refunding `refund` minor units (0 unless the target is a refund)."""

    current: PaymentStatus
    target: PaymentStatus
    refund: int
    when: int


class Webhook(NamedTuple):
    """One notification the gateway would send: its type, the exact body, and when it happened (epoch s)."""

    event_type: str
    body: bytes
    occurred_at: int


@dataclass
class SimulatedPayment:
    provider: str
    resource_id: str
    amount: int
    currency: str
    created: int
    status: PaymentStatus = S.PENDING
    amount_refunded: int = 0
    history: list[tuple[PaymentStatus, int]] = field(default_factory=list)
    unknown_fetches: int = 0  # answer 404 to this many fetches first
    fetches: int = 0
    status_before_dispute: PaymentStatus | None = None
    # Stripe details
    connect_account: str | None = None  # a Connect account's payment: found only with its Stripe-Account/-Context
    thin: bool = False  # its webhooks are thin events (an event destination with thin payloads)
    intent_status: str = "requires_payment_method"
    last_payment_error: bool = False
    charge_id: str | None = None
    charge_failed: bool = False
    captured: bool = False
    dispute_id: str | None = None
    dispute_status: str | None = None
    dispute_created: int = 0
    # Asaas details
    asaas_status: str = "PENDING"
    deleted: bool = False
    payment_date: int | None = None
    refunds: list[tuple[int, int]] = field(default_factory=list)  # (centavos, when)
    chargeback_status: str | None = None
    # The gateway account it belongs to: a source name (docs/sources.md); "" is the provider's default account.
    account: str = ""

    def __post_init__(self) -> None:
        self.account = self.account or self.provider

    def truth(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "source": self.account,
            "resource_id": self.resource_id,
            "status": str(self.status),
            "amount": self.amount,
            "currency": self.currency,
            "amount_refunded": self.amount_refunded,
            "history": [{"status": str(status), "at": at} for status, at in self.history],
        }

    def last_at(self, *statuses: PaymentStatus) -> int | None:
        """When the payment last entered one of `statuses` (epoch s), if it ever did."""
        return next((at for status, at in reversed(self.history) if status in statuses), None)


def gateway_steps(statuses: Iterable[PaymentStatus]) -> dict[PaymentStatus, frozenset[PaymentStatus]]:
    """GATEWAY_STEPS restricted to the statuses a gateway can express."""
    allowed = frozenset(statuses)
    steps = {a: frozenset(b for b in targets if b in allowed) for a, targets in GATEWAY_STEPS.items() if a in allowed}
    if S.DISPUTED not in allowed and S.CHARGED_BACK in allowed:
        for source, target in _UNDISPUTED_CHARGEBACK.items():
            if source in steps:
                steps[source] = steps[source] | {target}
    return steps


def path_to(steps: dict[PaymentStatus, frozenset[PaymentStatus]], target: PaymentStatus) -> list[PaymentStatus]:
    """The shortest run of gateway steps from a new (pending) payment to `target`; [] for pending itself.

    ValueError when the gateway cannot get there."""
    previous: dict[PaymentStatus, PaymentStatus | None] = {S.PENDING: None}
    queue = deque([S.PENDING])
    while queue:
        status = queue.popleft()
        if status is target:
            path: list[PaymentStatus] = []
            at: PaymentStatus | None = status
            while at is not None and at is not S.PENDING:
                path.append(at)
                at = previous[at]
            return path[::-1]
        for following in sorted(steps.get(status, frozenset())):
            if following not in previous:
                previous[following] = status
                queue.append(following)
    raise ValueError(f"no run of gateway steps leads from pending to {target}")
