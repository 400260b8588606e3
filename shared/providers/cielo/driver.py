"""Cielo (API E-commerce 3.0, Brazil): the "Post de Notificação", a refetch-verified provider.

Cielo signs nothing. Its notification is `{"RecurrentPaymentId"?, "PaymentId", "ChangeType"}` (docs.cielo.com.br,
"Notification Post"): no status, no amount, no time, nothing that identifies one delivery. It is a hint that
payment `PaymentId` changed; the processor reads the sale back (`GET {apiquery}/1/sales/{PaymentId}`,
shared/providers/cielo/client.py). The catalog declares Cielo `trust="none"`: the ingest stores each delivery
under its own key and keeps no state from the body (shared/ingest.py).

Authentication: Cielo sends back up to three static headers (KEY/VALUE) the merchant registers for the
notification URL ("To increase security, you can register header return information for your endpoint"). The
merchant registers `X-Inbox-Secret` with the source's signing secret as its value; the header must match the
current or the previous secret, in constant time. It is the secret itself: never stored. The sender's published
IP ranges, where Cielo gives them to the merchant, go in the source's `allowed_ip_ranges`.

ChangeType (docs.cielo.com.br): 1 payment status change; 2 recurrence created; 3 anti-fraud status change; 4
recurring payment status change; 5 refund denied; 6 underpaid registered boleto; 7 chargeback notification; 8 fraud
alert; 25 transaction canceled or partially refunded. The event type is the name below (an unlisted number is
`change_type_<n>`). ChangeType is a number, or a digit string in older examples ("2"): both are read.
"""

from __future__ import annotations

from shared.providers._refetch_verified import SECRET_HEADER, RefetchVerifiedDriver, resource_id_of
from shared.providers._schemes import TokenScheme
from shared.providers._signing import load_json_object
from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    WebhookRequest,
    derive_event_id,
)

AUTHENTICATION = TokenScheme(headers=(SECRET_HEADER,), called="header secret")

CHANGE_TYPES: dict[int, str] = {
    1: "payment_status_changed",
    2: "recurrence_created",
    3: "antifraud_status_changed",
    4: "recurring_payment_status_changed",
    5: "refund_denied",
    6: "boleto_underpaid",
    7: "chargeback",
    8: "fraud_alert",
    25: "canceled_or_partially_refunded",
}

# The processor refetches on each of them (the catalog's route names this tuple).
ROUTED_EVENT_TYPES: tuple[str, ...] = tuple(CHANGE_TYPES.values())


def change_type_of(value: object) -> int:
    """ChangeType as a number: an integer, or a string of at most three digits."""
    if isinstance(value, bool):
        raise PayloadInvalid("field ChangeType must be a number")
    if isinstance(value, int) and 0 <= value < 1000:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 3:
        return int(value)
    raise PayloadInvalid("field ChangeType must be a number of at most three digits")


def event_type_of(change_type: int) -> str:
    return CHANGE_TYPES.get(change_type, f"change_type_{change_type}")


class CieloDriver(RefetchVerifiedDriver):
    name: str = "cielo"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body)
        payment_id = resource_id_of(body.get("PaymentId"), "PaymentId")
        event_type = event_type_of(change_type_of(body.get("ChangeType")))
        return NormalizedEvent(
            # The hint's own identity; the ingest stores the delivery under a key of its own (refetch-verified).
            event_id=derive_event_id(payment_id, event_type, "", ""),
            event_type=event_type,
            resource_id=payment_id,
            occurred_at=self.received_at(),  # Cielo sends no time
        )


driver: ProviderDriver = CieloDriver()
