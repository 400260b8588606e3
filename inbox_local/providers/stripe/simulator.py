"""Stripe's face: PaymentIntents with their latest charge and disputes, as `shared.providers.stripe.client` reads them.

REST (`Authorization: Bearer <key>`): `GET /v1/payment_intents/{id}` (honours `expand[]=latest_charge`),
`GET /v1/charges/{id}`, `GET /v1/disputes/{id}`, `GET /v1/disputes?charge=...|payment_intent=...`. Errors in
Stripe's envelope `{"error": {"type", "code"?, "message"}}`: 404 `resource_missing`, 401 "Invalid API Key provided", 429
`rate_limit`, 500 `api_error`.

What a step renders (intent status / charge -> event; the object in `data.object` is the intent, or the charge
or dispute for `charge.*` events, with `payment_intent` set):
- created: requires_payment_method -> payment_intent.created (`creation_webhooks`)
- pending: processing -> payment_intent.processing
- authorized: requires_capture, charge uncaptured -> payment_intent.amount_capturable_updated
- paid: succeeded, charge captured -> payment_intent.succeeded
- failed: requires_payment_method + last_payment_error, charge failed -> payment_intent.payment_failed
- canceled: canceled -> payment_intent.canceled
- partially_refunded / refunded: charge amount_refunded > 0 / refunded true -> charge.refunded
- disputed: charge disputed, dispute needs_response -> charge.dispute.created
- charged_back / dispute won: dispute lost / won -> charge.dispute.closed

Charges API: a payment whose id is a charge's (`ch_...`, created with that id) is a charge made without a
PaymentIntent, its own payment: `GET /v1/payment_intents/{id}` does not know it, `GET /v1/charges/{id}` is it
(`payment_intent: null`), and its steps render charge events with that charge in `data.object` (the dispute's
`charge` for a dispute): pending -> charge.pending, authorized -> charge.succeeded (captured false), paid ->
charge.succeeded (charge.captured from authorized), failed -> charge.failed, refunds and disputes as above. A charge
cannot be canceled (an uncaptured one is refunded), so it has no `canceled` step.

Connect: a payment created under an `account` is a connected account's object. Stripe answers 404 for it unless
the request names that account (`Stripe-Account: acct_...`, or a `Stripe-Context` path ending in it), and 404 for
the platform's own objects when a request names an account; its webhooks carry the top-level `account`. A payment
marked `thin` sends the thin versions of its events (`v1.` types, `related_object`, `context`).
"""

from __future__ import annotations

from typing import Any

from inbox_local.gateway_simulator.model import ALPHANUMERIC, GatewayStep, SimulatedPayment, Tokens, Webhook
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, bearer
from inbox_local.providers.stripe.sender import snapshot_event, thin_event
from shared.payments.status import PaymentStatus

S = PaymentStatus


CHARGE_PREFIX = "ch_"


def is_charge_payment(p: SimulatedPayment) -> bool:
    """A Charges-API charge that is its own payment (no PaymentIntent)."""
    return p.resource_id.startswith(CHARGE_PREFIX)


def charge_id_of(p: SimulatedPayment) -> str | None:
    return p.resource_id if is_charge_payment(p) else p.charge_id


def _charge_status(p: SimulatedPayment) -> str:
    if p.charge_failed:
        return "failed"
    if is_charge_payment(p) and p.intent_status != "succeeded":
        return "pending"  # a Charges-API charge not yet succeeded (e.g. an ACH debit)
    return "succeeded"


def charge(p: SimulatedPayment) -> dict[str, Any]:
    captured = p.captured
    return {
        "id": charge_id_of(p),
        "object": "charge",
        "amount": p.amount,
        "amount_captured": p.amount if captured else 0,
        "amount_refunded": p.amount_refunded,
        "captured": captured,
        "created": p.created,
        "currency": p.currency.lower(),
        "disputed": p.dispute_id is not None,
        "failure_code": "card_declined" if p.charge_failed else None,
        "livemode": False,
        "paid": _charge_status(p) == "succeeded",
        "payment_intent": None if is_charge_payment(p) else p.resource_id,
        "refunded": p.amount_refunded >= p.amount > 0,
        "status": _charge_status(p),
    }


def intent(p: SimulatedPayment, *, expand_charge: bool = False) -> dict[str, Any]:
    latest_charge: Any = p.charge_id
    if expand_charge and p.charge_id is not None:
        latest_charge = charge(p)
    return {
        "id": p.resource_id,
        "object": "payment_intent",
        "amount": p.amount,
        "amount_capturable": p.amount if p.intent_status == "requires_capture" else 0,
        "amount_received": p.amount if p.intent_status == "succeeded" else 0,
        "capture_method": "automatic",
        "created": p.created,
        "currency": p.currency.lower(),
        "last_payment_error": (
            {"code": "card_declined", "message": "Your card was declined.", "type": "card_error"}
            if p.last_payment_error
            else None
        ),
        "latest_charge": latest_charge,
        "livemode": False,
        "metadata": {},
        "payment_method_types": ["card"],
        "status": p.intent_status,
    }


def dispute(p: SimulatedPayment) -> dict[str, Any]:
    return {
        "id": p.dispute_id,
        "object": "dispute",
        "amount": p.amount - p.amount_refunded,
        "charge": charge_id_of(p),
        "created": p.dispute_created,
        "currency": p.currency.lower(),
        "livemode": False,
        "payment_intent": None if is_charge_payment(p) else p.resource_id,
        "reason": "fraudulent",
        "status": p.dispute_status,
    }


def _missing(kind: str, resource_id: str) -> dict[str, Any]:
    return {
        "error": {
            "code": "resource_missing",
            "message": f"No such {kind}: '{resource_id[:80]}'",
            "type": "invalid_request_error",
        }
    }


def requested_account(request: ApiRequest) -> str | None:
    """The account a request is scoped to: Stripe-Account, else the last account of a Stripe-Context path."""
    account = request.headers.get("stripe-account")
    if account:
        return account
    context = request.headers.get("stripe-context")
    return context.rsplit("/", 1)[-1] if context else None


class StripeShape:
    name = "stripe"
    default_api_key = "sk_test_gateway_simulator"
    default_currency = "BRL"
    currencies: frozenset[str] | None = None
    routes: tuple[tuple[str, ...], ...] = (("v1", "payment_intents"), ("v1", "charges"), ("v1", "disputes"))
    unauthorized_status = 401

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if resource_id.startswith(CHARGE_PREFIX):
            return frozenset(S) - {S.CANCELED}  # a Charges-API charge: refunded, never canceled
        if not resource_id.startswith("pi_"):
            raise ValueError("a Stripe payment is a PaymentIntent (pi_...) or a Charges-API charge (ch_...)")
        return frozenset(S)

    def new_id(self, tokens: Tokens) -> str:
        return f"pi_{tokens(24, ALPHANUMERIC)}"

    def authorized(self, request: ApiRequest, key: str) -> bool:
        return bearer(request, key)

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        route, rest = request.segments[1], request.segments[2:]
        account = requested_account(request)
        in_scope = [p for p in payments.all() if p.connect_account == account]  # another account's objects do not exist
        if route == "payment_intents" and len(rest) == 1:
            known = any(p.resource_id == rest[0] and not is_charge_payment(p) for p in in_scope)
            p = payments.fetch(rest[0]) if known else None
            if p is None:
                return 404, {}, _missing("payment_intent", rest[0])
            return 200, {}, intent(p, expand_charge="latest_charge" in request.query.get("expand[]", []))
        if route == "charges" and len(rest) == 1:
            for p in in_scope:
                if is_charge_payment(p) and p.resource_id == rest[0]:
                    fetched = payments.fetch(rest[0])  # the payment itself: counted, and unknown while it is
                    return (200, {}, charge(fetched)) if fetched else (404, {}, _missing("charge", rest[0]))
                if p.charge_id == rest[0]:
                    return 200, {}, charge(p)
            return 404, {}, _missing("charge", rest[0])
        if route == "disputes" and len(rest) == 1:
            for p in in_scope:
                if p.dispute_id == rest[0]:
                    return 200, {}, dispute(p)
            return 404, {}, _missing("dispute", rest[0])
        if route == "disputes" and not rest:
            by_charge, by_intent = request.param("charge"), request.param("payment_intent")
            data = [
                dispute(p)
                for p in in_scope
                if p.dispute_id is not None
                and (by_charge is None or charge_id_of(p) == by_charge)
                and (by_intent is None or p.resource_id == by_intent)
            ]
            return 200, {}, {"object": "list", "url": "/v1/disputes", "has_more": False, "data": data}
        return 404, {}, {"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}}

    def unauthorized(self, request: ApiRequest) -> Any:
        return {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}

    def throttled(self, request: ApiRequest) -> Any:
        return {"error": {"type": "invalid_request_error", "code": "rate_limit", "message": "Too many requests"}}

    def server_error(self, request: ApiRequest) -> Any:
        return {"error": {"type": "api_error", "message": "An unknown error occurred"}}

    def provider_status(self, p: SimulatedPayment) -> str:
        return f"charge:{_charge_status(p)}" if is_charge_payment(p) else p.intent_status

    @staticmethod
    def _event(p: SimulatedPayment, event_type: str, obj: dict[str, Any], when: int, tokens: Tokens) -> Webhook:
        event_id = f"evt_{tokens(24, ALPHANUMERIC)}"
        render = thin_event if p.thin else snapshot_event
        body = render(event_id=event_id, event_type=event_type, obj=obj, created=when, account=p.connect_account)
        return Webhook(f"v1.{event_type}" if p.thin else event_type, body, when)

    def creation_webhooks(self, p: SimulatedPayment, tokens: Tokens) -> list[Webhook]:
        if is_charge_payment(p):
            return []  # a charge is announced with its outcome (charge.pending, .succeeded, .failed)
        return [self._event(p, "payment_intent.created", intent(p), p.created, tokens)]

    def _charge_step(
        self, p: SimulatedPayment, current: PaymentStatus, target: PaymentStatus, when: int, tokens: Tokens
    ) -> list[Webhook] | None:
        """The steps of a Charges-API charge before any refund or dispute; None for those (shared with intents)."""
        if target is S.PENDING:
            p.intent_status, p.charge_failed, p.captured = "pending", False, False
            return [self._event(p, "charge.pending", charge(p), when, tokens)]
        if target is S.AUTHORIZED:
            p.intent_status, p.charge_failed, p.captured = "succeeded", False, False
            return [self._event(p, "charge.succeeded", charge(p), when, tokens)]
        if target is S.FAILED:
            p.intent_status, p.charge_failed, p.captured = "failed", True, False
            return [self._event(p, "charge.failed", charge(p), when, tokens)]
        if target is S.PAID and current is not S.DISPUTED:
            captured_later = current is S.AUTHORIZED
            p.intent_status, p.charge_failed, p.captured = "succeeded", False, True
            return [
                self._event(p, "charge.captured" if captured_later else "charge.succeeded", charge(p), when, tokens)
            ]
        return None

    @staticmethod
    def _new_charge(p: SimulatedPayment, tokens: Tokens) -> None:
        p.charge_id = f"ch_{tokens(24, ALPHANUMERIC)}"
        p.charge_failed = False
        p.captured = False

    def _intent_step(
        self, p: SimulatedPayment, current: PaymentStatus, target: PaymentStatus, when: int, tokens: Tokens
    ) -> list[Webhook] | None:
        """The steps of a PaymentIntent before any refund or dispute; None for those (shared with charges)."""
        if target is S.PENDING:
            p.intent_status, p.last_payment_error = "processing", False
            return [self._event(p, "payment_intent.processing", intent(p), when, tokens)]
        if target is S.AUTHORIZED:
            self._new_charge(p, tokens)
            p.intent_status, p.last_payment_error = "requires_capture", False
            return [self._event(p, "payment_intent.amount_capturable_updated", intent(p), when, tokens)]
        if target is S.FAILED:
            if current is not S.AUTHORIZED:
                self._new_charge(p, tokens)
            p.charge_failed, p.captured = True, False
            p.intent_status, p.last_payment_error = "requires_payment_method", True
            return [self._event(p, "payment_intent.payment_failed", intent(p), when, tokens)]
        if target is S.CANCELED:
            p.intent_status, p.last_payment_error = "canceled", False
            return [self._event(p, "payment_intent.canceled", intent(p), when, tokens)]
        if target is S.PAID and current is not S.DISPUTED:
            if current is not S.AUTHORIZED:
                self._new_charge(p, tokens)
            p.captured = True
            p.intent_status, p.last_payment_error = "succeeded", False
            return [self._event(p, "payment_intent.succeeded", intent(p), when, tokens)]
        return None

    def step(self, p: SimulatedPayment, move: GatewayStep, tokens: Tokens) -> list[Webhook]:
        current, target, refund, when = move
        own_step = self._charge_step if is_charge_payment(p) else self._intent_step
        webhooks = own_step(p, current, target, when, tokens)
        if webhooks is not None:
            return webhooks
        if target in (S.PARTIALLY_REFUNDED, S.REFUNDED) and current is not S.DISPUTED:
            p.amount_refunded += refund
            return [self._event(p, "charge.refunded", charge(p), when, tokens)]
        if target is S.DISPUTED:
            p.dispute_id, p.dispute_status, p.dispute_created = f"du_{tokens(24, ALPHANUMERIC)}", "needs_response", when
            return [self._event(p, "charge.dispute.created", dispute(p), when, tokens)]
        # the dispute closes: lost (charged back) or won (back to where it was)
        p.dispute_status = "lost" if target is S.CHARGED_BACK else "won"
        return [self._event(p, "charge.dispute.closed", dispute(p), when, tokens)]


SHAPE = StripeShape()
