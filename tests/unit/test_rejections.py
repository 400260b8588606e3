"""The rejected-delivery log's pure parts: reason codes, ids, fingerprints, what is kept of a delivery."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.senders import sender_for
from shared import definitions
from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver, provider_names
from shared.rejections import (
    MinuteBudget,
    Refusal,
    RejectionLog,
    RejectionLogSettings,
    SecretCarriers,
    fingerprint,
    is_rejection_id,
    kept_body,
    reason_for_signature_refusal,
    rejection_id,
)
from shared.settings import ConfigurationError

KEY = b"test-fingerprint-key"
NOW = 1_780_000_000.0


def refusal_of(driver_name: str, request: WebhookRequest, reason: str = "signature_invalid") -> Refusal:
    return Refusal(
        source=driver_name,
        provider=driver_name,
        reason=reason,
        detail="no signature matches",
        headers=request.headers,
        query=request.query,
        body=request.body,
        source_ip="203.0.113.9",
        user_agent="test",
    )


def log(**settings: object) -> RejectionLog:
    values: dict[str, object] = {"table": "rejected", "fingerprint_key": KEY.decode()}
    values.update(settings)
    return RejectionLog(RejectionLogSettings(**values), key=lambda: KEY, clock=lambda: NOW)  # type: ignore[arg-type]


class TestReasonCodes:
    @pytest.mark.parametrize("provider", provider_names())
    def test_a_delivery_without_any_proof_is_signature_missing_or_invalid_for_every_provider(self, provider):
        # Given a delivery that carries no header at all
        driver = get_driver(provider)
        # When it is verified
        with pytest.raises(SignatureInvalid) as refused:
            driver.verify(
                WebhookRequest(body=b'{"a": 1}', headers={}, path=f"/webhooks/{provider}"),
                SigningSecrets(DEV_SECRETS[provider]),
                now=NOW,
                tolerance_seconds=300,
            )
        # Then its reason says the proof is missing (Adyen signs inside the body: a body without one is invalid)
        expected = "signature_invalid" if provider == "adyen" else "signature_missing"
        assert reason_for_signature_refusal(str(refused.value)) == expected

    def test_a_stale_timestamp_is_its_own_reason(self):
        # Given a Stripe delivery correctly signed 15 minutes ago
        sender = sender_for("stripe")
        body = sender.sample_body(event_id="evt_1", resource_id="pi_1", status="paid", amount=1, occurred_at=int(NOW))
        request = sender.sign(body, DEV_SECRETS["stripe"], now=int(NOW) - 900, event_id="evt_1")
        # When it is verified now
        with pytest.raises(SignatureInvalid) as refused:
            get_driver("stripe").verify(request, SigningSecrets(DEV_SECRETS["stripe"]), now=NOW, tolerance_seconds=300)
        # Then the reason is the timestamp, not the signature
        assert reason_for_signature_refusal(str(refused.value)) == "timestamp_out_of_tolerance"

    def test_a_wrong_signature_and_a_malformed_header(self):
        assert reason_for_signature_refusal("no signature matches") == "signature_invalid"
        assert reason_for_signature_refusal("malformed header") == "signature_malformed"
        assert reason_for_signature_refusal("no v1 signature in header") == "signature_malformed"

    def test_every_code_the_ingest_records_is_declared(self):
        codes = {
            reason_for_signature_refusal(m) for m in ("missing x", "timestamp outside tolerance", "x", "malformed")
        }
        declared = {
            "body_undecodable",
            "ip_not_allowed",
            "client_certificate_missing",
            "unknown_source",
            "too_many_events",
        }
        assert codes | declared == set(definitions.REJECTION_REASONS)


class TestIds:
    def test_an_id_has_the_ulid_layout_and_sorts_by_minute(self):
        # Given slots of two consecutive minutes
        earlier = rejection_id("stripe", 1_780_000_020 // 60 * 60, 59)
        later = rejection_id("stripe", 1_780_000_020 // 60 * 60 + 60, 0)
        # Then each is "rej_" + 26 Crockford characters, and the later minute sorts after
        assert is_rejection_id(earlier) and is_rejection_id(later)
        assert len(earlier) == 30
        assert earlier < later

    def test_one_slot_of_one_source_and_minute_is_one_id(self):
        minute = 1_780_000_020 // 60 * 60
        ids = {rejection_id(source, minute, slot) for source in ("stripe", "asaas") for slot in range(60)}
        assert len(ids) == 120
        assert rejection_id("stripe", minute, 3) == rejection_id("stripe", minute, 3)

    def test_garbage_is_not_an_id(self):
        assert not is_rejection_id("rej_../../etc")
        assert not is_rejection_id("stripe#evt_1")


class TestFingerprints:
    def test_a_fingerprint_is_keyed(self):
        # Given one token
        token = "tok_live_123"
        # Then its fingerprint is stable under one key, differs under another, and is not the token
        assert fingerprint(KEY, token) == fingerprint(KEY, token)
        assert fingerprint(KEY, token) != fingerprint(b"other deployment", token)
        assert len(fingerprint(KEY, token)) == 64 and token not in fingerprint(KEY, token)

    def test_which_carriers_hold_a_secret(self):
        # The static tokens of the drivers' schemes
        assert SecretCarriers.of(get_driver("asaas")).header_is_secret("asaas-access-token")
        assert SecretCarriers.of(get_driver("hotmart")).header_is_secret("x-hotmart-hottok")
        iugu = SecretCarriers.of(get_driver("iugu"))
        assert iugu.header_is_secret("authorization") and iugu.query_is_secret("token")
        # Credentials by name, whatever the driver
        stripe = SecretCarriers.of(get_driver("stripe"))
        assert all(stripe.header_is_secret(n) for n in ("authorization", "cookie", "x-api-key", "x-auth-token"))
        assert stripe.query_is_secret("access_token")
        # Signatures and ordinary headers are kept as sent (PagBank's "token" header is a digest, a replay header)
        assert not stripe.header_is_secret("stripe-signature")
        assert not stripe.header_is_secret("content-type")
        assert not SecretCarriers.of(get_driver("pagbank")).header_is_secret("x-authenticity-token")
        assert not SecretCarriers.of(get_driver("kiwify")).query_is_secret("signature")


class TestRecord:
    @pytest.mark.parametrize(
        ("provider", "headers", "query", "body"),
        [
            ("asaas", {"asaas-access-token": "SECRET-asaas-token"}, {}, b'{"id": "evt_1"}'),
            (
                "hotmart",
                {"X-Hotmart-Hottok": "SECRET-hottok"},
                {},
                b'{"id": "e1", "hottok": "SECRET-hottok", "data": {}}',
            ),
            ("iugu", {"authorization": "Basic SECRET-iugu"}, {"token": "SECRET-iugu-query"}, b"event=invoice.paid"),
            ("stripe", {"cookie": "session=SECRET-cookie", "stripe-signature": "t=1,v1=ab"}, {}, b"{}"),
        ],
    )
    def test_no_secret_bearing_value_is_stored_anywhere_in_the_item(self, provider, headers, query, body):
        # Given a refused delivery that presents a secret in a header, the query or the body
        request = WebhookRequest(body=body, headers={k.lower(): v for k, v in headers.items()}, query=query)
        # When its record is built
        item = log().item(refusal_of(provider, request), get_driver(provider), now=NOW)
        # Then no secret value appears in any attribute; each secret header is its fingerprint
        flat = json.dumps(item, default=lambda v: v.decode("latin-1"))
        assert "SECRET" not in flat
        for name, value in request.headers.items():
            if "SECRET" in value:
                assert item["headers"][name] == {"fingerprint": fingerprint(KEY, value)}
        for name, value in query.items():
            assert item["query"][name] == {"fingerprint": fingerprint(KEY, value)}
        # and what is not a secret is kept as sent
        if "stripe-signature" in request.headers:
            assert item["headers"]["stripe-signature"] == "t=1,v1=ab"

    def test_the_schema_fields(self):
        # Given a forged Stripe delivery
        request = WebhookRequest(body=b'{"id": "evt_1"}', headers={"stripe-signature": "t=1,v1=00"})
        # When its record is built
        item = log().item(refusal_of("stripe", request), get_driver("stripe"), now=NOW)
        # Then it carries the agreed fields, expiring after 3 days by default
        assert is_rejection_id(item["pk"])
        assert item["source"] == item["provider"] == "stripe"
        assert item["reason"] == "signature_invalid" and item["detail"] == "no signature matches"
        assert item["received_at"].startswith("2026-05-28T") and item["received_day"] == "2026-05-28"
        assert item["body"] == request.body and item["body_size"] == len(request.body)
        assert item["body_sha256"] == hashlib.sha256(request.body).hexdigest()
        assert item["body_truncated"] is False and item["body_redacted"] is False
        assert item["expires_at"] == int(NOW) + 3 * 86_400
        assert (item["source_ip"], item["user_agent"]) == ("203.0.113.9", "test")


class TestKeptBody:
    def test_personal_data_is_redacted_and_the_digest_is_of_the_original(self):
        # Given a JSON body with an e-mail and a CPF, and those fields configured for redaction
        raw = b'{"customer": {"email": "ana@example.com", "cpf": "123"}, "id": "evt_1"}'
        item = log(redact_fields="email, CPF").item(
            refusal_of("stripe", WebhookRequest(body=raw, headers={})), get_driver("stripe"), now=NOW
        )
        # Then the stored body has neither value, says it was redacted, and size/sha256 are the delivery's own
        assert b"ana@example.com" not in item["body"] and b'"123"' not in item["body"]
        assert json.loads(item["body"])["customer"] == {"email": "[redacted]", "cpf": "[redacted]"}
        assert item["body_redacted"] is True
        assert item["body_sha256"] == hashlib.sha256(raw).hexdigest() and item["body_size"] == len(raw)

    def test_a_large_body_is_cut_at_64_kb(self):
        raw = b'{"x": "' + b"a" * 100_000 + b'"}'
        kept = kept_body(raw, redact_fields=frozenset(), secret_body_fields=(), limit=64 * 1024)
        assert kept.body == raw[: 64 * 1024] and kept.truncated is True

    def test_a_body_that_cannot_be_redacted_is_not_kept(self):
        # Given redaction configured and a body that is not JSON
        kept = kept_body(
            b"name=Ana&email=ana@example.com", redact_fields=frozenset({"email"}), secret_body_fields=(), limit=65536
        )
        # Then nothing of it is kept
        assert kept.body is None

    def test_without_redaction_the_bytes_are_kept_exactly(self):
        raw = b'{ "b":1,  "a" : "\\u00e9" }'
        assert kept_body(raw, redact_fields=frozenset(), secret_body_fields=(), limit=65536).body == raw


class TestBudget:
    def test_at_most_n_per_minute_then_refilled(self):
        # Given a budget of 5 a minute on a controlled clock
        clock = [0.0]
        budget = MinuteBudget(5, clock=lambda: clock[0])
        # When 6 refusals of one source come at once
        taken = [budget.take("stripe") for _ in range(6)]
        # Then 5 are recorded, another source has its own budget, and a minute later there are 5 again
        assert taken == [True] * 5 + [False]
        assert budget.take("asaas")
        clock[0] = 60.0
        assert [budget.take("stripe") for _ in range(6)] == [True] * 5 + [False]

    def test_it_refills_gradually(self):
        clock = [0.0]
        budget = MinuteBudget(60, clock=lambda: clock[0])
        assert sum(budget.take("s") for _ in range(100)) == 60
        clock[0] = 10.0
        assert sum(budget.take("s") for _ in range(100)) == 10


class TestSettings:
    def test_defaults(self):
        settings = RejectionLogSettings.from_environ({})
        assert (settings.table, settings.retention_days, settings.per_minute) == (None, 3, 60)

    @pytest.mark.parametrize(
        ("environ", "message"),
        [
            ({"INBOX_REJECTED_TABLE": "t"}, "fingerprint"),
            ({"INBOX_REJECTED_PER_SOURCE_PER_MINUTE": "0"}, "INBOX_REJECTED_PER_SOURCE_PER_MINUTE"),
            ({"INBOX_REJECTED_RETENTION_DAYS": "30"}, "INBOX_REJECTED_RETENTION_DAYS"),
            ({"INBOX_REJECTED_RETENTION_DAYS": "three"}, "INBOX_REJECTED_RETENTION_DAYS"),
        ],
    )
    def test_bad_values_are_refused_with_their_variable(self, environ, message):
        with pytest.raises(ConfigurationError, match=message):
            RejectionLogSettings.from_environ(environ)


def test_the_clock_is_not_used_for_the_budget_by_default():
    # The budget runs on a monotonic clock: a wall-clock step back cannot refill it.
    assert MinuteBudget(1).clock is time.monotonic
