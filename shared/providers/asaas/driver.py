"""Asaas (Brazil): a static token in `asaas-access-token`, no signature over the body, no timestamp.

Authentication: the header must equal the token configured on the Asaas webhook (current or previous, for a
rotation), compared in constant time. The header IS the secret, so it is never stored: `replay_headers` is
empty, and a stored Asaas event is re-verified by nothing but the fact that it was accepted. With no
timestamp, a captured delivery can be replayed at will; deduplication by event id is what makes that harmless.

Dedup: the body `id` (`evt_...`) repeats on every redelivery of the same event, so it is the event id. A body
without one (older webhook versions) gets `derive_event_id(payment.id, event, payment.status, occurred_at)`.

Time: the event's `dateCreated` ("2024-06-12 16:45:03") carries no zone. Asaas is a Brazilian gateway and its
times are America/Sao_Paulo; they are converted to UTC with that zone, from the tz database (`tzdata` when the
system has none: base.time_zone). The example of Asaas's "Webhook para cobranças" page
(https://docs.asaas.com/docs/webhook-para-cobrancas, the version before event ids) has no `dateCreated` and no `id`:
only the payment, whose dates are days ("2021-01-01"). Then `occurred_at` is the latest of the payment's dates of
things that already happened (PAST_PAYMENT_DATES: created, confirmed, paid, paid by the customer), at midnight
Sao Paulo time: the day the payment reached its state, never a time we invent (the receive time would change the
derived id on every redelivery), never a future date (`dueDate`, `creditDate`, `estimatedCreditDate`). Day
precision orders nothing within a day: Asaas is refetched, so the state always comes from `GET /v3/payments/{id}`,
and two events of one payment on one day differ by their type and status in the derived id. A body with neither
`dateCreated` nor any of those dates is PayloadInvalid.

Money: `payment.value` is a decimal amount in BRL (`100.0`). The body is parsed with `parse_float=Decimal`
so that `10.1` becomes exactly 1010 centavos (as a float, 10.1 * 100 = 1009.9999999999999).
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from shared.providers._schemes import SchemeVerified, TokenScheme
from shared.providers._signing import (
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
    derive_event_id,
)

TOKEN_HEADER = "asaas-access-token"  # noqa: S105 - a header name, not a secret
TIMEZONE = "America/Sao_Paulo"
CURRENCY = "BRL"
_MAX_VALUE = Decimal(10) ** 12  # a sanity bound; it also keeps Decimal -> int cheap on hostile exponents


def _normalize_timestamp(text: str) -> str:
    """Asaas writes "YYYY-MM-DD HH:MM:SS": make it ISO-8601 ("YYYY-MM-DDTHH:MM:SS")."""
    text = text.strip()
    if len(text) > 10 and text[10] == " ":
        text = f"{text[:10]}T{text[11:]}"
    return text


def parse_asaas_time(text: str, where: str) -> datetime:
    """An Asaas timestamp (Sao Paulo local time unless it states a zone) as aware UTC."""
    return iso_to_utc(_normalize_timestamp(text), where, assume_timezone=TIMEZONE)


def value_to_minor_units(value: Any, where: str) -> int:
    """A decimal BRL amount (Decimal or int, as parsed) -> integer centavos, half-up."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise PayloadInvalid(f"field {where} must be a number")
    amount = Decimal(value)
    if not amount.is_finite() or amount.copy_abs() >= _MAX_VALUE:  # copy_abs: no context, cannot overflow
        raise PayloadInvalid(f"field {where} is out of range")
    return int((amount * 100).to_integral_value(rounding=ROUND_HALF_UP))


# The payment's dates (days) of what already happened, in the order a payment reaches them (docs: "Webhook para
# cobrancas", the payment object): the latest present is an event's time when the event has no `dateCreated`.
PAST_PAYMENT_DATES: tuple[str, ...] = ("dateCreated", "confirmedDate", "paymentDate", "clientPaymentDate")


def event_time(body: dict[str, Any], payment: dict[str, Any]) -> datetime:
    """The event's `dateCreated`; without it, the payment's latest past date (a day, midnight Sao Paulo)."""
    created = get_str(body, "dateCreated", "dateCreated")
    if created is not None:
        return parse_asaas_time(created, "dateCreated")
    days = [
        parse_asaas_time(text, f"payment.{name}")
        for name in PAST_PAYMENT_DATES
        if (text := get_str(payment, name, f"payment.{name}")) is not None
    ]
    if not days:
        raise PayloadInvalid("missing field dateCreated (and the payment states no date)")
    return max(days)


AUTHENTICATION = TokenScheme(headers=(TOKEN_HEADER,), called="access token")


class AsaasDriver(SchemeVerified):
    name: str = "asaas"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body, parse_float=Decimal)
        event_type = require_str(body, "event", "event")
        payment = require_object(body, "payment", "payment")
        payment_id = require_str(payment, "id", "payment.id")
        status = get_str(payment, "status", "payment.status")
        occurred_at = event_time(body, payment)
        value = payment.get("value")
        amount = value_to_minor_units(value, "payment.value") if value is not None else None
        event_id = get_str(body, "id", "id") or derive_event_id(payment_id, event_type, status or "", occurred_at)
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=payment_id,
            occurred_at=occurred_at,
            provider_status=status,
            amount=amount,
            currency=CURRENCY,
        )


driver: ProviderDriver = AsaasDriver()
