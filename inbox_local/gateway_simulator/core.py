"""The gateway simulator's core: payments and their lifecycle, faults, the API dispatch and the server.

Two faces:
Accounts: one gateway can hold several accounts (two Stripe accounts, an Asaas sandbox next to production), one per
source (docs/sources.md). `accounts` maps an account name to its provider ({"stripe-br": "stripe", ...}); each
provider's default account is named after it. Each account has its own API key (`api_keys`, by account) and sees
only its own payments: an API request is served by the account whose key it carries. Wherever the Python and
admin faces take a `provider`, an account name is accepted too (a provider's id is its default account).

- Python, for a simulation driver in the same process: `create_payment`, `transition` (which returns the
  webhooks the gateway would send, in the provider's real body shape, for the driver to sign and deliver in
  whatever order and multiplicity it likes), `advance_to`, `snapshot`, `payments`, `set_faults`.
- HTTP: each provider's REST routes (its folder's simulator module renders its shape, `catalog.SHAPES`), and the admin
  API under `/_sim/` (`admin.py`).

Faults (`faults.Faults`) apply to the API routes only, never the admin ones, drawn from a seeded `random.Random`
apart from the id draws, so that faults never shift the ids and a run can be replayed.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from inbox_local.gateway_simulator import catalog
from inbox_local.gateway_simulator.admin import admin_route
from inbox_local.gateway_simulator.faults import Faults
from inbox_local.gateway_simulator.model import (
    ALPHANUMERIC,
    GatewayStep,
    SimulatedPayment,
    Webhook,
    gateway_steps,
    path_to,
)
from inbox_local.gateway_simulator.server import QuietServer, make_handler
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, ProviderShape
from shared.gateway.base import PaymentSnapshot
from shared.gateway.registry import base_url_variable
from shared.payments.status import PaymentStatus
from shared.providers.stripe.account import is_account_id

S = PaymentStatus
RATE_SECONDS_KEPT = 3600  # per-second request counts kept (per provider and second): an hour of a busy run


class _Lookup:
    """One account's payments as its routes read them; the simulator's lock is held by the caller."""

    def __init__(self, simulator: GatewaySimulator, account: str) -> None:
        self._simulator = simulator
        self._account = account

    def fetch(self, resource_id: str) -> SimulatedPayment | None:
        return self._simulator._fetch(self._account, resource_id)

    def all(self) -> list[SimulatedPayment]:
        return [p for p in self._simulator._payments.values() if p.account == self._account]


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
        accounts: dict[str, str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self._clock = clock
        self._sleep = sleep
        # account -> provider: every provider's default account, plus the named ones asked for.
        self.accounts: dict[str, str] = {provider: provider for provider in catalog.PROVIDERS}
        for account, provider in (accounts or {}).items():
            _shape(provider)  # ValueError: a provider the simulator does not speak
            self.accounts[account] = provider
        self.api_keys: dict[str, str | None] = dict(catalog.DEFAULT_API_KEYS) if api_keys is None else dict(api_keys)
        for account, provider in self.accounts.items():
            if api_keys is None and account not in self.api_keys:
                # A distinct key per account, so that each account sees only its own payments.
                derive = getattr(catalog.SHAPES[provider], "account_key", None)  # a key with a structure (Efí)
                default = f"{catalog.DEFAULT_API_KEYS[provider]}_{account.replace('-', '_')}"
                self.api_keys[account] = derive(account) if derive is not None else default
        self._ids = random.Random(seed)  # noqa: S311 - reproducible ids, not secrets
        self._chaos = random.Random(seed + 1)  # noqa: S311 - fault draws apart, so faults never shift the ids
        self._lock = threading.RLock()
        self._payments: dict[tuple[str, str], SimulatedPayment] = {}
        self._faults = faults or Faults()
        self._faults.validate()
        self._stats: dict[str, int] = {}
        self._faults_by_provider: dict[str, dict[str, int]] = {}
        # API requests per wall-clock second and provider: [answered, answered 429 by the rate limit]
        self._per_second: dict[tuple[str, int], list[int]] = {}
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------- server lifecycle

    def start(self) -> GatewaySimulator:
        if self._server is not None:
            return self
        server = QuietServer((self.host, self.port), make_handler(self.handle_api))
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
        """The variables that point the real gateway clients at this simulator: INBOX_API_BASE_<SOURCE> of every
        account (a source's name is its account's). The accounts' keys (`api_keys`) are secrets: the local stack
        stores them in its Secrets Manager (inbox_local/api_keys.py), where the clients read them."""
        return {base_url_variable(account): self.url for account in self.accounts}

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

    def rate_stats(self) -> dict[str, Any]:
        """What the API saw per second and provider (the last RATE_SECONDS_KEPT seconds), and the limit in force:
        `{"limit_per_second", "seconds": [{"provider", "second", "requests", "throttled"}, ...]}`; `requests`
        counts every API request of that second, the 429s of the rate limit included."""
        with self._lock:
            seconds = [
                {"provider": provider, "second": second, "requests": counts[0] + counts[1], "throttled": counts[1]}
                for (provider, second), counts in sorted(self._per_second.items(), key=lambda kv: kv[0][1])
            ]
            return {"limit_per_second": self._faults.rate_limit_per_second, "seconds": seconds}

    def reset_rate_stats(self) -> None:
        with self._lock:
            self._per_second.clear()

    def _over_rate_limit(self, provider: str) -> float | None:
        """Count one API request; the seconds left in its window when the rate limit refuses it, else None."""
        now = self._clock()
        second = int(now)
        with self._lock:
            counts = self._per_second.setdefault((provider, second), [0, 0])
            if len(self._per_second) > RATE_SECONDS_KEPT:
                for key in sorted(self._per_second, key=lambda k: k[1])[: len(self._per_second) - RATE_SECONDS_KEPT]:
                    del self._per_second[key]
            limit = self._faults.rate_limit_per_second
            if limit and counts[0] >= limit:
                counts[1] += 1
                self._count("rate_limited", provider)
                return second + 1 - now
            counts[0] += 1
            return None

    def faults_by_provider(self) -> dict[str, dict[str, int]]:
        """The faults injected so far, per provider and kind (`error`, `throttle`, `slow`, `unknown`)."""
        with self._lock:
            return {provider: dict(kinds) for provider, kinds in self._faults_by_provider.items()}

    def _count(self, name: str, provider: str | None = None) -> None:
        self._stats[name] = self._stats.get(name, 0) + 1
        if provider is not None:
            kinds = self._faults_by_provider.setdefault(provider, {})
            kinds[name] = kinds.get(name, 0) + 1

    # ----------------------------------------------------------------------------------------------- model

    def create_payment(
        self,
        provider: str,
        amount: int,
        currency: str | None = None,
        *,
        resource_id: str | None = None,
        connect_account: str | None = None,
        thin: bool = False,
    ) -> str:
        """A new payment, pending, that the API knows (after `unknown_fetches` 404s). No webhook is sent.

        `currency` defaults to the provider's (`default_currency`); `resource_id` to a new id in its format.
        Stripe only: `connect_account` makes it a Connect account's payment (the API finds it only when asked
        within that account, and its webhooks carry `account`), `thin` makes its webhooks thin events. (Not to be
        confused with `provider`, which may name a gateway account: a source.)"""
        shape = self._shape(provider)
        if (connect_account is not None or thin) and shape.name != "stripe":
            raise ValueError(f"{provider} has no connected accounts or thin events in the simulator")
        if connect_account is not None and not is_account_id(connect_account):
            raise ValueError("account must be a Stripe account id (acct_ and letters or digits)")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise ValueError("amount must be a positive integer of minor units")
        currency = (currency or shape.default_currency).upper()
        if shape.currencies is not None and currency not in shape.currencies:
            raise ValueError(f"{provider} only charges in {', '.join(sorted(shape.currencies))}")
        with self._lock:
            if resource_id is None:
                resource_id = self._new_id(shape, provider)
            elif (provider, resource_id) in self._payments:
                raise ValueError(f"{provider} already has a payment {resource_id!r}")
            shape.statuses(resource_id)  # ValueError: not an id this gateway uses
            now = self._now()
            payment = SimulatedPayment(
                provider=shape.name,
                account=provider,
                resource_id=resource_id,
                amount=amount,
                currency=currency,
                created=now,
                unknown_fetches=self._faults.unknown_fetches,
                connect_account=connect_account,
                thin=thin,
            )
            payment.history.append((S.PENDING, now))
            self._payments[(provider, resource_id)] = payment
            return resource_id

    def creation_webhooks(self, provider: str, resource_id: str) -> list[Webhook]:
        """What the gateway sends when a payment is created (e.g. `payment_intent.created` / `PAYMENT_CREATED`)."""
        with self._lock:
            return self._shape(provider).creation_webhooks(self._get(provider, resource_id), self._token)

    def mark_overdue(self, resource_id: str, *, at: int | None = None, account: str | None = None) -> list[Webhook]:
        """Asaas: a pending payment passes its due date (still pending, status OVERDUE)."""
        from inbox_local.providers.asaas.simulator import SHAPE as ASAAS  # noqa: PLC0415 - Asaas's own step

        with self._lock:
            p = self._get(account or ASAAS.name, resource_id)
            return ASAAS.mark_overdue(p, self._now() if at is None else at, self._token)

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
        shape = self._shape(provider)
        with self._lock:
            p = self._get(provider, resource_id)
            current = p.status
            steps = gateway_steps(shape.statuses(resource_id))
            if target not in steps.get(current, frozenset()):
                raise ValueError(f"{provider} cannot move a payment from {current} to {target} in one step")
            if current is S.DISPUTED and target is not S.CHARGED_BACK and target is not p.status_before_dispute:
                raise ValueError(f"a won dispute returns to {p.status_before_dispute}, not {target}")
            when = self._now() if at is None else at
            refund = self._refund_amount(p, target, refund_amount)
            if target is S.DISPUTED:
                p.status_before_dispute = current
            webhooks = shape.step(p, GatewayStep(current, target, refund, when), self._token)
            p.status = target
            p.history.append((target, when))
            return webhooks

    def check_reachable(self, provider: str, target: PaymentStatus, resource_id: str | None = None) -> None:
        """ValueError unless a new payment of `provider` (with this id, if given) can be taken to `target`."""
        shape = self._shape(provider)
        with self._lock:
            sample_id = resource_id if resource_id is not None else self._peek_id(shape)
        path_to(gateway_steps(shape.statuses(sample_id)), target)

    def advance_to(self, provider: str, resource_id: str, target: PaymentStatus | str) -> list[Webhook]:
        """Take a new (pending) payment through the shortest run of gateway steps to `target`; every webhook sent
        on the way, in order."""
        status = PaymentStatus(target)
        with self._lock:
            p = self._get(provider, resource_id)
            if p.status is not S.PENDING or len(p.history) > 1:
                raise ValueError(f"only a new payment can be advanced, this one is {p.status}")
            webhooks: list[Webhook] = []
            for step in path_to(gateway_steps(self._shape(provider).statuses(resource_id)), status):
                webhooks += self.transition(provider, resource_id, step)
            return webhooks

    def snapshot(self, provider: str, resource_id: str) -> PaymentSnapshot:
        """The truth, shaped like what a gateway client returns."""
        with self._lock:
            p = self._get(provider, resource_id)
            return PaymentSnapshot(
                resource_id=p.resource_id,
                status=p.status,
                provider_status=self._shape(provider).provider_status(p),
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
        """Every payment's truth (what `GET /_sim/payments` answers); a Connect payment's names its `account`
        (the connected account, acct_...; `source` is the gateway account it is in)."""
        with self._lock:
            return [
                p.truth() | ({"account": p.connect_account} if p.connect_account else {})
                for p in self._payments.values()
            ]

    # --------------------------------------------------------------------------------------- model helpers

    def _now(self) -> int:
        return int(self._clock())

    def _shape(self, account: str) -> ProviderShape:
        """The shape of an account's provider (an account name, or a provider's id: its default account)."""
        return _shape(self.accounts.get(account, account))

    def _get(self, provider: str, resource_id: str) -> SimulatedPayment:
        self._shape(provider)
        try:
            return self._payments[(provider, resource_id)]
        except KeyError:
            raise KeyError(f"no {provider} payment {resource_id!r}") from None

    def _token(self, length: int, alphabet: str = ALPHANUMERIC) -> str:
        return "".join(self._ids.choice(alphabet) for _ in range(length))

    def _new_id(self, shape: ProviderShape, account: str) -> str:
        while True:
            resource_id = shape.new_id(self._token)
            if (account, resource_id) not in self._payments:
                return resource_id

    def _peek_id(self, shape: ProviderShape) -> str:
        """An id in the provider's format, drawn without moving the seeded id sequence."""
        state = self._ids.getstate()
        try:
            return shape.new_id(self._token)
        finally:
            self._ids.setstate(state)

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

    # ------------------------------------------------------------------------------------------------ HTTP

    def _draw_fault(self, provider: str) -> tuple[str | None, float]:
        """(fault, slow delay) for one API request of `provider`: "error", "throttle" or None; delay 0 when not
        slow."""
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
                self._count("slow", provider)
            if fault:
                self._count(fault, provider)
            return fault, delay

    def _fetch(self, provider: str, resource_id: str) -> SimulatedPayment | None:
        """The payment for an API fetch, or None while it is unknown (missing, or still inside unknown_fetches)."""
        with self._lock:
            p = self._payments.get((provider, resource_id))
            if p is None:
                return None
            p.fetches += 1
            if p.fetches <= p.unknown_fetches:
                self._count("unknown", provider)
                return None
            return p

    def _carries_key_of(self, shape: ProviderShape, request: ApiRequest) -> bool:
        """Whether the request presents the API key of one of `shape`'s accounts the way its API wants it (two
        gateways sharing URL paths, Stone and Pagar.me: the key says whose account is read)."""
        keys = (self.api_keys.get(account) for account, provider in self.accounts.items() if provider == shape.name)
        return any(key and shape.authorized(request, key) for key in keys)

    def handle_api(self, method: str, target: str, headers: dict[str, str], body: bytes = b"") -> Answer:
        """One request (lower-case header names) -> (status, extra headers, JSON document): the HTTP core."""
        parts = urlsplit(target)
        segments = tuple(unquote(s) for s in parts.path.strip("/").split("/"))
        with self._lock:
            self._count("requests")
        if segments[:1] == ("_sim",):
            return admin_route(self, method, list(segments[1:]), body)
        if method != "GET" and not (method == "POST" and catalog.accepts_post(segments)):
            return 405, {}, {"error": "method not allowed"}
        request = ApiRequest(segments, parse_qs(parts.query), headers)
        shape = catalog.route(segments, owns=lambda candidate: self._carries_key_of(candidate, request))
        if shape is None:
            return 404, {}, {"error": "no such route"}
        request = ApiRequest(segments, parse_qs(parts.query), headers)
        account = self._account_of(shape, request)
        if account is None:
            return shape.unauthorized_status, {}, shape.unauthorized(request)

        window_left = self._over_rate_limit(shape.name)
        if window_left is not None:
            return 429, {"Retry-After": str(max(1, math.ceil(window_left)))}, shape.throttled(request)
        fault, delay = self._draw_fault(shape.name)
        if delay:
            self._sleep(delay)
        if fault == "error":
            return 500, {}, shape.server_error(request)
        if fault == "throttle":
            return 429, {"Retry-After": f"{self.faults.retry_after_seconds:g}"}, shape.throttled(request)
        with self._lock:
            return shape.serve(request, _Lookup(self, account))

    def _account_of(self, shape: ProviderShape, request: ApiRequest) -> str | None:
        """The account of `shape`'s provider whose API key the request carries (as that API wants it), or one
        that asks for no key; None when the request is not authorized for any."""
        keyless: str | None = None
        for account, provider in self.accounts.items():
            if provider != shape.name:
                continue
            expected = self.api_keys.get(account)
            if not expected:
                keyless = keyless or account
            elif shape.authorized(request, expected):
                return account
        return keyless


def _shape(provider: str) -> ProviderShape:
    try:
        return catalog.SHAPES[provider]
    except KeyError:
        raise ValueError(f"the simulator speaks {', '.join(catalog.PROVIDERS)}, not {provider!r}") from None


@contextmanager
def running_simulator(**kwargs: Any) -> Iterator[GatewaySimulator]:
    """`with running_simulator(seed=1) as sim:` - started on an ephemeral port, stopped on exit."""
    simulator = GatewaySimulator(**kwargs).start()
    try:
        yield simulator
    finally:
        simulator.stop()
