"""The sub-account a payment lives in: kept by the state machine, stored and read back by the payment and the
inbox item the same way (`account`, and `account_context` only for a Stripe context)."""

from __future__ import annotations

import pytest

from shared.payments.model import Payment
from shared.payments.status import PaymentStatus as S
from shared.process.decide import Apply, Observation, decide
from shared.process.router import InboxEvent
from shared.sub_account import SubAccount

NOW = "2026-12-01T10:00:00.000000Z"
CONNECTED = SubAccount("acct_1Seller")


def seen(status: S, account: SubAccount | None) -> Observation:
    return Observation("stripe", "pi_1", status, status.value, 1000, "BRL", 0, "evt_1", NOW, False, account)


def test_a_payment_first_seen_in_an_account_records_it_and_keeps_it():
    # Given a connected account's payment first seen pending
    first = decide(None, seen(S.PENDING, CONNECTED), now=NOW)
    assert isinstance(first, Apply) and first.payment.account == CONNECTED
    # When a later observation (a reconciliation, or an event that lost its account) moves it
    later = decide(first.payment, seen(S.PAID, None), now=NOW)
    # Then the account stays
    assert isinstance(later, Apply) and later.payment.account == CONNECTED


@pytest.mark.parametrize(
    ("account", "attributes"),
    [
        (CONNECTED, {"account": "acct_1Seller"}),
        (
            SubAccount("acct_1Org/acct_1Seller", context=True),
            {"account": "acct_1Org/acct_1Seller", "account_context": True},
        ),
    ],
)
def test_the_payment_and_the_inbox_item_store_the_account_alike(account, attributes):
    payment = decide(None, seen(S.PAID, account), now=NOW)
    assert isinstance(payment, Apply)
    item = payment.payment.to_item()
    assert {k: v for k, v in item.items() if k.startswith("account")} == attributes
    assert Payment.from_item(item).account == account
    event = InboxEvent.from_item({"pk": "stripe#evt_1", "provider": "stripe", "event_id": "evt_1", **attributes})
    assert event.account == account


def test_a_payment_of_the_sources_own_account_stores_no_account_attribute():
    payment = decide(None, seen(S.PAID, None), now=NOW)
    assert isinstance(payment, Apply)
    assert not [key for key in payment.payment.to_item() if key.startswith("account")]
    assert SubAccount.from_attributes({"account": ""}) is None
