"""Every provider shape the simulator speaks, by provider id: one per provider the processor refetches from
(`shared.definitions.REFETCH_PROVIDERS`, the provider catalog's), each in `inbox_local/gateway_simulator/<id>.py`
as its module's `SHAPE`. A refetching provider added to the catalog without its shape module fails here, at import,
and in tests/unit/test_catalog.py."""

from __future__ import annotations

import importlib

from inbox_local.gateway_simulator.shape import ProviderShape
from shared.definitions import REFETCH_PROVIDERS


def _shape_of(provider: str) -> ProviderShape:
    shape: ProviderShape = importlib.import_module(f"inbox_local.gateway_simulator.{provider}").SHAPE
    if shape.name != provider:
        raise ValueError(f"inbox_local/gateway_simulator/{provider}.py speaks for {shape.name!r}, not {provider!r}")
    return shape


SHAPES: dict[str, ProviderShape] = {provider: _shape_of(provider) for provider in REFETCH_PROVIDERS}
PROVIDERS: tuple[str, ...] = tuple(SHAPES)
DEFAULT_API_KEYS: dict[str, str] = {name: shape.default_api_key for name, shape in SHAPES.items()}


def route(segments: tuple[str, ...]) -> ProviderShape | None:
    """The shape whose API answers this path (the longest matching prefix: /v1/payments is Mercado Pago's,
    /v1/payment_intents Stripe's)."""
    best: tuple[int, ProviderShape] | None = None
    for shape in SHAPES.values():
        for prefix in shape.routes:
            if segments[: len(prefix)] == prefix and (best is None or len(prefix) > best[0]):
                best = (len(prefix), shape)
    return best[1] if best else None
