"""The payment projection: one item per `{source}#{resource_id}` in the payments table (a default source is
named after its provider, so a default deployment's keys are `{provider}#{resource_id}`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from shared.definitions import RECONCILE_INDEX_PK as RECONCILE_KEY
from shared.definitions import RECONCILE_INDEX_SK as CHECKED_AT
from shared.definitions import source_key, source_of
from shared.payments.status import INTERMEDIATE_STATUSES, PaymentStatus
from shared.sub_account import SubAccount

# The payments table's sparse index of payments to reconcile (shared.definitions.RECONCILE_INDEX): its keys are
# present only while the payment is in an intermediate status. RECONCILE_KEY = "{source}#{status}"; CHECKED_AT =
# when the payment was last confirmed against its source (ISO-8601 UTC). An unverified payment (its status applied
# from a signed payload, not yet read back from the gateway's API) is in the partition "{source}#unverified"
# instead, whatever its status: the sweeper verifies it if its verification item never did.
UNVERIFIED_PARTITION = "unverified"


@dataclass(frozen=True, slots=True)
class Payment:
    provider: str
    resource_id: str
    status: PaymentStatus
    provider_status: str | None
    amount: int | None
    currency: str | None
    amount_refunded: int
    version: int  # optimistic concurrency: bumped by every write
    transitions: int  # status changes applied (the first sighting counts as one)
    last_event_at: str | None  # occurred_at of the newest event applied (ISO-8601 UTC)
    last_event_id: str | None
    updated_at: str
    # The status before the last transition (None for a payment only seen once): what the outbox publishes as
    # `previous_status`. Written with every transition, in the same item, so the two cannot disagree.
    previous_status: PaymentStatus | None = None
    # The gateway sub-account the payment lives in (a Stripe Connect account): the sweeper's reconciliation
    # refetches within it. The key stays `{source}#{resource_id}`: Stripe's object ids are unique across accounts.
    account: SubAccount | None = None
    # The source (account) the payment belongs to; "" means the provider's default source, named after it.
    source: str = ""
    # False while its status was applied from a signed payload and the gateway's API has not confirmed it yet
    # (shared/process/confirm.py); True when it came from (or was confirmed by) the API, or the provider has none.
    verified: bool = True
    # The status the gateway's API reported when it verified the payment and the state machine refused the move (a
    # regression): the payment is flagged, keeps its status, and leaves the sweeper's list (an operator decides).
    verification_refused: PaymentStatus | None = None

    def __post_init__(self) -> None:
        if not self.source:
            object.__setattr__(self, "source", self.provider)

    @property
    def key(self) -> str:
        return source_key(self.source, self.resource_id)

    def to_item(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": self.key,
            "source": self.source,
            "provider": self.provider,
            "resource_id": self.resource_id,
            "status": self.status.value,
            "provider_status": self.provider_status,
            "amount": self.amount,
            "currency": self.currency,
            "amount_refunded": self.amount_refunded,
            "version": self.version,
            "transitions": self.transitions,
            "last_event_at": self.last_event_at,
            "last_event_id": self.last_event_id,
            "updated_at": self.updated_at,
            "previous_status": self.previous_status.value if self.previous_status else None,
            "verified": self.verified,
        }
        if self.account is not None:  # absent, not null, for the payments of a source's own account
            item.update(self.account.to_attributes())
        if self.verification_refused is not None:
            item["verification_refused"] = self.verification_refused.value
        if not self.verified and self.verification_refused is None:
            # Until the API confirms it: the sweeper's clock for a verification that never came.
            item[RECONCILE_KEY] = source_key(self.source, UNVERIFIED_PARTITION)
            item[CHECKED_AT] = self.updated_at
        elif self.status in INTERMEDIATE_STATUSES:
            # Every write of the payment is a fresh look at its source: the sweeper's clock starts again.
            item[RECONCILE_KEY] = source_key(self.source, self.status.value)
            item[CHECKED_AT] = self.updated_at
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Payment:
        return cls(
            source=source_of(item),
            provider=item["provider"],
            resource_id=item["resource_id"],
            status=PaymentStatus(item["status"]),
            provider_status=item.get("provider_status"),
            amount=item.get("amount"),
            currency=item.get("currency"),
            amount_refunded=int(item.get("amount_refunded") or 0),
            version=int(item["version"]),
            transitions=int(item.get("transitions") or 0),
            last_event_at=item.get("last_event_at"),
            last_event_id=item.get("last_event_id"),
            updated_at=item["updated_at"],
            previous_status=PaymentStatus(item["previous_status"]) if item.get("previous_status") else None,
            account=SubAccount.from_attributes(item),
            # Written before payloads could confirm a payment: every status then came from the API (or no API).
            verified=item.get("verified", True) is not False,
            verification_refused=(
                PaymentStatus(item["verification_refused"]) if item.get("verification_refused") else None
            ),
        )

    def evolve(self, **changes: Any) -> Payment:
        return replace(self, **changes)
