"""The refetch contract every gateway client implements."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount


class ResourceNotFound(Exception):
    """The gateway does not know the resource (yet): the webhook raced the API. Retry with backoff."""


class GatewayUnavailable(Exception):
    """The gateway failed (5xx, 429, timeout) after bounded retries, or its circuit is open. Retry later."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, circuit_open: bool = False, throttled: bool = False
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after  # seconds the gateway (or the breaker) asked us to wait, if it said
        self.circuit_open = circuit_open  # no call was made: this must not count as one of the event's attempts
        self.throttled = throttled  # the gateway answered 429 under the source's rate limit: the source waits

    @property
    def counts_as_attempt(self) -> bool:
        """False for waits (an open circuit, the rate limit's "not now", the gateway's 429 under the rate limit):
        the message is delayed, and the event's attempts towards `failed` stay as they were."""
        return not (self.circuit_open or self.throttled)


class GatewayRejected(Exception):
    """The gateway refused the request for a reason retrying will not fix (401, 403, 400): an operator must act."""


class PaymentSnapshot(NamedTuple):
    """A payment as the gateway's API reports it now."""

    resource_id: str
    status: PaymentStatus  # canonical
    provider_status: str  # the gateway's own status word(s), for operators
    amount: int | None  # integer minor units
    currency: str | None  # ISO 4217, upper case
    amount_refunded: int = 0


class GatewayClient(Protocol):
    provider: str

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        """Raise ResourceNotFound, GatewayUnavailable or GatewayRejected; never return a guess.

        `account` is the sub-account the resource lives in (NormalizedEvent.account: a Stripe Connect account or
        a thin event's context), None for the source's own account. A client whose gateway has no sub-accounts
        refuses one (`no_sub_accounts`) rather than read the source's own account and answer about another
        payment."""
        ...


def no_sub_accounts(provider: str, account: SubAccount | None) -> None:
    """For the clients of gateways with no sub-accounts: a payment that names one cannot be fetched here."""
    if account is not None:
        raise GatewayRejected(f"{provider} has no sub-accounts to fetch a payment from")


def credential_pair(raw: str, provider: str, first: str, second: str) -> tuple[str, str]:
    """A source API key made of two values, spelled `{first}:{second}` (split at the first ':'): Cielo's
    MerchantId and MerchantKey, Zoop's marketplace id and API key. GatewayRejected (an operator must fix the
    secret) when either part is missing; the message never repeats the value."""
    left, colon, right = raw.strip().partition(":")
    if not colon or not left.strip() or not right.strip():
        raise GatewayRejected(f"the {provider} API key must be '{first}:{second}' (docs/sources.md)")
    return left.strip(), right.strip()
