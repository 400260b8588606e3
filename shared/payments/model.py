"""The payment projection: one item per `{source}#{resource_id}` in the payments table (a default source is
named after its provider, so a default deployment's keys are `{provider}#{resource_id}`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from shared.definitions import RECONCILE_INDEX_PK as RECONCILE_KEY
from shared.definitions import RECONCILE_INDEX_SK as CHECKED_AT
from shared.definitions import source_key, source_of
from shared.payments.status import INTERMEDIATE_STATUSES, PaymentStatus

# The payments table's sparse index of payments to reconcile (shared.definitions.RECONCILE_INDEX): its keys are
# present only while the payment is in an intermediate status. RECONCILE_KEY = "{source}#{status}"; CHECKED_AT =
# when the payment was last confirmed against its source (ISO-8601 UTC).


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
    # The source (account) the payment belongs to; "" means the provider's default source, named after it.
    source: str = ""

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
        }
        if self.status in INTERMEDIATE_STATUSES:
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
        )

    def evolve(self, **changes: Any) -> Payment:
        return replace(self, **changes)
