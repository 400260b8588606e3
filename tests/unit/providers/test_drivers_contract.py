"""What every built-in driver promises the ingest, checked the same way for each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_718_221_503
SECRETS = {
    "stripe": "whsec_contract_test_secret",
    "standard": "whsec_Y29udHJhY3QtdGVzdC1rZXktMDEyMzQ1Njc4OQ==",
    "asaas": "$aact_contract_test_token",
}
RESOURCES = {"stripe": "pi_3PQ", "standard": "pay_3PQ", "asaas": "pay_3PQ"}
SIGNED_BODY = ("stripe", "standard")  # Asaas authenticates the sender, not the body


@pytest.fixture(params=sorted(SECRETS))
def name(request):
    return request.param


def test_registry_returns_the_module_driver(name):
    # Given the registry, When a built-in provider is looked up, Then its driver carries that name
    driver = get_driver(name)
    assert driver.name == name
    assert isinstance(driver.replay_headers, tuple)
    assert all(header == header.lower() for header in driver.replay_headers)
    assert driver.signs_timestamp is (name != "asaas")


def test_paid_sample_round_trip(name):
    # Given a sample "paid" notification, When signed, verified and parsed, Then it is the payment we described
    driver = get_driver(name)
    body = driver.sample_body(
        event_id="evt_c1", resource_id=RESOURCES[name], status="paid", amount=4990, occurred_at=NOW
    )
    request = driver.sign(body, SECRETS[name], now=NOW, event_id="evt_c1")
    driver.verify(request, SigningSecrets(SECRETS[name]), now=NOW + 60, tolerance_seconds=300)
    event = driver.parse(request)
    assert event.event_id == "evt_c1"
    assert event.resource_id == RESOURCES[name]
    assert event.amount == 4990
    assert event.occurred_at.utcoffset() is not None
    assert event.occurred_at.timestamp() == NOW


def test_stored_headers_are_enough_to_reverify(name):
    # Given only the body and the replay headers kept with the event, Then the event re-verifies (tolerance aside),
    # and the stored headers never include the secret
    driver = get_driver(name)
    request = driver.sign(b'{"k": 1}', SECRETS[name], now=NOW, event_id="evt_c2")
    stored = {h: request.headers[h] for h in driver.replay_headers if h in request.headers}
    assert SECRETS[name] not in stored.values()
    if name in SIGNED_BODY:
        driver.verify(
            WebhookRequest(body=request.body, headers=stored),
            SigningSecrets(SECRETS[name]),
            now=NOW,
            tolerance_seconds=300,
        )
    else:
        assert stored == {}


@settings(max_examples=50, deadline=None)
@given(body=st.binary(max_size=512), position=st.integers(min_value=0), now=st.integers(0, 2**33))
def test_any_body_round_trips_and_any_flipped_byte_fails(body, position, now):
    # Given arbitrary raw bytes (signatures cover bytes, never a re-serialization)
    for name in SIGNED_BODY:
        driver = get_driver(name)
        secrets = SigningSecrets(SECRETS[name])
        request = driver.sign(body, SECRETS[name], now=now)
        # When verified as received, Then it passes
        driver.verify(request, secrets, now=now, tolerance_seconds=300)
        # When any single byte is changed, Then it fails
        if body:
            index = position % len(body)
            tampered = body[:index] + bytes([body[index] ^ 0x01]) + body[index + 1 :]
            with pytest.raises(SignatureInvalid):
                driver.verify(
                    WebhookRequest(body=tampered, headers=request.headers), secrets, now=now, tolerance_seconds=300
                )


def test_drivers_import_nothing_heavy():
    # Given a fresh interpreter, When the three drivers are imported, Then no AWS SDK, pydantic or HTTP client
    # comes along (verify runs on the gateway's clock, in the ingest's cold start)
    code = (
        "import sys\n"
        "import shared.providers.stripe, shared.providers.standard, shared.providers.asaas\n"
        "heavy = {'boto3', 'botocore', 'pydantic', 'requests', 'urllib3', 'stripe', 'svix', 'standardwebhooks',"
        " 'aws_lambda_powertools', 'zoneinfo'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
