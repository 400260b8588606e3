"""iugu's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_TOKEN, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="iugu",
    driver="shared.providers.iugu.driver:driver",
    refetch_client="shared.providers.iugu.client:IuguClient",
    routes=(Route(HANDLER_REFETCH, ("invoice.*",)),),
    facts=ProviderFacts(
        display_name="iugu",
        signature="token in `Authorization` or `?token=` (never stored)",
        signature_source="inferred",  # the token exists (iugu's OpenAPI); how it is put on the wire is inferred
        dedup_key="derived",
        docs_url="https://dev.iugu.com/docs/gatilhos",
    ),
    trust=TRUST_TOKEN,  # the token itself, in a header or the URL
)
