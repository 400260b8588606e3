"""Every provider shape the simulator speaks, by provider id: one per provider the processor refetches from
(`shared.definitions.REFETCH_PROVIDERS`, the provider catalog's), each in its provider's folder,
`inbox_local/providers/<id>/simulator.py`, as that module's `SHAPE`. A refetching provider added to the catalog
without its shape module fails here, at import, and in tests/unit/test_catalog.py."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from inbox_local.gateway_simulator.shape import ProviderShape
from shared.definitions import REFETCH_PROVIDERS


def _shape_of(provider: str) -> ProviderShape:
    shape: ProviderShape = importlib.import_module(f"inbox_local.providers.{provider}.simulator").SHAPE
    if shape.name != provider:
        raise ValueError(f"inbox_local/providers/{provider}/simulator.py speaks for {shape.name!r}, not {provider!r}")
    return shape


SHAPES: dict[str, ProviderShape] = {provider: _shape_of(provider) for provider in REFETCH_PROVIDERS}
PROVIDERS: tuple[str, ...] = tuple(SHAPES)
DEFAULT_API_KEYS: dict[str, str] = {name: shape.default_api_key for name, shape in SHAPES.items()}


def candidates(segments: tuple[str, ...]) -> list[ProviderShape]:
    """The shapes whose API answers this path by its longest matching prefix (/v1/payments is Mercado Pago's,
    /v1/payment_intents Stripe's). More than one when gateways share an API (Stone's accounts live on Pagar.me's):
    then the request's credentials say whose it is (`route`)."""
    best: list[ProviderShape] = []
    longest = 0
    for shape in SHAPES.values():
        length = max((len(prefix) for prefix in shape.routes if segments[: len(prefix)] == prefix), default=0)
        if length and length > longest:
            best, longest = [shape], length
        elif length and length == longest:
            best.append(shape)
    return best


def route(segments: tuple[str, ...], owns: Callable[[ProviderShape], bool] | None = None) -> ProviderShape | None:
    """The shape that answers this path: the only candidate, else the first one `owns` (the request carries its
    key), else the first (whose unauthorized answer the caller then gives)."""
    found = candidates(segments)
    if len(found) > 1 and owns is not None:
        return next((shape for shape in found if owns(shape)), found[0])
    return found[0] if found else None


def accepts_post(segments: tuple[str, ...]) -> bool:
    """Whether a shape answers POST on this path (Efí's OAuth token endpoint: `post_routes`); every other API
    request is a GET."""
    return any(segments == route for shape in SHAPES.values() for route in getattr(shape, "post_routes", ()))
