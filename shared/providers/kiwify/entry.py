"""Kiwify's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="kiwify",
    driver="shared.providers.kiwify.driver:driver",
    refetch_client=None,  # no payment API: ordered by event time (provider_status is already canonical)
    routes=(
        Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.kiwify.driver:SALE_EVENTS"),
        Route(HANDLER_OCCURRED_AT, ("CASHIN.*", "CASHOUT.*")),  # Kiwify Banking
    ),
    facts=ProviderFacts(
        display_name="Kiwify",
        signature="sales `?signature=` HMAC-SHA1; Banking Ed25519",
        signature_source="verified",
        dedup_key="derived (no stable envelope id)",
        docs_url="https://docs.kiwify.com.br/en/api-reference/banking/webhook-headers",
    ),
)
