"""Shopify's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="shopify",
    driver="shared.providers.shopify.driver:driver",
    refetch_client=None,
    # Order and dispute topics only: a transaction alone does not say what the order became.
    routes=(Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.shopify.driver:PAYMENT_TOPICS"),),
    facts=ProviderFacts(
        display_name="Shopify",
        signature="`X-Shopify-Hmac-Sha256` base64",
        signature_source="verified",
        dedup_key="derived from the signed body",
        docs_url="https://shopify.dev/docs/apps/build/webhooks/subscribe/https",
    ),
)
