"""Pagar.me refetch: v5 charges and orders (`/core/v5`, HTTP Basic with the secret key `sk_...:`), and legacy v4
transactions (`/1/transactions/{id}`, the `api_key` parameter) for the <=v4 postbacks.

Which endpoint: the id says it. `ch_...` -> `GET /core/v5/charges/{id}`; `or_...` -> `GET /core/v5/orders/{id}`
(its last charge is the payment; an order with no charge reads as its own status); all digits -> the v4
transaction. Anything else is not a Pagar.me payment id: ResourceNotFound (retried, then failed + DLQ).

v5 charge -> canonical (first matching row wins):

| charge                                                            | canonical                          |
|-------------------------------------------------------------------|------------------------------------|
| pending, with `last_transaction.status` authorized_pending_capture | authorized                         |
| pending, processing, underpaid                                    | pending                            |
| paid, overpaid, with `canceled_amount` >= `paid_amount`           | refunded                           |
| paid, overpaid, with `canceled_amount` > 0                        | partially_refunded                 |
| paid, overpaid                                                    | paid                               |
| canceled, after money was received (`paid_amount` > 0)            | refunded / partially_refunded      |
| canceled                                                          | canceled                           |
| refunded                                                          | refunded                           |
| failed                                                            | failed                             |
| chargedback                                                       | charged_back                       |
| any other status                                                  | GatewayResponseInvalid             |

`underpaid` (a boleto or Pix paid for less than the charge) stays `pending`: the charge is not settled, and
Pagar.me's own modules treat it apart from paid. `overpaid` is paid. A v5 refund is a cancellation of a paid
charge (`charge.refunded` / `charge.partial_canceled`): `canceled_amount` says how much went back.

v4 transaction -> canonical: processing, waiting_payment, analyzing, pending_review -> pending; authorized ->
authorized; paid, pending_refund (the money has not left yet) -> paid, refined by `refunded_amount`; refunded ->
refunded; refused -> failed; chargedback -> charged_back.

Money: integer centavos in both versions. Currency: the charge's (upper case); v4 is BRL.
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, ResourceNotFound, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    basic_authorization,
    centavos,
    check_answered,
    mapped_status,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.providers.pagarme.driver import CHARGE_STATUS, TRANSACTION_STATUS
from shared.sub_account import SubAccount

PROVIDER = "pagarme"
DEFAULT_BASE_URL = "https://api.pagar.me"
CURRENCY = "BRL"

S = PaymentStatus

AUTHORIZED_TRANSACTION_STATUSES = frozenset({"authorized_pending_capture"})


def _refund_refinement(canonical: PaymentStatus, status: str, paid: int, refunded: int) -> tuple[PaymentStatus, str]:
    if refunded <= 0 or canonical is not S.PAID:
        return canonical, status
    if paid > 0 and refunded >= paid:
        return S.REFUNDED, f"{status}/refunded"
    return S.PARTIALLY_REFUNDED, f"{status}/partially_refunded"


def charge_status(charge: dict[str, Any]) -> tuple[PaymentStatus, str, int]:
    """(canonical status, provider status, amount refunded) of a v5 charge."""
    status = status_word(charge, "pagarme charge")
    canonical = mapped_status(CHARGE_STATUS, status, "pagarme charge")
    amount = centavos(charge, "amount", "pagarme charge") or 0
    paid = centavos(charge, "paid_amount", "pagarme charge") or 0
    canceled = centavos(charge, "canceled_amount", "pagarme charge") or 0
    if canonical is S.PENDING and status == "pending":
        last = charge.get("last_transaction")
        if isinstance(last, dict) and last.get("status") in AUTHORIZED_TRANSACTION_STATUSES:
            return S.AUTHORIZED, f"{status}/{last['status']}", 0
    if canonical is S.CANCELED and paid > 0:  # a paid charge canceled: the money went back
        refunded = canceled or paid
        if refunded >= paid:
            return S.REFUNDED, f"{status}/refunded", refunded
        return S.PARTIALLY_REFUNDED, f"{status}/partially_refunded", refunded
    if canonical is S.REFUNDED:
        return S.REFUNDED, status, canceled or paid or amount
    canonical, provider_status = _refund_refinement(canonical, status, paid or amount, canceled)
    return canonical, provider_status, canceled if canonical in (S.REFUNDED, S.PARTIALLY_REFUNDED) else 0


def transaction_status(transaction: dict[str, Any]) -> tuple[PaymentStatus, str, int]:
    """(canonical status, provider status, amount refunded) of a v4 transaction."""
    status = status_word(transaction, "pagarme transaction")
    canonical = mapped_status(TRANSACTION_STATUS, status, "pagarme transaction")
    amount = centavos(transaction, "amount", "pagarme transaction") or 0
    refunded = centavos(transaction, "refunded_amount", "pagarme transaction") or 0
    if canonical is S.REFUNDED:
        return S.REFUNDED, status, refunded or amount
    canonical, provider_status = _refund_refinement(canonical, status, amount, refunded)
    return canonical, provider_status, refunded if canonical in (S.REFUNDED, S.PARTIALLY_REFUNDED) else 0


class PagarmeClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        if resource_id.startswith("ch_"):
            charge = self._get_v5(f"/core/v5/charges/{path_segment(resource_id)}")
            return self._charge_snapshot(resource_id, charge)
        if resource_id.startswith("or_"):
            order = self._get_v5(f"/core/v5/orders/{path_segment(resource_id)}")
            check_answered(order.get("id"), resource_id, provider=PROVIDER, what="order")
            charges = order.get("charges")
            if isinstance(charges, list) and any(isinstance(charge, dict) for charge in charges):
                last = [charge for charge in charges if isinstance(charge, dict)][-1]
                return self._charge_snapshot(resource_id, last, check_id=False)
            return self._charge_snapshot(resource_id, order, check_id=False)
        if resource_id.isascii() and resource_id.isdigit():
            return self._transaction_snapshot(resource_id)
        raise ResourceNotFound(f"{resource_id[:40]!r} is not a Pagar.me charge, order or transaction id")

    def _get_v5(self, path: str) -> dict[str, Any]:
        return self._http.get_json(path, headers={"Authorization": basic_authorization(self._api_key())})

    def _charge_snapshot(self, resource_id: str, charge: dict[str, Any], *, check_id: bool = True) -> PaymentSnapshot:
        if check_id:
            check_answered(charge.get("id"), resource_id, provider=PROVIDER, what="charge")
        status, provider_status, refunded = charge_status(charge)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=centavos(charge, "amount", "pagarme charge"),
            currency=answered_currency(charge.get("currency"), CURRENCY),
            amount_refunded=refunded,
        )

    def _transaction_snapshot(self, resource_id: str) -> PaymentSnapshot:
        transaction = self._http.get_json(
            f"/1/transactions/{path_segment(resource_id)}", headers={}, query=(("api_key", self._api_key()),)
        )
        if str(transaction.get("id", resource_id)) != resource_id:
            raise GatewayResponseInvalid("pagarme answered a different transaction than the one asked for")
        status, provider_status, refunded = transaction_status(transaction)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=centavos(transaction, "amount", "pagarme transaction"),
            currency=CURRENCY,
            amount_refunded=refunded,
        )
