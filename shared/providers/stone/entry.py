"""Stone's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="stone",
    driver="shared.providers.stone.driver:driver",  # the Pagar.me driver under Stone's id (Connect Stone)
    refetch_client="shared.providers.stone.client:StoneClient",
    routes=(Route(HANDLER_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
    facts=ProviderFacts(
        display_name="Stone",
        signature="as `pagarme` (Pagar.me platform): v5 RS256, legacy sha1",
        signature_source="inferred",  # Stone documents Pagar.me's hooks and API; the signature header is inferred
        dedup_key="hook id / derived",
        docs_url="https://connect-stone.stone.com.br/reference/retorno-webhook",
    ),
    # Pagar.me's documented limit for GET /charges/* and /orders/*: 200 requests a minute (docs.pagar.me
    # "Rate Limit"), the API Connect Stone payments are read from.
    refetch_rate_per_second=3.0,  # as pagarme: the same API and its documented 200 requests a minute
)
