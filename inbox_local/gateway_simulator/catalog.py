"""Every provider shape the simulator speaks, by provider id: the refetch providers of `shared.gateway`."""

from __future__ import annotations

from inbox_local.gateway_simulator import asaas, iugu, mercadopago, paddle, pagarme, pagbank, stripe
from inbox_local.gateway_simulator.shape import ProviderShape

SHAPES: dict[str, ProviderShape] = {
    shape.name: shape
    for shape in (
        stripe.SHAPE,
        asaas.SHAPE,
        pagarme.SHAPE,
        mercadopago.SHAPE,
        paddle.SHAPE,
        pagbank.SHAPE,
        iugu.SHAPE,
    )
}
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
