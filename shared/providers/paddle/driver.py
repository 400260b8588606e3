"""Paddle Billing: `Paddle-Signature: ts=<epoch>;h1=<hex>[;h1=<hex>...]` over `{ts}:{raw body}`, HMAC-SHA256 hex.

Signing, as Paddle's SDKs (paddle-python-sdk `PaddleSignature`/`Verifier`, paddle-node-sdk) do it:
- the key is the notification destination's secret key (`pdl_ntfset_...`) as UTF-8;
- the header is `;`-separated `key=value` pairs: one `ts`, and one `h1` per active secret (Paddle sends several
  while a secret is being rotated): any `h1` match passes. Unknown keys are ignored here (the SDK rejects them);
  two `ts` make the signed timestamp ambiguous and are refused;
- tolerance: the SDK allows 5 s. We use the system tolerance (`INBOX_SIGNATURE_TOLERANCE_SECONDS`, 300 s by
  default), in both directions, like every timestamped provider here: 5 s is less than a Lambda cold start plus
  API Gateway's own latency on a bad day, and a refused genuine delivery costs a retry cycle. The bound is checked
  after the signature, so a forged stale delivery reads as a mismatch.

Dedup: `event_id` (`evt_...`) is the event's id, the same on every retry; `notification_id` (`ntf_...`) differs per
destination and is not used.

Time: `occurred_at` is RFC 3339 with microseconds (`2024-04-12T10:18:49.621022Z`), kept at full precision.

The payment is the transaction:
- `transaction.*` events carry it: resource = `data.id`; provider status = `data.status`; amount =
  `data.details.totals.grand_total` (a string of minor units), reported only once the transaction is `paid` or
  `completed` (before that its totals may still be revised, and the processor compares webhook and API amounts);
- `adjustment.*` events (refunds, credits, chargebacks) belong to their transaction: resource =
  `data.transaction_id`; the adjustment's own status and amount describe the adjustment, not the payment, so they
  are not reported (the processor refetches the transaction);
- other events (subscription.*, customer.*...) are stored with no resource.
The processor refetches the transaction from Paddle's API (`shared.providers.paddle.client`), which decides the status.
"""

from __future__ import annotations

from shared.providers._schemes import SchemeVerified, TimestampedListScheme
from shared.providers._signing import (
    JsonObject,
    get_currency,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    require_object,
    require_str,
)
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
)

# Paddle's SDKs: items split on ";", blanks around values dropped.
AUTHENTICATION = TimestampedListScheme(
    header="paddle-signature",
    called="Paddle-Signature",
    separator=";",
    timestamp_key="ts",
    scheme="h1",
    joiner=":",
    strip_values=True,
)
SIGNATURE_HEADER = AUTHENTICATION.header
SCHEME = AUTHENTICATION.scheme
compute_signature = AUTHENTICATION.sign  # the hex `h1` Paddle computes for (timestamp, body, secret)
FINAL_STATUSES = frozenset({"paid", "completed"})  # the transaction's totals can no longer change


def minor_units(value: object, where: str) -> int | None:
    """A Paddle amount: a string of digits in the currency's lowest denomination ("1099"); None when absent."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.lstrip("-").isdigit() or len(value) > 15:
        raise PayloadInvalid(f"field {where} is not an amount in minor units")
    return int(value)


def _grand_total(data: JsonObject) -> int | None:
    details = get_object(data, "details", "data.details", required=False)
    totals = get_object(details, "totals", "data.details.totals", required=False) if details else None
    if totals is None:
        return None
    value = totals.get("grand_total", totals.get("total"))
    return minor_units(value, "data.details.totals.grand_total")


class PaddleDriver(SchemeVerified):
    name: str = "paddle"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        event = load_json_object(request.body)
        event_id = require_str(event, "event_id", "event_id")
        event_type = require_str(event, "event_type", "event_type")
        occurred_at = iso_to_utc(require_str(event, "occurred_at", "occurred_at"), "occurred_at")
        data = require_object(event, "data", "data")

        resource_id: str | None = None
        provider_status: str | None = None
        amount: int | None = None
        currency: str | None = None
        if event_type.startswith("transaction."):
            resource_id = require_str(data, "id", "data.id")
            provider_status = get_str(data, "status", "data.status")
            currency = get_currency(data, "currency_code", "data.currency_code")
            if provider_status in FINAL_STATUSES:
                amount = _grand_total(data)
        elif event_type.startswith("adjustment."):
            resource_id = require_str(data, "transaction_id", "data.transaction_id")
            currency = get_currency(data, "currency_code", "data.currency_code")

        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=provider_status,
            amount=amount,
            currency=currency,
        )


driver: ProviderDriver = PaddleDriver()
