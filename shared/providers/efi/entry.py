"""Efí Pix's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, TRUST_TOKEN, ProviderEntry, ProviderFacts, Route

# Efí (Gerencianet) Pix: mutual TLS, or skip-mTLS's `?hmac=`; several Pix per delivery (docs/providers.md).
ENTRY = ProviderEntry(
    id="efi",
    driver="shared.providers.efi.driver:driver",
    refetch_client="shared.providers.efi.client:EfiClient",
    routes=(Route(HANDLER_REFETCH, event_types_from="shared.providers.efi.driver:EVENT_TYPES"),),
    facts=ProviderFacts(
        display_name="Efí Pix",
        signature="mutual TLS (Efí's CA), else `?hmac=` + source IP",
        signature_source="verified",  # mTLS, the CA chain and /pix: Efí's docs and repos; hmac: Efí's forum
        dedup_key="Pix `endToEndId`; devolução id + status",
        docs_url="https://dev.efipay.com.br/docs/api-pix/webhooks/",
    ),
    path_suffixes=("pix",),
    trust=TRUST_TOKEN,  # mutual TLS authenticates the connection, `?hmac=` is the secret itself: no body MAC
)
