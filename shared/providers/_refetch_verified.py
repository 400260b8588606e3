"""What the refetch-verified drivers share (Cielo, Zoop: senders that sign nothing; docs/providers.md,
"Refetch-verified providers").

Their body proves nothing, so the drivers read from it only what the refetch needs: which payment to read back.
Authentication is a header secret the merchant registers on the gateway (a static custom header), compared in
constant time with the source's current and previous secret by the scheme engine's TokenScheme; the header is the
secret itself, so nothing of it is stored (`replay_headers` is empty). The ingest (shared/ingest.py) then stores
every delivery under a key of its own and drops any state the driver read (status, amount, time).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime

from shared.providers._schemes import SchemeVerified
from shared.providers.base import PayloadInvalid, utc_from_epoch

# The header the merchant registers on the gateway, with the source's signing secret as its value.
SECRET_HEADER = "x-inbox-secret"  # noqa: S105 - a header name, not a secret
# A payment id is what the refetch puts in a URL path: a bounded token of URL-safe characters (a Cielo PaymentId
# is a GUID, a Zoop transaction id 32 hex characters).
_RESOURCE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def resource_id_of(value: object, where: str) -> str:
    """The payment id a hint names, refused unless it is a short URL-safe token (bounded work for any body)."""
    if not isinstance(value, str) or not _RESOURCE_ID.fullmatch(value):
        raise PayloadInvalid(f"field {where} must be an id of 1 to 64 letters, digits, '-' or '_'")
    return value


class RefetchVerifiedDriver(SchemeVerified):
    """Base of a refetch-verified driver: its `authentication` is a header secret (a TokenScheme row), nothing in
    the URL or the body is signed, and a delivery's time is when it arrived (a time in an unsigned body proves
    nothing). A subclass names itself and its `authentication`, and reads its hint in `parse`."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    def received_at(self) -> datetime:
        return utc_from_epoch(self._clock())
