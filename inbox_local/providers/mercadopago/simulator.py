"""Mercado Pago's face: `GET /v1/payments/{id}` with `Authorization: Bearer <access token>`, as
`shared.providers.mercadopago.client` reads it. Payment ids are numbers; money is a decimal in `currency_id`.

Errors in Mercado Pago's envelope `{"message", "error", "status", "cause": [{"code", "description"}]}`: 404 with
cause 2000 "Payment not found", 401 "invalid access token" (the API reference's 401 for a bad token), 429 and 500.

Canonical -> (`status`, `status_detail`): pending -> pending/pending_waiting_payment; authorized ->
authorized/pending_capture; paid -> approved/accredited; partially_refunded -> approved/partially_refunded (with
`transaction_amount_refunded`); refunded -> refunded/refunded; failed -> rejected/cc_rejected_other_reason;
canceled -> cancelled/by_collector; disputed -> in_mediation; charged_back -> charged_back/settled. The webhook
(`payment.created` / `payment.updated`) names only the payment id: the driver's sample.
"""

from __future__ import annotations

import string
from typing import Any

from inbox_local.gateway_simulator.model import SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, bearer, iso_utc
from shared.payments.status import PaymentStatus
from shared.providers._money import currency_exponent

S = PaymentStatus

_STATUS: dict[PaymentStatus, tuple[str, str | None]] = {
    S.PENDING: ("pending", "pending_waiting_payment"),
    S.AUTHORIZED: ("authorized", "pending_capture"),
    S.PAID: ("approved", "accredited"),
    S.PARTIALLY_REFUNDED: ("approved", "partially_refunded"),
    S.REFUNDED: ("refunded", "refunded"),
    S.FAILED: ("rejected", "cc_rejected_other_reason"),
    S.CANCELED: ("cancelled", "by_collector"),
    S.DISPUTED: ("in_mediation", None),
    S.CHARGED_BACK: ("charged_back", "settled"),
}


def decimal(minor_units: int, currency: str) -> float | int:
    # minor units / 10**exponent as a float prints as its exact decimal (shortest repr); zero-decimal currencies
    # stay integers, as Mercado Pago writes CLP 1500.
    exponent = currency_exponent(currency)
    return minor_units if exponent == 0 else minor_units / 10**exponent


def payment(p: SimulatedPayment) -> dict[str, Any]:
    status, detail = _STATUS[p.status]
    approved = p.last_at(S.PAID)
    return {
        "id": int(p.resource_id),
        "live_mode": False,
        "status": status,
        "status_detail": detail,
        "transaction_amount": decimal(p.amount, p.currency),
        "transaction_amount_refunded": decimal(p.amount_refunded, p.currency),
        "currency_id": p.currency,
        "date_created": iso_utc(p.created, timespec="milliseconds"),
        "date_approved": iso_utc(approved, timespec="milliseconds") if approved else None,
        "date_last_updated": iso_utc(p.history[-1][1] if p.history else p.created, timespec="milliseconds"),
        "payment_method_id": "pix",
        "payment_type_id": "bank_transfer",
        "description": "Simulated payment",
    }


def _error(status: int, error: str, message: str, cause: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"message": message, "error": error, "status": status, "cause": cause or []}


class MercadoPagoShape(SampledLifecycle):
    name = "mercadopago"
    default_api_key = "TEST-gateway-simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = None
    routes: tuple[tuple[str, ...], ...] = (("v1", "payments"),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not (resource_id.isascii() and resource_id.isdigit()):
            raise ValueError("a Mercado Pago payment id is a number")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return tokens(1, "123456789") + tokens(10, string.digits)

    def event_id(self, tokens: Tokens) -> str:
        return tokens(1, "123456789") + tokens(10, string.digits)  # notification ids are numbers too

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return bearer(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 3:
            p = payments.fetch(request.segments[2])
            if p is not None:
                return 200, {}, payment(p)
        not_found = [{"code": 2000, "description": "Payment not found"}]
        return 404, {}, _error(404, "not_found", "Payment not found", not_found)

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error(401, "unauthorized", "invalid access token")

    def throttled(self, request: ApiRequest) -> Any:
        return _error(429, "too_many_requests", "Too Many Requests")

    def server_error(self, request: ApiRequest) -> Any:
        return _error(500, "internal_server_error", "Internal server error")

    def provider_status(self, p: SimulatedPayment) -> str:
        status, detail = _STATUS[p.status]
        return f"{status}/{detail}" if detail else status


SHAPE = MercadoPagoShape()
