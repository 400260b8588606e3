"""GitHub's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import ProviderEntry, ProviderFacts

ENTRY = ProviderEntry(
    id="github",
    driver="shared.providers.github.driver:driver",
    refetch_client=None,
    routes=(),  # GitHub events are not payments: stored, then ignored
    facts=ProviderFacts(
        display_name="GitHub",
        signature="`X-Hub-Signature-256`",
        signature_source="verified",
        dedup_key="derived: the signed body's digest",
        docs_url="https://docs.github.com/webhooks/securing",
    ),
)
