"""iugu refetch: `GET /v1/invoices/{id}` with HTTP Basic (the API token as user, empty password), default base
`https://api.iugu.com`. iugu's triggers carry neither an event time nor an amount: the invoice read back is the
only truth the processor has about them.

Invoice status -> canonical:

| invoice status                                  | canonical                                       |
|-------------------------------------------------|-------------------------------------------------|
| draft, pending, partially_paid, in_analysis     | pending                                         |
| authorized                                      | authorized                                      |
| paid, externally_paid                           | paid (partially_refunded / refunded by `refunded_cents`) |
| partially_refunded                              | partially_refunded                              |
| refunded                                        | refunded                                        |
| canceled                                        | canceled                                        |
| expired                                         | failed (a lapsed invoice; a late payment may still apply) |
| in_protest                                      | disputed                                        |
| chargeback                                      | charged_back                                    |
| anything else                                   | GatewayResponseInvalid                          |

`partially_paid` stays pending: the invoice is not settled. Money: `total_cents`, integer centavos.
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    answered_currency,
    basic_authorization,
    centavos,
    check_answered,
    mapped_status,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.providers.iugu.driver import INVOICE_STATUS
from shared.sub_account import SubAccount

PROVIDER = "iugu"
DEFAULT_BASE_URL = "https://api.iugu.com"
CURRENCY = "BRL"

S = PaymentStatus


def invoice_status(invoice: dict[str, Any]) -> tuple[PaymentStatus, str, int]:
    """(canonical, provider status, amount refunded) of an iugu invoice."""
    status = status_word(invoice, "iugu invoice")
    canonical = mapped_status(INVOICE_STATUS, status, "iugu invoice")
    total = centavos(invoice, "total_cents", "iugu invoice") or 0
    refunded = centavos(invoice, "refunded_cents", "iugu invoice") or 0
    if canonical is S.REFUNDED:
        return canonical, status, refunded or total
    if canonical in (S.PAID, S.PARTIALLY_REFUNDED) and refunded > 0:
        if total and refunded >= total:
            return S.REFUNDED, f"{status}/refunded", refunded
        return (
            S.PARTIALLY_REFUNDED,
            status if canonical is S.PARTIALLY_REFUNDED else f"{status}/partially_refunded",
            refunded,
        )
    return canonical, status, 0


class IuguClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        invoice = self._http.get_json(
            f"/v1/invoices/{path_segment(resource_id)}", headers={"Authorization": basic_authorization(self._api_key())}
        )
        check_answered(invoice.get("id"), resource_id, provider=PROVIDER, what="invoice")
        status, provider_status, refunded = invoice_status(invoice)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=centavos(invoice, "total_cents", "iugu invoice"),
            currency=answered_currency(invoice.get("currency"), CURRENCY),
            amount_refunded=refunded,
        )
