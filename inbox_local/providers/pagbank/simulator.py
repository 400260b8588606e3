"""PagBank's face (Orders API): `GET /orders/{ORDE_...}` and `GET /charges/{CHAR_...}` with `Authorization: Bearer
<token>`, as `shared.providers.pagbank.client` reads it. An order has one charge, `CHAR_` + the order's suffix.

Errors in PagBank's envelope `{"error_messages": [{"error", "description", "parameter_name"?}]}`
(developer.pagbank.com.br "Códigos de status" / error tables): 401 `invalid_authorization_header` ("Invalid
credential. Review AUTHORIZATION header"), 404, 429 and 500 in the same envelope.

Canonical -> charge `status` and `amount.summary`: pending -> WAITING; authorized -> AUTHORIZED; paid -> PAID;
partially_refunded -> PAID with `summary.refunded`; refunded -> CANCELED with the money received
(`summary.paid`); failed -> DECLINED; canceled -> CANCELED with nothing paid. PagBank reports no dispute or
chargeback status on the charge: those statuses are not modelled.
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import HEX_UPPER, SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, bearer
from inbox_local.providers.pagbank.sender import local_iso
from shared.payments.status import PaymentStatus

S = PaymentStatus

_STATUS: dict[PaymentStatus, str] = {
    S.PENDING: "WAITING",
    S.AUTHORIZED: "AUTHORIZED",
    S.PAID: "PAID",
    S.PARTIALLY_REFUNDED: "PAID",
    S.REFUNDED: "CANCELED",
    S.FAILED: "DECLINED",
    S.CANCELED: "CANCELED",
}
_MONEY_RECEIVED = frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED})


def _charge_id(order_id: str) -> str:
    return "CHAR_" + order_id.removeprefix("ORDE_")


def charge(p: SimulatedPayment) -> dict[str, Any]:
    paid = p.amount if p.status in _MONEY_RECEIVED else 0
    document: dict[str, Any] = {
        "id": _charge_id(p.resource_id),
        "reference_id": p.resource_id[-12:].lower(),
        "status": _STATUS[p.status],
        "created_at": local_iso(p.created),
        "description": "Simulated payment",
        "amount": {
            "value": p.amount,
            "currency": p.currency,
            "summary": {"total": p.amount, "paid": paid, "refunded": p.amount_refunded},
        },
        "payment_response": (
            {"code": "10002", "message": "NAO AUTORIZADA"}
            if p.status is S.FAILED
            else {"code": "20000", "message": "SUCESSO"}
        ),
        "payment_method": {"type": "CREDIT_CARD", "installments": 1, "capture": p.status is not S.AUTHORIZED},
    }
    paid_at = p.last_at(S.PAID)
    if paid and paid_at is not None:
        document["paid_at"] = local_iso(paid_at)
    return document


def order(p: SimulatedPayment) -> dict[str, Any]:
    return {
        "id": p.resource_id,
        "reference_id": p.resource_id[-12:].lower(),
        "created_at": local_iso(p.created),
        "customer": {"name": "Cliente Simulado", "email": "cliente@example.com", "tax_id": "12345678909"},
        "items": [{"reference_id": "item-1", "name": "Produto", "quantity": 1, "unit_amount": p.amount}],
        "charges": [charge(p)],
    }


def _error(error: str, description: str) -> dict[str, Any]:
    return {"error_messages": [{"error": error, "description": description}]}


class PagbankShape(SampledLifecycle):
    name = "pagbank"
    default_api_key = "pagbank-token-gateway-simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("orders",), ("charges",))
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id.startswith("ORDE_"):
            raise ValueError("a PagBank payment is an order: its id starts with ORDE_")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return "ORDE_" + "-".join(tokens(n, HEX_UPPER) for n in (8, 4, 4, 4, 12))

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return bearer(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 2:
            kind, wanted = request.segments
            if kind == "orders":
                p = payments.fetch(wanted)
                if p is not None:
                    return 200, {}, order(p)
            else:
                for candidate in payments.all():
                    if _charge_id(candidate.resource_id) == wanted:
                        found = payments.fetch(candidate.resource_id)  # the same payment: its fetches count
                        if found is not None:
                            return 200, {}, charge(found)
        return 404, {}, _error("not_found", "The requested resource was not found.")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error("invalid_authorization_header", "Invalid credential. Review AUTHORIZATION header")

    def throttled(self, request: ApiRequest) -> Any:
        return _error("too_many_requests", "Too many requests. Try again later.")

    def server_error(self, request: ApiRequest) -> Any:
        return _error("internal_server_error", "Internal server error")

    def provider_status(self, p: SimulatedPayment) -> str:
        return _STATUS[p.status]


SHAPE = PagbankShape()
