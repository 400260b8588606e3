"""Asaas's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_TOKEN, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="asaas",
    driver="shared.providers.asaas.driver:driver",
    refetch_client="shared.providers.asaas.client:AsaasClient",
    routes=(Route(HANDLER_REFETCH, ("PAYMENT_*",)),),
    facts=ProviderFacts(
        display_name="Asaas",
        signature="static `asaas-access-token` (never stored)",
        signature_source="project-notes",
        dedup_key="body `id`",
        docs_url="https://docs.asaas.com/docs/about-webhooks",
    ),
    trust=TRUST_TOKEN,  # `asaas-access-token`: the token itself, nothing over the body
    # Asaas keeps a paused queue's events 14 days (docs/providers.md).
    redelivery_days=14,
)
