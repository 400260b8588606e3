"""The gateway sub-account a payment lives in: one small value the ingest, the processor, the payment projection
and the gateway clients all carry, in a module of its own so that carrying it pulls no driver or client into an
asset (infra/assets.py follows imports)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class SubAccount(NamedTuple):
    """The gateway sub-account a resource lives in, when it is not the source's own account.

    A Stripe Connect platform receives its connected accounts' events (`acct_...`), and a Stripe thin event names
    the `context` its object must be fetched in. The refetch asks within it (GatewayClient.fetch_payment), the
    inbox item and the payment record it. Provider-neutral: other marketplaces' sub-accounts fit the same shape.
    """

    reference: str  # Stripe: a connected account id, or a context path of account ids (`acct_a/acct_b`)
    # The reference is a context (a thin or organization event's `context`), which Stripe wants as Stripe-Context;
    # otherwise it is an account id (an event's `account`), which Stripe wants as Stripe-Account.
    context: bool = False

    def to_attributes(self) -> dict[str, Any]:
        """How an inbox item or a payment stores it: `account`, and `account_context` only when true."""
        return {"account": self.reference, **({"account_context": True} if self.context else {})}

    @classmethod
    def from_attributes(cls, item: Mapping[str, Any]) -> SubAccount | None:
        reference = item.get("account")
        if not isinstance(reference, str) or not reference:
            return None
        return cls(reference, context=item.get("account_context") is True)
