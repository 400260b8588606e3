"""Adyen's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_OCCURRED_AT, TRUST_SIGNED_FIELDS, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="adyen",
    driver="shared.providers.adyen.driver:driver",
    refetch_client=None,
    routes=(Route(HANDLER_OCCURRED_AT, event_types_from="shared.providers.adyen.driver:PAYMENT_EVENT_CODES"),),
    facts=ProviderFacts(
        display_name="Adyen",
        signature="`hmacSignature` inside the notification item",
        signature_source="verified",
        dedup_key="pspReference + eventCode + success",
        docs_url="https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures",
    ),
    trust=TRUST_SIGNED_FIELDS,
    # The HMAC signing string of each NotificationRequestItem: `eventDate` and `additionalData` are not in it.
    signed_fields=(
        "pspReference",
        "originalReference",
        "merchantAccountCode",
        "merchantReference",
        "amount.value",
        "amount.currency",
        "eventCode",
        "success",
    ),
    # Adyen retries an unaccepted notification for up to 30 days (docs/providers.md).
    redelivery_days=30,
)
