"""`inbox console` in a real browser (Debian's headless Chromium, driven by Selenium through Debian's chromedriver)
against the local stack after `inbox simulate` settled and a few events failed: each page loads with no console
error, its numbers are the CLI's, and a replay started from the page changes what the CLI then shows. The stack
declares two Stripe accounts besides Stripe's default source, and Asaas: every page shows and filters by source.

INBOX_CONSOLE_SCREENSHOTS=1 also writes a screenshot of each page to docs/console/ (docs/console.md shows them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inbox_cli.main import cli
from inbox_cli.simulate import SimulatorAdmin
from inbox_local.config import LocalEndpoints, aws_environment
from shared import aws
from tests.e2e.conftest import ROOT, RunningStack, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# What Chromium needs on a closed network, as root, headless (each flag: the machine's python.md, "Known to work").
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1000",
)
SCREENSHOTS = ROOT / "docs" / "console"
# Stripe's default source (what `inbox simulate` drives), a merchant's two Stripe accounts, and Asaas.
SOURCES = [
    {"name": "stripe", "provider": "stripe"},
    {"name": "stripe-br", "provider": "stripe"},
    {"name": "stripe-us", "provider": "stripe"},
    {"name": "asaas", "provider": "asaas"},
]
FAILED_PAYMENTS = 2


@dataclass
class Console:
    stack: RunningStack
    url: str
    process: subprocess.Popen[str]
    browser: Any
    failed: list[tuple[str, str]]  # (event id, payment id) of the events made to fail
    merchant: tuple[str, str]  # (event id, payment id) of a paid payment of the stripe-br source, processed

    def open(self, path: str, *, screenshot: str | None = None) -> Any:
        """Load `path`, then `check` it."""
        self.browser.get(self.url + path)
        return self.check(screenshot=screenshot)

    def check(self, *, screenshot: str | None = None) -> Any:
        """The page the browser shows: fail on any console error it logged; the screenshot when asked for."""
        self.browser.find_element("css selector", "main h1")
        errors = [entry for entry in self.browser.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
        assert errors == [], f"{self.browser.current_url}: {errors}"
        assert "Webhook Inbox console" in self.browser.title
        if screenshot and os.environ.get("INBOX_CONSOLE_SCREENSHOTS") == "1":
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            self.browser.save_screenshot(str(SCREENSHOTS / f"{screenshot}.png"))
        return self.browser

    def cells(self, selector: str) -> list[str]:
        return [element.text for element in self.browser.find_elements("css selector", selector)]

    def cli_json(self, *args: str) -> Any:
        return cli_json(*args)


def fail_events(stack: RunningStack, count: int) -> list[tuple[str, str]]:
    """Payments the gateway's API does not know on their first fetch, each with a webhook that therefore fails
    (the stack allows one attempt): the failed events an operator finds in the console."""
    admin = SimulatorAdmin(f"http://127.0.0.1:{stack.env['INBOX_GATEWAY_PORT']}")
    admin.set_faults(unknown_fetches=1)
    amounts = [1000 + index for index in range(count)]
    payments = [admin.create_payment("stripe", amount)[0] for amount in amounts]
    admin.set_faults(unknown_fetches=0)
    failed = []
    for index, (resource_id, amount) in enumerate(zip(payments, amounts, strict=True)):
        event_id = f"evt_console_{index}_{int(time.time() * 1000)}"
        sent = CliRunner().invoke(
            cli,
            [
                *("send", "stripe", "--event-id", event_id, "--resource-id", resource_id),
                *("--status", "pending", "--amount", str(amount)),
            ],
        )
        assert sent.exit_code == 0, sent.output
        failed.append((event_id, resource_id))
    deadline = time.monotonic() + 60
    while not {event_id for event_id, _ in failed} <= failed_ids(stack):
        assert time.monotonic() < deadline, f"{failed} not all failed after 60 s"
        time.sleep(0.3)
    return failed


def paid_of_source(source: str) -> tuple[str, str]:
    """A paid payment of `source` (a named Stripe account), sent by `inbox send` and processed: (event, payment)."""
    sent = CliRunner().invoke(cli, ["send", source, "--status", "paid"])
    assert sent.exit_code == 0, sent.output
    found = re.search(rf"sent {source} \(stripe\) event (\S+) about payment (\S+);", sent.output)
    assert found, sent.output
    event_id, resource_id = found.groups()
    deadline = time.monotonic() + 60
    while cli_json("events", "show", source, event_id)["status"] != "processed":
        assert time.monotonic() < deadline, f"the {source} event is not processed after 60 s"
        time.sleep(0.3)
    return event_id, resource_id


def failed_ids(stack: RunningStack) -> set[str]:
    return {row["event_id"] for row in cli_json("events", "list", "--status", "failed")}


def status(stack: RunningStack, event_id: str) -> str:
    return str(cli_json("events", "show", "stripe", event_id)["status"])


def cli_json(*args: str) -> Any:
    """`inbox ARGS --json`: the CLI's own command group, in this process (a new interpreter per call would cost
    more than a second each on a busy machine), inside `stack_environment`."""
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@contextmanager
def stack_environment(stack: RunningStack) -> Iterator[None]:
    """This process's environment pointed at `stack` (its ports and its embedded AWS) while the module runs, then
    restored, and the cached boto3 clients forgotten both times: the next module finds what it had."""
    saved = dict(os.environ)
    ports: dict[str, str] = {
        name: stack.env[name]
        for name in ("INBOX_PORT", "INBOX_AWS_PORT", "INBOX_GATEWAY_PORT", "INBOX_SOURCES_FILE")
        if name in stack.env
    }
    os.environ.update(ports)
    os.environ.update(aws_environment(LocalEndpoints.from_environ()))
    aws.reset_clients()
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        aws.reset_clients()


def start_console(stack: RunningStack, log: Path) -> tuple[subprocess.Popen[str], str]:
    """`inbox console --port 0` against the stack; its first line names the URL it listens on."""
    process = subprocess.Popen(
        [sys.executable, "-m", "inbox_cli.main", "console", "--port", "0"],
        env=stack.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("Console of the local stack on http://127.0.0.1:"), line + log.read_text()
    return process, line.split(" on ", 1)[1].split("/ ", 1)[0]


def start_browser(profile: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail("Debian's chromium and chromium-driver are missing: `make test` installs them")
    profile = tempfile.mkdtemp(prefix="inbox-console-chromium-")
    declaration = Path(profile) / "sources.json"
    declaration.write_text(json.dumps(SOURCES), encoding="utf-8")
    stack = start_stack({"INBOX_MAX_ATTEMPTS": "1", "INBOX_SOURCES_FILE": str(declaration)})
    log = Path(tempfile.mkstemp(prefix="inbox-console-", suffix=".log")[1])
    process = browser = None
    try:
        stack.cli(
            *("simulate", "--payments", "3", "--provider", "stripe"),
            *("--duplicates", "0", "--concurrent-duplicates", "0", "--max-delay", "0"),
            timeout=120,
        )
        process, url = start_console(stack, log)
        browser = start_browser(profile)
        with stack_environment(stack):
            failed = fail_events(stack, FAILED_PAYMENTS)
            yield Console(stack, url, process, browser, failed, paid_of_source("stripe-br"))
    finally:
        if browser is not None:
            browser.quit()
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
        if stack.process.poll() is None:
            stop_stack(stack)


def test_the_overview_shows_what_inbox_stats_says(console):
    # Given the settled stack, When the overview is open
    before = console.cli_json("stats")
    console.open("/", screenshot="overview")
    after = console.cli_json("stats")
    # Then each count of events by source and status is the number `inbox stats --json` gives
    assert before["events"] == after["events"], "the stack moved while the page loaded"
    for source, row in after["events"]["by_source"].items():
        assert console.cells(f'#event-counts tr[data-source="{source}"] td:nth-child(2)') == [row.pop("provider")]
        for name, count in row.items():
            shown = console.cells(f'#event-counts tr[data-source="{source}"] td[data-status="{name}"]')
            assert shown == [str(count)], (source, name)
    assert console.cells('#event-counts tr[data-source="(all)"] td[data-status="failed"]') == [str(after["failed"])]
    assert after["failed"] >= FAILED_PAYMENTS
    # And the payments by status too
    for source, row in after["payments"]["by_source"].items():
        row.pop("provider")
        for name, count in row.items():
            assert console.cells(f'#payment-counts tr[data-source="{source}"] td[data-status="{name}"]') == [str(count)]
    # And a chart is drawn per source, and one of the dead-letter queues
    charts = console.browser.find_elements("css selector", "canvas.flow-chart")
    assert [chart.get_attribute("data-source") for chart in charts] == sorted(after["events"]["by_source"])
    assert all(chart.get_attribute("width") not in (None, "0") for chart in charts)
    assert console.browser.find_elements("css selector", "#dlq-chart")


def test_the_event_pages_show_the_inbox_as_events_list_does(console):
    # When the events page is open
    console.open("/events", screenshot="events")
    listed = console.cli_json("events", "list")
    # Then it lists the events `inbox events list` lists, in its order
    assert console.cells("#events tr.event-row td:nth-child(4)") == [row["event_id"] for row in listed]
    assert console.cells("#events tr.event-row td:nth-child(2)") == [row["source"] for row in listed]
    # And filtering by status leaves only those
    console.open("/events?status=failed")
    assert set(console.cells("#events tr.event-row td:nth-child(7)")) == {"failed"}
    # And one event's page shows its raw body exactly as `inbox events show --json` does
    event_id, _payment = console.failed[0]
    shown = console.cli_json("events", "show", "stripe", event_id)
    browser = console.open(f"/events/stripe/{event_id}", screenshot="event")
    assert browser.find_element("id", "raw-body").text == shown["body"].strip()
    assert console.cells('#event-fields tr[data-field="status"] td') == ["failed"]


def test_failed_events_are_listed_with_their_last_error(console):
    console.open("/failed", screenshot="failed")
    failed = {row["event_id"]: row for row in console.cli_json("events", "list", "--status", "failed")}
    rows = console.browser.find_elements("css selector", "#failed-events tr.event-row")
    assert {row.get_attribute("data-event-id") for row in rows} == set(failed)
    errors = console.cells("#failed-events tr.event-row td.error-text")
    assert all(errors) and len(errors) == len(failed)


def test_a_payment_timeline_is_what_payments_show_says(console):
    # Given a payment whose events were processed (the newest: stripe-br's), of its source
    payments = console.cli_json("events", "list", "--status", "processed")
    source, resource_id = next((row["source"], row["resource_id"]) for row in payments if row["resource_id"])
    shown = console.cli_json("payments", "show", source, resource_id)
    # When its timeline is open
    console.open(f"/payments/{source}/{resource_id}", screenshot="payment")
    # Then the payment's fields are those of `inbox payments show --json`
    for name, value in shown.items():
        expected = "" if value is None else str(value)
        assert console.cells(f'#payment-fields tr[data-field="{name}"] td') == [expected], name
    # And every event about it is there with the state machine's decision, and what the outbox published
    events = console.browser.find_elements("css selector", "#timeline tr.timeline-event")
    assert events and all(event.find_elements("css selector", "td")[6].text for event in events)
    published = console.cli_json("outbox", "list", "--source", source, "--resource-id", resource_id)
    assert published
    assert console.cells("#published tr.published-event td:nth-child(5)") == [record["id"] for record in published]
    assert shown["transitions"] == len([r for r in published if r["type"] == "payment.status_changed"])


def test_a_replay_started_from_the_page_changes_what_the_cli_shows(console):
    from selenium.webdriver.support.ui import WebDriverWait

    event_id, resource_id = console.failed[0]
    failed_before = console.cli_json("stats")["failed"]
    # Given the failed event's payment timeline, When the operator follows its replay link
    browser = console.open(f"/payments/stripe/{resource_id}")
    browser.find_element("id", "replay-failed-of-payment").click()
    console.check(screenshot="replay")
    # And asks for the plan
    browser.find_element("id", "plan-button").click()
    console.check(screenshot="replay-plan")
    # Then the plan is the dry run's: this one event, nothing changed yet
    assert browser.find_element("id", "plan-headline").text.startswith("Dry run: 1 failed events of stripe")
    assert status(console.stack, event_id) == "failed"
    # When the operator starts it without ticking the confirmation, Then the browser does not send it
    browser.find_element("id", "start-button").click()
    assert browser.find_elements("id", "confirm-form")
    # When they confirm and start it, Then the page follows it to its end
    browser.find_element("id", "confirm-box").click()
    browser.find_element("id", "start-button").click()
    WebDriverWait(browser, 60).until(lambda b: b.find_element("id", "replay-state").text == "Finished")
    console.check(screenshot="replay-progress")
    assert browser.find_element("id", "replay-headline").text.startswith("Replayed 1 failed events of stripe")
    # And the CLI shows the event processed again (the gateway knows the payment now), one failure fewer
    deadline = time.monotonic() + 60
    while (now := status(console.stack, event_id)) in ("failed", "pending"):
        assert time.monotonic() < deadline, f"the replayed event still {now} after 60 s"
        time.sleep(0.3)
    assert now == "processed", console.cli_json("events", "show", "stripe", event_id)
    assert console.cli_json("stats")["failed"] == failed_before - 1
    # And the other failed event was left as it was
    assert status(console.stack, console.failed[1][0]) == "failed"


def test_rejected_deliveries_are_listed_and_shown_as_the_cli_does(console):
    from inbox_cli.main import post_webhook

    # Given two deliveries the local stack refuses: a forged Stripe signature and a wrong Asaas token
    api = f"http://127.0.0.1:{console.stack.env['INBOX_PORT']}"
    forged = post_webhook(f"{api}/webhooks/stripe", b'{"id": "evt_forged"}', {"stripe-signature": "t=1,v1=00"})
    token = post_webhook(f"{api}/webhooks/asaas", b'{"id": "evt_token"}', {"asaas-access-token": "tok_console"})
    assert (forged[0], token[0]) == (401, 401)
    # When the Rejected deliveries page is open
    console.open("/rejected", screenshot="rejected")
    listed = console.cli_json("rejected", "list")
    # Then it lists what `inbox rejected list` lists, in its order, with each reason
    rows = console.browser.find_elements("css selector", "#rejected-deliveries tr.rejected-row")
    assert [row.get_attribute("data-rejected-id") for row in rows] == [row["id"] for row in listed]
    assert [row.get_attribute("data-reason") for row in rows] == [row["reason"] for row in listed]
    # And filtering by source leaves only that source's
    console.open("/rejected?source=asaas")
    assert set(console.cells("#rejected-deliveries tr.rejected-row td:nth-child(2)")) == {"asaas"}
    # And the Asaas delivery's page shows the token's fingerprint as `inbox rejected show` does, never the token
    asaas_id = next(row["id"] for row in listed if row["source"] == "asaas")
    shown = console.cli_json("rejected", "show", asaas_id)
    browser = console.open(f"/rejected/{asaas_id}", screenshot="rejected-delivery")
    assert console.cells('#rejected-headers tr[data-header="asaas-access-token"] code.fingerprint') == [
        shown["headers"]["asaas-access-token"]["fingerprint"]
    ]
    assert browser.find_element("id", "raw-body").text == shown["body"]
    assert "tok_console" not in browser.page_source
    # And the doctor's diagnosis is on the page (a token no secret of the source has: not one we know)
    assert browser.find_element("id", "diagnosis-code").text in ("unexplained", "wrong_secret")


def test_every_page_shows_and_filters_by_a_merchants_own_source(console):
    from selenium.webdriver.support.ui import Select

    # Given a paid payment of the merchant's Brazilian Stripe account, processed
    _event_id, resource_id = console.merchant
    # When the operator picks stripe-br in the events page's source filter
    browser = console.open("/events")
    Select(browser.find_element("css selector", '#event-filters select[name="source"]')).select_by_visible_text(
        "stripe-br"
    )
    browser.find_element("css selector", '#event-filters button[type="submit"]').click()
    console.check()
    # Then only stripe-br's events are listed, as `inbox events list --source stripe-br` lists them
    listed = console.cli_json("events", "list", "--source", "stripe-br")
    assert console.cells("#events tr.event-row td:nth-child(4)") == [row["event_id"] for row in listed]
    assert set(console.cells("#events tr.event-row td:nth-child(2)")) == {"stripe-br"}
    # And "find a payment" offers the declared sources, and opens stripe-br's payment
    browser = console.open("/payments")
    offered = [option.text for option in Select(browser.find_element("css selector", 'select[name="source"]')).options]
    assert offered == [source["name"] for source in SOURCES]
    Select(browser.find_element("css selector", 'select[name="source"]')).select_by_visible_text("stripe-br")
    browser.find_element("css selector", 'input[name="resource_id"]').send_keys(resource_id)
    browser.find_element("css selector", '#find-payment button[type="submit"]').click()
    console.check()
    # And its page lists what the outbox published for it, as `inbox outbox list --source stripe-br` does
    published = console.cli_json("outbox", "list", "--source", "stripe-br", "--resource-id", resource_id)
    assert published and browser.current_url.endswith(f"/payments/stripe-br/{resource_id}")
    assert console.cells("#published tr.published-event td:nth-child(5)") == [record["id"] for record in published]
    # And the overview counts stripe-br on its own row, Stripe beside it
    console.open("/")
    assert console.cells('#event-counts tr[data-source="stripe-br"] td:nth-child(2)') == ["stripe"]
    # And the rejected page's link for one source answers (it offers the declared sources)
    browser = console.open("/rejected?source=stripe-br")
    chosen = Select(browser.find_element("css selector", 'select[name="source"]')).first_selected_option.text
    assert chosen == "stripe-br"
