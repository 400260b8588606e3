"""Zoop's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_NONE, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="zoop",
    driver="shared.providers.zoop.driver:driver",
    refetch_client="shared.providers.zoop.client:ZoopClient",
    routes=(Route(HANDLER_REFETCH, ("transaction.*",)),),
    facts=ProviderFacts(
        display_name="Zoop",
        signature="none found: refetch-verified (header secret)",
        signature_source="inferred",  # no signature is documented where Zoop documents its webhooks
        dedup_key="none: each delivery stored",
        docs_url="https://docs.zoop.co/docs/sobre-os-webhooks",
    ),
    trust=TRUST_NONE,
)
