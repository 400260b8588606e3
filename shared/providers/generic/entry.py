"""any HMAC sender's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="generic",
    driver="shared.providers.generic.driver:driver",
    refetch_client=None,
    # The configured `payment_event_types` (INBOX_GENERIC_CONFIG), read when the router is built.
    routes=(Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.generic.driver:payment_event_patterns"),),
    facts=ProviderFacts(
        display_name="any HMAC sender",
        signature="configured by data (`INBOX_GENERIC_CONFIG`)",
        signature_source="configured",
        dedup_key="configured",
        docs_url=None,
    ),
)
