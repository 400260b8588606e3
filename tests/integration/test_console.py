"""`inbox console`'s pages against moto (in-process, Flask's test client): what they show equals what the CLI's
functions return, webhook content is escaped, a replay POST from anywhere but the console's own form is refused,
and with --stack they read the deployed stack. The real browser, the local stack and a replay: tests/e2e/."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from typing import Any

import pytest

from inbox_cli import operations
from inbox_cli.console.app import CSRF_FIELD, MAX_PAGE_SIZE, create_app
from inbox_cli.target import Target, resolve
from shared.definitions import SourceSpec
from shared.inbox.model import StoredBody, build_item
from shared.inbox.store import InboxStore
from shared.payments.store import ProcessingStore
from shared.providers.base import NormalizedEvent, WebhookRequest
from tests.integration.operations_support import store_event_at
from tests.integration.processing_support import BASE_TIME
from tests.integration.test_cli_stack import DEPLOYED, STACK_NAME, deployed_stack

PORT = 8791
HOST = f"127.0.0.1:{PORT}"
TOKEN = "test-token"
# The default source of Stripe (what most tests store), two more Stripe accounts, and Asaas.
MERCHANT_SOURCES = (
    SourceSpec("stripe", "stripe"),
    SourceSpec("stripe-br", "stripe"),
    SourceSpec("stripe-us", "stripe"),
    SourceSpec("asaas", "asaas"),
)
HOSTILE = '<script>alert("owned")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def console(aws_world: Any) -> Any:
    names = aws_world.names
    target = Target(
        api_url="http://127.0.0.1:1",
        inbox_table=names.inbox_table,
        payments_table=names.payments_table,
        body_bucket=names.body_bucket,
        local=True,
        outbox_table=names.outbox_table,
        control_table=names.control_table,
        dead_letter_queues={"processor": names.dead_letter_queue},
        sources=MERCHANT_SOURCES,
        rejected_table=names.rejected_table,
    )
    app = create_app(target, port=PORT, token=TOKEN)
    app.config["SERVER_NAME"] = HOST  # the test client's requests then say Host: 127.0.0.1:PORT, as a browser's do
    client = app.test_client()
    client.target = target  # type: ignore[attr-defined]
    return client


def hostile_event(names: Any) -> str:
    """A failed event whose body, type, error and header are HTML: what a sender (or a gateway's error) controls."""
    received = BASE_TIME + timedelta(seconds=5)
    event = NormalizedEvent("evt_hostile", HOSTILE, "pi_hostile", received, "paid", 100, "BRL")
    item = build_item(
        provider="stripe",
        event_id="evt_hostile",
        event=event,
        request=WebhookRequest(body=HOSTILE.encode(), headers={"stripe-signature": HOSTILE}),
        replay_headers=("stripe-signature",),
        body=StoredBody(sha256="0", size=len(HOSTILE), inline=HOSTILE.encode()),
        received_at=received,
        retention_days=30,
    )
    InboxStore(names.inbox_table).put_new(item)
    ProcessingStore(names.inbox_table, names.payments_table).mark_failed(
        item["pk"], HOSTILE, now="2026-01-01T00:00:00.000000Z", count_attempt=True
    )
    return "evt_hostile"


def cells(page: str, row_attribute: str, table: str = "event-counts") -> dict[str, str]:
    """{data-status: text} of the overview's row (in `table`) whose data-source is `row_attribute`."""
    section = re.search(rf'<table id="{table}">(.*?)</table>', page, re.S)
    assert section, page
    row = re.search(rf'<tr data-source="{re.escape(row_attribute)}"[^>]*>(.*?)</tr>', section.group(1), re.S)
    assert row, page
    return {
        status: re.sub(r"<[^>]+>", "", text).strip()
        for status, text in re.findall(r'<td data-status="([^"]+)">(.*?)</td>', row.group(1), re.S)
    }


def test_the_overview_shows_the_numbers_of_inbox_stats(console, aws_world):
    # Given two pending Stripe events and a failed one
    store_event_at(aws_world.names, 10, resource_id="pi_1")
    store_event_at(aws_world.names, 20, resource_id="pi_2")
    hostile_event(aws_world.names)
    # When the overview is read
    response = console.get("/")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    # Then each count is the one `inbox stats` computes
    stats = operations.stats(console.target)
    shown = cells(page, "stripe")
    expected = stats["events"]["by_source"]["stripe"]
    assert shown == {status: str(count) for status, count in expected.items() if status != "provider"}
    assert shown["pending"] == "2" and shown["failed"] == "1"
    # And the chart data covers the same events, and the dead-letter queue's depth is there
    data = re.search(r'id="flow-data">(.*?)</script>', page, re.S)
    assert data, page
    flow = json.loads(html.unescape(data.group(1)))
    assert sum(sum(counts) for counts in flow["sources"]["stripe"].values()) == 3
    assert re.search(r'<tr data-queue="processor">.*?<td data-field="messages">0</td>', page, re.S)


def test_webhook_content_is_escaped_on_every_page(console, aws_world):
    # Given an event whose body, type, header and error are HTML with script
    event_id = hostile_event(aws_world.names)
    # When the pages that show it are read
    pages = [
        console.get(f"/events/stripe/{event_id}"),
        console.get("/events"),
        console.get("/failed"),
        console.get("/payments/stripe/pi_hostile"),
        console.get("/"),
    ]
    for response in pages:
        assert response.status_code == 200, response.get_data(as_text=True)
        page = response.get_data(as_text=True)
        # Then the markup never reaches the page as markup, only as text
        assert "<script>alert" not in page and "<img src=x" not in page
        # And no inline script could run anyway
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    detail = pages[0].get_data(as_text=True)
    raw_body = re.search(r'<pre id="raw-body">(.*?)</pre>', detail, re.S)
    assert raw_body, detail
    assert html.unescape(raw_body.group(1)) == HOSTILE  # the raw body, byte for byte, shown as text


def test_a_payment_timeline_is_the_payment_its_events_and_the_outbox(console, aws_world):
    # Given a failed event about a payment never applied
    hostile_event(aws_world.names)
    # When its timeline is read
    page = console.get("/payments/stripe/pi_hostile").get_data(as_text=True)
    timeline = operations.payment_timeline(console.target, "stripe", "pi_hostile")
    # Then it lists that event with its last error, says the payment was never applied, and links a replay
    assert [event["event_id"] for event in timeline["events"]] == ["evt_hostile"]
    assert 'data-event-id="evt_hostile" data-status="failed"' in page
    assert 'id="payment-missing"' in page
    assert "event_ids=evt_hostile" in page
    # And an unknown payment is a 404, not an empty page
    assert console.get("/payments/stripe/pi_nobody").status_code == 404


def test_listings_filter_like_the_cli_and_are_bounded(console, aws_world):
    for index in range(3):
        store_event_at(aws_world.names, index, resource_id=f"pi_{index}")
    hostile_event(aws_world.names)
    # When events are filtered by status, Then only those show
    page = console.get("/events?status=pending").get_data(as_text=True)
    assert page.count('class="event-row"') == 3 and "evt_hostile" not in page
    # And a limit is honoured, and one past the bound is cut to the bound
    assert console.get("/events?limit=1").get_data(as_text=True).count('class="event-row"') == 1
    assert f"at most {MAX_PAGE_SIZE}" in console.get("/events?limit=100000").get_data(as_text=True)
    # And the failed page shows the error that ended each failed event
    assert operations.failed_events(console.target)[0]["last_error"] == HOSTILE
    # And a bad filter value is a 400 that says why
    bad = console.get("/events?since=yesterday")
    assert bad.status_code == 400 and "ISO-8601" in bad.get_data(as_text=True)


def test_a_replay_post_without_the_token_or_from_another_origin_is_refused(console, aws_world):
    form = {"source": "stripe", "status": "failed", "confirm": "yes"}
    # When another site's page posts a replay (no token; or the token with its own Origin), Then it is refused
    assert console.post("/replay/start", data=form).status_code == 403
    assert console.post("/replay/start", data={**form, CSRF_FIELD: "guessed"}).status_code == 403
    foreign = console.post("/replay/start", data={**form, CSRF_FIELD: TOKEN}, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    # And with the token but without the confirmation box, nothing starts either
    unconfirmed = console.post("/replay/start", data={**form, "confirm": "", CSRF_FIELD: TOKEN})
    assert unconfirmed.status_code == 400 and "confirmation" in unconfirmed.get_data(as_text=True)


def test_a_request_under_another_host_name_is_refused(console):
    # When a page that rebound its own name to 127.0.0.1 reads the console, Then the console does not answer it
    response = console.get("/", headers={"Host": f"attacker.example:{PORT}"})
    assert response.status_code == 421
    # And the console's own names are answered
    assert console.get("/events", headers={"Host": f"localhost:{PORT}"}).status_code == 200


def test_every_form_on_the_replay_page_carries_the_token(console):
    page = console.get("/replay?source=stripe-br&event_ids=evt_1").get_data(as_text=True)
    assert f'name="{CSRF_FIELD}" value="{TOKEN}"' in page
    assert ">evt_1</textarea>" in page
    assert "<option selected>stripe-br</option>" in page


def test_every_page_shows_and_filters_by_source(console, aws_world):
    # Given two Stripe accounts: stripe-br with a pending and a failed event, stripe-us with a pending one
    names = aws_world.names
    store_event_at(names, 10, resource_id="pi_br_1", event_id="evt_br_1", source="stripe-br")
    store_event_at(names, 20, resource_id="pi_br_2", event_id="evt_br_2", source="stripe-br")
    store_event_at(names, 30, resource_id="pi_us_1", event_id="evt_us_1", source="stripe-us")
    ProcessingStore(names.inbox_table, names.payments_table).mark_failed(
        "stripe-br#evt_br_2", "gateway said no", now="2026-01-01T00:00:00.000000Z", count_attempt=True
    )
    # When the overview is read, Then each account has its row, its provider beside it
    overview = console.get("/").get_data(as_text=True)
    assert cells(overview, "stripe-br")["failed"] == "1" and cells(overview, "stripe-us")["pending"] == "1"
    assert '<canvas class="flow-chart" data-source="stripe-br">' in overview

    # And the events page filters by one source, or by every source of the provider
    def events(query: str) -> set[str]:
        page = console.get(f"/events?{query}").get_data(as_text=True)
        return set(re.findall(r'class="event-row" data-event-id="([^"]+)"', page))

    assert events("source=stripe-br") == {"evt_br_1", "evt_br_2"}
    assert events("source=stripe-us") == {"evt_us_1"}
    assert {"evt_br_1", "evt_br_2", "evt_us_1"} <= events("provider=stripe")
    # And its source filter offers the declared sources, and links each event under its own source
    page = console.get("/events").get_data(as_text=True)
    assert all(f"<option>{name}</option>" in page for name in ("stripe-br", "stripe-us", "asaas"))
    assert 'href="/events/stripe-br/evt_br_1"' in page and 'href="/payments/stripe-us/pi_us_1"' in page
    assert console.get("/events/stripe-br/evt_br_1").status_code == 200
    # And the failed page filters by source, and offers to replay that source's failed events
    failed = console.get("/failed?source=stripe-br").get_data(as_text=True)
    assert "evt_br_2" in failed and 'href="/replay?source=stripe-br&amp;status=failed"' in failed
    assert "evt_br_2" not in console.get("/failed?source=stripe-us").get_data(as_text=True)
    # And "find a payment" offers the declared sources and opens that source's payment
    find = console.get("/payments").get_data(as_text=True)
    assert "<option>stripe-br</option>" in find
    found = console.get("/payments?source=stripe-us&resource_id=pi_us_1")
    assert found.status_code == 302 and found.headers["Location"].endswith("/payments/stripe-us/pi_us_1")
    assert "evt_us_1" in console.get("/payments/stripe-us/pi_us_1").get_data(as_text=True)
    # And the rejected page takes a declared source (its own link: every rejected delivery of stripe-br)
    rejected = console.get("/rejected?source=stripe-br")
    assert rejected.status_code == 200, rejected.get_data(as_text=True)
    assert "<option selected>stripe-br</option>" in rejected.get_data(as_text=True)
    assert console.get("/rejected?source=Not_A_Source").status_code == 400


def test_with_stack_the_console_reads_the_deployed_stack(aws_world):
    # Given a deployed stack (a CloudFormation stack in moto whose outputs name its tables) with its own events,
    # and the local stack's tables with another
    deployed_stack(aws_world.session)
    store_event_at(DEPLOYED, 10, resource_id="pi_deployed_1")
    store_event_at(aws_world.names, 30, resource_id="pi_local_only")
    # When the console is made for `--stack NAME` (the target `inbox console --stack NAME` resolves)
    app = create_app(resolve(STACK_NAME), port=PORT, stack_name=STACK_NAME, token=TOKEN)
    app.config["SERVER_NAME"] = HOST
    client = app.test_client()
    # Then its pages show the deployed stack's events, and say which stack they read
    page = client.get("/events").get_data(as_text=True)
    assert "pi_deployed_1" in page and "pi_local_only" not in page
    assert f'id="stack">{STACK_NAME}<' in page
