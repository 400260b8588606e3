"""Hotmart (Brazil): a static token in `X-HOTMART-HOTTOK`, no signature over the body, no timestamp.

Authentication (developers.hotmart.com, webhook 2.0.0 docs): every request carries the account's token ("hottok")
in `X-HOTMART-HOTTOK`; it must equal the configured token (current or previous, for a rotation), compared in
constant time. The header IS the secret, so it is never stored (`replay_headers` is empty).

Hotmart also repeats the token inside the JSON body (`"hottok": "..."`): `secret_body_fields` makes the ingest
store the body with that value replaced by "[redacted]" (every other byte as received), so no stored copy
holds the token. Rotating it needs Hotmart support; see docs/providers-brazil.md.

Format: webhook version 2.0.0 (JSON): `{"id", "creation_date" (epoch ms), "event", "version", "data": {...}}`.
Version 1.0.0 (form-encoded postbacks) is not parsed: such a delivery is stored as failed (never dropped).

Dedup: the body `id` is "the unique identification code of the event": it is the event id. A body without one
gets `derive_event_id(transaction, event, purchase status, "")` (no envelope time: it may be a delivery time).

The payment is the purchase: `data.purchase.transaction` (`HP...`). Subscription, cart-abandonment, club and
logistics events have no purchase transaction: they are stored with no resource (and ignored by the processor).
Time: `creation_date`, epoch milliseconds, kept to the millisecond. Money: `data.purchase.price.value` is a
decimal amount in `currency_value` (parsed as Decimal: 149.5 -> 14950 centavos exactly).

Ordering: Hotmart has no payment API we refetch from: events are ordered by `occurred_at`, and `provider_status`
carries the canonical status `data.purchase.status` maps to (`PURCHASE_STATUS`), which the processor applies.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from shared.payments.status import PaymentStatus
from shared.providers._schemes import SchemeVerified, TokenScheme
from shared.providers._signing import (
    get_currency,
    get_object,
    get_str,
    load_json_object,
    require_int,
    require_object,
    require_str,
)
from shared.providers.asaas.driver import value_to_minor_units
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
    derive_event_id,
)

TOKEN_HEADER = "x-hotmart-hottok"  # noqa: S105 - a header name, not a secret

S = PaymentStatus

# The purchase events (the processor's routing table registers these; cart, subscription, club and logistics
# events carry no purchase and are stored and left alone).
PURCHASE_EVENTS: tuple[str, ...] = (
    "PURCHASE_APPROVED",
    "PURCHASE_COMPLETE",
    "PURCHASE_CANCELED",
    "PURCHASE_BILLET_PRINTED",
    "PURCHASE_PROTEST",
    "PURCHASE_REFUNDED",
    "PURCHASE_CHARGEBACK",
    "PURCHASE_EXPIRED",
    "PURCHASE_DELAYED",
)

# data.purchase.status -> canonical
PURCHASE_STATUS: dict[str, PaymentStatus] = {
    "STARTED": S.PENDING,
    "WAITING_PAYMENT": S.PENDING,
    "PRINTED_BILLET": S.PENDING,
    "BILLET_PRINTED": S.PENDING,
    "PROCESSING_TRANSACTION": S.PENDING,
    "UNDER_ANALISYS": S.PENDING,  # sic: Hotmart's spelling
    "UNDER_ANALYSIS": S.PENDING,
    "PRE_ORDER": S.PENDING,
    "OVERDUE": S.PENDING,
    "DELAYED": S.PENDING,
    "APPROVED": S.PAID,
    "COMPLETE": S.PAID,  # approved and past the guarantee period
    "PARTIALLY_REFUNDED": S.PARTIALLY_REFUNDED,
    "REFUNDED": S.REFUNDED,
    "PROTESTED": S.DISPUTED,  # a refund request / dispute opened by the buyer (PURCHASE_PROTEST)
    "DISPUTE": S.DISPUTED,
    "CHARGEBACK": S.CHARGED_BACK,
    "CANCELED": S.CANCELED,
    "CANCELLED": S.CANCELED,
    "EXPIRED": S.FAILED,  # an unpaid boleto/Pix that lapsed: failed, so that a late payment may still apply
    "NO_FUNDS": S.FAILED,
    "BLOCKED": S.FAILED,
}


def canonical_status(purchase_status: str | None) -> PaymentStatus | None:
    """The canonical status of a purchase status; None for one nobody maps (the processor then fails the event)."""
    return PURCHASE_STATUS.get((purchase_status or "").upper())


AUTHENTICATION = TokenScheme(headers=(TOKEN_HEADER,), called="hottok", described_as="X-HOTMART-HOTTOK header")


class HotmartDriver(SchemeVerified):
    name: str = "hotmart"
    authentication = AUTHENTICATION
    # The token is repeated inside the (unsigned) body: its value is redacted from the stored body.
    secret_body_fields: tuple[str, ...] = ("hottok",)

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body, parse_float=Decimal)
        version = get_str(body, "version", "version")
        if version is not None and version.split(".", 1)[0] != "2":
            raise PayloadInvalid(f"webhook version {version[:16]!r} is not supported (configure 2.0.0)")
        event_type = require_str(body, "event", "event")
        created_ms = require_int(body, "creation_date", "creation_date")
        try:
            occurred_at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=created_ms)
        except OverflowError:
            raise PayloadInvalid("field creation_date is not a valid epoch timestamp") from None
        data = require_object(body, "data", "data")
        purchase = get_object(data, "purchase", "data.purchase", required=False)

        resource_id = status = currency = None
        amount: int | None = None
        if purchase is not None:
            resource_id = get_str(purchase, "transaction", "data.purchase.transaction")
            status = get_str(purchase, "status", "data.purchase.status")
            price = get_object(purchase, "price", "data.purchase.price", required=False)
            if price is not None and price.get("value") is not None:
                amount = value_to_minor_units(price.get("value"), "data.purchase.price.value")
                currency = get_currency(price, "currency_value", "data.purchase.price.currency_value")
        event_id = get_str(body, "id", "id")
        if event_id is None:
            if resource_id is None:
                raise PayloadInvalid("missing field id")
            event_id = derive_event_id(resource_id, event_type, status or "", "")
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=_value(canonical_status(status)),
            amount=amount,
            currency=currency,
        )


def _value(status: PaymentStatus | None) -> str | None:
    return status.value if status is not None else None


driver: ProviderDriver = HotmartDriver()
