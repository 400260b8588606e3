"""`inbox stats` against moto: counts by provider and status, and the oldest pending event."""

from __future__ import annotations

from inbox_cli.stats import collect_stats, render_stats
from shared.inbox.model import EventStatus, StoredBody, build_item
from shared.inbox.store import InboxStore
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.providers.base import WebhookRequest
from shared.sweeper import SweepStore
from tests.integration.operations_support import a_payment, later, put_payment, store_event_at
from tests.integration.processing_support import BASE_TIME


def test_stats_count_events_by_provider_and_status_and_age_the_oldest_pending(aws_world):
    # Given stripe events: two pending (received 10 s and 50 s after BASE_TIME), one processed; and one failed
    # asaas event; and two payments
    names = aws_world.names
    oldest = store_event_at(names, 10, resource_id="pi_1")
    store_event_at(names, 50, resource_id="pi_2")
    done = store_event_at(names, 60, resource_id="pi_3")
    ProcessingStore(names.inbox_table, names.payments_table).settle(done, EventStatus.PROCESSED, now="t", note="n")
    InboxStore(names.inbox_table).put_new(
        build_item(
            provider="asaas",
            event_id="evt_bad",
            event=None,
            request=WebhookRequest(body=b"{", headers={}),
            replay_headers=(),
            body=StoredBody(sha256="0", size=1, inline=b"{"),
            received_at=BASE_TIME,
            retention_days=30,
            failure="unparseable",
        )
    )
    put_payment(aws_world, a_payment())
    put_payment(aws_world, a_payment(resource_id="pi_3", status=PaymentStatus.PAID))
    # When the stats are collected 100 s after BASE_TIME
    stats = collect_stats(SweepStore(names.inbox_table, names.payments_table), clock=lambda: later(100))
    # Then
    assert stats["events"]["by_provider"] == {
        "asaas": {"pending": 0, "processed": 0, "ignored": 0, "failed": 1, "total": 1},
        "stripe": {"pending": 2, "processed": 1, "ignored": 0, "failed": 0, "total": 3},
    }
    assert (stats["pending"], stats["failed"], stats["events"]["totals"]["total"]) == (2, 1, 4)
    assert stats["oldest_pending"]["pk"] == oldest
    assert stats["oldest_pending_age_seconds"] == 90
    assert stats["payments"]["by_provider"] == {"stripe": {"paid": 1, "pending": 1, "total": 2}}
    text = render_stats(stats)
    assert f"oldest pending: {oldest}" in text
    assert "stripe" in text and "PROCESSED" in text


def test_stats_count_each_source_on_its_own_row_with_its_provider_beside_it(aws_world):
    # Given two Stripe accounts: stripe-br with two pending events and a payment, stripe-us with one pending event
    names = aws_world.names
    store_event_at(names, 10, resource_id="pi_br_1", source="stripe-br")
    store_event_at(names, 20, resource_id="pi_br_2", source="stripe-br")
    store_event_at(names, 30, resource_id="pi_us_1", source="stripe-us")
    put_payment(aws_world, a_payment(resource_id="pi_br_1", source="stripe-br"))
    # When the stats are collected
    stats = collect_stats(SweepStore(names.inbox_table, names.payments_table), clock=lambda: later(100))
    # Then each source has its row, its provider beside it, and the provider's row sums them
    pending = {source: (row["provider"], row["pending"]) for source, row in stats["events"]["by_source"].items()}
    assert pending == {"stripe-br": ("stripe", 2), "stripe-us": ("stripe", 1)}
    assert stats["events"]["by_provider"]["stripe"]["pending"] == 3
    assert stats["payments"]["by_source"] == {"stripe-br": {"provider": "stripe", "pending": 1, "total": 1}}
    # And the table shows the sources, not the provider merged
    lines = render_stats(stats).splitlines()
    assert lines[0].split()[:3] == ["EVENTS", "PROVIDER", "PENDING"]
    assert [line.split()[:3] for line in lines[1:3]] == [["stripe-br", "stripe", "2"], ["stripe-us", "stripe", "1"]]


def test_stats_of_an_empty_inbox(aws_world):
    stats = collect_stats(SweepStore(aws_world.names.inbox_table, aws_world.names.payments_table))
    assert (stats["pending"], stats["failed"], stats["oldest_pending"]) == (0, 0, None)
    assert stats["events"]["totals"]["total"] == 0
    assert "oldest pending: none" in render_stats(stats)
