"""Eduzz (Brazil): webhook v3, `x-signature` = HMAC-SHA256 of the raw body keyed with the configured key.

Authentication (eduzz/eduzz-webhook-docs, README "Segurança"): every delivery carries `x-signature`, computed as
`hmac('sha256', chave_secreta, corpo_da_requisição)`; the key is one of the account's webhook keys ("Chave de
acesso", chosen per configuration), which is the configured secret (current and previous, for a rotation: the
account may hold several keys at once). No timestamp is signed, so a captured delivery can be replayed; the dedup
key makes that harmless. The digest's encoding is not written in the docs: it is taken as lower-case hex (what
`hmac(...)` returns by default in the PHP and Node helpers the docs allude to), compared case-insensitively.
That is inferred (docs/providers.md says so).

Envelope (same README): `{"id": <event id>, "event": "<app>.<name>", "data": {...}, "sentDate": ISO-8601}`.
Dedup: the envelope `id` ("id do evento"). The delivery history lists a delivery by that event id with its number
of attempts and offers a resend of the same event, so a retry repeats it (inferred from the docs' description;
Eduzz does not state it in words).

The payment is the invoice (fatura): `myeduzz.invoice_*` events carry it in `data` (`data.id`, `data.status`,
`data.price.value` a decimal amount in `data.price.currency`). Other events (Nutror lessons, Blinket attendances,
contracts, commissions, the activation `ping`) are stored with no resource and end `ignored`.

Ordering: Eduzz publishes no invoice API this inbox refetches from, so events are ordered by their time and
`provider_status` carries the canonical status that `data.status` maps to (`INVOICE_STATUS`), which the processor
applies. The event time is `sentDate` (the README calls it "data do evento", the event pages "data de envio";
either way Eduzz writes it with `Z`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from shared.payments.status import PaymentStatus
from shared.providers._money import decimal_to_minor_units
from shared.providers._schemes import HmacScheme, SchemeVerified
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

SIGNATURE_HEADER = "x-signature"
CURRENCY = "BRL"
INVOICE_PREFIX = "myeduzz.invoice_"

S = PaymentStatus

# The invoice events Eduzz documents (eduzz-webhook-docs, "MyEduzz"): what the processor applies. Listed rather
# than a prefix so that a new Eduzz invoice event is stored and `ignored` until someone maps it. Eduzz's own
# page spells the negotiated event `invoice_negotiatied`; both spellings are taken.
INVOICE_EVENTS: tuple[str, ...] = tuple(
    f"{INVOICE_PREFIX}{name}"
    for name in (
        "opened",
        "paid",
        "canceled",
        "waiting_refund",
        "refunded",
        "expired",
        "recovering",
        "waiting_payment",
        "refused",
        "overdue",
        "scheduled",
        "negotiated",
        "negotiatied",
    )
)

# data.status -> canonical. The words are those of the event pages' examples; `refused` and `overdue` are named by
# their events only (their pages are not published), so their status words are inferred from the event names.
INVOICE_STATUS: dict[str, PaymentStatus] = {
    "open": S.PENDING,
    "waiting_payment": S.PENDING,
    "scheduled": S.PENDING,  # a payment scheduled for a later date: not received yet
    "recovering": S.PENDING,  # an unpaid invoice in Eduzz's recovery flow
    "negotiated": S.PENDING,  # a debt renegotiated into a new payment plan: not received yet
    "overdue": S.PENDING,
    "paid": S.PAID,
    "waiting_refund": S.PAID,  # the refund was asked for; the money has not left yet
    "refunded": S.REFUNDED,
    "canceled": S.CANCELED,
    "expired": S.FAILED,  # an unpaid boleto/Pix that lapsed: failed, so that a late payment may still apply
    "refused": S.FAILED,
}

# The hex HMAC-SHA256 of the raw body, keyed with the configured key as UTF-8.
AUTHENTICATION = HmacScheme(headers=(SIGNATURE_HEADER,), described_as="x-signature header")


def canonical_status(status: str | None) -> PaymentStatus | None:
    """The canonical status of an invoice status word; None for one nobody maps (the processor fails the event)."""
    return INVOICE_STATUS.get((status or "").lower())


def _minor_units(price: JsonObject, currency: str) -> int | None:
    value: Any = price.get("value")
    if value is None:
        return None
    try:
        return decimal_to_minor_units(value, currency)
    except ValueError:
        raise PayloadInvalid("field data.price.value is not a decimal amount") from None


class EduzzDriver(SchemeVerified):
    name: str = "eduzz"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body, parse_float=Decimal)
        event_id = require_str(body, "id", "id")
        event_type = require_str(body, "event", "event")
        occurred_at = iso_to_utc(require_str(body, "sentDate", "sentDate"), "sentDate")
        data = require_object(body, "data", "data")
        if not event_type.startswith(INVOICE_PREFIX):  # lessons, attendances, contracts, ping: not a payment
            return NormalizedEvent(event_id=event_id, event_type=event_type, resource_id=None, occurred_at=occurred_at)
        resource_id = require_str(data, "id", "data.id")
        status = canonical_status(get_str(data, "status", "data.status"))
        price = get_object(data, "price", "data.price", required=False) or {}
        currency = get_currency(price, "currency", "data.price.currency") or CURRENCY
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=status.value if status is not None else None,
            amount=_minor_units(price, currency),
            currency=currency,
        )


driver: ProviderDriver = EduzzDriver()
