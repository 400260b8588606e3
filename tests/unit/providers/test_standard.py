"""Standard Webhooks / Svix driver: the published vector, the official libraries, tolerance, rotation, parsing."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest
import standardwebhooks
import svix.webhooks

from inbox_local.providers.standard.sender import sender
from shared.providers.base import (
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
)
from shared.providers.standard.driver import compute_signature, decode_secret, driver

# Published vector #3 (providers.md; standard-webhooks and svix test suites)
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
VECTOR_WRONG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="

SECRET = "whsec_" + base64.b64encode(b"current-key-0123456789abcdef").decode()
PREVIOUS = "whsec_" + base64.b64encode(b"previous-key-0123456789abcdef").decode()
UNRELATED = "whsec_" + base64.b64encode(b"somebody-elses-key").decode()
NOW = 1_718_221_503
TOLERANCE = 300
BODY = json.dumps(
    {
        "type": "payment.succeeded",
        "timestamp": "2024-06-12T19:45:03.123Z",
        "data": {"id": "pay_1", "status": "succeeded", "amount": 2599, "currency": "brl"},
    }
).encode()


def _headers(msg_id: str, ts: int | str, signature: str, family: str = "webhook") -> dict[str, str]:
    return {f"{family}-id": msg_id, f"{family}-timestamp": str(ts), f"{family}-signature": signature}


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None, now: float = NOW) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=now, tolerance_seconds=TOLERANCE)


class TestPublishedVector:
    @pytest.mark.parametrize("family", ["webhook", "svix"])
    def test_vector_3_passes(self, family):
        # Given the published key, id, timestamp, body and signature, under either header family
        request = WebhookRequest(body=VECTOR_BODY, headers=_headers(VECTOR_ID, VECTOR_TS, VECTOR_SIGNATURE, family))
        # When verified at the vector's own time, Then it passes
        _verify(request, SigningSecrets(VECTOR_SECRET), now=VECTOR_TS)

    @pytest.mark.parametrize("family", ["webhook", "svix"])
    def test_vector_3_variant_fails(self, family):
        # Given the published must-fail variant (...OLJ1OA=), Then no signature matches
        request = WebhookRequest(body=VECTOR_BODY, headers=_headers(VECTOR_ID, VECTOR_TS, VECTOR_WRONG, family))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(request, SigningSecrets(VECTOR_SECRET), now=VECTOR_TS)

    def test_non_canonical_base64_spelling_fails(self):
        # Given the vector's signature with only the unused low bits of its last character changed (...OLJ1OF=
        # decodes to the same 32 bytes; the Python reference library, which compares decoded bytes, accepts it),
        # Then we refuse it: the signature is compared as canonical base64 text, like the JavaScript reference
        mutated = VECTOR_SIGNATURE[:-2] + "F="
        assert base64.b64decode(mutated[3:]) == base64.b64decode(VECTOR_SIGNATURE[3:])
        request = WebhookRequest(body=VECTOR_BODY, headers=_headers(VECTOR_ID, VECTOR_TS, mutated))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(request, SigningSecrets(VECTOR_SECRET), now=VECTOR_TS)

    def test_our_sign_reproduces_the_vector(self):
        request = sender.sign(VECTOR_BODY, VECTOR_SECRET, now=VECTOR_TS, event_id=VECTOR_ID)
        assert request.header("webhook-signature") == VECTOR_SIGNATURE


class TestOfficialLibraries:
    def test_standardwebhooks_signature_verifies(self):
        # Given a signature produced by the standardwebhooks reference library
        signature = standardwebhooks.Webhook(SECRET).sign("msg_lib", datetime.fromtimestamp(NOW, tz=UTC), BODY.decode())
        # When we verify it, Then it passes
        _verify(WebhookRequest(body=BODY, headers=_headers("msg_lib", NOW, signature)))

    def test_svix_signature_verifies_under_svix_headers(self):
        # Given a signature produced by the svix library, delivered under svix-* headers as Svix does
        signature = svix.webhooks.Webhook(SECRET).sign("msg_svix", datetime.fromtimestamp(NOW, tz=UTC), BODY.decode())
        request = WebhookRequest(body=BODY, headers=_headers("msg_svix", NOW, signature, family="svix"))
        # When verified, Then it passes, and the svix-id is the event id
        _verify(request)
        assert driver.parse(request).event_id == "msg_svix"

    def test_our_sign_is_accepted_by_standardwebhooks(self):
        # Given our delivery signed now (the reference library checks against the real clock)
        now = int(time.time())
        request = sender.sign(BODY, SECRET, now=now, event_id="msg_ours")
        # When the reference library verifies it, Then it passes
        standardwebhooks.Webhook(SECRET).verify(request.body, request.headers)

    def test_our_sign_is_accepted_by_svix(self):
        now = int(time.time())
        request = sender.sign(BODY, SECRET, now=now, event_id="msg_ours")
        svix_headers = {name.replace("webhook-", "svix-"): value for name, value in request.headers.items()}
        svix.webhooks.Webhook(SECRET).verify(request.body, svix_headers)

    def test_secret_without_prefix_and_without_padding(self):
        # Given the secret as bare base64, or with its padding stripped, Then it is the same key as the library's
        bare = SECRET.removeprefix("whsec_")
        assert decode_secret(bare) == decode_secret(SECRET) == standardwebhooks.Webhook(SECRET)._whsecret
        assert decode_secret(bare.rstrip("=")) == decode_secret(SECRET)
        signature = standardwebhooks.Webhook(bare).sign("m", datetime.fromtimestamp(NOW, tz=UTC), "{}")
        _verify(WebhookRequest(body=b"{}", headers=_headers("m", NOW, signature)), SigningSecrets(bare))

    @pytest.mark.parametrize("secret", ["whsec_Zm9vYmFy!?not-base64", "whsec_", "whsec_a"])
    def test_undecodable_secret_is_a_configuration_error(self, secret):
        # Given a misconfigured secret, Then verification fails as a server error, and the message hides it
        request = sender.sign(BODY, SECRET, now=NOW)
        with pytest.raises(ValueError, match="signing secret for 'standard'") as caught:
            _verify(request, SigningSecrets(secret))
        assert "Zm9vYmFy" not in str(caught.value)


class TestVerify:
    def test_round_trip(self):
        _verify(sender.sign(BODY, SECRET, now=NOW, event_id="msg_1"))

    def test_tampered_body_id_or_timestamp_fails(self):
        # Given a valid delivery, When the body, the id or the timestamp is changed, Then it no longer verifies
        request = sender.sign(BODY, SECRET, now=NOW, event_id="msg_1")
        altered = [
            WebhookRequest(body=BODY + b" ", headers=request.headers),
            WebhookRequest(body=BODY, headers={**request.headers, "webhook-id": "msg_2"}),
            WebhookRequest(body=BODY, headers={**request.headers, "webhook-timestamp": str(NOW + 1)}),
        ]
        for candidate in altered:
            with pytest.raises(SignatureInvalid, match="no signature matches"):
                _verify(candidate)

    def test_previous_secret_verifies_during_rotation(self):
        request = sender.sign(BODY, PREVIOUS, now=NOW)
        _verify(request, SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(SECRET))

    def test_unrelated_secret_fails(self):
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sender.sign(BODY, UNRELATED, now=NOW), SigningSecrets(SECRET, PREVIOUS))

    def test_any_of_several_signatures_matches_and_other_versions_are_ignored(self):
        # Given a space-separated list: a v1a (asymmetric) entry, an unrelated v1, then ours
        ours = compute_signature("msg_1", str(NOW), BODY, decode_secret(SECRET))
        theirs = compute_signature("msg_1", str(NOW), BODY, decode_secret(UNRELATED))
        header = f"v1a,{ours} v1,{theirs}  v1,{ours}"
        # When verified, Then it passes
        _verify(WebhookRequest(body=BODY, headers=_headers("msg_1", NOW, header)))

    def test_only_other_versions_means_no_signature(self):
        ours = compute_signature("msg_1", str(NOW), BODY, decode_secret(SECRET))
        with pytest.raises(SignatureInvalid, match="no v1 signature in header"):
            _verify(WebhookRequest(body=BODY, headers=_headers("msg_1", NOW, f"v1a,{ours} v2,{ours} {ours}")))

    def test_garbage_entries_are_skipped(self):
        # (the Python reference library crashes with ValueError on an entry without a comma)
        ours = compute_signature("msg_1", str(NOW), BODY, decode_secret(SECRET))
        _verify(WebhookRequest(body=BODY, headers=_headers("msg_1", NOW, f"garbage v1,a,b v1,ç v1,{ours}")))

    @pytest.mark.parametrize("offset", [-TOLERANCE, -1, 0, 1, TOLERANCE])
    def test_timestamps_within_tolerance_pass(self, offset):
        _verify(sender.sign(BODY, SECRET, now=NOW + offset), now=NOW)

    @pytest.mark.parametrize("offset", [-TOLERANCE - 1, TOLERANCE + 1, -86_400, 86_400])
    def test_stale_and_future_timestamps_fail(self, offset):
        # Given a delivery signed more than the tolerance in the past (replay) or in the future, Then refused
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sender.sign(BODY, SECRET, now=NOW + offset), now=NOW)

    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"webhook-id": "m", "webhook-timestamp": str(NOW)},  # no signature
            {"webhook-id": "m", "svix-timestamp": str(NOW), "svix-signature": "v1,x"},  # families mixed
            {"webhook-id": "", "webhook-timestamp": str(NOW), "webhook-signature": "v1,x"},
        ],
    )
    def test_missing_headers(self, headers):
        with pytest.raises(SignatureInvalid, match="missing webhook-id, webhook-timestamp or webhook-signature"):
            _verify(WebhookRequest(body=BODY, headers=headers))

    @pytest.mark.parametrize("timestamp", ["abc", "1718221503.0", "-1718221503", "01718221503", " 1718221503"])
    def test_malformed_timestamp(self, timestamp):
        request = sender.sign(BODY, SECRET, now=NOW)
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(WebhookRequest(body=BODY, headers={**request.headers, "webhook-timestamp": timestamp}))

    def test_webhook_family_is_preferred_when_both_are_complete(self):
        # Given a delivery carrying both families, Then the webhook-* one is verified and gives the id
        request = sender.sign(BODY, SECRET, now=NOW, event_id="msg_std")
        headers = {**request.headers, **_headers("msg_other", NOW, "v1,bm9wZQ==", family="svix")}
        both = WebhookRequest(body=BODY, headers=headers)
        _verify(both)
        assert driver.parse(both).event_id == "msg_std"

    def test_reasons_never_leak_secret_or_signature(self):
        request = sender.sign(BODY, UNRELATED, now=NOW)
        with pytest.raises(SignatureInvalid) as caught:
            _verify(request)
        message = str(caught.value)
        for secret in (SECRET, UNRELATED):
            assert secret.removeprefix("whsec_") not in message
        assert (request.header("webhook-signature") or "")[3:] not in message


def _request(body: bytes, msg_id: str = "msg_1", ts: int = NOW) -> WebhookRequest:
    return sender.sign(body, SECRET, now=ts, event_id=msg_id)


class TestParse:
    def test_fields(self):
        # Given a Standard Webhooks payload about a payment
        event = driver.parse(_request(BODY))
        # Then the id is the webhook-id, and the rest comes from the body
        assert event.event_id == "msg_1"
        assert event.event_type == "payment.succeeded"
        assert event.resource_id == "pay_1"
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, 123000, tzinfo=UTC)
        assert event.provider_status == "succeeded"
        assert event.amount == 2599
        assert event.currency == "BRL"

    def test_payment_id_takes_precedence_over_id(self):
        # Given data about a refund of a payment, Then the payment is the resource
        body = json.dumps({"type": "refund.created", "data": {"id": "re_1", "payment_id": "pay_1"}}).encode()
        assert driver.parse(_request(body)).resource_id == "pay_1"

    def test_numeric_ids_become_strings(self):
        body = json.dumps({"type": "payment.paid", "data": {"id": 12345}}).encode()
        assert driver.parse(_request(body)).resource_id == "12345"

    def test_without_body_timestamp_the_header_timestamp_is_used(self):
        body = json.dumps({"type": "payment.paid", "data": {"id": "pay_1"}}).encode()
        event = driver.parse(_request(body, ts=NOW))
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        assert (event.provider_status, event.amount, event.currency) == (None, None, None)

    @pytest.mark.parametrize("header", [None, "soon", "9" * 40])
    def test_no_usable_timestamp_at_all(self, header):
        # Given a body without a timestamp and no usable webhook-timestamp header (parse of a stored event)
        headers = {"webhook-id": "msg_1"} if header is None else {"webhook-id": "msg_1", "webhook-timestamp": header}
        body = json.dumps({"type": "payment.paid", "data": {"id": "pay_1"}}).encode()
        # Then PayloadInvalid says so
        with pytest.raises(PayloadInvalid, match="no timestamp"):
            driver.parse(WebhookRequest(body=body, headers=headers))

    def test_body_timestamp_with_offset_is_converted_to_utc(self):
        body = json.dumps({"type": "t", "timestamp": "2024-06-12T16:45:03-03:00", "data": {}}).encode()
        assert driver.parse(_request(body)).occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)

    @pytest.mark.parametrize(
        "payload",
        [
            # the spec's test vector body (standard-webhooks spec repository, libraries' test vectors): no type, no data
            {"test": 2432232314},
            {"data": {"id": "pay_1"}},
            {"type": "contact.created"},
        ],
    )
    def test_a_payload_without_type_or_data_is_kept_as_a_message_about_nothing_tracked(self, payload):
        # Given a signed message whose payload the spec does not dictate (it only recommends type/timestamp/data)
        event = driver.parse(_request(json.dumps(payload).encode(), ts=NOW))
        # Then it is a well-formed event: its id is the webhook-id, its type the payload's or empty (no handler
        # routes an empty type), its time the signed header's
        assert event.event_id == "msg_1"
        assert event.event_type == payload.get("type", "")
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        if "data" not in payload:
            assert event.resource_id is None

    def test_event_without_a_resource(self):
        body = json.dumps({"type": "endpoint.ping", "data": {}}).encode()
        assert driver.parse(_request(body)).resource_id is None

    @pytest.mark.parametrize(
        ("payload", "reason"),
        [
            ({"type": 1, "data": {}}, "field type must be a string"),
            ({"type": "t", "data": []}, "field data must be an object"),
            ({"type": "t", "data": {"amount": "10"}}, "field data.amount must be an integer"),
            ({"type": "t", "data": {"status": 1}}, "field data.status must be a string"),
            ({"type": "t", "data": {"id": ["x"]}}, "field data.id must be a string"),
            ({"type": "t", "timestamp": "2024-06-12T16:45:03", "data": {}}, "field timestamp has no time zone"),
            ({"type": "t", "timestamp": "soon", "data": {}}, "field timestamp is not an ISO-8601"),
        ],
    )
    def test_invalid_payloads(self, payload, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(json.dumps(payload).encode()))

    def test_not_json(self):
        with pytest.raises(PayloadInvalid, match="not valid JSON"):
            driver.parse(_request(b"<html>"))

    def test_missing_id_header(self):
        with pytest.raises(PayloadInvalid, match="missing webhook-id header"):
            driver.parse(WebhookRequest(body=BODY, headers={}))

    def test_fallback_event_id_is_the_message_id_when_present(self):
        # Given an unparseable but authentic body, Then its webhook-id still deduplicates the retries
        assert driver.fallback_event_id(_request(b"<html>", msg_id="msg_x")) == "msg_x"
        svix_only = WebhookRequest(body=b"<html>", headers={"svix-id": "msg_s"})
        assert driver.fallback_event_id(svix_only) == "msg_s"
        assert driver.fallback_event_id(WebhookRequest(body=b"<html>", headers={})) == body_digest_id(b"<html>")


class TestSignAndSamples:
    def test_sign_without_event_id_is_deterministic(self):
        first = sender.sign(BODY, SECRET, now=NOW)
        second = sender.sign(BODY, SECRET, now=NOW + 5)
        assert first.header("webhook-id") == second.header("webhook-id")
        assert (first.header("webhook-id") or "").startswith("msg_")

    def test_replay_headers_cover_both_families(self):
        request = sender.sign(BODY, SECRET, now=NOW)
        assert set(driver.replay_headers) >= {"webhook-id", "webhook-timestamp", "webhook-signature"}
        assert set(driver.replay_headers) >= {"svix-id", "svix-timestamp", "svix-signature"}
        stored = {name: request.headers[name] for name in driver.replay_headers if name in request.headers}
        _verify(WebhookRequest(body=request.body, headers=stored))

    @pytest.mark.parametrize("status", ["pending", "paid", "refunded", "failed"])
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="msg_9", resource_id="pay_9", status=status, amount=1010, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW + 2, event_id="msg_9")
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.resource_id, event.provider_status, event.amount) == (
            "msg_9",
            "pay_9",
            status,
            1010,
        )
        assert event.event_type == f"payment.{status}"
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)  # the body's time, not the header's
