"""Mercado Pago refetch: `GET /v1/payments/{id}` with `Authorization: Bearer <access token>`.

The payment states `status`, `status_detail`, `transaction_amount` (a decimal in `currency_id`, parsed exactly
with `parse_float=Decimal` and scaled by the currency's ISO 4217 exponent: BRL 10.1 -> 1010, CLP 1500 -> 1500) and
`transaction_amount_refunded` (a decimal too). An unknown id is 404.

Canonical status (first matching row wins); the statuses are the ones the official SDKs enumerate
(`PaymentStatus`: pending, approved, authorized, in_process, in_mediation, rejected, cancelled, refunded,
charged_back):

| status        | condition                                                        | canonical          |
|---------------|------------------------------------------------------------------|--------------------|
| pending, in_process |                                                            | pending            |
| authorized    |                                                                  | authorized         |
| approved      | transaction_amount_refunded >= transaction_amount (> 0)          | refunded           |
| approved      | transaction_amount_refunded > 0, or status_detail partially_refunded | partially_refunded |
| approved      | otherwise                                                        | paid               |
| in_mediation  |                                                                  | disputed           |
| rejected      |                                                                  | failed             |
| cancelled     |                                                                  | canceled           |
| refunded      |                                                                  | refunded           |
| charged_back  | status_detail in_process (the chargeback is still being decided) | disputed           |
| charged_back  | otherwise (settled, reimbursed...)                               | charged_back       |
| anything else |                                                                  | GatewayResponseInvalid |

- `in_process` is a payment under review (anti-fraud): not decided yet, pending.
- `in_mediation` is a buyer's dispute being mediated: disputed.
- `charged_back`: the SDK describes the funds as reversed to the buyer. The `status_detail` refinement for a
  chargeback still in process is inferred, not documented by Mercado Pago.

amount = transaction_amount, currency = currency_id, amount_refunded = transaction_amount_refunded (the whole
amount when `refunded` states none). provider_status: "status/status_detail" when there is a detail.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from shared.gateway.base import PaymentSnapshot, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    mapped_status,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.providers._money import decimal_to_minor_units
from shared.sub_account import SubAccount

PROVIDER = "mercadopago"
DEFAULT_BASE_URL = "https://api.mercadopago.com"

S = PaymentStatus

STATUS_MAP: dict[str, PaymentStatus] = {
    "pending": S.PENDING,
    "in_process": S.PENDING,
    "authorized": S.AUTHORIZED,
    "approved": S.PAID,
    "in_mediation": S.DISPUTED,
    "rejected": S.FAILED,
    "cancelled": S.CANCELED,
    "refunded": S.REFUNDED,
    "charged_back": S.CHARGED_BACK,
}
CHARGEBACK_UNDECIDED_DETAILS = frozenset({"in_process"})


def to_minor_units(value: Any, currency: str, where: str) -> int:
    """A JSON number (parsed as Decimal or int) in minor units; a string or anything else is invalid."""
    if isinstance(value, str):
        raise GatewayResponseInvalid(f"mercadopago {where} is not a number")
    try:
        return decimal_to_minor_units(value, currency)
    except ValueError:
        raise GatewayResponseInvalid(f"mercadopago {where} is not a decimal amount") from None


def mercadopago_status(
    payment: dict[str, Any], *, amount: int | None, amount_refunded: int
) -> tuple[PaymentStatus, str]:
    """(canonical status, provider status) for a Mercado Pago payment."""
    status = status_word(payment, "mercadopago payment")
    detail = payment.get("status_detail")
    detail = detail if isinstance(detail, str) and detail else None
    label = f"{status}/{detail}" if detail else status
    canonical = mapped_status(STATUS_MAP, status, "mercadopago payment")
    if canonical is S.PAID:
        if amount_refunded > 0 and amount is not None and amount_refunded >= amount:
            return S.REFUNDED, label
        if amount_refunded > 0 or detail == "partially_refunded":
            return S.PARTIALLY_REFUNDED, label
    if canonical is S.CHARGED_BACK and detail in CHARGEBACK_UNDECIDED_DETAILS:
        return S.DISPUTED, label
    return canonical, label


class MercadoPagoClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        payment = self._http.get_json(
            f"/v1/payments/{path_segment(resource_id)}",
            headers={"Authorization": f"Bearer {self._api_key()}"},
            parse_float=Decimal,
        )
        answered_id = payment.get("id")
        if answered_id is not None and str(answered_id) != resource_id:
            raise GatewayResponseInvalid("mercadopago answered a different payment than the one asked for")

        currency = answered_currency(payment.get("currency_id"), None)
        value = payment.get("transaction_amount")
        amount = to_minor_units(value, currency or "", "transaction_amount") if value is not None else None
        refunded_value = payment.get("transaction_amount_refunded")
        amount_refunded = (
            to_minor_units(refunded_value, currency or "", "transaction_amount_refunded") if refunded_value else 0
        )
        status, provider_status = mercadopago_status(payment, amount=amount, amount_refunded=amount_refunded)
        if status is S.REFUNDED and amount_refunded == 0 and amount is not None:
            amount_refunded = amount
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
            amount_refunded=amount_refunded,
        )
