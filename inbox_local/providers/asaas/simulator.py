"""Asaas's face: `GET /v3/payments/{id}` with the `access_token: <key>` header, as
`shared.providers.asaas.client` reads it.

Errors in Asaas's envelope `{"errors": [{"code", "description"}]}`: 404 `not_found`, 401
`invalid_access_token`, 429 `too_many_requests`, 500 `internal_error`.

What a step renders (payment status -> event):
- created: PENDING -> PAYMENT_CREATED (`creation_webhooks`); overdue: OVERDUE -> PAYMENT_OVERDUE (`mark_overdue`)
- pending again: PENDING -> PAYMENT_UPDATED
- authorized: AUTHORIZED -> PAYMENT_AUTHORIZED
- paid: RECEIVED -> PAYMENT_RECEIVED
- failed: not modelled (Asaas has no failed status: `transition` refuses it)
- canceled: `deleted: true` -> PAYMENT_DELETED
- partially_refunded: RECEIVED plus a DONE entry in `refunds` -> PAYMENT_PARTIALLY_REFUNDED
- refunded: REFUNDED -> PAYMENT_REFUNDED
- disputed: CHARGEBACK_REQUESTED, `chargeback.status` REQUESTED -> PAYMENT_CHARGEBACK_REQUESTED
- charged_back: `chargeback.status` DISPUTE_LOST -> PAYMENT_UPDATED (*)
- dispute won: RECEIVED again, `chargeback.status` REVERSED -> PAYMENT_UPDATED (*)

(*) Asaas's notification for a chargeback's outcome is not documented where we looked: PAYMENT_UPDATED is a
modelling choice. The processor refetches anyway; only the event type name is at stake.
"""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime
from typing import Any

from inbox_local.gateway_simulator.model import HEX_LOWER, GatewayStep, SimulatedPayment, Tokens, Webhook
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, same
from inbox_local.providers.asaas.sender import sao_paulo
from shared.payments.status import PaymentStatus

S = PaymentStatus


def _time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).astimezone(sao_paulo()).strftime("%Y-%m-%d %H:%M:%S")


def _day(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).astimezone(sao_paulo()).date().isoformat()


def brl(centavos: int) -> float:
    # An integer number of centavos / 100 as a float prints as its exact 2-decimal value (shortest repr).
    return centavos / 100


def payment(p: SimulatedPayment) -> dict[str, Any]:
    return {
        "object": "payment",
        "id": p.resource_id,
        "dateCreated": _day(p.created),
        "customer": "cus_simulator0001",
        "value": brl(p.amount),
        "netValue": brl(p.amount),
        "description": "Simulated payment",
        "billingType": "CREDIT_CARD",
        "status": p.asaas_status,
        "dueDate": _day(p.created),
        "paymentDate": _day(p.payment_date) if p.payment_date else None,
        "clientPaymentDate": _day(p.payment_date) if p.payment_date else None,
        "externalReference": None,
        "deleted": p.deleted,
        "refunds": (
            [
                {"dateCreated": _time(when), "status": "DONE", "value": brl(value), "description": None}
                for value, when in p.refunds
            ]
            or None
        ),
        "chargeback": {"status": p.chargeback_status, "reason": "FRAUD"} if p.chargeback_status else None,
    }


def _error(code: str, description: str) -> dict[str, Any]:
    return {"errors": [{"code": code, "description": description}]}


class AsaasShape:
    name = "asaas"
    default_api_key = "$aact_gateway_simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("v3",),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id.startswith("pay_"):
            raise ValueError("an Asaas payment id starts with pay_")
        return frozenset(S) - {S.FAILED}  # Asaas has no failed status; a deleted payment is canceled

    def new_id(self, tokens: Tokens) -> str:
        return f"pay_{tokens(16, string.digits)}"

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return same(request.headers.get("access_token"), key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if request.segments[1:2] == ("payments",) and len(request.segments) == 3:
            p = payments.fetch(request.segments[2])
            if p is None:
                return 404, {}, _error("not_found", "Cobrança não encontrada.")
            return 200, {}, payment(p)
        return 404, {}, _error("not_found", "Endpoint não encontrado.")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error("invalid_access_token", "A chave de API informada não é válida")

    def throttled(self, request: ApiRequest) -> Any:
        return _error("too_many_requests", "Muitas requisições")

    def server_error(self, request: ApiRequest) -> Any:
        return _error("internal_error", "Erro interno")

    def provider_status(self, p: SimulatedPayment) -> str:
        return p.asaas_status

    @staticmethod
    def event(event_type: str, p: SimulatedPayment, when: int, tokens: Tokens) -> Webhook:
        body = {
            "id": f"evt_{tokens(32, HEX_LOWER)}&{tokens(9, string.digits)}",
            "event": event_type,
            "dateCreated": _time(when),
            "payment": payment(p),
        }
        return Webhook(event_type, json.dumps(body, ensure_ascii=False).encode("utf-8"), when)

    def creation_webhooks(self, p: SimulatedPayment, tokens: Tokens) -> list[Webhook]:
        return [self.event("PAYMENT_CREATED", p, p.created, tokens)]

    def step(self, p: SimulatedPayment, move: GatewayStep, tokens: Tokens) -> list[Webhook]:
        current, target, refund, when = move
        if target is S.PENDING:
            p.asaas_status = "PENDING"
            return [self.event("PAYMENT_UPDATED", p, when, tokens)]
        if target is S.AUTHORIZED:
            p.asaas_status = "AUTHORIZED"
            return [self.event("PAYMENT_AUTHORIZED", p, when, tokens)]
        if target is S.CANCELED:
            p.deleted = True
            return [self.event("PAYMENT_DELETED", p, when, tokens)]
        if target is S.PAID and current is not S.DISPUTED:
            p.asaas_status, p.payment_date = "RECEIVED", when
            return [self.event("PAYMENT_RECEIVED", p, when, tokens)]
        if target in (S.PARTIALLY_REFUNDED, S.REFUNDED) and current is not S.DISPUTED:
            p.amount_refunded += refund
            p.refunds.append((refund, when))
            if target is S.REFUNDED:
                p.asaas_status = "REFUNDED"
                return [self.event("PAYMENT_REFUNDED", p, when, tokens)]
            return [self.event("PAYMENT_PARTIALLY_REFUNDED", p, when, tokens)]
        if target is S.DISPUTED:
            p.asaas_status, p.chargeback_status = "CHARGEBACK_REQUESTED", "REQUESTED"
            return [self.event("PAYMENT_CHARGEBACK_REQUESTED", p, when, tokens)]
        if target is S.CHARGED_BACK:
            p.chargeback_status = "DISPUTE_LOST"
        else:  # won: the money comes back, the payment reads as received again
            p.asaas_status, p.chargeback_status = "RECEIVED", "REVERSED"
        return [self.event("PAYMENT_UPDATED", p, when, tokens)]

    def mark_overdue(self, p: SimulatedPayment, when: int, tokens: Tokens) -> list[Webhook]:
        """A pending payment passes its due date (still pending, status OVERDUE)."""
        if p.status is not S.PENDING or p.deleted:
            raise ValueError(f"only a pending payment becomes overdue, this one is {p.status}")
        p.asaas_status = "OVERDUE"
        return [self.event("PAYMENT_OVERDUE", p, when, tokens)]


SHAPE = AsaasShape()
