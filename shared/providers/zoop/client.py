"""Zoop refetch: `GET /v1/marketplaces/{marketplace_id}/transactions/{id}` with HTTP Basic (the API key as user,
empty password), default base `https://api.zoop.ws` (docs.zoop.co: `curl --user zpk_...: .../v1/marketplaces/
{marketplace_id}/transactions`).

Credentials: the source's API key is `MARKETPLACE_ID:API_KEY` (two values in one secret, split at the first ':'),
docs/sources.md: the marketplace id is part of every path.

Transaction `status` -> canonical (inferred from Zoop's event names, transaction.succeeded, .pre_authorized,
.failed, .canceled, .reversed, .disputed, .charged_back, as the SDKs list them):

| status                       | canonical                                             |
|------------------------------|-------------------------------------------------------|
| new, pending                 | pending                                               |
| pre_authorized               | authorized                                            |
| succeeded                    | paid                                                  |
| failed                       | failed                                                |
| canceled                     | canceled; refunded when it had been captured          |
| reversed, refunded           | refunded                                              |
| dispute, disputed            | disputed                                              |
| charged_back                 | charged_back                                          |
| anything else                | GatewayResponseInvalid                                |

Money: `amount` in reais, a decimal string ("10.00") or number; read as integer centavos (inferred).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from shared.gateway.base import PaymentSnapshot, credential_pair, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    basic_authorization,
    check_answered,
    path_segment,
)
from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount

PROVIDER = "zoop"
DEFAULT_BASE_URL = "https://api.zoop.ws"
CURRENCY = "BRL"

S = PaymentStatus

TRANSACTION_STATUS: dict[str, PaymentStatus] = {
    "new": S.PENDING,
    "pending": S.PENDING,
    "pre_authorized": S.AUTHORIZED,
    "succeeded": S.PAID,
    "failed": S.FAILED,
    "canceled": S.CANCELED,
    "reversed": S.REFUNDED,
    "refunded": S.REFUNDED,
    "dispute": S.DISPUTED,
    "disputed": S.DISPUTED,
    "charged_back": S.CHARGED_BACK,
}
_MAX_AMOUNT = Decimal(10) ** 12


def centavos(value: Any) -> int | None:
    """Reais (a decimal string or a number) -> integer centavos, half-up; None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise GatewayResponseInvalid("zoop transaction.amount is not an amount")
    try:
        amount = Decimal(str(value)[:32])
    except InvalidOperation:
        raise GatewayResponseInvalid("zoop transaction.amount is not an amount") from None
    if not amount.is_finite() or amount < 0 or amount >= _MAX_AMOUNT:
        raise GatewayResponseInvalid("zoop transaction.amount is out of range")
    return int((amount * 100).to_integral_value(rounding=ROUND_HALF_UP))


def transaction_status(transaction: dict[str, Any]) -> tuple[PaymentStatus, str]:
    status = transaction.get("status")
    if not isinstance(status, str) or status not in TRANSACTION_STATUS:
        raise GatewayResponseInvalid(f"zoop transaction status {str(status)[:40]!r} is not mapped")
    canonical = TRANSACTION_STATUS[status]
    if canonical is S.CANCELED and transaction.get("captured") is True:
        return S.REFUNDED, f"{status}/captured"  # a captured payment cannot be canceled: its money went back
    return canonical, status


class ZoopClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        marketplace, key = credential_pair(self._api_key(), PROVIDER, "MARKETPLACE_ID", "API_KEY")
        transaction = self._http.get_json(
            f"/v1/marketplaces/{path_segment(marketplace)}/transactions/{path_segment(resource_id)}",
            headers={"Authorization": basic_authorization(key)},
        )
        check_answered(transaction.get("id"), resource_id, provider=PROVIDER, what="transaction")
        status, provider_status = transaction_status(transaction)
        amount = centavos(transaction.get("amount"))
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=answered_currency(transaction.get("currency"), CURRENCY),
            amount_refunded=(amount or 0) if status is S.REFUNDED else 0,
        )
