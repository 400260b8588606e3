"""Woovi's face: `GET /api/v1/charge/{correlationID}` with `Authorization: <AppID>` (the raw AppID), as
`shared.providers.woovi.client` reads it, answering `{"charge": {...}}` in the shape of Woovi's API reference.

Errors in Woovi's envelope `{"data": null, "errors": [{"message": ...}]}` (developers.woovi.com "Começando": 401
"appID inválido"; the 404, 429 and 500 messages are this simulator's).

Canonical -> charge `status`: pending -> ACTIVE, paid -> COMPLETED, failed -> EXPIRED. Woovi's charge reports no
refund, dispute or cancellation: those statuses are not modelled.
"""

from __future__ import annotations

import uuid
from typing import Any

from inbox_local.gateway_simulator.model import HEX_LOWER, SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, same
from inbox_local.providers.woovi.sender import iso_ms
from shared.payments.status import PaymentStatus

S = PaymentStatus

_STATUS: dict[PaymentStatus, str] = {S.PENDING: "ACTIVE", S.PAID: "COMPLETED", S.FAILED: "EXPIRED"}


def charge(p: SimulatedPayment) -> dict[str, Any]:
    transaction_id = uuid.uuid5(uuid.NAMESPACE_URL, p.resource_id).hex
    document: dict[str, Any] = {
        "value": p.amount,
        "comment": "Simulated charge",
        "identifier": transaction_id,
        "transactionID": transaction_id,
        "status": _STATUS[p.status],
        "correlationID": p.resource_id,
        "type": "DYNAMIC",
        "createdAt": iso_ms(p.created),
        "updatedAt": iso_ms(p.history[-1][1] if p.history else p.created),
        "customer": {"name": "Cliente Simulado", "email": "cliente@example.com"},
    }
    paid_at = p.last_at(S.PAID)
    if p.status is S.PAID and paid_at is not None:
        document["paidAt"] = iso_ms(paid_at)
    return document


def _error(message: str) -> dict[str, Any]:
    return {"data": None, "errors": [{"message": message}]}


class WooviShape(SampledLifecycle):
    name = "woovi"
    default_api_key = "woovi-appid-gateway-simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("api", "v1", "charge"),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id or len(resource_id) > 100:
            raise ValueError("a Woovi charge is named by its correlationID (1-100 characters)")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return "-".join(tokens(n, HEX_LOWER) for n in (8, 4, 4, 4, 12))

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return same(request.headers.get("authorization"), key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 4:
            p = payments.fetch(request.segments[3])
            if p is not None:
                return 200, {}, {"charge": charge(p)}
        return 404, {}, _error("Cobrança não encontrada")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error("appID inválido")

    def throttled(self, request: ApiRequest) -> Any:
        return _error("Too many requests")

    def server_error(self, request: ApiRequest) -> Any:
        return _error("Internal server error")

    def provider_status(self, p: SimulatedPayment) -> str:
        return _STATUS[p.status]


SHAPE = WooviShape()
