"""PagBank's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_SECRET_PREFIX, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="pagbank",
    driver="shared.providers.pagbank.driver:driver",
    refetch_client="shared.providers.pagbank.client:PagbankClient",
    routes=(Route(HANDLER_REFETCH, ("charge.*", "order.*")),),
    facts=ProviderFacts(
        display_name="PagBank",
        signature="`x-authenticity-token` = sha256(`{token}-{body}`)",
        signature_source="verified",
        dedup_key="derived",
        docs_url="https://developer.pagbank.com.br/reference/confirmar-autenticidade-da-notificacao",
    ),
    trust=TRUST_SECRET_PREFIX,  # sha256(token + "-" + body): length-extendable
)
