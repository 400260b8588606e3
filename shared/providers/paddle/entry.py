"""Paddle's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="paddle",
    driver="shared.providers.paddle.driver:driver",
    refetch_client="shared.providers.paddle.client:PaddleClient",
    routes=(Route(HANDLER_REFETCH, ("transaction.*", "adjustment.*")),),
    facts=ProviderFacts(
        display_name="Paddle",
        signature="`Paddle-Signature: ts=;h1=`",
        signature_source="verified",
        dedup_key="`event_id`",
        docs_url="https://developer.paddle.com/webhooks/signature-verification",
    ),
    # 240 requests a minute per IP address for most operations: docs/providers.md.
    refetch_rate_per_second=4.0,
    # Paddle-Signature binds `{ts}:{body}`, and an event's `data` is the entity's snapshot at its `occurred_at`.
    payload_status_from="shared.providers.paddle.client:payload_status",
    # Paddle retries live deliveries up to 60 times over 3 days (docs/providers.md).
    redelivery_days=3,
)
