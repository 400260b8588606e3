"""PagBank refetch: `GET /orders/{id}` (`ORDE_...`) or `GET /charges/{id}` (`CHAR_...`), `Authorization: Bearer
<token>`, default base `https://api.pagseguro.com`.

An order's payment is its last charge; an order with no charge yet is pending. Charge -> canonical:

| charge status | `amount.summary`                       | canonical           |
|---------------|----------------------------------------|---------------------|
| WAITING, IN_ANALYSIS |                                 | pending             |
| AUTHORIZED    |                                        | authorized          |
| PAID          | refunded >= paid                       | refunded            |
| PAID          | refunded > 0                           | partially_refunded  |
| PAID          |                                        | paid                |
| CANCELED      | paid > 0 (money had been received)     | refunded / partially_refunded |
| CANCELED      |                                        | canceled            |
| DECLINED      |                                        | failed              |
| anything else |                                        | GatewayResponseInvalid |

Money: `amount.value`, integer centavos; `amount.summary.refunded` is the refunded amount.
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, ResourceNotFound, no_sub_accounts
from shared.gateway.http import (
    ApiKeyClient,
    GatewayResponseInvalid,
    answered_currency,
    centavos,
    check_answered,
    path_segment,
    status_word,
)
from shared.payments.status import PaymentStatus
from shared.providers.pagbank.driver import canonical_status
from shared.sub_account import SubAccount

PROVIDER = "pagbank"
DEFAULT_BASE_URL = "https://api.pagseguro.com"
CURRENCY = "BRL"

S = PaymentStatus


def charge_status(charge: dict[str, Any]) -> tuple[PaymentStatus, str, int | None, int, str | None]:
    """(canonical, provider status, amount, amount refunded, currency) of a PagBank charge."""
    status = status_word(charge, "pagbank charge")
    amount_object = charge.get("amount")
    if not isinstance(amount_object, dict):
        raise GatewayResponseInvalid("pagbank charge has no amount")
    summary = amount_object.get("summary") if isinstance(amount_object.get("summary"), dict) else {}
    assert isinstance(summary, dict)
    amount = (centavos(amount_object, "value", "pagbank charge.amount") or 0) if "value" in amount_object else None
    paid = centavos(summary, "paid", "pagbank charge.amount.summary") or 0
    refunded = centavos(summary, "refunded", "pagbank charge.amount.summary") or 0
    currency = answered_currency(amount_object.get("currency"), CURRENCY)
    canonical = canonical_status(status, amount=amount, paid=paid, refunded=refunded)
    if canonical is None:
        raise GatewayResponseInvalid(f"pagbank charge status {status[:40]!r} is not mapped")
    if canonical in (S.REFUNDED, S.PARTIALLY_REFUNDED):
        provider_status = status if canonical.value == status.lower() else f"{status}/{canonical.value}"
        return canonical, provider_status, amount, refunded or paid, currency
    return canonical, status, amount, 0, currency


class PagbankClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        if resource_id.startswith("CHAR_"):
            document = self._get(f"/charges/{path_segment(resource_id)}")
            charge: dict[str, Any] | None = document
        elif resource_id.startswith("ORDE_"):
            document = self._get(f"/orders/{path_segment(resource_id)}")
            charges = document.get("charges")
            if charges is not None and not isinstance(charges, list):
                raise GatewayResponseInvalid("pagbank order.charges is not a list")
            objects = [item for item in charges or [] if isinstance(item, dict)]
            charge = objects[-1] if objects else None
        else:
            raise ResourceNotFound(f"{resource_id[:40]!r} is not a PagBank order or charge id")
        check_answered(document.get("id"), resource_id, provider=PROVIDER, what="resource")
        if charge is None:  # an order nobody has tried to pay yet
            return PaymentSnapshot(resource_id, S.PENDING, "CREATED", None, CURRENCY)
        status, provider_status, amount, refunded, currency = charge_status(charge)
        return PaymentSnapshot(
            resource_id=resource_id,
            status=status,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
            amount_refunded=refunded,
        )

    def _get(self, path: str) -> dict[str, Any]:
        return self._http.get_json(path, headers={"Authorization": f"Bearer {self._api_key()}"})
