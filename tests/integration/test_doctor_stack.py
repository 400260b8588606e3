"""`inbox --stack NAME doctor`: the source's secrets come from the stack's Secrets Manager secrets (moto), read as
the ingest reads them (current and previous), and the other sources' secrets are candidates."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from inbox_cli.doctor.command import diagnose_delivery, source_setup
from inbox_cli.doctor.diagnose import DoctorError
from inbox_cli.target import Target
from inbox_local.senders import sender_for
from shared.definitions import SourceSpec
from shared.providers.base import WebhookRequest

NOW = 1_764_590_400
BODY = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded"}, indent=2).encode()
SECRETS = {
    "stripe": {"current": "whsec_stack_stripe_current", "previous": "whsec_stack_stripe_previous"},
    "stripe-br": {"current": "whsec_stack_stripe_br_current"},
}


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Target]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for variable in ("AWS_ENDPOINT_URL", "INBOX_SECRET_STRIPE", "INBOX_SECRET_STRIPE_BR"):
        monkeypatch.delenv(variable, raising=False)
    # The local sources.json declares only stripe: a deployed stack's sources are its own (output SourceProviders)
    sources = tmp_path / "sources.json"
    sources.write_text(json.dumps([{"name": "stripe", "provider": "stripe"}]))
    monkeypatch.setenv("INBOX_SOURCES_FILE", str(sources))
    with mock_aws():
        client = boto3.client("secretsmanager")
        arns = {
            # CloudFormation-style names: the CLI finds them only through the stack's output map
            name: client.create_secret(Name=f"Doctor{name.title()}Secret-{tmp_path.name}", SecretString=json.dumps(v))[
                "ARN"
            ]
            for name, v in SECRETS.items()
        }
        deployed = tuple(SourceSpec(name, "stripe") for name in SECRETS)
        yield Target(
            "https://api", "inbox", "payments", "bodies", local=False, signing_secret_arns=arns, sources=deployed
        )


def _delivery(secret: str) -> WebhookRequest:
    return sender_for("stripe").sign(BODY, secret, now=NOW)


def test_a_delivery_signed_with_the_stacks_previous_secret_is_valid_and_says_so(stack: Target) -> None:
    setup = source_setup(stack, "stripe", secret=None)
    result = diagnose_delivery(setup, _delivery(SECRETS["stripe"]["previous"]), now=NOW)
    assert result.diagnosis == "valid" and "previous" in result.detail


def test_another_sources_stack_secret_is_named(stack: Target) -> None:
    # Given a delivery signed with source stripe-br's secret, posted to source stripe
    setup = source_setup(stack, "stripe", secret=None)
    result = diagnose_delivery(setup, _delivery(SECRETS["stripe-br"]["current"]), now=NOW)
    # Then the doctor read stripe-br's secret from the stack (a source of the stack's, not of the local sources.json)
    # and names it, never its value
    assert result.diagnosis == "wrong_secret" and "'stripe-br'" in result.detail
    for pair in SECRETS.values():
        for value in pair.values():
            assert value not in result.detail


def test_a_source_the_stack_has_no_secret_for_is_a_clear_error(stack: Target) -> None:
    bare = Target("https://api", "inbox", "payments", "bodies", local=False, signing_secret_arns={})
    with pytest.raises(DoctorError, match="no signing secret for source 'stripe'"):
        source_setup(bare, "stripe", secret=None)
    unreadable = Target(
        "https://api", "inbox", "payments", "bodies", local=False, signing_secret_arns={"stripe": "arn:nope"}
    )
    with pytest.raises(DoctorError, match="INBOX_SECRET_STRIPE"):
        source_setup(unreadable, "stripe", secret=None)
