"""Stripe driver: signatures checked against stripe-python, tolerance, rotation, and the event -> payment mapping."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import stripe

from inbox_local.providers.stripe.sender import SAMPLE_STATUSES, sender
from shared.providers.base import (
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
)
from shared.providers.stripe.driver import compute_signature, driver

SECRET = "whsec_test_secret_current_0123456789"
PREVIOUS = "whsec_test_secret_previous_0123456789"
UNRELATED = "whsec_somebody_elses_secret"
NOW = 1_718_221_503
TOLERANCE = 300


def _request(body: bytes, header: str | None) -> WebhookRequest:
    return WebhookRequest(body=body, headers={} if header is None else {"stripe-signature": header})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None, now: float = NOW) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=now, tolerance_seconds=TOLERANCE)


def _event(obj: dict[str, Any], event_type: str, **extra: Any) -> bytes:
    return json.dumps(
        {"id": "evt_1", "object": "event", "type": event_type, "created": NOW, "data": {"object": obj}, **extra}
    ).encode()


BODY = _event({"id": "pi_1", "object": "payment_intent", "status": "succeeded"}, "payment_intent.succeeded")


class TestSignaturesFromStripePython:
    def test_header_generated_by_stripe_python_verifies(self):
        # Given a header made by stripe-python's own test helper
        header = stripe.WebhookSignature.generate_signature_header(BODY.decode(), SECRET, timestamp=NOW)
        # When we verify it, Then it passes
        _verify(_request(BODY, header))

    def test_our_signature_equals_stripe_pythons(self):
        # Given stripe-python's private signature function, Then ours computes the same hex digest
        expected = stripe.WebhookSignature._compute_signature(f"{NOW}.{BODY.decode()}", SECRET)
        assert compute_signature(NOW, BODY, SECRET) == expected

    def test_our_sign_is_accepted_by_stripe_python(self):
        # Given a delivery produced by our sign()
        request = sender.sign(BODY, SECRET, now=NOW)
        # When stripe-python verifies it (tolerance off: its clock is the real one), Then it passes
        assert stripe.WebhookSignature.verify_header(BODY, request.header("stripe-signature"), SECRET, None)

    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_bodies_are_events_stripe_python_constructs(self, status):
        # Given each sample body, signed by us, Then stripe-python verifies and constructs a typed Event
        body = sender.sample_body(event_id="evt_s", resource_id="pi_s", status=status, amount=1000, occurred_at=NOW)
        header = sender.sign(body, SECRET, now=NOW).header("stripe-signature")
        event = stripe.Webhook.construct_event(body, header, SECRET, tolerance=0)  # 0: its clock is the real one
        assert event.id == "evt_s"

    def test_key_is_the_whole_whsec_string_not_base64_decoded(self):
        # Given Stripe's rule (key = the whsec_ string as UTF-8), Then a signature made with the decoded form fails
        import base64
        import hashlib
        import hmac

        decoded_key = base64.b64decode(SECRET.removeprefix("whsec_") + "==")
        wrong = hmac.new(decoded_key, f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(BODY, f"t={NOW},v1={wrong}"))


class TestVerify:
    def test_round_trip(self):
        # Given our own delivery, When verified at the same instant, Then it passes
        _verify(sender.sign(BODY, SECRET, now=NOW))

    def test_tampered_body_fails(self):
        # Given a signed delivery whose body was altered by one byte, Then no signature matches
        request = sender.sign(BODY, SECRET, now=NOW)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=BODY.replace(b"succeeded", b"succeedeD"), headers=request.headers))

    def test_timestamp_is_part_of_the_signature(self):
        # Given a valid signature moved onto another timestamp, Then it no longer matches
        signature = compute_signature(NOW, BODY, SECRET)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(BODY, f"t={NOW + 1},v1={signature}"))

    def test_previous_secret_verifies_during_rotation(self):
        # Given a delivery signed with the previous secret, When current + previous are configured, Then it passes
        request = sender.sign(BODY, PREVIOUS, now=NOW)
        _verify(request, SigningSecrets(SECRET, PREVIOUS))
        # ...and without the previous secret configured, Then it fails
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(SECRET))

    def test_unrelated_secret_fails(self):
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sender.sign(BODY, UNRELATED, now=NOW), SigningSecrets(SECRET, PREVIOUS))

    def test_any_of_several_v1_signatures_matches(self):
        # Given a header with several v1 signatures (Stripe signs with every active secret while rolling one),
        # only the last of which is ours, Then it passes
        ours = compute_signature(NOW, BODY, SECRET)
        theirs = compute_signature(NOW, BODY, UNRELATED)
        _verify(_request(BODY, f"t={NOW},v1={theirs},v1={ours}"))
        _verify(_request(BODY, f"t={NOW},v1={ours},v1={theirs}"))

    def test_v0_and_unknown_schemes_are_ignored(self):
        # Given a header with a v0 (test-mode legacy) and an unknown scheme besides v1, Then only v1 counts
        ours = compute_signature(NOW, BODY, SECRET)
        _verify(_request(BODY, f"t={NOW},v0={ours[::-1]},v9=xyz,v1={ours}"))
        # ...and a v0 that would match is not accepted in place of v1
        with pytest.raises(SignatureInvalid, match="no v1 signature in header"):
            _verify(_request(BODY, f"t={NOW},v0={ours}"))

    def test_whitespace_around_items_is_tolerated(self):
        ours = compute_signature(NOW, BODY, SECRET)
        _verify(_request(BODY, f"t={NOW}, v1={ours}"))

    def test_uppercase_hex_does_not_match(self):
        # Given the hex digest in upper case (Stripe sends lower case), Then it is not accepted, as stripe-python
        ours = compute_signature(NOW, BODY, SECRET).upper()
        with pytest.raises(SignatureInvalid):
            _verify(_request(BODY, f"t={NOW},v1={ours}"))

    @pytest.mark.parametrize("offset", [0, 1, TOLERANCE])
    def test_recent_timestamps_pass(self, offset):
        # Given a delivery signed `offset` seconds ago, Then it passes up to the tolerance
        _verify(sender.sign(BODY, SECRET, now=NOW), now=NOW + offset)

    def test_stale_timestamp_fails(self):
        # Given a delivery signed tolerance + 1 seconds ago (a replay), Then it is refused
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sender.sign(BODY, SECRET, now=NOW), now=NOW + TOLERANCE + 1)

    def test_future_timestamp_fails(self):
        # Given a delivery dated tolerance + 1 seconds ahead of our clock (stripe-python would accept it),
        # Then it is refused too, and up to the tolerance ahead it passes (clock skew)
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sender.sign(BODY, SECRET, now=NOW + TOLERANCE + 1), now=NOW)
        _verify(sender.sign(BODY, SECRET, now=NOW + TOLERANCE), now=NOW)

    def test_forged_stale_delivery_reports_mismatch(self):
        # Given a forged signature on a stale timestamp, Then the reason is the mismatch (signature checked first)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sender.sign(BODY, UNRELATED, now=NOW), now=NOW + 10_000)

    @pytest.mark.parametrize("header", [None, ""])
    def test_missing_header(self, header):
        with pytest.raises(SignatureInvalid, match="missing Stripe-Signature header"):
            _verify(_request(BODY, header))

    @pytest.mark.parametrize(
        "header",
        [
            "garbage",
            "v1=abc",  # no timestamp
            "t=,v1=abc",
            "t=abc,v1=abc",
            "t=-1,v1=abc",
            "t=1718221503.5,v1=abc",
            f"t={NOW},t={NOW},v1=abc",  # which timestamp was signed?
        ],
    )
    def test_malformed_header(self, header):
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(_request(BODY, header))

    def test_header_without_v1(self):
        with pytest.raises(SignatureInvalid, match="no v1 signature in header"):
            _verify(_request(BODY, f"t={NOW}"))

    def test_non_ascii_signature_is_a_mismatch_not_a_crash(self):
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(BODY, f"t={NOW},v1=ç\udcff"))

    def test_reasons_never_leak_the_secret_or_the_signature(self):
        request = sender.sign(BODY, UNRELATED, now=NOW)
        signature = request.header("stripe-signature") or ""
        with pytest.raises(SignatureInvalid) as caught:
            _verify(request)
        message = str(caught.value)
        assert SECRET not in message
        assert UNRELATED not in message
        assert signature.split("v1=")[1] not in message

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(sender.sign(BODY, SECRET, now=NOW), SigningSecrets(""))


def _parse(body: bytes):
    return driver.parse(WebhookRequest(body=body, headers={}))


class TestParse:
    def test_payment_intent_event(self):
        # Given a payment_intent.succeeded event
        body = _event(
            {"id": "pi_1", "object": "payment_intent", "status": "succeeded", "amount": 2599, "currency": "brl"},
            "payment_intent.succeeded",
            livemode=True,
        )
        # When parsed, Then every field is taken from the event and its intent
        event = _parse(body)
        assert event.event_id == "evt_1"
        assert event.event_type == "payment_intent.succeeded"
        assert event.resource_id == "pi_1"
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)
        assert event.occurred_at.utcoffset() is not None
        assert event.provider_status == "succeeded"
        assert event.amount == 2599
        assert event.currency == "BRL"

    @pytest.mark.parametrize(
        ("refunded", "amount_refunded", "status"),
        [(True, 1000, "refunded"), (False, 400, "partially_refunded"), (False, 0, "succeeded")],
    )
    def test_charge_event_belongs_to_its_intent(self, refunded, amount_refunded, status):
        # Given a charge event, Then the resource is the charge's payment intent and the status reflects refunds
        charge = {
            "id": "ch_1",
            "object": "charge",
            "payment_intent": "pi_1",
            "amount": 1000,
            "amount_refunded": amount_refunded,
            "refunded": refunded,
            "status": "succeeded",
            "currency": "usd",
        }
        event = _parse(_event(charge, "charge.refunded"))
        assert event.resource_id == "pi_1"
        assert event.provider_status == status
        assert event.amount == 1000
        assert event.currency == "USD"

    def test_a_charge_without_an_intent_is_its_own_payment(self):
        # Given a Charges-API charge made without a PaymentIntent, Then the charge is the payment
        event = _parse(_event({"id": "ch_1", "object": "charge", "payment_intent": None}, "charge.succeeded"))
        assert event.resource_id == "ch_1"

    def test_expanded_intent_reference(self):
        event = _parse(_event({"id": "ch_1", "object": "charge", "payment_intent": {"id": "pi_9"}}, "charge.captured"))
        assert event.resource_id == "pi_9"

    @pytest.mark.parametrize("event_type", ["charge.dispute.created", "charge.dispute.closed"])
    def test_dispute_event(self, event_type):
        # Given a dispute event, Then it belongs to the intent, reads as "disputed", and its (disputed) amount
        # is not reported as the payment's amount
        dispute = {
            "id": "dp_1",
            "object": "dispute",
            "charge": "ch_1",
            "payment_intent": "pi_1",
            "amount": 500,
            "currency": "brl",
            "status": "needs_response",
        }
        event = _parse(_event(dispute, event_type))
        assert (event.resource_id, event.provider_status, event.amount, event.currency) == (
            "pi_1",
            "disputed",
            None,
            "BRL",
        )

    @pytest.mark.parametrize("event_type", ["refund.created", "charge.refund.updated"])
    def test_refund_event(self, event_type):
        # Given a refund event, Then it belongs to the intent; the refund's own status and amount are not the
        # payment's, so they are left out (the processor refetches the intent)
        refund = {
            "id": "re_1",
            "object": "refund",
            "payment_intent": "pi_1",
            "charge": "ch_1",
            "amount": 300,
            "status": "succeeded",
            "currency": "brl",
        }
        event = _parse(_event(refund, event_type))
        assert (event.resource_id, event.provider_status, event.amount) == ("pi_1", None, None)

    def test_event_not_about_a_payment_is_still_parsed(self):
        # Given a customer.created event, Then it parses with no resource (the processor ignores it)
        event = _parse(_event({"id": "cus_1", "object": "customer"}, "customer.created"))
        assert event.resource_id is None
        assert event.event_type == "customer.created"

    def test_other_event_carrying_an_intent(self):
        # Given an event of another family whose object is a payment intent, Then the intent is the resource
        event = _parse(_event({"id": "pi_7", "object": "payment_intent", "status": "processing"}, "x.updated"))
        assert event.resource_id == "pi_7"

    def test_object_kind_is_inferred_when_absent(self):
        event = _parse(_event({"id": "ch_1", "payment_intent": "pi_1", "refunded": True}, "charge.refunded"))
        assert event.provider_status == "refunded"

    @pytest.mark.parametrize(
        ("mutate", "reason"),
        [
            (lambda e: e.pop("id"), "missing field id"),
            (lambda e: e.pop("type"), "missing field type"),
            (lambda e: e.update(type=5), "field type must be a string"),
            (lambda e: e.pop("created"), "missing field created"),
            (lambda e: e.update(created="1718221503"), "field created must be an integer"),
            (lambda e: e.update(created=10**20), "not a valid epoch"),
            (lambda e: e.pop("data"), "missing field data"),
            (lambda e: e.update(data={}), "missing field data.object"),
            (lambda e: e["data"]["object"].pop("id"), "missing field data.object.id"),
            (lambda e: e["data"]["object"].update(amount="10"), "field data.object.amount must be an integer"),
            (lambda e: e["data"]["object"].update(amount=10.5), "field data.object.amount must be an integer"),
            (lambda e: e["data"]["object"].update(currency=1), "field data.object.currency must be a string"),
        ],
    )
    def test_invalid_payloads(self, mutate, reason):
        # Given an authentic event with a missing or mistyped field, Then PayloadInvalid names the field
        event = json.loads(BODY)
        mutate(event)
        with pytest.raises(PayloadInvalid, match=reason):
            _parse(json.dumps(event).encode())

    @pytest.mark.parametrize("body", [b"not json", b"\xff", b"[]"])
    def test_unparseable_bodies(self, body):
        with pytest.raises(PayloadInvalid):
            _parse(body)

    def test_fallback_event_id_is_the_body_digest(self):
        request = WebhookRequest(body=b"not json", headers={})
        assert driver.fallback_event_id(request) == body_digest_id(b"not json")


class TestSamples:
    @pytest.mark.parametrize(
        ("status", "event_type", "provider_status"),
        [
            ("pending", "payment_intent.processing", "processing"),
            ("authorized", "payment_intent.amount_capturable_updated", "requires_capture"),
            ("paid", "payment_intent.succeeded", "succeeded"),
            ("failed", "payment_intent.payment_failed", "requires_payment_method"),
            ("canceled", "payment_intent.canceled", "canceled"),
            ("partially_refunded", "charge.refunded", "partially_refunded"),
            ("refunded", "charge.refunded", "refunded"),
            ("disputed", "charge.dispute.created", "disputed"),
            ("charged_back", "charge.dispute.closed", "disputed"),
        ],
    )
    def test_sample_for_each_canonical_status(self, status, event_type, provider_status):
        # Given a sample for a canonical status, When signed, verified and parsed, Then it describes that payment
        body = sender.sample_body(event_id="evt_9", resource_id="pi_9", status=status, amount=1990, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.event_type, event.resource_id) == ("evt_9", event_type, "pi_9")
        assert event.provider_status == provider_status
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        assert event.currency == "BRL"
        if event_type.startswith(("payment_intent.", "charge.refunded")):
            assert event.amount == 1990

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Stripe sample for status 'bogus'"):
            sender.sample_body(event_id="e", resource_id="pi", status="bogus", amount=1, occurred_at=NOW)

    def test_sign_headers(self):
        request = sender.sign(b"{}", SECRET, now=NOW)
        assert request.header("Stripe-Signature") == f"t={NOW},v1={compute_signature(NOW, b'{}', SECRET)}"
        assert driver.replay_headers == ("stripe-signature",)
        assert driver.signs_timestamp is True
