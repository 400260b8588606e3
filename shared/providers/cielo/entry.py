"""Cielo's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_NONE, ProviderEntry, ProviderFacts, Route

# Refetch-verified: Cielo signs nothing; a notification is a hint the processor refetches (trust class `none`).
ENTRY = ProviderEntry(
    id="cielo",
    driver="shared.providers.cielo.driver:driver",
    refetch_client="shared.providers.cielo.client:CieloClient",
    # Every documented ChangeType names a PaymentId: read it back (an undocumented one is stored and ignored)
    routes=(Route(HANDLER_REFETCH, event_types_from="shared.providers.cielo.driver:ROUTED_EVENT_TYPES"),),
    facts=ProviderFacts(
        display_name="Cielo",
        signature="none: refetch-verified (header secret, IP ranges)",
        signature_source="verified",
        dedup_key="none: each delivery stored",
        docs_url="https://docs.cielo.com.br/ecommerce-cielo-en/docs/notification-post",
    ),
    trust=TRUST_NONE,
)
