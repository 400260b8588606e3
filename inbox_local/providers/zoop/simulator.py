"""Zoop's face: `GET /v1/marketplaces/{marketplace_id}/transactions/{id}` with HTTP Basic (the API key as user,
empty password), as `shared.providers.zoop.client` reads it (docs.zoop.co: `curl --user zpk_...:`). Transaction ids are
32 lower-case hex characters; `amount` is a decimal string in reais.

The source's API key is `MARKETPLACE_ID:API_KEY` (docs/sources.md). Errors are `{"error": {"status", "message",
"type"}}`: 401, 404, 429, 500.

Canonical -> transaction `status` (the vocabulary `shared.providers.zoop.client.TRANSACTION_STATUS` maps back):
pending -> pending; authorized -> pre_authorized; paid -> succeeded; failed -> failed; canceled -> canceled (not
captured); refunded -> reversed; disputed -> dispute; charged_back -> charged_back. No partial refunds are simulated.
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import HEX_LOWER, SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, basic_user, iso_utc
from shared.payments.status import PaymentStatus

S = PaymentStatus

STATUS: dict[PaymentStatus, str] = {
    S.PENDING: "pending",
    S.AUTHORIZED: "pre_authorized",
    S.PAID: "succeeded",
    S.FAILED: "failed",
    S.CANCELED: "canceled",
    S.REFUNDED: "reversed",
    S.DISPUTED: "dispute",
    S.CHARGED_BACK: "charged_back",
}
_CAPTURED = frozenset({S.PAID, S.REFUNDED, S.DISPUTED, S.CHARGED_BACK})


def reais(centavos: int) -> str:
    return f"{centavos // 100}.{centavos % 100:02d}"


def transaction(p: SimulatedPayment, marketplace: str) -> dict[str, Any]:
    return {
        "id": p.resource_id,
        "resource": "transaction",
        "status": STATUS[p.status],
        "amount": reais(p.amount),
        "original_amount": reais(p.amount),
        "currency": p.currency,
        "description": "Simulated payment",
        "payment_type": "credit",
        "captured": p.status in _CAPTURED,
        "voided": p.status in (S.CANCELED, S.REFUNDED),
        "marketplace_id": marketplace,
        "created_at": iso_utc(p.created),
        "updated_at": iso_utc(p.history[-1][1] if p.history else p.created),
    }


def _error(status: int, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"status": status, "message": message, "type": kind}}


class ZoopShape(SampledLifecycle):
    name = "zoop"
    # MARKETPLACE_ID:API_KEY, the two values of a Zoop source's API key (a per-account key appends to the second)
    default_api_key = "3249465a7753536b62545a6a684b0000:zpk_test_gateway_simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("v1", "marketplaces"),)
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id or not resource_id.isalnum():
            raise ValueError("a Zoop transaction id is alphanumeric (32 hex characters)")
        return frozenset(STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return tokens(32, HEX_LOWER)

    def authorized(self, request: ApiRequest, key: str) -> bool:
        marketplace, _, api_key = key.partition(":")
        in_path = len(request.segments) > 2 and request.segments[2] == marketplace
        return basic_user(request, api_key) and in_path

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        segments = request.segments
        if len(segments) == 5 and segments[3] == "transactions":
            p = payments.fetch(segments[4])
            if p is not None:
                return 200, {}, transaction(p, segments[2])
        return 404, {}, _error(404, "Resource not found", "invalid_request_error")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error(401, "Unauthorized", "invalid_request_error")

    def throttled(self, request: ApiRequest) -> Any:
        return _error(429, "Too Many Requests", "api_error")

    def server_error(self, request: ApiRequest) -> Any:
        return _error(500, "Internal Server Error", "api_error")

    def provider_status(self, p: SimulatedPayment) -> str:
        return STATUS[p.status]


SHAPE = ZoopShape()
