"""Stripe's catalog entry: what the code, the stack, the local stack and the docs know of the provider.

Standard library only (the stack imports it): shared/definitions/catalog.py gathers every provider folder's entry."""

from __future__ import annotations

from shared.providers.entry_types import HANDLER_REFETCH, ProviderEntry, ProviderFacts, Route

ENTRY = ProviderEntry(
    id="stripe",
    driver="shared.providers.stripe.driver:driver",
    refetch_client="shared.providers.stripe.client:StripeClient",
    # `v1.*`: the thin versions of the same events (event destinations with thin payloads)
    routes=(
        Route(
            HANDLER_REFETCH,
            ("payment_intent.*", "charge.*", "refund.*", "v1.payment_intent.*", "v1.charge.*", "v1.refund.*"),
        ),
    ),
    facts=ProviderFacts(
        display_name="Stripe",
        signature="`Stripe-Signature` HMAC-SHA256 of `{t}.{body}`, ±300 s",
        signature_source="verified",
        dedup_key="event `id`",
        docs_url="https://stripe.com/docs/payments/handling-payment-events",
    ),
    # 25 requests/s: Stripe's default per-endpoint limit (live mode allows 100 operations/s in all, sandboxes
    # 25): docs/providers.md, "Refetch rate limits".
    refetch_rate_per_second=25.0,
    # Snapshot events sign the whole body (`{t}.{body}`), carry the PaymentIntent as it was and a signed
    # `created`: a payment_intent.* event may confirm a payment before the refetch (thin events state nothing).
    payload_status_from="shared.providers.stripe.client:payload_status",
    # Stripe retries live-mode deliveries for up to 3 days (docs/providers.md).
    redelivery_days=3,
)
