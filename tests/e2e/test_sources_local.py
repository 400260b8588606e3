"""The local stack started with a sources file (`INBOX_SOURCES_FILE`): two Stripe accounts and an Asaas one side by
side over real HTTP. Each delivery is verified with its own source's secret, each payment refetched from its own
simulator account with its own API key, and every payment matches the simulator's truth."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from inbox_local.config import LocalNames
from inbox_local.senders import sender_for
from tests.e2e.conftest import RunningStack, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

SOURCES: list[dict[str, Any]] = [
    {"name": "stripe-br", "provider": "stripe"},
    {"name": "stripe-us", "provider": "stripe"},
    {"name": "asaas", "provider": "asaas"},
    # Only from a documentation range: the local stack's clients (127.0.0.1) are outside it.
    {"name": "stripe-locked", "provider": "stripe", "allowed_ip_ranges": ["203.0.113.0/24"]},
]
PROVIDER: dict[str, str] = {source["name"]: source["provider"] for source in SOURCES}
# A key given to the local stack in its environment, as for a gateway sandbox: it is stored as the source's secret.
API_KEY_VARIABLE = "INBOX_API_KEY_STRIPE_LOCKED"
API_KEY_FROM_THE_ENVIRONMENT = "sk_test_from_the_local_stacks_environment"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    path: Path = tmp_path_factory.mktemp("sources") / "sources.json"
    path.write_text(json.dumps(SOURCES), encoding="utf-8")
    running = start_stack(
        {
            "INBOX_SOURCES_FILE": str(path),
            "INBOX_SWEEP_INTERVAL_SECONDS": "3600",
            API_KEY_VARIABLE: API_KEY_FROM_THE_ENVIRONMENT,
        }
    )
    yield running
    if running.process.poll() is None:
        stop_stack(running)


def request(url: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    method = "GET" if body is None else "POST"
    call = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(call, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def secrets_printed(stack: RunningStack) -> dict[str, str]:
    """The signing secrets the stack printed at start-up, by variable. The banner comes once start() returns, a
    moment after /health first answers (what the fixture waits for): wait for its end, bounded."""
    deadline = time.monotonic() + 60
    while "Ctrl-C stops it." not in (output := stack.output()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return dict(re.findall(r"^\s+(INBOX_SECRET_[A-Z0-9_]+)=(\S+)$", output, flags=re.MULTILINE))


def gateway(stack: RunningStack, path: str, document: dict[str, Any] | None = None) -> Any:
    url = f"http://127.0.0.1:{stack.env['INBOX_GATEWAY_PORT']}/_sim/{path}"
    body = None if document is None else json.dumps(document).encode()
    status, answer = request(url, body, {"content-type": "application/json"})
    assert status == 200, answer
    return answer


def deliver(stack: RunningStack, source: str, body: str, secret: str) -> int:
    signed = sender_for(PROVIDER[source]).sign(body.encode(), secret, now=int(time.time()))
    status, _ = request(
        f"{stack.url}/webhooks/{source}", body.encode(), {"content-type": "application/json", **signed.headers}
    )
    return status


def stored_payment(stack: RunningStack, key: str) -> dict[str, Any] | None:
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=f"http://127.0.0.1:{stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    item = dynamodb.get_item(TableName=LocalNames().payments_table, Key={"pk": {"S": key}}, ConsistentRead=True)
    if "Item" not in item:
        return None
    return {name: next(iter(value.values())) for name, value in item["Item"].items()}


def test_three_sources_verify_refetch_and_match_the_gateway(stack):
    # Given the stack printed one signing secret per declared source, the two Stripe ones distinct
    secrets = secrets_printed(stack)
    variables = {
        "stripe-br": "INBOX_SECRET_STRIPE_BR",
        "stripe-us": "INBOX_SECRET_STRIPE_US",
        "asaas": "INBOX_SECRET_ASAAS",
    }
    assert set(variables.values()) <= set(secrets)
    assert secrets["INBOX_SECRET_STRIPE_BR"] != secrets["INBOX_SECRET_STRIPE_US"]
    # And each account of the simulator has a payment, the two Stripe ones under the same id
    created = {
        "stripe-br": gateway(stack, "payments", {"source": "stripe-br", "amount": 1000, "currency": "BRL",
                                                 "status": "paid", "resource_id": "pi_e2e_shared"}),
        "stripe-us": gateway(stack, "payments", {"source": "stripe-us", "amount": 2500, "currency": "USD",
                                                 "status": "canceled", "resource_id": "pi_e2e_shared"}),
        "asaas": gateway(stack, "payments", {"source": "asaas", "amount": 4200, "status": "paid"}),
    }  # fmt: skip
    # When a delivery signed for stripe-br is posted to stripe-us's URL
    first = created["stripe-br"]["webhooks"][-1]["body"]
    refused = deliver(stack, "stripe-us", first, secrets["INBOX_SECRET_STRIPE_BR"])
    # And every webhook is posted to its own source's URL, signed with its own source's secret
    statuses = [
        deliver(stack, source, webhook["body"], secrets[variables[source]])
        for source, answer in created.items()
        for webhook in answer["webhooks"]
    ]
    # Then the cross-signed one is refused, every other one accepted
    assert refused == 401
    assert set(statuses) == {200}
    # And each source's payment, refetched with its own key from its own account, matches that account's truth
    truth = {(p["source"], p["resource_id"]): p for p in gateway(stack, "payments")}
    expected = {source: truth[(source, answer["id"])] for source, answer in created.items()}
    deadline = time.monotonic() + 60
    while True:
        stored = {source: stored_payment(stack, f"{source}#{created[source]['id']}") for source in created}
        matched = all(
            (payment := stored[source]) is not None and payment["status"] == expected[source]["status"]
            for source in created
        )
        if matched or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for source, payment in stored.items():
        assert payment is not None, f"{source}: no payment\n{stack.output()[-3000:]}"
        assert (payment["source"], payment["status"]) == (source, expected[source]["status"])
        assert int(payment["amount"]) == expected[source]["amount"]
    assert (expected["stripe-br"]["status"], expected["stripe-us"]["status"]) == ("paid", "canceled")


def test_a_forged_forwarded_for_does_not_pass_a_sources_ip_ranges(stack):
    # Given stripe-locked accepts deliveries only from 203.0.113.0/24, and a delivery signed with its own secret
    secret = secrets_printed(stack)["INBOX_SECRET_STRIPE_LOCKED"]
    body = sender_for("stripe").sample_body(
        event_id="evt_locked", resource_id="pi_locked", status="paid", amount=100, occurred_at=int(time.time())
    )
    signed = sender_for("stripe").sign(body, secret, now=int(time.time()))
    # When it comes from 127.0.0.1 claiming, in X-Forwarded-For, an address inside the ranges
    headers = {"content-type": "application/json", "x-forwarded-for": "203.0.113.7", **signed.headers}
    status, answer = request(f"{stack.url}/webhooks/stripe-locked", body, headers)
    # Then the front door passes the connection's address, and the source refuses it before verification
    assert (status, answer) == (403, {"error": "sender not allowed for this source"})


def test_inbox_send_to_a_named_stripe_source_from_a_connect_account_is_refetched_within_both(stack):
    # Given the stack's sources file, read by the CLI too (INBOX_SOURCES_FILE in the stack's environment)
    inbox = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "inbox"
    # When `inbox send SOURCE --account acct_...` sends to stripe-us, a named (not default) Stripe source
    result = subprocess.run(
        [str(inbox), "send", "stripe-us", "--account", "acct_1SourcesSeller01", "--status", "paid"],
        env=stack.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    sent = re.search(r"sent stripe-us \(stripe\) event (\S+) about payment (\S+);", result.stdout)
    assert sent, result.stdout
    resource_id = sent.group(2)
    # Then the simulator holds it in stripe-us's account (whose key the processor refetches with), under the
    # connected account
    truth = next(p for p in gateway(stack, "payments") if p["resource_id"] == resource_id)
    assert (truth["source"], truth["account"]) == ("stripe-us", "acct_1SourcesSeller01")
    # And the payment is stored under stripe-us's key, refetched within the connected account, paid
    deadline = time.monotonic() + 60
    while (payment := stored_payment(stack, f"stripe-us#{resource_id}")) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert payment is not None, stack.output()[-3000:]
    assert (payment["source"], payment["status"], payment["account"]) == ("stripe-us", "paid", "acct_1SourcesSeller01")


def console_page(stack: RunningStack, *paths: str) -> list[str]:
    """The pages of `inbox console` (a process of its own, on a free port) at `paths`, as a browser reads them."""
    inbox = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "inbox"
    console = subprocess.Popen(
        [str(inbox), "console", "--port", "0"], env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert console.stdout is not None
        started = re.search(r"on (http://127\.0\.0\.1:\d+)/", console.stdout.readline())
        assert started, console.stderr.read() if console.stderr else ""
        pages = []
        for path in paths:
            with urllib.request.urlopen(started.group(1) + path, timeout=60) as response:
                pages.append(response.read().decode())
        return pages
    finally:
        console.terminate()
        console.wait(timeout=30)


def test_a_merchants_sources_in_every_read_and_a_cross_wired_secret_named(stack):
    # Given a paid payment of stripe-br, sent by `inbox send` and processed
    sent = stack.cli("send", "stripe-br", "--status", "paid")
    found = re.search(r"sent stripe-br \(stripe\) event (\S+) about payment (\S+);", sent.stdout)
    assert found, sent.stdout
    event_id, resource_id = found.groups()
    assert stack.settled_event("stripe-br", event_id)["status"] == "processed", stack.output()[-3000:]
    # When the outbox is listed by that source and payment, Then its published change is there (one Query)
    published = json.loads(
        stack.cli("outbox", "list", "--source", "stripe-br", "--resource-id", resource_id, "--json").stdout
    )
    assert [(record["source"], record["new_status"]) for record in published] == [("stripe-br", "paid")]
    # And `inbox stats` counts stripe-br on its own row, its provider beside it
    stats = json.loads(stack.cli("stats", "--json").stdout)
    row = stats["events"]["by_source"]["stripe-br"]
    assert row["provider"] == "stripe" and row["processed"] >= 1
    assert "stripe" not in stats["events"]["by_source"]  # no default Stripe source here: nothing merged into it
    # And the console's payment page of stripe-br lists that published event, its overview the source's row
    payment_page, overview, rejected = console_page(
        stack, f"/payments/stripe-br/{resource_id}", "/", "/rejected?source=stripe-br"
    )
    assert published[0]["id"] in payment_page and "(nothing published)" not in payment_page
    assert '<tr data-source="stripe-br" data-provider="stripe">' in overview
    assert "<option selected>stripe-br</option>" in rejected

    # When a delivery to stripe-br is signed with stripe-us's secret (the shell of `inbox send` has it cross-wired)
    secrets = secrets_printed(stack)
    crossed = subprocess.run(
        [sys.executable, "-m", "inbox_cli.main", "send", "stripe-br"],
        env={**stack.env, "INBOX_SECRET_STRIPE_BR": secrets["INBOX_SECRET_STRIPE_US"]},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then it is refused 401, and `inbox send` prints the doctor command for the recorded refusal
    assert crossed.returncode == 1 and "-> 401" in crossed.stdout, crossed.stdout + crossed.stderr
    hint = re.search(r"why it was refused: inbox doctor --rejected (rej_\w+)", crossed.stderr)
    assert hint, crossed.stderr
    # And the doctor, with nothing exported in the shell, names stripe-us's secret
    assert not any(name.startswith("INBOX_SECRET_") for name in stack.env)
    doctor = stack.cli("doctor", "--rejected", hint.group(1), "--json", check=False)
    answer = json.loads(doctor.stdout)
    assert (doctor.returncode, answer["diagnosis"]) == (1, "wrong_secret"), doctor.stdout + doctor.stderr
    assert "'stripe-us'" in answer["detail"]


def test_the_api_keys_are_in_the_embedded_secrets_manager_where_the_functions_read_them(stack):
    # Given the stack started with INBOX_API_KEY_STRIPE_LOCKED set, and no variable for the other sources
    secrets = boto3.client(
        "secretsmanager",
        endpoint_url=f"http://127.0.0.1:{stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    prefix = LocalNames().api_key_secret_prefix

    def stored(source: str) -> str:
        return str(secrets.get_secret_value(SecretId=f"{prefix}{source}")["SecretString"])

    # Then that source's API-key secret holds the variable's value, as the deployed stack's secret would
    assert stored("stripe-locked") == API_KEY_FROM_THE_ENVIRONMENT
    # And each other source with an API holds its own simulator account's key (the refetches above used them)
    keys = {source: stored(source) for source in ("stripe-br", "stripe-us", "asaas")}
    assert len(set(keys.values())) == 3 and API_KEY_FROM_THE_ENVIRONMENT not in keys.values()
