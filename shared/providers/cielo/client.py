"""Cielo refetch (API E-commerce 3.0): `GET {apiquery}/1/sales/{PaymentId}` with the `MerchantId` and
`MerchantKey` headers (Cielo's official Python SDK, cieloApi3: `QuerySale` on `environment.api_query`).

Hosts: production `https://apiquery.cieloecommerce.cielo.com.br` (the default), sandbox
`https://apiquerysandbox.cieloecommerce.cielo.com.br` (set `INBOX_API_BASE_<SOURCE>` to it).

Credentials: the source's API key is `MERCHANT_ID:MERCHANT_KEY` (two values in one secret, split at the first ':';
a MerchantId is a GUID and a MerchantKey has no ':'), docs/sources.md.

`Payment.Status` -> canonical (docs.cielo.com.br, "Transaction status list"):

| code | Cielo            | canonical                                                              |
|------|------------------|------------------------------------------------------------------------|
| 0    | NotFinished      | pending                                                                |
| 1    | Authorized       | authorized (a card approved, not captured; a boleto issued)            |
| 2    | PaymentConfirmed | paid                                                                   |
| 3    | Denied           | failed                                                                 |
| 10   | Voided           | canceled; refunded / partially_refunded when it had been captured      |
| 11   | Refunded         | refunded, or partially_refunded when `VoidedAmount` < `CapturedAmount` |
| 12   | Pending          | pending                                                                |
| 13   | Aborted          | failed                                                                 |
| 20   | Scheduled        | pending (a scheduled recurrence)                                       |
| else | -                | GatewayResponseInvalid                                                 |

Money: `Payment.Amount`, `CapturedAmount`, `VoidedAmount` are integer centavos. Reading a void of a captured sale
as a refund (by `CapturedAmount`/`VoidedAmount`) is inferred: a captured payment cannot become `canceled`.
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, credential_pair, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    centavos,
    check_answered,
    path_segment,
)
from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount

PROVIDER = "cielo"
DEFAULT_BASE_URL = "https://apiquery.cieloecommerce.cielo.com.br"
SANDBOX_BASE_URL = "https://apiquerysandbox.cieloecommerce.cielo.com.br"
CURRENCY = "BRL"

S = PaymentStatus

PAYMENT_STATUS: dict[int, tuple[PaymentStatus, str]] = {
    0: (S.PENDING, "NotFinished"),
    1: (S.AUTHORIZED, "Authorized"),
    2: (S.PAID, "PaymentConfirmed"),
    3: (S.FAILED, "Denied"),
    10: (S.CANCELED, "Voided"),
    11: (S.REFUNDED, "Refunded"),
    12: (S.PENDING, "Pending"),
    13: (S.FAILED, "Aborted"),
    20: (S.PENDING, "Scheduled"),
}
_VOIDS = frozenset({10, 11})
_PAYMENT = "cielo Payment"  # the object an amount's error names


def sale_status(payment: dict[str, Any]) -> tuple[PaymentStatus, str, int]:
    """(canonical, Cielo status name, amount refunded) of a sale's `Payment`."""
    code = payment.get("Status")
    if isinstance(code, bool) or not isinstance(code, int) or code not in PAYMENT_STATUS:
        raise GatewayResponseInvalid(f"cielo Payment.Status {str(code)[:20]!r} is not mapped")
    canonical, name = PAYMENT_STATUS[code]
    if code not in _VOIDS:
        return canonical, name, 0
    captured = centavos(payment, "CapturedAmount", _PAYMENT) or 0
    voided = centavos(payment, "VoidedAmount", _PAYMENT) or 0
    if not captured:  # nothing was captured: a void cancels, a refund returns the whole amount
        return (canonical, name, centavos(payment, "Amount", _PAYMENT) or 0) if code == 11 else (canonical, name, 0)
    refunded = min(voided or captured, captured)
    if refunded < captured:
        return S.PARTIALLY_REFUNDED, f"{name}/partial", refunded
    return S.REFUNDED, name, refunded


class CieloClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        merchant_id, merchant_key = credential_pair(self._api_key(), PROVIDER, "MERCHANT_ID", "MERCHANT_KEY")
        sale = self._http.get_json(
            f"/1/sales/{path_segment(resource_id)}", headers={"MerchantId": merchant_id, "MerchantKey": merchant_key}
        )
        payment = sale.get("Payment")
        if not isinstance(payment, dict):
            raise GatewayResponseInvalid("cielo sale has no Payment")
        check_answered(payment.get("PaymentId"), resource_id, provider=PROVIDER, what="payment")
        status, provider_status, refunded = sale_status(payment)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=centavos(payment, "Amount", _PAYMENT),
            currency=answered_currency(payment.get("Currency"), CURRENCY),
            amount_refunded=refunded,
        )
