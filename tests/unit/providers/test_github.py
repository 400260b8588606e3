"""GitHub driver: the published vectors, the sha1 fallback rule, rotation, and the delivery -> event mapping."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from inbox_local.providers.github.sender import SAMPLE_STATUSES, compute_legacy_signature, compute_signature, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.github.driver import GitHubDriver, driver

SECRET = "current-github-webhook-secret"
PREVIOUS = "previous-github-webhook-secret"
NOW = 1_718_221_503
BODY = json.dumps({"action": "opened", "issue": {"number": 1347}, "repository": {"full_name": "o/r"}}).encode()
DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"


def _request(body: bytes = BODY, **headers: str) -> WebhookRequest:
    base = {"x-github-delivery": DELIVERY, "x-github-event": "issues"}
    return WebhookRequest(body=body, headers={**base, **{k.replace("_", "-"): v for k, v in headers.items()}})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=NOW, tolerance_seconds=300)


class TestPublishedVectors:
    def test_vector_1_github_docs(self):
        # Given GitHub's documented example (secret "It's a Secret to Everybody", payload "Hello, World!")
        body, secret = b"Hello, World!", "It's a Secret to Everybody"
        expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        # Then our signature is the published one, and a delivery carrying it verifies
        assert compute_signature(body, secret) == expected
        _verify(_request(body, x_hub_signature_256=expected), SigningSecrets(secret))

    def test_vector_2_octokit(self):
        # Given octokit/webhooks-methods' test vector
        body, secret = b'{"foo":"bar"}', "mysecret"
        expected = "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"
        assert compute_signature(body, secret) == expected
        _verify(_request(body, x_hub_signature_256=expected), SigningSecrets(secret))

    def test_vector_1_with_one_digit_changed_fails(self):
        wrong = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18"
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(b"Hello, World!", x_hub_signature_256=wrong), SigningSecrets("It's a Secret to Everybody"))


class TestVerify:
    def test_round_trip(self):
        _verify(sender.sign(BODY, SECRET, now=NOW, event_id=DELIVERY))

    def test_tampered_body_fails(self):
        request = sender.sign(BODY, SECRET, now=NOW)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=BODY + b" ", headers=request.headers))

    def test_previous_secret_verifies_during_rotation(self):
        request = sender.sign(BODY, PREVIOUS, now=NOW)
        _verify(request, SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(SECRET))

    def test_legacy_sha1_is_accepted_only_without_a_sha256_header(self):
        # Given a delivery carrying only the legacy X-Hub-Signature (old GitHub Enterprise Server)
        legacy_only = _request(x_hub_signature=compute_legacy_signature(BODY, SECRET))
        # Then it verifies
        _verify(legacy_only)
        # ...but when a SHA-256 header is present it alone decides: a wrong one is not rescued by a right SHA-1
        both = _request(
            x_hub_signature_256=compute_signature(BODY, "somebody-else"),
            x_hub_signature=compute_legacy_signature(BODY, SECRET),
        )
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(both)

    def test_a_sha1_value_in_the_sha256_header_fails(self):
        with pytest.raises(SignatureInvalid):
            _verify(_request(x_hub_signature_256=compute_legacy_signature(BODY, SECRET)))

    @pytest.mark.parametrize("value", [None, ""])
    def test_missing_signature(self, value):
        request = _request() if value is None else _request(x_hub_signature_256=value)
        with pytest.raises(SignatureInvalid, match="missing X-Hub-Signature-256 header"):
            _verify(request)

    @pytest.mark.parametrize(
        "signature",
        [
            "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",  # no prefix
            "SHA256=" + "0" * 64,
            "sha256=ç\udcff",
        ],
    )
    def test_malformed_signatures_are_mismatches(self, signature):
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(x_hub_signature_256=signature))

    def test_no_timestamp_is_enforced(self):
        # GitHub signs no timestamp: a delivery verifies whenever it arrives
        driver.verify(sender.sign(BODY, SECRET, now=NOW), SigningSecrets(SECRET), now=NOW + 10**7, tolerance_seconds=0)
        assert driver.signs_timestamp is False

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(sender.sign(BODY, SECRET, now=NOW), SigningSecrets(""))

    def test_reasons_never_leak_the_secret(self):
        with pytest.raises(SignatureInvalid) as caught:
            _verify(sender.sign(BODY, "wrong-secret", now=NOW))
        assert SECRET not in str(caught.value)


class TestParse:
    def test_delivery_becomes_an_event_without_a_payment(self):
        # Given an `issues` delivery parsed at a known instant
        parser = GitHubDriver(clock=lambda: NOW)
        event = parser.parse(_request())
        # Then the signed body's digest is the event id (X-GitHub-Delivery is not signed), the type is
        # event.action, and no payment is named
        assert event.event_id == body_digest_id(BODY)
        assert event.event_type == "issues.opened"
        assert event.resource_id is None
        assert event.provider_status is None
        # GitHub sends no event time: occurred_at is the time the delivery was parsed
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_event_without_action(self):
        event = driver.parse(_request(b'{"zen": "Keep it logically awesome.", "hook_id": 1}', x_github_event="ping"))
        assert event.event_type == "ping"

    def test_redelivery_keeps_the_event_id(self):
        # Given the same delivery redelivered later (same GUID), Then it maps to the same event id
        first = GitHubDriver(clock=lambda: NOW).parse(_request())
        again = GitHubDriver(clock=lambda: NOW + 3600).parse(_request())
        assert first.event_id == again.event_id
        # And the same body under another delivery GUID (a captured one posted again) is the same event too
        forged = GitHubDriver(clock=lambda: NOW).parse(_request(x_github_delivery="00000000-0000-0000-0000-0000000000"))
        assert forged.event_id == first.event_id

    @pytest.mark.parametrize(
        ("headers", "reason"),
        [
            ({"x-github-event": "issues"}, "missing X-GitHub-Delivery header"),
            ({"x-github-delivery": DELIVERY}, "missing X-GitHub-Event header"),
        ],
    )
    def test_missing_headers(self, headers, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(WebhookRequest(body=BODY, headers=headers))

    @pytest.mark.parametrize("body", [b"payload=%7B%7D", b"[]", b'{"action": 3}'])
    def test_unparseable_bodies(self, body):
        with pytest.raises(PayloadInvalid):
            driver.parse(_request(body))

    def test_fallback_event_id_is_the_body_digest(self):
        assert driver.fallback_event_id(_request(b"not json")) == body_digest_id(b"not json")
        assert driver.fallback_event_id(WebhookRequest(body=b"x", headers={})) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_samples_are_signed_marketplace_purchases(self, status):
        body = sender.sample_body(event_id="d-1", resource_id="acme", status=status, amount=900, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW, event_id="d-1")
        _verify(request)
        assert request.header("x-github-event") == "marketplace_purchase"
        event = driver.parse(request)
        assert event.event_id == body_digest_id(body)
        assert event.event_type.startswith("marketplace_purchase.")
        assert json.loads(body)["marketplace_purchase"]["plan"]["monthly_price_in_cents"] == 900

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no GitHub sample for status 'refunded'"):
            sender.sample_body(event_id="e", resource_id="r", status="refunded", amount=1, occurred_at=NOW)

    def test_other_bodies_are_sent_as_ping_with_both_signatures(self):
        request = sender.sign(b'{"zen": "x"}', SECRET, now=NOW)
        assert request.header("x-github-event") == "ping"
        assert request.header("x-hub-signature") == compute_legacy_signature(b'{"zen": "x"}', SECRET)
        assert request.header("x-github-delivery")  # a GUID even without an event id

    def test_replay_headers_reverify_and_hold_no_secret(self):
        request = sender.sign(BODY, SECRET, now=NOW, event_id=DELIVERY)
        stored = {h: request.headers[h] for h in driver.replay_headers if h in request.headers}
        assert SECRET not in stored.values()
        _verify(WebhookRequest(body=BODY, headers=stored))
        assert driver.parse(WebhookRequest(body=BODY, headers=stored)).event_id == body_digest_id(BODY)
