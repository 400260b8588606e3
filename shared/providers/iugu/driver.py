"""iugu (Brazil): form-encoded "gatilhos" (webhooks) authenticated by a token the receiver chooses.

Authentication. iugu signs nothing. Two ways to make a delivery prove it comes from the account, both checked
against the configured token (current or previous, for a rotation), in constant time:
- the `authorization` value of the webhook (iugu `POST /v1/web_hooks`: "a key to use as Basic Authentication
  when receiving the triggers"), which iugu sends in the `Authorization` header. The header is compared as
  sent, and also without a leading `Basic `/`Bearer ` scheme word, so the token may be configured either way;
- or a `token` query parameter the operator appends to the URL registered at iugu (`.../webhooks/iugu?token=...`).
Both carry the secret itself: neither is ever stored (`replay_headers` and `replay_query` are empty; the ingest
must not store the `token` query parameter, see docs/providers-brazil.md). No timestamp is signed.

Body: `application/x-www-form-urlencoded` (iugu docs, "Gatilhos": Content-Type), e.g.
`event=invoice.status_changed&data[id]=1757E1D7...&data[status]=paid&data[account_id]=...&data[subscription_id]=`.

Dedup: no event id and no event time in the body: `derive_event_id(data[id], event, data[status], "")`. One
invoice reaches one status through one event once; a redelivery repeats all three.

The payment is the invoice (`data[id]` of `invoice.*` events); other families (withdraw requests,
subscriptions, referrals) are stored with no resource. With no time in the body, `occurred_at` is the time
the delivery was parsed (the first delivery wins the dedup): iugu events are therefore never ordered by it.
The processor refetches the invoice instead (`GET /v1/invoices/{id}`, shared/providers/iugu/client.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from shared.payments.status import PaymentStatus
from shared.providers._forms import form_value, parse_form
from shared.providers._schemes import SchemeVerified, TokenScheme
from shared.providers.base import (
    NormalizedEvent,
    ProviderDriver,
    WebhookRequest,
    derive_event_id,
    utc_from_epoch,
)

AUTHORIZATION_HEADER = "authorization"
TOKEN_PARAM = "token"  # noqa: S105 - a parameter name, not a secret
INVOICE_PREFIX = "invoice."
# Both carriers hold the token itself; the header may spell it after a scheme word (Basic, Bearer, Token).
AUTHENTICATION = TokenScheme(
    headers=(AUTHORIZATION_HEADER,),
    query_param=TOKEN_PARAM,
    authorization_schemes=("basic ", "bearer ", "token "),
    described_as="Authorization header or token parameter",
)

S = PaymentStatus

# invoice status -> canonical (the refetch refines paid invoices by their refunds: shared/providers/iugu/client.py)
INVOICE_STATUS: dict[str, PaymentStatus] = {
    "draft": S.PENDING,
    "pending": S.PENDING,
    "partially_paid": S.PENDING,  # not settled
    "in_analysis": S.PENDING,
    "authorized": S.AUTHORIZED,
    "paid": S.PAID,
    "externally_paid": S.PAID,
    "partially_refunded": S.PARTIALLY_REFUNDED,
    "refunded": S.REFUNDED,
    "canceled": S.CANCELED,
    "expired": S.FAILED,  # a lapsed invoice: failed, so that a late payment may still apply
    "in_protest": S.DISPUTED,
    "chargeback": S.CHARGED_BACK,
}


class IuguDriver(SchemeVerified):
    name: str = "iugu"
    authentication = AUTHENTICATION
    replay_query: tuple[str, ...] = ()  # so does ?token=

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        fields = parse_form(request.body)
        event_type = form_value(fields, "event", required=True)
        assert event_type is not None
        object_id = form_value(fields, "data[id]", required=True)
        assert object_id is not None
        status = form_value(fields, "data[status]")
        is_invoice = event_type.startswith(INVOICE_PREFIX)
        return NormalizedEvent(
            event_id=derive_event_id(object_id, event_type, status or "", ""),
            event_type=event_type,
            resource_id=object_id if is_invoice else None,
            occurred_at=utc_from_epoch(self._clock()),
            provider_status=INVOICE_STATUS[status].value if status in INVOICE_STATUS else None,
        )


driver: ProviderDriver = IuguDriver()
