"""The gateway's truth for the local stack: an in-process API over an in-memory payment model, speaking the REST
shape of every provider the processor refetches from (Stripe, Asaas, Pagar.me, Mercado Pago, Paddle, PagBank,
iugu...), exactly as their refetch clients (`shared/providers/<id>/client.py`) call them.

The processor refetches every money-moving event from the gateway's API. Locally (and in `inbox simulate`,
`inbox send` and chaos runs) that API is this server: `environment()` gives the `INBOX_API_BASE_<PROVIDER>` that
point the real clients at it, and the local stack stores each account's key (`api_keys`) in its Secrets Manager,
where the clients read their keys (inbox_local/api_keys.py).

One concern per module: `core` (payments, lifecycle, faults, dispatch), `admin` (the `/_sim/` JSON API),
`server` (HTTP glue), `faults`, `model`, `shape` (what a provider's face is), `catalog` (which shapes exist). Each
provider's REST shape, auth, status vocabulary, error answers and webhooks are in its own folder,
`inbox_local/providers/<id>/simulator.py`.

Run alone: `python -m inbox_local.gateway_simulator --port 8790 --seed 7`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported when first used (PEP 562), not with the package: each provider's shape module
# (inbox_local/providers/<id>/simulator.py) imports this package's `model` and `shape`, and the catalog imports every
# shape module; a package that imported the catalog itself would make a shape module imported first (a test, a
# sender) meet its own half-initialized self through the catalog.
_EXPORTS = {
    "DEFAULT_API_KEYS": "catalog",
    "GATEWAY_STEPS": "model",
    "PROVIDERS": "catalog",
    "SHAPES": "catalog",
    "Faults": "faults",
    "GatewaySimulator": "core",
    "SimulatedPayment": "model",
    "Webhook": "model",
    "running_simulator": "core",
}

if TYPE_CHECKING:
    from inbox_local.gateway_simulator.catalog import DEFAULT_API_KEYS, PROVIDERS, SHAPES
    from inbox_local.gateway_simulator.core import GatewaySimulator, running_simulator
    from inbox_local.gateway_simulator.faults import Faults
    from inbox_local.gateway_simulator.model import GATEWAY_STEPS, SimulatedPayment, Webhook


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


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
