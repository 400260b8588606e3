"""iugu's face: `GET /v1/invoices/{id}` with HTTP Basic (the API token as user, empty password; iugu's
recommended method, dev.iugu.com "Autenticação"), as `shared.providers.iugu.client` reads it. Invoice ids are 32
upper-case hex characters; money is integer centavos (`total_cents`, `refunded_cents`).

Errors are `{"errors": "<message>"}`: 401 "Unauthorized", 404 "Not Found", 429 "Too Many Requests" (documented for
the test endpoint's 50 requests per minute), 500.

Canonical -> invoice `status` (the vocabulary `shared.providers.iugu.driver.INVOICE_STATUS` maps back): pending ->
pending; authorized -> authorized; paid -> paid; partially_refunded -> partially_refunded; refunded -> refunded;
failed -> expired; canceled -> canceled; disputed -> in_protest; charged_back -> chargeback.
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import HEX_UPPER, SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, basic_user, iso_utc
from shared.payments.status import PaymentStatus

S = PaymentStatus

_STATUS: dict[PaymentStatus, str] = {
    S.PENDING: "pending",
    S.AUTHORIZED: "authorized",
    S.PAID: "paid",
    S.PARTIALLY_REFUNDED: "partially_refunded",
    S.REFUNDED: "refunded",
    S.FAILED: "expired",
    S.CANCELED: "canceled",
    S.DISPUTED: "in_protest",
    S.CHARGED_BACK: "chargeback",
}
_MONEY_RECEIVED = frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK})


def invoice(p: SimulatedPayment) -> dict[str, Any]:
    paid_at = p.last_at(S.PAID)
    return {
        "id": p.resource_id,
        "status": _STATUS[p.status],
        "currency": p.currency,
        "total_cents": p.amount,
        "paid_cents": p.amount if p.status in _MONEY_RECEIVED else 0,
        "refunded_cents": p.amount_refunded,
        "email": "cliente@example.com",
        "due_date": iso_utc(p.created)[:10],
        "created_at_iso": iso_utc(p.created),
        "updated_at": iso_utc(p.history[-1][1] if p.history else p.created),
        "paid_at": iso_utc(paid_at) if paid_at and p.status in _MONEY_RECEIVED else None,
        "items": [{"description": "Simulated payment", "quantity": 1, "price_cents": p.amount}],
    }


class IuguShape(SampledLifecycle):
    name = "iugu"
    default_api_key = "iugu_test_token_gateway_simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("v1", "invoices"),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id or not resource_id.isalnum():
            raise ValueError("an iugu invoice id is alphanumeric (32 hex characters)")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return tokens(32, HEX_UPPER)

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return basic_user(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 3:
            p = payments.fetch(request.segments[2])
            if p is not None:
                return 200, {}, invoice(p)
        return 404, {}, {"errors": "Not Found"}

    def unauthorized(self, request: ApiRequest) -> Any:
        return {"errors": "Unauthorized"}

    def throttled(self, request: ApiRequest) -> Any:
        return {"errors": "Too Many Requests"}

    def server_error(self, request: ApiRequest) -> Any:
        return {"errors": "Internal Server Error"}

    def provider_status(self, p: SimulatedPayment) -> str:
        return _STATUS[p.status]


SHAPE = IuguShape()
