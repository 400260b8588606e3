"""Which payment lifecycles each provider can live through, and which providers are simulated at all.

A lifecycle is a named run of canonical gateway steps after creation (which is `pending`). Which of them a
provider can express is not declared here: it follows from the parts that already know it.

- A provider the processor refetches from (`shared.gateway.registry`): the gateway simulator walks the steps
  (in memory, no server), and its last step must be announced by a webhook (a step a gateway does not notify,
  like a Pagar.me partial refund, may come on the way, not at the end: nothing would make the processor look).
- A provider with no API, ordered by `occurred_at`: the processor's routing table sends its events to the
  event-time handler, the driver has a sample for every step whose status reads back as that step, and every
  step is a transition the canonical table allows.
"""

from __future__ import annotations

from functools import cache

from inbox_cli.simulate import wire
from inbox_local.config import signing_secret
from inbox_local.gateway_simulator import GatewaySimulator
from shared.gateway.registry import supported_providers
from shared.payments.status import PaymentStatus, is_allowed
from shared.process.handlers import EventTimeOrderedHandler, default_router
from shared.process.router import Router
from shared.providers.base import PayloadInvalid
from shared.providers.registry import provider_names

NAMED_LIFECYCLES: dict[str, tuple[str, ...]] = {
    "paid": ("paid",),
    "authorized then captured": ("authorized", "paid"),
    "authorized then voided": ("authorized", "canceled"),
    "refunded": ("paid", "refunded"),
    "partially refunded twice, then fully": ("paid", "partially_refunded", "partially_refunded", "refunded"),
    "dispute won": ("paid", "disputed", "paid"),
    "dispute lost": ("paid", "disputed", "charged_back"),
    "charged back without a dispute": ("paid", "charged_back"),
    "failed, retried, paid": ("failed", "paid"),
    "refunded in nine parts": ("paid", *["partially_refunded"] * 8, "refunded"),
    "failed": ("failed",),
    "canceled": ("canceled",),
    "left pending": (),
}
_PROBE_AMOUNT = 1990
_PROBE_TIME = 1_700_000_000


def refetched(provider: str) -> bool:
    """Whether the processor reads this provider's payments back from its API (else: ordered by event time)."""
    return provider in supported_providers()


@cache
def simulated_providers() -> tuple[str, ...]:
    """Every provider with at least one lifecycle: the refetched ones first, then those ordered by event time."""
    refetching = [p for p in supported_providers() if lifecycles_for(p)]
    by_event_time = [p for p in provider_names() if not refetched(p) and lifecycles_for(p)]
    return (*refetching, *by_event_time)


@cache
def lifecycles_for(provider: str) -> dict[str, tuple[str, ...]]:
    """The named lifecycles this provider can express (empty for a provider that is not simulated)."""
    walkable = _walks_on_the_simulator if refetched(provider) else _announced_by_events
    return {name: steps for name, steps in NAMED_LIFECYCLES.items() if walkable(provider, steps)}


def _walks_on_the_simulator(provider: str, steps: tuple[str, ...]) -> bool:
    simulator = GatewaySimulator(clock=lambda: _PROBE_TIME)
    resource_id = simulator.create_payment(provider, _PROBE_AMOUNT)
    announced = bool(simulator.creation_webhooks(provider, resource_id))
    try:
        for step in steps:
            announced = bool(simulator.transition(provider, resource_id, step))
    except ValueError:  # a step this gateway cannot take
        return False
    return announced


@cache
def _processor_routes() -> Router:
    return default_router(lambda _: None)  # routing only: no event is processed, no client is asked for


@cache
def _event_time_sample(provider: str, status: str) -> bool:
    """Whether the provider's sample for `status` reaches the event-time handler stating that status."""
    try:
        body = wire.sample_body(
            provider,
            event_id="evt_probe",
            resource_id="100000000001",
            status=status,
            amount=_PROBE_AMOUNT,
            occurred_at=_PROBE_TIME,
        )
        event = wire.read_back(provider, body, signing_secret(provider), now=_PROBE_TIME)
    except (ValueError, PayloadInvalid):
        return False
    handler = _processor_routes().resolve(provider, event.event_type)
    return isinstance(handler, EventTimeOrderedHandler) and event.provider_status == status


def _announced_by_events(provider: str, steps: tuple[str, ...]) -> bool:
    if not steps and not _event_time_sample(provider, PaymentStatus.PENDING.value):
        return False  # nothing would ever be sent about it
    current = PaymentStatus.PENDING
    for step in steps:
        status = PaymentStatus(step)
        if not _event_time_sample(provider, step) or not (status is current or is_allowed(current, status)):
            return False
        current = status
    return True
