"""The gateway's truth for the local stack: an in-process Stripe + Asaas API over an in-memory payment model.

The processor refetches every money-moving event from the gateway's API. Locally (and in `inbox simulate` and
chaos runs) that API is this server: point `INBOX_API_BASE_STRIPE` / `INBOX_API_BASE_ASAAS` at it (see
`environment()`), and the real clients in `shared.gateway` talk to it exactly as they would to the real thing.

Two faces:
- Python, for the simulation driver in the same process: `create_payment`, `transition` (which returns the
  webhooks the gateway would send, in the provider's real body shape, for the driver to sign and deliver in
  whatever order and multiplicity it likes), `snapshot`, `payments`, `set_faults`.
- HTTP, for the clients and for other processes:
  - Stripe: `GET /v1/payment_intents/{id}` (honours `expand[]=latest_charge`), `GET /v1/charges/{id}`,
    `GET /v1/disputes?charge=...|payment_intent=...`; `Authorization: Bearer <key>`.
  - Asaas: `GET /v3/payments/{id}`; `access_token: <key>`.
  - Admin (JSON), for a driver in another process (the CLI's `inbox simulate`):
    `POST /_sim/payments {"provider", "amount", "currency"?}` -> `{"id", "webhooks"}` (the creation webhooks);
    `POST /_sim/payments/{provider}/{id}/transition {"status", "refund_amount"?, "at"?}` -> `{"webhooks"}`
    (409 for a step the gateway cannot take, 404 for an unknown payment); each webhook is
    `{"event_type", "body" (the exact UTF-8 text), "occurred_at" (epoch s)}`;
    `POST /_sim/payments/known` (every payment answers its fetches from now on, whatever `unknown_fetches` it was
    created with) -> `{"revealed"}`;
    `GET /_sim/payments` (every payment's truth); `GET|POST /_sim/faults` (read / change the fault knobs; POST
    takes any subset); `GET /_sim/stats` (requests served and faults injected).

Faults (API routes only, never the admin ones), drawn from a seeded `random.Random` so a run can be replayed:
- `error_rate`: probability of a 500;
- `throttle_rate`: probability of a 429 with `Retry-After: retry_after_seconds`;
- `slow_rate` / `slow_seconds`: probability of answering only after a delay (the client's read timeout is 5 s);
- `unknown_fetches`: a payment created while this is N answers 404 to its first N fetches (webhooks racing
  the API: the webhook arrives before the resource is readable).

What the model renders, per canonical status (one `transition` = one gateway step = one webhook):

Stripe (intent status / charge -> event; the object in `data.object` is the intent, or the charge or dispute
for `charge.*` events, with `payment_intent` set):
- created: requires_payment_method -> payment_intent.created (`creation_webhooks`)
- pending: processing -> payment_intent.processing
- authorized: requires_capture, charge uncaptured -> payment_intent.amount_capturable_updated
- paid: succeeded, charge captured -> payment_intent.succeeded
- failed: requires_payment_method + last_payment_error, charge failed -> payment_intent.payment_failed
- canceled: canceled -> payment_intent.canceled
- partially_refunded / refunded: charge amount_refunded > 0 / refunded true -> charge.refunded
- disputed: charge disputed, dispute needs_response -> charge.dispute.created
- charged_back / dispute won: dispute lost / won -> charge.dispute.closed

Asaas (payment status -> event):
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

Run alone: `python -m inbox_local.gateway_simulator --port 8790 --seed 7`.
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import string
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

from shared.gateway.base import PaymentSnapshot
from shared.payments.status import PaymentStatus, is_allowed

S = PaymentStatus
STRIPE = "stripe"
ASAAS = "asaas"
PROVIDERS = (STRIPE, ASAAS)
STRIPE_API_VERSION = "2024-06-20"
DEFAULT_API_KEYS = {STRIPE: "sk_test_gateway_simulator", ASAAS: "$aact_gateway_simulator"}
_ALPHANUMERIC = string.ascii_letters + string.digits
_SAO_PAULO_SINCE_2019 = timezone(timedelta(hours=-3))

# One gateway step each. Every pair is also allowed by the canonical TRANSITIONS table (checked at import).
GATEWAY_STEPS: dict[PaymentStatus, frozenset[PaymentStatus]] = {
    S.PENDING: frozenset({S.AUTHORIZED, S.PAID, S.FAILED, S.CANCELED}),
    S.FAILED: frozenset({S.PENDING, S.AUTHORIZED, S.PAID, S.CANCELED}),
    S.AUTHORIZED: frozenset({S.PAID, S.FAILED, S.CANCELED}),
    S.PAID: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED}),
    S.PARTIALLY_REFUNDED: frozenset({S.PARTIALLY_REFUNDED, S.REFUNDED, S.DISPUTED}),
    # won: back to the status before the dispute (checked in `transition`); lost: charged back
    S.DISPUTED: frozenset({S.PAID, S.PARTIALLY_REFUNDED, S.CHARGED_BACK}),
}
assert all(is_allowed(a, b) for a, targets in GATEWAY_STEPS.items() for b in targets)


class Webhook(NamedTuple):
    """One notification the gateway would send: its type, the exact body, and when it happened (epoch s)."""

    event_type: str
    body: bytes
    occurred_at: int


@dataclass
class Faults:
    error_rate: float = 0.0
    throttle_rate: float = 0.0
    retry_after_seconds: float = 1.0
    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    unknown_fetches: int = 0

    def validate(self) -> None:
        for name in ("error_rate", "throttle_rate", "slow_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        if self.error_rate + self.throttle_rate > 1.0:
            raise ValueError("error_rate + throttle_rate cannot exceed 1")
        if self.retry_after_seconds < 0 or self.slow_seconds < 0 or self.unknown_fetches < 0:
            raise ValueError("retry_after_seconds, slow_seconds and unknown_fetches cannot be negative")

    def updated(self, changes: dict[str, Any]) -> Faults:
        known = {f.name: f.type for f in fields(self)}
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ValueError(f"unknown fault knob(s): {', '.join(unknown)}")
        values = asdict(self)
        for name, value in changes.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number")
            values[name] = int(value) if name == "unknown_fetches" else float(value)
        faults = Faults(**values)
        faults.validate()
        return faults


@dataclass
class SimulatedPayment:
    provider: str
    resource_id: str
    amount: int
    currency: str
    created: int
    status: PaymentStatus = S.PENDING
    amount_refunded: int = 0
    history: list[tuple[PaymentStatus, int]] = field(default_factory=list)
    unknown_fetches: int = 0  # answer 404 to this many fetches first
    fetches: int = 0
    # Stripe details
    intent_status: str = "requires_payment_method"
    last_payment_error: bool = False
    charge_id: str | None = None
    charge_failed: bool = False
    captured: bool = False
    dispute_id: str | None = None
    dispute_status: str | None = None
    dispute_created: int = 0
    status_before_dispute: PaymentStatus | None = None
    # Asaas details
    asaas_status: str = "PENDING"
    deleted: bool = False
    payment_date: int | None = None
    refunds: list[tuple[int, int]] = field(default_factory=list)  # (centavos, when)
    chargeback_status: str | None = None

    def truth(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "resource_id": self.resource_id,
            "status": str(self.status),
            "amount": self.amount,
            "currency": self.currency,
            "amount_refunded": self.amount_refunded,
            "history": [{"status": str(status), "at": at} for status, at in self.history],
        }


# ------------------------------------------------------------------------------------------------ rendering


def _stripe_charge(p: SimulatedPayment) -> dict[str, Any]:
    captured = p.captured
    return {
        "id": p.charge_id,
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
        "paid": not p.charge_failed,
        "payment_intent": p.resource_id,
        "refunded": p.amount_refunded >= p.amount > 0,
        "status": "failed" if p.charge_failed else "succeeded",
    }


def _stripe_intent(p: SimulatedPayment, *, expand_charge: bool = False) -> dict[str, Any]:
    latest_charge: Any = p.charge_id
    if expand_charge and p.charge_id is not None:
        latest_charge = _stripe_charge(p)
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


def _stripe_dispute(p: SimulatedPayment) -> dict[str, Any]:
    return {
        "id": p.dispute_id,
        "object": "dispute",
        "amount": p.amount - p.amount_refunded,
        "charge": p.charge_id,
        "created": p.dispute_created,
        "currency": p.currency.lower(),
        "livemode": False,
        "payment_intent": p.resource_id,
        "reason": "fraudulent",
        "status": p.dispute_status,
    }


def _sao_paulo() -> tzinfo:
    try:
        from zoneinfo import ZoneInfo  # noqa: PLC0415

        return ZoneInfo("America/Sao_Paulo")
    except (ImportError, KeyError):
        return _SAO_PAULO_SINCE_2019


def _asaas_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).astimezone(_sao_paulo()).strftime("%Y-%m-%d %H:%M:%S")


def _asaas_day(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).astimezone(_sao_paulo()).date().isoformat()


def _brl(centavos: int) -> float:
    # An integer number of centavos / 100 as a float prints as its exact 2-decimal value (shortest repr).
    return centavos / 100


def _asaas_payment(p: SimulatedPayment) -> dict[str, Any]:
    return {
        "object": "payment",
        "id": p.resource_id,
        "dateCreated": _asaas_day(p.created),
        "customer": "cus_simulator0001",
        "value": _brl(p.amount),
        "netValue": _brl(p.amount),
        "description": "Simulated payment",
        "billingType": "CREDIT_CARD",
        "status": p.asaas_status,
        "dueDate": _asaas_day(p.created),
        "paymentDate": _asaas_day(p.payment_date) if p.payment_date else None,
        "clientPaymentDate": _asaas_day(p.payment_date) if p.payment_date else None,
        "externalReference": None,
        "deleted": p.deleted,
        "refunds": (
            [
                {"dateCreated": _asaas_time(when), "status": "DONE", "value": _brl(value), "description": None}
                for value, when in p.refunds
            ]
            or None
        ),
        "chargeback": {"status": p.chargeback_status, "reason": "FRAUD"} if p.chargeback_status else None,
    }


# -------------------------------------------------------------------------------------------------- the model


class GatewaySimulator:
    """The in-memory gateway plus, once started, its HTTP face on 127.0.0.1. Thread-safe."""

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        api_keys: dict[str, str | None] | None = None,
        faults: Faults | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.host = host
        self.port = port
        self._clock = clock
        self._sleep = sleep
        self.api_keys: dict[str, str | None] = dict(DEFAULT_API_KEYS) if api_keys is None else dict(api_keys)
        self._ids = random.Random(seed)  # noqa: S311 - reproducible ids, not secrets
        self._chaos = random.Random(seed + 1)  # noqa: S311 - fault draws apart, so faults never shift the ids
        self._lock = threading.RLock()
        self._payments: dict[tuple[str, str], SimulatedPayment] = {}
        self._faults = faults or Faults()
        self._faults.validate()
        self._stats: dict[str, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------- server lifecycle

    def start(self) -> GatewaySimulator:
        if self._server is not None:
            return self
        server = _QuietServer((self.host, self.port), _make_handler(self))
        self._server = server
        self.port = int(server.server_address[1])
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="gateway-simulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> GatewaySimulator:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def environment(self) -> dict[str, str]:
        """The variables that point the real gateway clients at this simulator."""
        env: dict[str, str] = {}
        for provider in PROVIDERS:
            env[f"INBOX_API_BASE_{provider.upper()}"] = self.url
            key = self.api_keys.get(provider)
            if key:
                env[f"INBOX_API_KEY_{provider.upper()}"] = key
        return env

    # ---------------------------------------------------------------------------------------------- faults

    @property
    def faults(self) -> Faults:
        with self._lock:
            return Faults(**asdict(self._faults))

    def set_faults(self, faults: Faults | None = None, **changes: Any) -> Faults:
        """Replace the knobs (`faults`) or change some of them (`error_rate=0.2`). Returns the new knobs."""
        with self._lock:
            new = (faults or self._faults).updated(changes)
            self._faults = new
            return Faults(**asdict(new))

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._stats)

    def _count(self, name: str) -> None:
        self._stats[name] = self._stats.get(name, 0) + 1

    # ----------------------------------------------------------------------------------------------- model

    def create_payment(self, provider: str, amount: int, currency: str = "BRL") -> str:
        """A new payment, pending, that the API knows (after `unknown_fetches` 404s). No webhook is sent."""
        _check_provider(provider)
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise ValueError("amount must be a positive integer of minor units")
        currency = currency.upper()
        if provider == ASAAS and currency != "BRL":
            raise ValueError("Asaas only charges in BRL")
        with self._lock:
            resource_id = self._new_id(provider)
            now = self._now()
            payment = SimulatedPayment(
                provider=provider,
                resource_id=resource_id,
                amount=amount,
                currency=currency,
                created=now,
                unknown_fetches=self._faults.unknown_fetches,
            )
            payment.history.append((S.PENDING, now))
            self._payments[(provider, resource_id)] = payment
            return resource_id

    def creation_webhooks(self, provider: str, resource_id: str) -> list[Webhook]:
        """What the gateway sends when a payment is created (`payment_intent.created` / `PAYMENT_CREATED`)."""
        with self._lock:
            p = self._get(provider, resource_id)
            if provider == STRIPE:
                return [self._stripe_event("payment_intent.created", _stripe_intent(p), p.created)]
            return [self._asaas_event("PAYMENT_CREATED", p, p.created)]

    def mark_overdue(self, resource_id: str, *, at: int | None = None) -> list[Webhook]:
        """Asaas: a pending payment passes its due date (still pending, status OVERDUE)."""
        with self._lock:
            p = self._get(ASAAS, resource_id)
            if p.status is not S.PENDING or p.deleted:
                raise ValueError(f"only a pending payment becomes overdue, this one is {p.status}")
            when = self._now() if at is None else at
            p.asaas_status = "OVERDUE"
            return [self._asaas_event("PAYMENT_OVERDUE", p, when)]

    def transition(
        self,
        provider: str,
        resource_id: str,
        new_status: PaymentStatus | str,
        *,
        refund_amount: int | None = None,
        at: int | None = None,
    ) -> list[Webhook]:
        """Move the payment one gateway step; returns the webhook(s) the gateway sends about it.

        `refund_amount` (minor units) is for partially_refunded (default: half of what is left) and refunded
        (default, and the only value accepted: all that is left). `at` overrides the event time (epoch s).
        """
        target = PaymentStatus(new_status)
        with self._lock:
            p = self._get(provider, resource_id)
            current = p.status
            if target not in GATEWAY_STEPS.get(current, frozenset()):
                raise ValueError(f"{provider} cannot move a payment from {current} to {target} in one step")
            if current is S.DISPUTED and target is not S.CHARGED_BACK and target is not p.status_before_dispute:
                raise ValueError(f"a won dispute returns to {p.status_before_dispute}, not {target}")
            if provider == ASAAS and target is S.FAILED:
                raise ValueError("Asaas has no failed status; use canceled (a deleted payment) instead")
            when = self._now() if at is None else at
            refund = self._refund_amount(p, target, refund_amount)
            webhooks = (
                self._stripe_step(p, current, target, refund, when)
                if provider == STRIPE
                else self._asaas_step(p, current, target, refund, when)
            )
            p.status = target
            p.history.append((target, when))
            return webhooks

    def snapshot(self, provider: str, resource_id: str) -> PaymentSnapshot:
        """The truth, shaped like what a gateway client returns."""
        with self._lock:
            p = self._get(provider, resource_id)
            provider_status = p.intent_status if provider == STRIPE else p.asaas_status
            return PaymentSnapshot(
                resource_id=p.resource_id,
                status=p.status,
                provider_status=provider_status,
                amount=p.amount,
                currency=p.currency,
                amount_refunded=p.amount_refunded,
            )

    def make_all_known(self) -> int:
        """Every payment answers its next fetch (the API caught up). The number of payments that were still
        unknown."""
        with self._lock:
            revealed = 0
            for p in self._payments.values():
                if p.fetches < p.unknown_fetches:
                    revealed += 1
                p.unknown_fetches = 0
            return revealed

    def payments(self) -> list[dict[str, Any]]:
        """Every payment's truth (what `GET /_sim/payments` answers)."""
        with self._lock:
            return [p.truth() for p in self._payments.values()]

    # --------------------------------------------------------------------------------------- model helpers

    def _now(self) -> int:
        return int(self._clock())

    def _get(self, provider: str, resource_id: str) -> SimulatedPayment:
        _check_provider(provider)
        try:
            return self._payments[(provider, resource_id)]
        except KeyError:
            raise KeyError(f"no {provider} payment {resource_id!r}") from None

    def _token(self, length: int, alphabet: str = _ALPHANUMERIC) -> str:
        return "".join(self._ids.choice(alphabet) for _ in range(length))

    def _new_id(self, provider: str) -> str:
        while True:
            resource_id = f"pi_{self._token(24)}" if provider == STRIPE else f"pay_{self._token(16, string.digits)}"
            if (provider, resource_id) not in self._payments:
                return resource_id

    def _event_id(self, provider: str) -> str:
        if provider == STRIPE:
            return f"evt_{self._token(24)}"
        return f"evt_{self._token(32, '0123456789abcdef')}&{self._token(9, string.digits)}"

    @staticmethod
    def _refund_amount(p: SimulatedPayment, target: PaymentStatus, requested: int | None) -> int:
        left = p.amount - p.amount_refunded
        if target is S.PARTIALLY_REFUNDED:
            refund = requested if requested is not None else left // 2
            if not 0 < refund < left:
                raise ValueError(f"a partial refund must be more than 0 and less than the {left} left")
            return refund
        if target is S.REFUNDED:
            if requested is not None and requested != left:
                raise ValueError(f"a full refund refunds all that is left ({left}), not {requested}")
            return left
        if requested is not None:
            raise ValueError(f"refund_amount makes no sense for {target}")
        return 0

    def _stripe_event(self, event_type: str, obj: dict[str, Any], when: int) -> Webhook:
        event = {
            "id": self._event_id(STRIPE),
            "object": "event",
            "api_version": STRIPE_API_VERSION,
            "created": when,
            "data": {"object": obj},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event_type,
        }
        return Webhook(event_type, json.dumps(event, indent=2).encode("utf-8"), when)

    def _asaas_event(self, event_type: str, p: SimulatedPayment, when: int) -> Webhook:
        body = {
            "id": self._event_id(ASAAS),
            "event": event_type,
            "dateCreated": _asaas_time(when),
            "payment": _asaas_payment(p),
        }
        return Webhook(event_type, json.dumps(body, ensure_ascii=False).encode("utf-8"), when)

    def _new_charge(self, p: SimulatedPayment) -> None:
        p.charge_id = f"ch_{self._token(24)}"
        p.charge_failed = False
        p.captured = False

    def _stripe_step(
        self, p: SimulatedPayment, current: PaymentStatus, target: PaymentStatus, refund: int, when: int
    ) -> list[Webhook]:
        if target is S.PENDING:
            p.intent_status, p.last_payment_error = "processing", False
            return [self._stripe_event("payment_intent.processing", _stripe_intent(p), when)]
        if target is S.AUTHORIZED:
            self._new_charge(p)
            p.intent_status, p.last_payment_error = "requires_capture", False
            return [self._stripe_event("payment_intent.amount_capturable_updated", _stripe_intent(p), when)]
        if target is S.FAILED:
            if current is not S.AUTHORIZED:
                self._new_charge(p)
            p.charge_failed, p.captured = True, False
            p.intent_status, p.last_payment_error = "requires_payment_method", True
            return [self._stripe_event("payment_intent.payment_failed", _stripe_intent(p), when)]
        if target is S.CANCELED:
            p.intent_status, p.last_payment_error = "canceled", False
            return [self._stripe_event("payment_intent.canceled", _stripe_intent(p), when)]
        if target is S.PAID and current is not S.DISPUTED:
            if current is not S.AUTHORIZED:
                self._new_charge(p)
            p.captured = True
            p.intent_status, p.last_payment_error = "succeeded", False
            return [self._stripe_event("payment_intent.succeeded", _stripe_intent(p), when)]
        if target in (S.PARTIALLY_REFUNDED, S.REFUNDED) and current is not S.DISPUTED:
            p.amount_refunded += refund
            return [self._stripe_event("charge.refunded", _stripe_charge(p), when)]
        if target is S.DISPUTED:
            p.dispute_id, p.dispute_status, p.dispute_created = f"du_{self._token(24)}", "needs_response", when
            p.status_before_dispute = current
            return [self._stripe_event("charge.dispute.created", _stripe_dispute(p), when)]
        # the dispute closes: lost (charged back) or won (back to where it was)
        p.dispute_status = "lost" if target is S.CHARGED_BACK else "won"
        return [self._stripe_event("charge.dispute.closed", _stripe_dispute(p), when)]

    def _asaas_step(
        self, p: SimulatedPayment, current: PaymentStatus, target: PaymentStatus, refund: int, when: int
    ) -> list[Webhook]:
        if target is S.PENDING:
            p.asaas_status = "PENDING"
            return [self._asaas_event("PAYMENT_UPDATED", p, when)]
        if target is S.AUTHORIZED:
            p.asaas_status = "AUTHORIZED"
            return [self._asaas_event("PAYMENT_AUTHORIZED", p, when)]
        if target is S.CANCELED:
            p.deleted = True
            return [self._asaas_event("PAYMENT_DELETED", p, when)]
        if target is S.PAID and current is not S.DISPUTED:
            p.asaas_status, p.payment_date = "RECEIVED", when
            return [self._asaas_event("PAYMENT_RECEIVED", p, when)]
        if target in (S.PARTIALLY_REFUNDED, S.REFUNDED) and current is not S.DISPUTED:
            p.amount_refunded += refund
            p.refunds.append((refund, when))
            if target is S.REFUNDED:
                p.asaas_status = "REFUNDED"
                return [self._asaas_event("PAYMENT_REFUNDED", p, when)]
            return [self._asaas_event("PAYMENT_PARTIALLY_REFUNDED", p, when)]
        if target is S.DISPUTED:
            p.status_before_dispute = current
            p.asaas_status, p.chargeback_status = "CHARGEBACK_REQUESTED", "REQUESTED"
            return [self._asaas_event("PAYMENT_CHARGEBACK_REQUESTED", p, when)]
        if target is S.CHARGED_BACK:
            p.chargeback_status = "DISPUTE_LOST"
        else:  # won: the money comes back, the payment reads as received again
            p.asaas_status, p.chargeback_status = "RECEIVED", "REVERSED"
        return [self._asaas_event("PAYMENT_UPDATED", p, when)]

    # ------------------------------------------------------------------------------------------------ HTTP

    def _draw_fault(self) -> tuple[str | None, float]:
        """(fault, slow delay) for one API request: "error", "throttle" or None; delay 0 when not slow."""
        with self._lock:
            faults = self._faults
            delay = faults.slow_seconds if faults.slow_rate and self._chaos.random() < faults.slow_rate else 0.0
            draw = self._chaos.random() if faults.error_rate or faults.throttle_rate else 1.0
            if draw < faults.error_rate:
                fault: str | None = "error"
            elif draw < faults.error_rate + faults.throttle_rate:
                fault = "throttle"
            else:
                fault = None
            if delay:
                self._count("slow")
            if fault:
                self._count(fault)
            return fault, delay

    def _fetch(self, provider: str, resource_id: str) -> SimulatedPayment | None:
        """The payment for an API fetch, or None while it is unknown (missing, or still inside unknown_fetches)."""
        with self._lock:
            p = self._payments.get((provider, resource_id))
            if p is None:
                return None
            p.fetches += 1
            if p.fetches <= p.unknown_fetches:
                self._count("unknown")
                return None
            return p

    def handle_api(
        self, method: str, target: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], Any]:
        """One request (lower-case header names) -> (status, extra headers, JSON document): the HTTP core."""
        parts = urlsplit(target)
        segments = [unquote(s) for s in parts.path.strip("/").split("/")]
        query = parse_qs(parts.query)
        with self._lock:
            self._count("requests")
        if segments and segments[0] == "_sim":
            return self._admin(method, segments[1:], body)
        if method != "GET":
            return 405, {}, {"error": {"type": "invalid_request_error", "message": "method not allowed"}}
        if segments[:1] == ["v1"]:
            provider = STRIPE
        elif segments[:1] == ["v3"]:
            provider = ASAAS
        else:
            return 404, {}, {"error": "no such route"}
        if not self._authorized(provider, headers):
            return 401, {}, _unauthorized(provider)

        fault, delay = self._draw_fault()
        if delay:
            self._sleep(delay)
        if fault == "error":
            return 500, {}, _server_error(provider)
        if fault == "throttle":
            retry_after = self.faults.retry_after_seconds
            return 429, {"Retry-After": f"{retry_after:g}"}, _throttled(provider)

        route, rest = segments[1] if len(segments) > 1 else "", segments[2:]
        if provider == STRIPE:
            return self._stripe_route(route, rest, query)
        if route == "payments" and len(rest) == 1:
            p = self._fetch(ASAAS, rest[0])
            if p is None:
                return 404, {}, {"errors": [{"code": "not_found", "description": "Cobrança não encontrada."}]}
            with self._lock:
                return 200, {}, _asaas_payment(p)
        return 404, {}, {"errors": [{"code": "not_found", "description": "Endpoint não encontrado."}]}

    def _stripe_route(
        self, route: str, rest: list[str], query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        if route == "payment_intents" and len(rest) == 1:
            p = self._fetch(STRIPE, rest[0])
            if p is None:
                return 404, {}, _stripe_missing("payment_intent", rest[0])
            with self._lock:
                return 200, {}, _stripe_intent(p, expand_charge="latest_charge" in query.get("expand[]", []))
        if route == "charges" and len(rest) == 1:
            with self._lock:
                for p in self._payments.values():
                    if p.provider == STRIPE and p.charge_id == rest[0]:
                        return 200, {}, _stripe_charge(p)
            return 404, {}, _stripe_missing("charge", rest[0])
        if route == "disputes" and not rest:
            charge = query.get("charge", [None])[0]
            intent = query.get("payment_intent", [None])[0]
            with self._lock:
                data = [
                    _stripe_dispute(p)
                    for p in self._payments.values()
                    if p.provider == STRIPE
                    and p.dispute_id is not None
                    and (charge is None or p.charge_id == charge)
                    and (intent is None or p.resource_id == intent)
                ]
            return 200, {}, {"object": "list", "url": "/v1/disputes", "has_more": False, "data": data}
        return 404, {}, {"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}}

    def _authorized(self, provider: str, headers: dict[str, str]) -> bool:
        expected = self.api_keys.get(provider)
        if not expected:
            return True
        if provider == STRIPE:
            presented = headers.get("authorization", "")
            return secrets.compare_digest(presented.encode(), f"Bearer {expected}".encode())
        return secrets.compare_digest(headers.get("access_token", "").encode(), expected.encode())

    def _admin(self, method: str, path: list[str], body: bytes) -> tuple[int, dict[str, str], Any]:
        if path == ["payments", "known"] and method == "POST":
            return 200, {}, {"revealed": self.make_all_known()}
        if path == ["payments"] and method == "GET":
            return 200, {}, self.payments()
        if path == ["payments"] and method == "POST":
            return self._admin_create(body)
        if len(path) == 4 and path[0] == "payments" and path[3] == "transition" and method == "POST":
            return self._admin_transition(path[1], path[2], body)
        if path == ["stats"] and method == "GET":
            return 200, {}, self.stats()
        if path == ["faults"] and method == "GET":
            return 200, {}, asdict(self.faults)
        if path == ["faults"] and method == "POST":
            try:
                changes = json.loads(body.decode("utf-8") or "{}")
            except (UnicodeDecodeError, ValueError):  # JSONDecodeError is a ValueError
                return 400, {}, {"error": "the body must be JSON"}
            if not isinstance(changes, dict):
                return 400, {}, {"error": "the body must be a JSON object"}
            try:
                return 200, {}, asdict(self.set_faults(**changes))
            except ValueError as error:
                return 400, {}, {"error": str(error)}
        return 404, {}, {"error": "no such admin route"}

    def _admin_create(self, body: bytes) -> tuple[int, dict[str, str], Any]:
        """`POST /_sim/payments {"provider", "amount", "currency"?}` -> `{"id", "webhooks"}` (the creation ones)."""
        try:
            document = _json_object(body)
            provider, currency = document.get("provider"), document.get("currency", "BRL")
            amount = _optional_int(document, "amount")
            if not isinstance(provider, str) or not isinstance(currency, str) or amount is None:
                raise ValueError("provider (string) and amount (integer) are required")
            resource_id = self.create_payment(provider, amount, currency)
        except ValueError as error:
            return 400, {}, {"error": str(error)}
        return 200, {}, {"id": resource_id, "webhooks": _webhooks_json(self.creation_webhooks(provider, resource_id))}

    def _admin_transition(self, provider: str, resource_id: str, body: bytes) -> tuple[int, dict[str, str], Any]:
        """`POST /_sim/payments/{provider}/{id}/transition {"status", "refund_amount"?, "at"?}` -> `{"webhooks"}`."""
        try:
            document = _json_object(body)
            status = document.get("status")
            if not isinstance(status, str):
                raise ValueError("status (string) is required")
            target = PaymentStatus(status)
            refund_amount, at = _optional_int(document, "refund_amount"), _optional_int(document, "at")
        except ValueError as error:
            return 400, {}, {"error": str(error)}
        try:
            webhooks = self.transition(provider, resource_id, target, refund_amount=refund_amount, at=at)
        except KeyError as error:
            return 404, {}, {"error": str(error.args[0]) if error.args else "no such payment"}
        except ValueError as error:  # a step the gateway cannot take
            return 409, {}, {"error": str(error)}
        return 200, {}, {"webhooks": _webhooks_json(webhooks)}


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):  # JSONDecodeError is a ValueError
        raise ValueError("the body must be JSON") from None
    if not isinstance(document, dict):
        raise ValueError("the body must be a JSON object")
    return document


def _optional_int(document: dict[str, Any], key: str) -> int | None:
    value = document.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be an integer")
    return value


def _webhooks_json(webhooks: list[Webhook]) -> list[dict[str, Any]]:
    """Webhooks for another process: the body as the exact UTF-8 text the gateway sends."""
    return [
        {"event_type": w.event_type, "body": w.body.decode("utf-8"), "occurred_at": w.occurred_at} for w in webhooks
    ]


def _check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"the simulator speaks {', '.join(PROVIDERS)}, not {provider!r}")


def _stripe_missing(kind: str, resource_id: str) -> dict[str, Any]:
    return {
        "error": {
            "code": "resource_missing",
            "message": f"No such {kind}: '{resource_id[:80]}'",
            "type": "invalid_request_error",
        }
    }


def _unauthorized(provider: str) -> dict[str, Any]:
    if provider == STRIPE:
        return {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}
    return {"errors": [{"code": "invalid_access_token", "description": "A chave de API informada não é válida"}]}


def _server_error(provider: str) -> dict[str, Any]:
    if provider == STRIPE:
        return {"error": {"type": "api_error", "message": "An unknown error occurred"}}
    return {"errors": [{"code": "internal_error", "description": "Erro interno"}]}


def _throttled(provider: str) -> dict[str, Any]:
    if provider == STRIPE:
        return {"error": {"type": "invalid_request_error", "code": "rate_limit", "message": "Too many requests"}}
    return {"errors": [{"code": "too_many_requests", "description": "Muitas requisições"}]}


# ------------------------------------------------------------------------------------------------ HTTP glue

_MAX_ADMIN_BODY = 64 * 1024


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out (the slow fault) and hung up is expected; anything else is still reported.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _make_handler(simulator: GatewaySimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs: the client's pool reuses connections
        server_version = "GatewaySimulator/1.0"
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= _MAX_ADMIN_BODY:
                self._send(413, {}, {"error": "body too large or length invalid"})
                return
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                status, extra, document = simulator.handle_api(self.command, self.path, headers, body)
            except Exception as error:  # never kill the server thread: answer like a broken gateway would
                status, extra, document = 500, {}, {"error": f"simulator failure: {type(error).__name__}"}
            self._send(status, extra, document)

        def _send(self, status: int, extra: dict[str, str], document: Any) -> None:
            payload = json.dumps(document, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: chaos runs make thousands of requests

    return Handler


@contextmanager
def running_simulator(**kwargs: Any) -> Iterator[GatewaySimulator]:
    """`with running_simulator(seed=1) as sim:` - started on an ephemeral port, stopped on exit."""
    simulator = GatewaySimulator(**kwargs).start()
    try:
        yield simulator
    finally:
        simulator.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Stripe + Asaas API simulator (the local stack's gateway truth)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    simulator = GatewaySimulator(args.port, host=args.host, seed=args.seed).start()
    print(f"gateway simulator on {simulator.url}", flush=True)
    for name, value in simulator.environment().items():
        print(f"  {name}={value}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        simulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
