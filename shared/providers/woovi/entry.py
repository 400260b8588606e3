"""Woovi / OpenPix's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="woovi",
    driver="shared.providers.woovi.driver:driver",
    refetch_client="shared.providers.woovi.client:WooviClient",
    routes=(Route(HANDLER_REFETCH, event_types_from="shared.providers.woovi.driver:CHARGE_EVENTS"),),
    facts=ProviderFacts(
        display_name="Woovi / OpenPix",
        signature="`x-webhook-signature` RSA-SHA256 (Woovi's published keys)",
        signature_source="verified",
        dedup_key="derived (no envelope id)",
        docs_url="https://developers.woovi.com/docs/webhook/seguranca/webhook-signature-validation",
    ),
    legacy_signature="`X-OpenPix-Signature`: base64 HMAC-SHA1 of the body with the webhook's own secret key",
)
