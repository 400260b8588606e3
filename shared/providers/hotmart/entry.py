"""Hotmart's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, TRUST_TOKEN, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="hotmart",
    driver="shared.providers.hotmart.driver:driver",
    refetch_client=None,
    routes=(Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.hotmart.driver:PURCHASE_EVENTS"),),
    facts=ProviderFacts(
        display_name="Hotmart",
        signature="`X-HOTMART-HOTTOK`",
        signature_source="secondary",
        dedup_key="body `id`",
        docs_url="https://help.hotmart.com/en/article/360001491352",
    ),
    trust=TRUST_TOKEN,  # `X-HOTMART-HOTTOK`: the token itself, nothing over the body
)
