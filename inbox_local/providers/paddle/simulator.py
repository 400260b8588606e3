"""Paddle Billing's face: `GET /transactions/{id}` (honours `include=adjustments_totals`) with `Authorization:
Bearer <key>`, as `shared.providers.paddle.client` reads it. Paddle wraps every entity: `{"data": {...}, "meta":
{"request_id"}}`; money is a string of minor units.

Errors in Paddle's documented envelope `{"error": {"type", "code", "detail", "documentation_url"}, "meta"}`
(developer.paddle.com/api-reference/about/errors): 404 `not_found` ("Entity ... not found"), 403 `invalid_token`
for a wrong API key (Paddle answers 403, not 401, errors/shared/invalid_token), 429 `too_many_requests` with
Retry-After, 500 `internal_error`.

Canonical -> transaction: pending -> ready; paid -> completed; partially_refunded / refunded -> completed with
the refund in `adjustments_totals.breakdown.refund`; charged_back -> completed with `breakdown.chargeback`;
failed -> past_due; canceled -> canceled. Paddle has no authorized or disputed status: a chargeback adjustment is
reported as it lands. Ids are `txn_` + 26 lower-case base-32 characters.
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, bearer, iso_utc
from shared.payments.status import PaymentStatus

S = PaymentStatus
_ULID = "0123456789abcdefghjkmnpqrstvwxyz"
_DOCS = "https://developer.paddle.com/errors/shared/"

_STATUS: dict[PaymentStatus, str] = {
    S.PENDING: "ready",
    S.PAID: "completed",
    S.PARTIALLY_REFUNDED: "completed",
    S.REFUNDED: "completed",
    S.CHARGED_BACK: "completed",
    S.FAILED: "past_due",
    S.CANCELED: "canceled",
}


def transaction(p: SimulatedPayment, *, adjustments: bool) -> dict[str, Any]:
    amount = str(p.amount)
    completed = _STATUS[p.status] == "completed"
    when = p.history[-1][1] if p.history else p.created
    document: dict[str, Any] = {
        "id": p.resource_id,
        "status": _STATUS[p.status],
        "customer_id": "ctm_01h8441jn5pcwrfhwh78jqt8hk",
        "currency_code": p.currency,
        "origin": "web",
        "collection_mode": "automatic",
        "details": {
            "totals": {
                "subtotal": amount,
                "discount": "0",
                "tax": "0",
                "total": amount,
                "credit": "0",
                "balance": "0" if completed else amount,
                "grand_total": amount,
                "currency_code": p.currency,
            }
        },
        "created_at": iso_utc(p.created, timespec="microseconds"),
        "updated_at": iso_utc(when, timespec="microseconds"),
        "billed_at": iso_utc(p.last_at(S.PAID) or when, timespec="microseconds") if completed else None,
    }
    if adjustments:
        refunded = p.amount_refunded
        chargeback = p.amount - refunded if p.status is S.CHARGED_BACK else 0
        adjusted = str(refunded + chargeback)
        document["adjustments_totals"] = {
            "subtotal": adjusted,
            "tax": "0",
            "total": adjusted,
            "fee": "0",
            "earnings": "0",
            "breakdown": {"credit": "0", "refund": str(refunded), "chargeback": str(chargeback)},
            "currency_code": p.currency,
        }
    return document


def _error(kind: str, code: str, detail: str) -> dict[str, Any]:
    return {
        "error": {"type": kind, "code": code, "detail": detail, "documentation_url": f"{_DOCS}{code}"},
        "meta": {"request_id": "00000000-0000-0000-0000-000000000000"},
    }


class PaddleShape(SampledLifecycle):
    name = "paddle"
    default_api_key = "pdl_sdbx_apikey_gateway_simulator"
    default_currency = "USD"  # Paddle is a merchant of record selling in USD first (and the driver's samples do)
    currencies: frozenset[str] | None = None
    routes: tuple[tuple[str, ...], ...] = (("transactions",),)
    unauthorized_status = 403

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if not resource_id.startswith("txn_"):
            raise ValueError("a Paddle transaction id starts with txn_")
        return frozenset(_STATUS)

    def new_id(self, tokens: Tokens) -> str:
        return f"txn_{tokens(26, _ULID)}"

    def event_id(self, tokens: Tokens) -> str:
        return f"evt_{tokens(26, _ULID)}"

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return bearer(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if len(request.segments) == 2:
            p = payments.fetch(request.segments[1])
            if p is not None:
                include = ",".join(request.query.get("include", [])).split(",")
                document = transaction(p, adjustments="adjustments_totals" in include)
                return 200, {}, {"data": document, "meta": {"request_id": "00000000-0000-0000-0000-000000000000"}}
            return 404, {}, _error("request_error", "not_found", f"Entity {request.segments[1][:80]} not found")
        return 404, {}, _error("request_error", "not_found", "Requested URL not found")

    def unauthorized(self, request: ApiRequest) -> Any:
        return _error("request_error", "invalid_token", "Invalid or revoked API key.")

    def throttled(self, request: ApiRequest) -> Any:
        detail = (
            "IP address exceeded the allowed rate limit. Retry after the number of seconds in the Retry-After header."
        )
        return _error("api_error", "too_many_requests", detail)

    def server_error(self, request: ApiRequest) -> Any:
        return _error("api_error", "internal_error", "An internal error has occurred, please try again later.")

    def provider_status(self, p: SimulatedPayment) -> str:
        return _STATUS[p.status]


SHAPE = PaddleShape()
