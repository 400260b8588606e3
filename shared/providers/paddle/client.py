"""Paddle Billing refetch: `GET /transactions/{id}?include=adjustments_totals` with `Authorization: Bearer <key>`.

The request pins `Paddle-Version: 1`. Paddle wraps the entity: `{"data": {...transaction...}, "meta": {...}}`.
Money is a string of minor units (`"1099"`); `include=adjustments_totals` adds the transaction's adjustments
summed, with a `breakdown` of `refund`, `credit` and `chargeback` (strings of minor units). An unknown id is 404.

Canonical status (first matching row wins):

| transaction.status     | condition                                       | canonical          |
|------------------------|-------------------------------------------------|--------------------|
| paid, completed        | adjustments breakdown.chargeback > 0            | charged_back       |
| paid, completed        | breakdown.refund >= grand_total                 | refunded           |
| paid, completed        | breakdown.refund > 0                            | partially_refunded |
| paid, completed        | otherwise                                       | paid               |
| draft, ready, billed   |                                                 | pending            |
| past_due               |                                                 | failed             |
| canceled               |                                                 | canceled           |
| anything else          |                                                 | GatewayResponseInvalid |

Notes on the rows:
- `paid` is "fully paid, but not yet processed internally", `completed` "fully paid and processed": both are paid.
- `billed` is an issued invoice awaiting payment: pending.
- `past_due` is, in Paddle's words, what an automatically-collected transaction returns "if payment failed" (the
  subscription is in dunning) and a manually-collected one whose payment terms elapsed: `failed`, which the state
  machine lets move on to `paid` when a retry succeeds (`transaction.completed`).
- A chargeback warning (an early fraud notice, `chargeback_warning` adjustment) is not part of the totals' breakdown
  and does not change the status; an actual chargeback does.
- Whether `adjustments_totals` counts adjustments still `pending_approval` is not stated by Paddle; a refund is
  expected to count once approved (Paddle then sends `adjustment.updated`, which refetches again).

amount = `details.totals.grand_total` (what was charged; `total` if absent), currency = `currency_code`,
amount_refunded = breakdown.refund. provider_status: the transaction status, refined by what decided it, e.g.
"completed/refunded", "completed/chargeback".
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    check_answered,
    mapped_status,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount

PROVIDER = "paddle"
DEFAULT_BASE_URL = "https://api.paddle.com"
API_VERSION = "1"

S = PaymentStatus

STATUS_MAP: dict[str, PaymentStatus] = {
    "draft": S.PENDING,
    "ready": S.PENDING,
    "billed": S.PENDING,
    "paid": S.PAID,
    "completed": S.PAID,
    "past_due": S.FAILED,
    "canceled": S.CANCELED,
}


def payload_status(event_type: str, provider_status: str | None) -> str | None:
    """The canonical payment status a stored Paddle event states in its signed body (Paddle-Signature is an HMAC of
    `{ts}:{body}`, and an event's `data` is a snapshot of the entity at its signed `occurred_at`): a transaction.*
    event's transaction status, read by this module's table without its adjustments (a refund or chargeback arrives
    as an adjustment.* event, which states none and waits for the refetch). The provider catalog names this
    function (`payload_status_from`)."""
    if not event_type.startswith("transaction.") or provider_status is None:
        return None
    status = STATUS_MAP.get(provider_status)
    return status.value if status is not None else None


def minor_units(value: Any, where: str, *, default: int | None = None) -> int | None:
    """A Paddle amount (a string of digits in minor units) as an integer; `default` when absent."""
    if value is None:
        return default
    if not isinstance(value, str) or not value.isdigit() or len(value) > 15:
        raise GatewayResponseInvalid(f"paddle {where} is not an amount in minor units")
    return int(value)


def _totals(transaction: dict[str, Any]) -> dict[str, Any]:
    details = transaction.get("details")
    totals = details.get("totals") if isinstance(details, dict) else None
    return totals if isinstance(totals, dict) else {}


def _breakdown(transaction: dict[str, Any]) -> dict[str, Any]:
    adjustments = transaction.get("adjustments_totals")
    breakdown = adjustments.get("breakdown") if isinstance(adjustments, dict) else None
    return breakdown if isinstance(breakdown, dict) else {}


def paddle_status(transaction: dict[str, Any], *, amount: int | None) -> tuple[PaymentStatus, str, int]:
    """(canonical status, provider status, amount refunded) for a Paddle transaction with its adjustments totals."""
    status = status_word(transaction, "paddle transaction")
    canonical = mapped_status(STATUS_MAP, status, "paddle transaction")
    breakdown = _breakdown(transaction)
    refunded = minor_units(breakdown.get("refund"), "adjustments_totals.breakdown.refund", default=0) or 0
    charged_back = minor_units(breakdown.get("chargeback"), "adjustments_totals.breakdown.chargeback", default=0)
    if canonical is not S.PAID:
        return canonical, status, refunded
    if charged_back:
        return S.CHARGED_BACK, f"{status}/chargeback", refunded
    if refunded > 0:
        if amount is not None and refunded >= amount:
            return S.REFUNDED, f"{status}/refunded", refunded
        return S.PARTIALLY_REFUNDED, f"{status}/partially_refunded", refunded
    return S.PAID, status, 0


class PaddleClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        headers = {"Authorization": f"Bearer {self._api_key()}", "Paddle-Version": API_VERSION}
        document = self._http.get_json(
            f"/transactions/{path_segment(resource_id)}",
            headers=headers,
            query=[("include", "adjustments_totals")],
        )
        transaction = document.get("data")
        if not isinstance(transaction, dict):
            raise GatewayResponseInvalid("paddle answered no transaction (no data object)")
        check_answered(transaction.get("id"), resource_id, provider=PROVIDER, what="transaction")

        totals = _totals(transaction)
        amount = minor_units(totals.get("grand_total", totals.get("total")), "details.totals.grand_total")
        status, provider_status, refunded = paddle_status(transaction, amount=amount)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=answered_currency(transaction.get("currency_code"), None),
            amount_refunded=refunded,
        )
