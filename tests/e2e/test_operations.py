"""Operations on the running local stack: `inbox stats`, and expiry into the archive (`inbox retention run`)."""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from inbox_cli.main import post_webhook
from inbox_local.config import LocalNames
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from tests.e2e.conftest import RunningStack, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]


@pytest.fixture
def stack() -> Iterator[RunningStack]:
    # Redaction configured as an operator would for LGPD; `latest_charge` is a key nested in Stripe's sample bodies
    running = start_stack({"INBOX_REDACT_FIELDS": "latest_charge,email"})
    yield running
    if running.process.poll() is None:
        stop_stack(running)


def stats(stack: RunningStack) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(stack.cli("stats", "--json").stdout)
    return result


def wait_for(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.25)


def deliver_unknown_to_the_gateway(stack: RunningStack, provider: str, event_id: str) -> None:
    """A signed delivery about a payment the gateway's API does not show (yet): not `inbox send`, which registers
    its payment with the simulator first. Its refetch answers 404, so the event stays pending, retrying."""
    sender = sender_for(provider)
    now = int(time.time())
    body = sender.sample_body(
        event_id=event_id, resource_id=f"unknown_{event_id}", status="paid", amount=100, occurred_at=now
    )
    signed = sender.sign(body, DEV_SECRETS[provider], now=now, event_id=event_id)
    headers = {"content-type": "application/json", **signed.headers}
    assert post_webhook(f"{stack.url}/webhooks/{provider}", signed.body, headers)[0] == 200


def embedded_s3(stack: RunningStack):
    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def test_stats_json_counts_events_by_provider_and_status(stack):
    # Given two Standard Webhooks events (no API to ask: processed at once) and one Stripe and one Asaas event for
    # payments the gateway simulator does not know (they stay pending, retrying)
    deliver_unknown_to_the_gateway(stack, "stripe", "evt_stats_stripe")
    deliver_unknown_to_the_gateway(stack, "asaas", "evt_stats_asaas")
    for n in range(2):
        stack.cli("send", "standard", "--event-id", f"msg_stats_{n}")
    # When the operator asks for the stats once the standard events are processed
    settled = wait_for(lambda: (s := stats(stack))["events"]["totals"]["processed"] == 2 and s)
    # Then
    assert settled, stats(stack)
    by_provider = settled["events"]["by_provider"]
    assert by_provider["standard"] == {"pending": 0, "processed": 2, "ignored": 0, "failed": 0, "total": 2}
    assert (by_provider["stripe"]["pending"], by_provider["asaas"]["pending"]) == (1, 1)
    assert (settled["pending"], settled["failed"], settled["events"]["totals"]["total"]) == (2, 0, 4)
    assert settled["oldest_pending"]["pk"] == "stripe#evt_stats_stripe"
    assert 0 <= settled["oldest_pending_age_seconds"] < 120
    assert settled["payments"]["by_provider"]["standard"]["total"] == 2
    # ... and the same, for people
    assert "oldest pending: stripe#evt_stats_stripe" in stack.cli("stats").stdout


def test_retention_run_archives_what_it_expires(stack):
    # Given events of two providers in the inbox
    stack.cli("send", "stripe", "--event-id", "evt_keep_1", "--resource-id", "pi_retention_1")
    stack.cli("send", "standard", "--event-id", "msg_keep_2")
    listed = json.loads(stack.cli("events", "list", "--json").stdout)
    assert {row["event_id"] for row in listed} == {"evt_keep_1", "msg_keep_2"}
    # When the operator runs the expiry as of a moment past their retention (30 days)
    future = (datetime.now(UTC) + timedelta(days=31)).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = json.loads(stack.cli("retention", "run", "--now", future, "--json").stdout)
    # Then both were deleted and the command saw both in the archive
    assert (report["deleted"], report["archived"], report["not_archived_yet"]) == (2, 2, [])
    assert json.loads(stack.cli("events", "list", "--json").stdout) == []
    # ... and the archive bucket holds them, partitioned by provider and day, with their bodies (redacted)
    s3 = embedded_s3(stack)
    bucket = LocalNames().archive_bucket
    keys = [entry["Key"] for entry in s3.list_objects_v2(Bucket=bucket, Prefix="archive/").get("Contents", [])]
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert {key.split("/")[1] for key in keys} == {"provider=stripe", "provider=standard"}
    assert all(key.split("/")[2] == f"date={today}" and key.endswith(".jsonl.gz") for key in keys)
    lines = {
        line["pk"]: line
        for key in keys
        for line in map(json.loads, gzip.decompress(s3.get_object(Bucket=bucket, Key=key)["Body"].read()).splitlines())
    }
    assert set(lines) == {"stripe#evt_keep_1", "standard#msg_keep_2"}
    stripe_body = json.loads(lines["stripe#evt_keep_1"]["body"])
    assert stripe_body["data"]["object"]["latest_charge"] == "[redacted]"
    assert stripe_body["data"]["object"]["id"] == "pi_retention_1"
    # ... and nothing is left to expire
    again = json.loads(stack.cli("retention", "run", "--now", future, "--json").stdout)
    assert again["deleted"] == 0


def test_retention_run_refuses_a_bad_moment(stack):
    result = stack.cli("retention", "run", "--now", "next tuesday", check=False)
    assert result.returncode != 0
    assert "--now" in result.stderr


def test_a_body_the_body_bucket_no_longer_holds_is_archived_as_missing(stack):
    # Given a Stripe event whose body is too large for its item (random padding: it does not compress), so the
    # ingest stored it in the body bucket
    sender = sender_for("stripe")
    now = int(time.time())
    sample = json.loads(
        sender.sample_body(event_id="evt_big_1", resource_id="pi_big_1", status="paid", amount=100, occurred_at=now)
    )
    body = json.dumps({**sample, "padding": os.urandom(8192).hex()}).encode()
    signed = sender.sign(body, DEV_SECRETS["stripe"], now=now, event_id="evt_big_1")
    headers = {"content-type": "application/json", **signed.headers}
    assert post_webhook(f"{stack.url}/webhooks/stripe", signed.body, headers)[0] == 200
    s3 = embedded_s3(stack)
    bodies = LocalNames().body_bucket
    stored = [entry["Key"] for entry in s3.list_objects_v2(Bucket=bodies).get("Contents", [])]
    assert len(stored) == 1
    # And the bucket's lifecycle expired that body before TTL deleted the item
    s3.delete_object(Bucket=bodies, Key=stored[0])
    # When the item expires and the local stack's archiver (holding the archiver's declared S3 grants) archives it
    future = (datetime.now(UTC) + timedelta(days=31)).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = json.loads(stack.cli("retention", "run", "--now", future, "--json").stdout)
    assert (report["deleted"], report["archived"], report["not_archived_yet"]) == (1, 1, [])
    # Then its line says what is missing: S3's NoSuchKey, which the archiver's ListBucket grant lets it see
    bucket = LocalNames().archive_bucket
    keys = [entry["Key"] for entry in s3.list_objects_v2(Bucket=bucket, Prefix="archive/").get("Contents", [])]
    (line,) = [
        json.loads(raw)
        for key in keys
        for raw in gzip.decompress(s3.get_object(Bucket=bucket, Key=key)["Body"].read()).splitlines()
    ]
    assert (line["pk"], line["body"], line["body_error"]) == ("stripe#evt_big_1", None, "NoSuchKey")
    assert line["body_s3_key"] == stored[0]
