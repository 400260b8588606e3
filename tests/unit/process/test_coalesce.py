"""Coalescing (shared/process/coalesce.py): one gateway read serves the later events of the same payment, source and
sub-account in one group's run, and nothing else."""

from __future__ import annotations

import pytest

from shared.gateway.base import PaymentSnapshot, ResourceNotFound
from shared.payments.status import PaymentStatus
from shared.process.coalesce import Refetches, SharesRefetches
from shared.process.handlers import EventTimeOrderedHandler, RefetchPaymentHandler
from shared.process.router import InboxEvent, UnprocessableEvent
from shared.sub_account import SubAccount


class CountingClient:
    provider = "stripe"

    def __init__(self, amount: int = 1000) -> None:
        self.calls: list[tuple[str, SubAccount | None]] = []
        self.amount = amount
        self.missing: set[str] = set()

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        self.calls.append((resource_id, account))
        if resource_id in self.missing:
            raise ResourceNotFound(resource_id)
        return PaymentSnapshot(resource_id, PaymentStatus.PAID, "succeeded", self.amount, "BRL")


def event(event_id: str, resource_id: str = "pi_1", *, source: str = "stripe", amount: int | None = 1000, account=None):
    return InboxEvent(
        pk=f"{source}#{event_id}",
        provider="stripe",
        event_id=event_id,
        event_type="payment_intent.succeeded",
        resource_id=resource_id,
        occurred_at="2026-11-29T10:00:00Z",
        provider_status="succeeded",
        amount=amount,
        currency="BRL",
        attempts=0,
        account=account,
        source=source,
    )


def test_the_later_events_of_a_payment_reuse_the_first_read():
    # Given a group's refetches and three events of one payment
    client, refetches = CountingClient(), Refetches()
    handler = RefetchPaymentHandler(lambda source: client)
    # When each is prepared through them
    seen = [handler.prepare_sharing(event(f"evt_{n}"), refetches) for n in range(3)]
    # Then the gateway was asked once, and each observation still names its own event
    assert client.calls == [("pi_1", None)]
    assert (refetches.fetched, refetches.reused) == (1, 2)
    assert [s.event_id for s in seen] == ["evt_0", "evt_1", "evt_2"]


@pytest.mark.parametrize(
    "other",
    [
        event("evt_b", "pi_2"),  # another payment
        event("evt_b", account=SubAccount("acct_1")),  # the same id in a Connect account
        event("evt_b", source="stripe-us"),  # the same id at another source (another gateway account)
    ],
    ids=["payment", "sub-account", "source"],
)
def test_another_payment_sub_account_or_source_is_read_again(other):
    client, refetches = CountingClient(), Refetches()
    handler = RefetchPaymentHandler(lambda source: client)
    handler.prepare_sharing(event("evt_a"), refetches)
    handler.prepare_sharing(other, refetches)
    assert len(client.calls) == 2
    assert refetches.reused == 0


def test_after_forget_the_payment_is_read_again():
    client, refetches = CountingClient(), Refetches()
    handler = RefetchPaymentHandler(lambda source: client)
    handler.prepare_sharing(event("evt_a"), refetches)
    refetches.forget()  # a failure or a retry between them
    handler.prepare_sharing(event("evt_b"), refetches)
    assert len(client.calls) == 2


def test_a_failed_read_is_not_kept():
    client, refetches = CountingClient(), Refetches()
    client.missing.add("pi_1")
    handler = RefetchPaymentHandler(lambda source: client)
    for event_id in ("evt_a", "evt_b"):
        with pytest.raises(ResourceNotFound):
            handler.prepare_sharing(event(event_id), refetches)
    assert len(client.calls) == 2


def test_each_event_checks_its_own_amount_against_the_shared_read():
    # Given a first event that agrees with the gateway, and a second one stating another amount
    client, refetches = CountingClient(amount=1000), Refetches()
    handler = RefetchPaymentHandler(lambda source: client)
    handler.prepare_sharing(event("evt_a", amount=1000), refetches)
    # Then the second one is refused although its read was shared
    with pytest.raises(UnprocessableEvent, match="amount mismatch"):
        handler.prepare_sharing(event("evt_b", amount=999), refetches)
    assert len(client.calls) == 1


def test_without_reuse_every_event_is_read_and_counted():
    client, refetches = CountingClient(), Refetches(reuse=False)
    handler = RefetchPaymentHandler(lambda source: client)
    for n in range(3):
        handler.prepare_sharing(event(f"evt_{n}"), refetches)
    assert (len(client.calls), refetches.fetched, refetches.reused) == (3, 3, 0)


def test_the_refetch_handler_shares_and_the_event_time_one_has_nothing_to_share():
    assert isinstance(RefetchPaymentHandler(lambda source: None), SharesRefetches)
    assert not isinstance(EventTimeOrderedHandler(), SharesRefetches)


def test_a_subclass_with_its_own_prepare_keeps_it():
    # Given a user's handler deriving from ours with a prepare of its own (that still calls ours)
    calls: list[str] = []

    class Audited(RefetchPaymentHandler):
        def prepare(self, event):
            calls.append(event.event_id)
            return super().prepare(event)

    client, refetches = CountingClient(), Refetches()
    handler = Audited(lambda source: client)
    # When the processor prepares two events of one payment through a group's refetches
    for event_id in ("evt_a", "evt_b"):
        handler.prepare_sharing(event(event_id), refetches)
    # Then its prepare ran for each (so nothing was shared behind its back)
    assert calls == ["evt_a", "evt_b"]
    assert len(client.calls) == 2
