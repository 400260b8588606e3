"""Pagar.me's face, as `shared.providers.pagarme.client` reads it: the current v5 API and the legacy v4 one.

- v5 (`Authorization: Basic base64("<sk_key>:")`): `GET /core/v5/charges/{ch_...}` and `GET /core/v5/orders/{or_...}`
  (an order with its one charge, `ch_` + the order's suffix, also readable at /core/v5/charges). Errors are
  `{"message": ...}` (docs.pagar.me "Erros": 401 "Chave de API inválida", 404 "O recurso solicitado não existe",
  429 over the per-minute limit of each endpoint).
- v4 (the `api_key` query parameter): `GET /1/transactions/{id}`, the numeric id of the legacy postbacks that
  `inbox send pagarme` posts. Errors are `{"errors": [{"type", "parameter_name", "message"}], "url", "method"}`
  with the documented types `not_found`, `action_forbidden`, `internal_error`.

Which one a payment is, the id says, as for the client: `ch_`/`or_` are v5, digits are v4 (the default for a new
payment, since the driver's sample is a v4 postback; register a `ch_`/`or_` id through the admin API for v5).

Canonical -> v5 charge (`status`, `paid_amount`, `canceled_amount`, `last_transaction.status`):
pending -> pending (no transaction yet); authorized -> pending + authorized_pending_capture; paid -> paid;
partially_refunded -> paid with `canceled_amount`; refunded -> canceled with the money received
(`paid_amount`, a v5 refund is a cancellation of a paid charge); failed -> failed; canceled -> canceled (nothing
paid); charged_back -> chargedback. There is no dispute status: a chargeback is reported as it lands.
Canonical -> v4 transaction: pending -> waiting_payment; authorized -> authorized; paid / partially_refunded ->
paid (with `refunded_amount`); refunded -> refunded; failed -> refused; charged_back -> chargedback (v4 has no
canceled status either).
"""

from __future__ import annotations

import string
from typing import Any

from inbox_local.gateway_simulator.model import SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import (
    Answer,
    ApiRequest,
    PaymentLookup,
    SampledLifecycle,
    basic_user,
    iso_utc,
    same,
)
from shared.payments.status import PaymentStatus

S = PaymentStatus
_V5 = frozenset(
    {S.PENDING, S.AUTHORIZED, S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED, S.FAILED, S.CANCELED, S.CHARGED_BACK}
)
_V4 = _V5 - {S.CANCELED}

_CHARGE: dict[PaymentStatus, tuple[str, str | None]] = {  # canonical -> (charge status, last transaction status)
    S.PENDING: ("pending", None),
    S.AUTHORIZED: ("pending", "authorized_pending_capture"),
    S.PAID: ("paid", "captured"),
    S.PARTIALLY_REFUNDED: ("paid", "captured"),
    S.REFUNDED: ("canceled", "refunded"),
    S.FAILED: ("failed", "not_authorized"),
    S.CANCELED: ("canceled", "voided"),
    S.CHARGED_BACK: ("chargedback", "captured"),
}
_TRANSACTION: dict[PaymentStatus, str] = {
    S.PENDING: "waiting_payment",
    S.AUTHORIZED: "authorized",
    S.PAID: "paid",
    S.PARTIALLY_REFUNDED: "paid",
    S.REFUNDED: "refunded",
    S.FAILED: "refused",
    S.CHARGED_BACK: "chargedback",
}
_MONEY_RECEIVED = frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED, S.CHARGED_BACK})


def _updated(p: SimulatedPayment) -> str:
    return iso_utc(p.history[-1][1] if p.history else p.created)


def charge(p: SimulatedPayment, charge_id: str) -> dict[str, Any]:
    status, transaction_status = _CHARGE[p.status]
    paid = p.amount if p.status in _MONEY_RECEIVED else 0
    return {
        "id": charge_id,
        "code": p.resource_id[-10:].upper(),
        "amount": p.amount,
        "paid_amount": paid,
        "canceled_amount": p.amount if p.status is S.CANCELED else p.amount_refunded,
        "status": status,
        "currency": p.currency,
        "payment_method": "credit_card",
        "created_at": iso_utc(p.created),
        "updated_at": _updated(p),
        "last_transaction": (
            {"transaction_type": "credit_card", "status": transaction_status, "amount": p.amount, "success": True}
            if transaction_status
            else None
        ),
    }


def order(p: SimulatedPayment) -> dict[str, Any]:
    charge_status = _CHARGE[p.status][0]
    return {
        "id": p.resource_id,
        "code": p.resource_id[-10:].upper(),
        "amount": p.amount,
        "currency": p.currency,
        "closed": True,
        "status": {"chargedback": "paid"}.get(charge_status, charge_status),
        "created_at": iso_utc(p.created),
        "updated_at": _updated(p),
        "charges": [charge(p, _order_charge_id(p.resource_id))],
    }


def transaction(p: SimulatedPayment) -> dict[str, Any]:
    received = p.status in _MONEY_RECEIVED
    return {
        "object": "transaction",
        "id": int(p.resource_id),
        "status": _TRANSACTION[p.status],
        "amount": p.amount,
        "authorized_amount": p.amount if p.status is not S.FAILED and p.status is not S.PENDING else 0,
        "paid_amount": p.amount if received else 0,
        "refunded_amount": p.amount_refunded,
        "payment_method": "credit_card",
        "date_created": iso_utc(p.created, timespec="milliseconds"),
        "date_updated": iso_utc(p.history[-1][1] if p.history else p.created, timespec="milliseconds"),
    }


def _order_charge_id(order_id: str) -> str:
    return "ch_" + order_id.removeprefix("or_")


def _v4(request: ApiRequest) -> bool:
    return request.segments[0] == "1"


def _v4_error(request: ApiRequest, kind: str, message: str, parameter: str | None = None) -> dict[str, Any]:
    return {
        "errors": [{"type": kind, "parameter_name": parameter, "message": message}],
        "url": "/" + "/".join(request.segments[1:]),
        "method": "get",
    }


class PagarmeShape(SampledLifecycle):
    name = "pagarme"
    default_api_key = "sk_test_gateway_simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("1", "transactions"), ("core", "v5"))
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if resource_id.isascii() and resource_id.isdigit():
            return _V4
        if resource_id.startswith(("ch_", "or_")):
            return _V5
        raise ValueError("a Pagar.me payment is a v5 charge (ch_...), order (or_...) or a v4 transaction (digits)")

    def new_id(self, tokens: Tokens) -> str:
        return tokens(1, "123456789") + tokens(7, string.digits)

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return same(request.param("api_key"), key) if _v4(request) else basic_user(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        segments = request.segments
        if _v4(request):
            if len(segments) == 3:
                p = payments.fetch(segments[2])
                if p is not None:
                    return 200, {}, transaction(p)
            return 404, {}, _v4_error(request, "not_found", "Transaction not found")
        kind, rest = segments[2] if len(segments) > 2 else "", segments[3:]
        if kind == "charges" and len(rest) == 1:
            p = payments.fetch(rest[0]) if rest[0].startswith("ch_") else None
            if p is not None:
                return 200, {}, charge(p, p.resource_id)
            for candidate in payments.all():  # the charge of an order
                if candidate.resource_id.startswith("or_") and _order_charge_id(candidate.resource_id) == rest[0]:
                    return 200, {}, charge(candidate, rest[0])
            return 404, {}, {"message": "Charge not found."}
        if kind == "orders" and len(rest) == 1:
            p = payments.fetch(rest[0]) if rest[0].startswith("or_") else None
            if p is not None:
                return 200, {}, order(p)
            return 404, {}, {"message": "Order not found."}
        return 404, {}, {"message": "O recurso solicitado não existe"}

    def unauthorized(self, request: ApiRequest) -> Any:
        if _v4(request):
            return _v4_error(request, "action_forbidden", "api_key inválida", "api_key")
        return {"message": "Chave de API inválida"}

    def throttled(self, request: ApiRequest) -> Any:
        return {"message": "Too Many Requests"}

    def server_error(self, request: ApiRequest) -> Any:
        if _v4(request):
            return _v4_error(request, "internal_error", "Erro interno")
        return {"message": "An error has occurred."}

    def provider_status(self, p: SimulatedPayment) -> str:
        if p.resource_id.isdigit():
            return _TRANSACTION[p.status]
        return _CHARGE[p.status][0]


SHAPE = PagarmeShape()
