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

import base64
from collections.abc import Callable
from typing import Any

from shared.gateway.base import PaymentSnapshot, no_sub_accounts
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient, path_segment
from shared.payments.status import PaymentStatus
from shared.providers.iugu.driver import INVOICE_STATUS
from shared.sub_account import SubAccount

PROVIDER = "iugu"
DEFAULT_BASE_URL = "https://api.iugu.com"
CURRENCY = "BRL"

S = PaymentStatus


def _cents(invoice: dict[str, Any], key: str) -> int | None:
    value = invoice.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GatewayResponseInvalid(f"iugu invoice.{key} is not an amount in centavos")
    return value


def invoice_status(invoice: dict[str, Any]) -> tuple[PaymentStatus, str, int]:
    """(canonical, provider status, amount refunded) of an iugu invoice."""
    status = invoice.get("status")
    if not isinstance(status, str) or not status:
        raise GatewayResponseInvalid("iugu invoice has no status")
    try:
        canonical = INVOICE_STATUS[status]
    except KeyError:
        raise GatewayResponseInvalid(f"iugu invoice status {status[:40]!r} is not mapped") from None
    total = _cents(invoice, "total_cents") or 0
    refunded = _cents(invoice, "refunded_cents") or 0
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


class IuguClient:
    provider: str = PROVIDER

    def __init__(self, http: JsonHttpClient, api_key: Callable[[], str]) -> None:
        self._http = http
        self._api_key = api_key

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        token = base64.b64encode(f"{self._api_key()}:".encode()).decode("ascii")
        invoice = self._http.get_json(
            f"/v1/invoices/{path_segment(resource_id)}", headers={"Authorization": f"Basic {token}"}
        )
        if invoice.get("id") not in (None, resource_id):
            raise GatewayResponseInvalid("iugu answered a different invoice than the one asked for")
        status, provider_status, refunded = invoice_status(invoice)
        currency = invoice.get("currency")
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=_cents(invoice, "total_cents"),
            currency=currency.upper() if isinstance(currency, str) and currency else CURRENCY,
            amount_refunded=refunded,
        )
