"""The doctor on recorded rejections (`doctor_for_rejected`): records built as the rejected-delivery log writes them
(secret-bearing headers as keyed fingerprints, bodies truncated at 64 KB or redacted), verified as of reception."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from inbox_cli.doctor import SourceSetup, doctor_for_rejected
from inbox_cli.doctor.candidates import SecretCandidate
from inbox_local.senders import sender_for
from shared.providers.base import SigningSecrets, WebhookRequest

RECEIVED = 1_764_590_400
FINGERPRINT_KEY = b"per-deployment-fingerprint-key"
STRIPE_SECRET = "whsec_stripe_current_for_rejected_tests"
TOKEN = "asaas-token-current-0123456789"
PREVIOUS_TOKEN = "asaas-token-previous-0123456789"
PRETTY = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded", "data": {"amount": 1990}}, indent=2).encode()
COMPACT = json.dumps(json.loads(PRETTY), separators=(",", ":")).encode()


def fingerprint(value: str) -> str:
    """As the log fingerprints a secret-bearing header: HMAC-SHA256 under the deployment's key."""
    return hmac.new(FINGERPRINT_KEY, value.encode(), hashlib.sha256).hexdigest()


@dataclass
class Record:
    """The fields of inbox_cli.rejected.RejectedDelivery the doctor reads."""

    source: str
    provider: str
    headers: dict[str, Any]
    body: bytes
    query: dict[str, Any] = field(default_factory=dict)
    received_at: str = datetime.fromtimestamp(RECEIVED, tz=UTC).isoformat()
    body_truncated: bool = False
    body_redacted: bool = False
    reason: str = "signature_invalid"


def record_of(
    request: WebhookRequest, provider: str, *, secret_headers: tuple[str, ...] = (), **changes: Any
) -> Record:
    headers: dict[str, Any] = {
        name: ({"fingerprint": fingerprint(value)} if name in secret_headers else value)
        for name, value in request.headers.items()
    }
    return Record(
        source=provider, provider=provider, headers=headers, body=request.body, query=dict(request.query), **changes
    )


def setup(provider: str, secrets: SigningSecrets, **changes: Any) -> SourceSetup:
    options: dict[str, Any] = {"tolerance_seconds": 300, "fingerprint": fingerprint}
    options.update(changes)
    return SourceSetup(source=provider, provider=provider, secrets=secrets, **options)


def stripe_record(**changes: Any) -> Record:
    request = sender_for("stripe").sign(PRETTY, STRIPE_SECRET, now=RECEIVED)
    return record_of(request, "stripe", **changes)


def test_a_recorded_re_serialized_stripe_delivery_is_diagnosed_as_of_its_reception():
    # Given a Stripe rejection whose body was re-serialized, recorded long ago (so "now" would be stale)
    record = stripe_record()
    record.body = COMPACT
    # When the doctor reads it
    result = doctor_for_rejected(record, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    # Then the re-serialization is found, and the timestamp is judged at reception, not today
    assert result.diagnosis == "body_reserialized"
    assert result.detail.startswith("The body was re-serialized before verification")
    assert "tolerance" not in result.detail
    assert STRIPE_SECRET not in result.detail


def test_a_truncated_body_cannot_be_re_verified_byte_for_byte():
    record = stripe_record(body_truncated=True)
    record.body = PRETTY[:40]
    result = doctor_for_rejected(record, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    assert result.diagnosis == "unexplained"
    assert "truncated" in result.detail and "cannot be re-verified byte for byte" in result.detail


def test_a_redacted_body_cannot_be_re_verified_but_its_headers_still_speak():
    # Given a redacted body whose delivery also carries a stale timestamp
    request = sender_for("stripe").sign(PRETTY, STRIPE_SECRET, now=RECEIVED - 3600)
    record = record_of(request, "stripe", body_redacted=True)
    record.body = PRETTY.replace(b"1990", b'"[redacted]"')
    result = doctor_for_rejected(record, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    # Then what the headers alone say is said: the timestamp was an hour old when it arrived
    assert result.diagnosis == "timestamp_out_of_tolerance"
    assert "3600 s old" in result.detail
    # And with a fresh timestamp, that the body cannot be re-verified
    fresh = record_of(sender_for("stripe").sign(PRETTY, STRIPE_SECRET, now=RECEIVED), "stripe", body_redacted=True)
    fresh.body = record.body
    answer = doctor_for_rejected(fresh, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    assert answer.diagnosis == "unexplained" and "redacted" in answer.detail


def test_a_recorded_delivery_missing_its_header_says_which():
    record = stripe_record()
    record.headers.pop("stripe-signature")
    result = doctor_for_rejected(record, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    assert result.diagnosis == "missing_header" and "Stripe-Signature" in result.detail


def test_a_recorded_github_delivery_at_a_stripe_source_is_the_wrong_provider():
    request = sender_for("github").sign(PRETTY, "github-secret-000000000", now=RECEIVED)
    record = record_of(request, "stripe")
    result = doctor_for_rejected(record, setup("stripe", SigningSecrets(STRIPE_SECRET)))
    assert result.diagnosis == "wrong_provider" and "GitHub" in result.detail


def _asaas_record(token: str) -> Record:
    request = sender_for("asaas").sign(PRETTY, token, now=RECEIVED)
    return record_of(request, "asaas", secret_headers=("asaas-access-token",))


def test_a_static_tokens_fingerprint_matching_the_previous_token_is_a_wrong_secret():
    # Given an Asaas rejection: the token header is stored only as its fingerprint
    record = _asaas_record(PREVIOUS_TOKEN)
    assert PREVIOUS_TOKEN not in json.dumps(record.headers)
    # When the doctor compares it with the source's tokens' fingerprints
    result = doctor_for_rejected(record, setup("asaas", SigningSecrets(TOKEN, PREVIOUS_TOKEN)))
    # Then it is the previous token, named without its value
    assert result.diagnosis == "wrong_secret"
    assert "previous" in result.detail
    assert TOKEN not in result.detail and PREVIOUS_TOKEN not in result.detail


def test_a_static_token_of_another_source_is_named_by_that_source():
    other = "asaas-token-of-the-second-account"
    record = _asaas_record(other)
    alternatives = (SecretCandidate("the secret of source 'asaas-2'", other),)
    result = doctor_for_rejected(record, setup("asaas", SigningSecrets(TOKEN), alternatives=lambda: alternatives))
    assert result.diagnosis == "wrong_secret" and "'asaas-2'" in result.detail
    assert other not in result.detail


def test_the_current_token_is_valid_and_an_unknown_one_unexplained():
    current = doctor_for_rejected(_asaas_record(TOKEN), setup("asaas", SigningSecrets(TOKEN)))
    assert current.diagnosis == "valid"
    unknown = doctor_for_rejected(_asaas_record("nobody-knows-this-token"), setup("asaas", SigningSecrets(TOKEN)))
    assert unknown.diagnosis == "unexplained"


def test_an_iugu_authorization_with_a_scheme_word_is_matched_by_fingerprint():
    # Given iugu's token sent as "Basic <token>" in Authorization, recorded as a fingerprint
    request = WebhookRequest(body=b"event=invoice.status_changed", headers={"authorization": f"Basic {PREVIOUS_TOKEN}"})
    record = record_of(request, "iugu", secret_headers=("authorization",))
    result = doctor_for_rejected(record, setup("iugu", SigningSecrets(TOKEN, PREVIOUS_TOKEN)))
    assert result.diagnosis == "wrong_secret" and "previous" in result.detail


def test_without_the_fingerprint_key_the_token_cannot_be_compared():
    result = doctor_for_rejected(_asaas_record(TOKEN), setup("asaas", SigningSecrets(TOKEN), fingerprint=None))
    assert result.diagnosis == "unexplained" and "fingerprint key" in result.detail
