"""Standard Webhooks' catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="standard",
    driver="shared.providers.standard.driver:driver",
    refetch_client=None,  # a signing scheme, not a gateway: no API to ask
    routes=(Route(HANDLER_OCCURRED_AT, ("payment.*",)),),
    facts=ProviderFacts(
        display_name="Standard Webhooks / Svix",
        signature="`webhook-*`/`svix-*` HMAC-SHA256 base64 of `{id}.{ts}.{body}`",
        signature_source="verified",
        dedup_key="`webhook-id`",
        docs_url="https://github.com/standard-webhooks/standard-webhooks",
    ),
)
