"""Woovi / OpenPix refetch: `GET /api/v1/charge/{id}` with `Authorization: <AppID>` (the raw AppID, no `Bearer`),
default base `https://api.woovi.com` (the sandbox is `https://api.woovi-sandbox.com`: a sandbox source sets
`INBOX_API_BASE_<SOURCE>`). The id is the charge's `correlationID` (the API reads a charge by its id or its
correlation ID); the answer is `{"charge": {...}}`.

Charge status -> canonical (shared.providers.woovi.driver.CHARGE_STATUS): ACTIVE -> pending, COMPLETED -> paid, EXPIRED
-> failed; anything else is GatewayResponseInvalid. Woovi's charge has no refunded status: a refund of a paid charge
is not modelled (its events are stored and ignored; docs/providers.md). Money: `value`, integer centavos, BRL.
"""

from __future__ import annotations

from typing import Any

from shared.gateway.base import PaymentSnapshot, no_sub_accounts
from shared.gateway.http import ApiKeyClient, GatewayResponseInvalid, centavos, check_answered, path_segment
from shared.providers.woovi.driver import CHARGE_STATUS, CURRENCY
from shared.sub_account import SubAccount

PROVIDER = "woovi"
DEFAULT_BASE_URL = "https://api.woovi.com"


def charge_snapshot(resource_id: str, charge: dict[str, Any]) -> PaymentSnapshot:
    status = charge.get("status")
    if not isinstance(status, str) or status not in CHARGE_STATUS:
        raise GatewayResponseInvalid(f"woovi charge status {str(status)[:40]!r} is not mapped")
    return PaymentSnapshot(
        resource_id=resource_id,
        status=CHARGE_STATUS[status],
        provider_status=status,
        amount=centavos(charge, "value", "woovi charge"),
        currency=CURRENCY,
    )


class WooviClient(ApiKeyClient):
    provider: str = PROVIDER

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        document = self._http.get_json(
            f"/api/v1/charge/{path_segment(resource_id)}", headers={"Authorization": self._api_key()}
        )
        charge = document.get("charge")
        if not isinstance(charge, dict):
            raise GatewayResponseInvalid("woovi answered no charge")
        check_answered(charge.get("correlationID"), resource_id, provider=PROVIDER, what="charge")
        return charge_snapshot(resource_id, charge)
