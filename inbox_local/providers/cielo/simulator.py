"""Cielo's face (API E-commerce 3.0's query API): `GET /1/sales/{PaymentId}` with the `MerchantId` and `MerchantKey`
headers, as `shared.providers.cielo.client` reads it (Cielo's official Python SDK, cieloApi3 `QuerySale`).
PaymentIds are GUIDs; money is integer centavos (`Amount`, `CapturedAmount`, `VoidedAmount`).

The source's API key is `MERCHANT_ID:MERCHANT_KEY` (docs/sources.md). Errors are Cielo's list of
`{"Code", "Message"}`: 401 for wrong merchant credentials, 404 for an unknown payment, 429, 500.

Canonical -> `Payment.Status` (the codes `shared.providers.cielo.client.PAYMENT_STATUS` maps back): pending -> 12
Pending; authorized -> 1 Authorized; paid -> 2 PaymentConfirmed; failed -> 3 Denied; canceled -> 10 Voided (nothing
captured); refunded / partially_refunded -> 11 Refunded (captured, `VoidedAmount` the amount refunded). Cielo has
no dispute status in this API: disputes are not simulated.

Cielo's notifications carry no state (`{"PaymentId", "ChangeType": 1}`, inbox_local/providers/cielo/sender.py): every
step sends the same body, and only the refetch tells the processor what changed.
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import HEX_LOWER, SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, iso_utc, same
from shared.payments.status import PaymentStatus

S = PaymentStatus

_STATUS: dict[PaymentStatus, tuple[int, str]] = {
    S.PENDING: (12, "Pending"),
    S.AUTHORIZED: (1, "Authorized"),
    S.PAID: (2, "PaymentConfirmed"),
    S.FAILED: (3, "Denied"),
    S.CANCELED: (10, "Voided"),
    S.PARTIALLY_REFUNDED: (11, "Refunded/partial"),
    S.REFUNDED: (11, "Refunded"),
}
_CAPTURED = frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED})


def sale(p: SimulatedPayment) -> dict[str, Any]:
    code, _ = _STATUS[p.status]
    captured = p.amount if p.status in _CAPTURED else 0
    payment: dict[str, Any] = {
        "PaymentId": p.resource_id,
        "Type": "CreditCard",
        "Amount": p.amount,
        "CapturedAmount": captured,
        "Currency": p.currency,
        "Country": "BRA",
        "Installments": 1,
        "Status": code,
        "ReceivedDate": iso_utc(p.created).replace("T", " ").removesuffix("Z"),
        "ReturnCode": "6" if p.status in _CAPTURED else "4",
    }
    if p.status in (S.PARTIALLY_REFUNDED, S.REFUNDED):
        payment["VoidedAmount"] = p.amount_refunded or p.amount
    return {
        "MerchantOrderId": f"order-{p.resource_id[:8]}",
        "Customer": {"Name": "Comprador Teste"},
        "Payment": payment,
    }


def _error(code: int, message: str) -> list[dict[str, Any]]:
    return [{"Code": code, "Message": message}]


class CieloShape(SampledLifecycle):
    name = "cielo"
    # MERCHANT_ID:MERCHANT_KEY, the two values of a Cielo source's API key (a per-account key appends to the second)
    default_api_key = "6b1a5e2c-0d1f-4c3e-9a7b-2f8e4d6c1a90:cielo_sim_merchant_key"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("1", "sales"),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id or not all(c.isalnum() or c in "-_" for c in resource_id):
            raise ValueError("a Cielo PaymentId is a GUID")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        hex32 = tokens(32, HEX_LOWER)
        return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:]}"

    def authorized(self, request: ApiRequest, key: str) -> bool:
        merchant_id, _, merchant_key = key.partition(":")
        # Both compared, always (no early exit on the first): constant-time like the real check.
        id_ok = same(request.headers.get("merchantid"), merchant_id)
        key_ok = same(request.headers.get("merchantkey"), merchant_key)
        return id_ok and key_ok

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 3:
            p = payments.fetch(request.segments[2])
            if p is not None:
                return 200, {}, sale(p)
        return 404, {}, _error(0, "Not Found")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error(129, "MerchantId or MerchantKey is invalid")

    def throttled(self, request: ApiRequest) -> Any:
        return _error(0, "Too Many Requests")

    def server_error(self, request: ApiRequest) -> Any:
        return _error(0, "Internal Server Error")

    def provider_status(self, p: SimulatedPayment) -> str:
        return _STATUS[p.status][1]


SHAPE = CieloShape()
