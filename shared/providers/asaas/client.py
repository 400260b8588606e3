"""Asaas refetch: `GET /v3/payments/{id}` with the `access_token: <key>` header.

Canonical status (first matching row wins):

| payment                                                   | canonical                                   |
|-----------------------------------------------------------|---------------------------------------------|
| `deleted: true`                                           | canceled                                    |
| `chargeback.status` DISPUTE_LOST or DONE                  | charged_back                                |
| REFUNDED                                                  | refunded                                    |
| CHARGEBACK_REQUESTED, CHARGEBACK_DISPUTE, AWAITING_CHARGEBACK_REVERSAL | disputed                       |
| AUTHORIZED                                                | authorized                                  |
| PENDING, OVERDUE, AWAITING_RISK_ANALYSIS, DUNNING_REQUESTED | pending                                   |
| CONFIRMED, RECEIVED, RECEIVED_IN_CASH, DUNNING_RECEIVED, REFUND_REQUESTED, REFUND_IN_PROGRESS | paid, refined: |
|   ... refunds DONE sum >= value                           | refunded                                    |
|   ... refunds DONE sum > 0                                | partially_refunded                          |
| any other status                                          | GatewayResponseInvalid (mapping out of date) |

Notes on the rows:
- REFUND_REQUESTED / REFUND_IN_PROGRESS stay `paid`: the money has not left yet. Asaas moves the payment to
  REFUNDED (and notifies PAYMENT_REFUNDED) when it has.
- Partial refunds: Asaas keeps the payment's status (RECEIVED, CONFIRMED) and lists each refund in `refunds`
  (`value`, `status` PENDING | CANCELLED | DONE). Only DONE refunds count: a PENDING one has not moved money
  and a CANCELLED one never will. amount_refunded = the DONE sum; for REFUNDED with no DONE refunds listed, the
  whole value.
- AWAITING_CHARGEBACK_REVERSAL is a dispute the merchant won whose money the acquirer has not returned yet:
  still `disputed` until Asaas reports the payment received again (then disputed -> paid).
- DUNNING_REQUESTED is an overdue payment sent to collection (not paid); DUNNING_RECEIVED is one recovered.
- A lost chargeback is read from the payment's `chargeback` object (`status` REQUESTED | IN_DISPUTE |
  DISPUTE_LOST | REVERSED | DONE); the payment status alone never says "lost".

Money: `value` is a decimal in BRL; the body is parsed with `parse_float=Decimal` and converted to centavos,
half-up (10.1 -> 1010 exactly). Currency: always BRL.

Not found: Asaas answers 404 for an unknown id. It can also answer 400 with `{"errors": [{"code": ...}]}`; a
400 whose codes all say "no such object" (`invalid_object`, `not_found`, `..._not_found`) is ResourceNotFound
too, so it is retried with backoff like a 404 (and ends failed + DLQ if it never appears). Any other 400 is
GatewayRejected.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from shared.gateway.base import PaymentSnapshot, ResourceNotFound, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayHttpRejected,
    GatewayResponseInvalid,
    check_answered,
    mapped_status,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount

PROVIDER = "asaas"
DEFAULT_BASE_URL = "https://api.asaas.com"
CURRENCY = "BRL"
_MAX_VALUE = Decimal(10) ** 12

S = PaymentStatus

STATUS_MAP: dict[str, PaymentStatus] = {
    "PENDING": S.PENDING,
    "OVERDUE": S.PENDING,
    "AWAITING_RISK_ANALYSIS": S.PENDING,
    "DUNNING_REQUESTED": S.PENDING,
    "AUTHORIZED": S.AUTHORIZED,
    "CONFIRMED": S.PAID,
    "RECEIVED": S.PAID,
    "RECEIVED_IN_CASH": S.PAID,
    "DUNNING_RECEIVED": S.PAID,
    "REFUND_REQUESTED": S.PAID,
    "REFUND_IN_PROGRESS": S.PAID,
    "REFUNDED": S.REFUNDED,
    "CHARGEBACK_REQUESTED": S.DISPUTED,
    "CHARGEBACK_DISPUTE": S.DISPUTED,
    "AWAITING_CHARGEBACK_REVERSAL": S.DISPUTED,
}
CHARGEBACK_LOST = frozenset({"DISPUTE_LOST", "DONE"})
NOT_FOUND_ERROR_CODES = frozenset({"invalid_object", "not_found", "object_not_found"})


def to_minor_units(value: Any, where: str) -> int:
    """A decimal BRL amount (Decimal or int, as parsed) -> integer centavos, half-up."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise GatewayResponseInvalid(f"asaas {where} is not a number")
    try:
        amount = Decimal(value)
        if not amount.is_finite() or amount.copy_abs() >= _MAX_VALUE:
            raise GatewayResponseInvalid(f"asaas {where} is out of range")
        return int((amount * 100).to_integral_value(rounding=ROUND_HALF_UP))
    except InvalidOperation:
        raise GatewayResponseInvalid(f"asaas {where} is not a number") from None


def refunded_amount(payment: dict[str, Any]) -> int:
    """Sum of the DONE refunds listed on the payment, in centavos."""
    refunds = payment.get("refunds")
    if refunds is None:
        return 0
    if not isinstance(refunds, list):
        raise GatewayResponseInvalid("asaas payment.refunds is not a list")
    total = 0
    for refund in refunds:
        if isinstance(refund, dict) and refund.get("status") == "DONE":
            total += to_minor_units(refund.get("value"), "payment.refunds[].value")
    return total


def asaas_status(payment: dict[str, Any], *, amount: int | None, amount_refunded: int) -> tuple[PaymentStatus, str]:
    """(canonical status, provider status) for an Asaas payment object."""
    status = status_word(payment, "asaas payment")
    if payment.get("deleted") is True:
        return S.CANCELED, f"{status}/deleted"
    chargeback = payment.get("chargeback")
    if isinstance(chargeback, dict) and chargeback.get("status") in CHARGEBACK_LOST:
        return S.CHARGED_BACK, f"{status}/chargeback:{chargeback['status']}"
    canonical = mapped_status(STATUS_MAP, status, "asaas payment")
    if canonical is S.PAID and amount_refunded > 0:
        if amount is not None and amount_refunded >= amount:
            return S.REFUNDED, f"{status}/refunded"
        return S.PARTIALLY_REFUNDED, f"{status}/partially_refunded"
    return canonical, status


class AsaasClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        path = f"/v3/payments/{path_segment(resource_id)}"
        try:
            payment = self._http.get_json(path, headers={"access_token": self._api_key()}, parse_float=Decimal)
        except GatewayHttpRejected as error:
            if error.status == 400 and error.error_codes and all(map(_means_not_found, error.error_codes)):
                raise ResourceNotFound(f"asaas answered 400 ({', '.join(error.error_codes)}) for {path}") from None
            raise
        check_answered(payment.get("id"), resource_id, provider=PROVIDER, what="payment")

        value = payment.get("value")
        amount = to_minor_units(value, "payment.value") if value is not None else None
        amount_refunded = refunded_amount(payment)
        status, provider_status = asaas_status(payment, amount=amount, amount_refunded=amount_refunded)
        if status is S.REFUNDED and amount_refunded == 0 and amount is not None:
            amount_refunded = amount  # REFUNDED with no itemised refunds: the whole value went back
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=CURRENCY,
            amount_refunded=amount_refunded,
        )


def _means_not_found(code: str) -> bool:
    return code in NOT_FOUND_ERROR_CODES or code.endswith("_not_found")
