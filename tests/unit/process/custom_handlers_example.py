"""An example of a user's own handler module, loaded through INBOX_HANDLER_MODULES (used by the tests)."""

from __future__ import annotations

from shared.payments.status import PaymentStatus
from shared.process.decide import Observation
from shared.process.router import InboxEvent, Router, StateMachineApply


class SubscriptionRenewedHandler(StateMachineApply):
    def prepare(self, event: InboxEvent) -> Observation:
        return Observation(
            provider=event.provider,
            resource_id=event.resource_id or event.event_id,
            status=PaymentStatus.PAID,
            provider_status="renewed",
            amount=event.amount,
            currency=event.currency,
            amount_refunded=0,
            event_id=event.event_id,
            event_occurred_at=event.occurred_at,
            ordered_by_event_time=True,
        )


def register(router: Router) -> None:
    router.register("standard", "subscription.renewed", SubscriptionRenewedHandler())
