"""The gateway's truth for the local stack: an in-process API over an in-memory payment model, speaking the REST
shape of every provider the processor refetches from (Stripe, Asaas, Pagar.me, Mercado Pago, Paddle, PagBank,
iugu), exactly as the clients in `shared.gateway` call them.

The processor refetches every money-moving event from the gateway's API. Locally (and in `inbox simulate`,
`inbox send` and chaos runs) that API is this server: `environment()` gives the `INBOX_API_BASE_<PROVIDER>` that
point the real clients at it, and the local stack stores each account's key (`api_keys`) in its Secrets Manager,
where the clients read their keys (inbox_local/api_keys.py).

One concern per module: `core` (payments, lifecycle, faults, dispatch), `admin` (the `/_sim/` JSON API),
`server` (HTTP glue), `faults`, `model`, `shape` (what a provider's face is), `catalog` (which shapes exist), and
one module per provider with its REST shape, auth, status vocabulary, error answers and webhooks.

Run alone: `python -m inbox_local.gateway_simulator --port 8790 --seed 7`.
"""

from __future__ import annotations

from inbox_local.gateway_simulator.catalog import DEFAULT_API_KEYS, PROVIDERS, SHAPES
from inbox_local.gateway_simulator.core import GatewaySimulator, running_simulator
from inbox_local.gateway_simulator.faults import Faults
from inbox_local.gateway_simulator.model import GATEWAY_STEPS, SimulatedPayment, Webhook

__all__ = [
    "DEFAULT_API_KEYS",
    "GATEWAY_STEPS",
    "PROVIDERS",
    "SHAPES",
    "Faults",
    "GatewaySimulator",
    "SimulatedPayment",
    "Webhook",
    "running_simulator",
]
