"""Mercado Pago's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_SIGNED_FIELDS, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="mercadopago",
    driver="shared.providers.mercadopago.driver:driver",
    refetch_client="shared.providers.mercadopago.client:MercadoPagoClient",
    routes=(Route(HANDLER_REFETCH, ("payment", "payment.*")),),
    facts=ProviderFacts(
        display_name="Mercado Pago",
        signature="`x-signature` manifest HMAC",
        signature_source="verified",
        dedup_key="the signed `data.id` + `x-request-id`",
        docs_url="https://mercadopago.com.br/developers/en/docs/checkout-pro/payment-notifications",
    ),
    trust=TRUST_SIGNED_FIELDS,
    # The manifest `id:{data.id};request-id:{x-request-id};ts:{ts};`: the body is not signed.
    signed_fields=("data.id", "x-request-id", "ts"),
    # Mercado Pago makes 5 attempts over about 4 days (docs/providers.md).
    redelivery_days=4,
)
