"""Eduzz's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="eduzz",
    driver="shared.providers.eduzz.driver:driver",
    refetch_client=None,  # no invoice API is refetched: ordered by event time (provider_status is canonical)
    routes=(Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.eduzz.driver:INVOICE_EVENTS"),),
    facts=ProviderFacts(
        display_name="Eduzz",
        signature="`x-signature` HMAC-SHA256 hex of the body",
        signature_source="verified",  # the scheme is Eduzz's; the hex encoding is inferred (docs/providers.md)
        dedup_key="body `id`",
        docs_url="https://github.com/eduzz/eduzz-webhook-docs",
    ),
)
