"""How a simulated webhook goes out: its sample body, its signature, the key the inbox stores it under, its POST.

The one place in `inbox simulate` and `inbox chaos` that renders sample bodies and signs deliveries, through the
same entry points as `inbox send`: the provider's sender (`inbox_local/senders`: `sample_body`, `sign`) and its
driver (`parse`, as the ingest reads the delivery).
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from functools import cache

from inbox_local.senders import sender_for
from shared.inbox.model import event_key
from shared.providers.base import NormalizedEvent, WebhookRequest, parse_events
from shared.providers.registry import get_driver

# Two signing times far apart, to tell whether a driver dates an event by its delivery (see `dated_by_delivery`).
_PROBE_TIMES = (1_700_000_000, 1_700_086_400)
DELIVERY_ATTEMPTS = 5


def sample_body(provider: str, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
    """The provider's own sample notification for a canonical status (ValueError: it has none)."""
    return sender_for(provider).sample_body(
        event_id=event_id, resource_id=resource_id, status=status, amount=amount, occurred_at=occurred_at
    )


def read_back(provider: str, body: bytes, secret: str, *, now: int) -> NormalizedEvent:
    """The event as the ingest reads this body once signed (its id, type, payment, status and time)."""
    # A delivery of several events (an Efí refund repeats its Pix first): the last is the one it announces.
    return parse_events(get_driver(provider), sender_for(provider).sign(body, secret, now=now))[-1]


@cache
def dated_by_delivery(provider: str, body: bytes, secret: str) -> bool:
    """Whether the driver reads the event's time from what signing adds (a signed timestamp header)
    rather than from the body: then a delivery must be signed at the event's time, as the gateway keeps it on
    every retry, or the retries of an old event would look newer than it."""
    first, second = (read_back(provider, body, secret, now=at).occurred_at for at in _PROBE_TIMES)
    return first != second


def signed(provider: str, body: bytes, secret: str, *, event_time: int, ordered_by_event_time: bool) -> WebhookRequest:
    """One delivery as the gateway sends it: freshly signed (a new timestamp on every retry), except where the
    signing time is the event's time for a provider ordered by it (`dated_by_delivery`)."""
    now = int(time.time())
    if ordered_by_event_time and dated_by_delivery(provider, body, secret):
        now = event_time
    return sender_for(provider).sign(body, secret, now=now)


def stored_key(provider: str, body: bytes, secret: str) -> str:
    """The inbox key of a webhook, derived the way the ingest derives it (the driver parses the signed delivery)."""
    return event_key(provider, read_back(provider, body, secret, now=int(time.time())).event_id)


def post(url: str, request: WebhookRequest, attempts: int = DELIVERY_ATTEMPTS) -> list[int]:
    """Deliver like a gateway: retry on 5xx and connection errors, give up after a few tries. Every attempt's
    HTTP status (0: no answer), the last one deciding."""
    query = "?" + "&".join(f"{k}={v}" for k, v in request.query.items()) if request.query else ""
    headers = {"content-type": "application/json", **request.headers}
    statuses: list[int] = []
    for attempt in range(attempts):
        http = urllib.request.Request(url + query, data=request.body, headers=headers, method="POST")  # noqa: S310
        try:
            with urllib.request.urlopen(http, timeout=30) as response:  # noqa: S310 - the stack under test
                statuses.append(int(response.status))
                return statuses
        except urllib.error.HTTPError as error:
            statuses.append(int(error.code))
            if error.code < 500:
                return statuses
        except OSError:
            statuses.append(0)
        time.sleep(0.2 * (attempt + 1))
    return statuses
