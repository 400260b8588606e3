"""Pagar.me's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="pagarme",
    driver="shared.providers.pagarme.driver:driver",
    refetch_client="shared.providers.pagarme.client:PagarmeClient",
    routes=(Route(HANDLER_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
    facts=ProviderFacts(
        display_name="Pagar.me",
        signature="v5 RS256 (JWKS) and legacy `X-Hub-Signature` sha1",
        signature_source="verified",
        dedup_key="hook id / derived",
        docs_url="https://github.com/pagarme/ecommerce-module-core",
    ),
    # GET /charges/* and /orders/* are limited to 200 requests a minute (3.3/s): docs/providers.md.
    refetch_rate_per_second=3.0,
)
