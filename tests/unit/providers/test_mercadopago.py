"""Mercado Pago driver: the manifest rules, the official SDK's validator both ways, rotation, and parsing."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest
from mercadopago.webhook import InvalidWebhookSignatureError, WebhookSignatureValidator

from inbox_local.providers.mercadopago.sender import SAMPLE_STATUSES, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.mercadopago.driver import MercadoPagoDriver, compute_signature, driver, manifest

SECRET = "mp-current-secret-signature-0123456789abcdef"
PREVIOUS = "mp-previous-secret-signature-0123456789abcdef"
NOW = 1_718_221_503
TS = "1704908010"
REQUEST_ID = "bb56a2f1-6aae-46ac-982e-9dcd3581d08e"
NOTIFICATION = {
    "id": 12345,
    "live_mode": True,
    "type": "payment",
    "date_created": "2015-03-25T10:04:58.396-04:00",
    "user_id": 44444,
    "api_version": "v1",
    "action": "payment.created",
    "data": {"id": "999999999"},
}
BODY = json.dumps(NOTIFICATION).encode()


def _request(
    body: bytes = BODY,
    *,
    data_id: str | None = "999999999",
    request_id: str | None = REQUEST_ID,
    signature: str | None = None,
    secret: str = SECRET,
    signed_id: str | None = "999999999",
) -> WebhookRequest:
    if signature is None:
        signature = f"ts={TS},v1={compute_signature(signed_id, request_id, TS, secret)}"
    headers = {"x-signature": signature}
    if request_id is not None:
        headers["x-request-id"] = request_id
    query = {"data.id": data_id, "type": "payment"} if data_id is not None else {}
    return WebhookRequest(body=body, headers=headers, query=query)


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=NOW, tolerance_seconds=300)


class TestManifest:
    def test_documented_template(self):
        # id:[data.id_url];request-id:[x-request-id_header];ts:[ts_header];
        assert manifest("999999999", REQUEST_ID, TS) == f"id:999999999;request-id:{REQUEST_ID};ts:{TS};"

    @pytest.mark.parametrize(
        ("data_id", "request_id", "expected"),
        [
            (None, REQUEST_ID, f"request-id:{REQUEST_ID};ts:{TS};"),
            ("999", None, f"id:999;ts:{TS};"),
            (None, None, f"ts:{TS};"),
        ],
    )
    def test_absent_parts_are_left_out(self, data_id, request_id, expected):
        assert manifest(data_id, request_id, TS) == expected

    def test_signature_is_hex_hmac_sha256_of_the_manifest(self):
        expected = hmac.new(SECRET.encode(), manifest("1", "r", TS).encode(), hashlib.sha256).hexdigest()
        assert compute_signature("1", "r", TS, SECRET) == expected


class TestAgainstTheOfficialSdk:
    def test_our_sign_passes_the_sdk_validator(self):
        # Given a notification signed by us, as Mercado Pago delivers it (data.id in the query)
        body = sender.sample_body(event_id="1", resource_id="123456", status="paid", amount=1, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW)
        # Then mercadopago's WebhookSignatureValidator accepts it
        WebhookSignatureValidator.validate(
            request.header("x-signature"), request.header("x-request-id"), request.query["data.id"], SECRET
        )

    @pytest.mark.parametrize(("data_id", "request_id"), [("123456", REQUEST_ID), (None, REQUEST_ID), ("1", None)])
    def test_what_the_sdk_accepts_we_accept(self, data_id, request_id):
        # Given a header the SDK validates (including its omission of absent parts)
        signature = f"ts={TS},v1={compute_signature(data_id, request_id, TS, SECRET)}"
        WebhookSignatureValidator.validate(signature, request_id, data_id, SECRET)
        body = json.dumps({**NOTIFICATION, "data": {"id": data_id}} if data_id else NOTIFICATION).encode()
        # Then our verifier accepts the same delivery
        request = _request(body, data_id=data_id, request_id=request_id, signature=signature)
        if data_id is None:
            request = WebhookRequest(body=json.dumps({**NOTIFICATION, "data": {}}).encode(), headers=request.headers)
        _verify(request)

    def test_what_the_sdk_refuses_we_refuse(self):
        signature = f"ts={TS},v1={compute_signature('999999999', REQUEST_ID, TS, 'somebody-else')}"
        with pytest.raises(InvalidWebhookSignatureError):
            WebhookSignatureValidator.validate(signature, REQUEST_ID, "999999999", SECRET)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(signature=signature))


class TestVerify:
    def test_round_trip(self):
        _verify(_request())

    def test_previous_secret_verifies_during_rotation(self):
        request = _request(secret=PREVIOUS)
        _verify(request, SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(SECRET))

    def test_any_of_several_v1_matches(self):
        ours = compute_signature("999999999", REQUEST_ID, TS, SECRET)
        _verify(_request(signature=f"ts={TS},v1={'0' * 64},v1={ours}"))
        _verify(_request(signature=f"ts={TS}, v2=future, v1={ours}"))

    def test_the_signature_binds_the_query_data_id_request_id_and_ts(self):
        ours = compute_signature("999999999", REQUEST_ID, TS, SECRET)
        for request in (
            _request(
                data_id="888888888",
                body=json.dumps({**NOTIFICATION, "data": {"id": "888888888"}}).encode(),
                signature=f"ts={TS},v1={ours}",
            ),
            _request(request_id="another-request", signature=f"ts={TS},v1={ours}"),
            _request(signature=f"ts=1704908011,v1={ours}"),
        ):
            with pytest.raises(SignatureInvalid, match="no signature matches"):
                _verify(request)

    def test_a_body_naming_another_payment_than_the_signed_one_is_refused(self):
        # Given a genuine signature for payment 999999999 and a body rewritten to name another payment
        body = json.dumps({**NOTIFICATION, "data": {"id": "111"}}).encode()
        # Then it is refused: the body is not signed, so only the signed data.id can be trusted
        with pytest.raises(SignatureInvalid, match=r"data\.id in the body differs from the signed one"):
            _verify(_request(body))

    def test_alphanumeric_ids_verify_lowercased_or_as_received(self):
        body = json.dumps({**NOTIFICATION, "type": "order", "data": {"id": "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"}}).encode()
        for signed in ("ord01jq4s4ky8hwq6na5pxb65b3d3", "ORD01JQ4S4KY8HWQ6NA5PXB65B3D3"):
            _verify(_request(body, data_id="ORD01JQ4S4KY8HWQ6NA5PXB65B3D3", signed_id=signed))

    def test_stored_events_reverify_from_the_body_data_id(self):
        # Given only what the inbox keeps (body + replay headers, no query string)
        request = _request()
        stored = {h: request.headers[h] for h in driver.replay_headers if h in request.headers}
        assert SECRET not in stored.values()
        # Then the body's data.id stands in for the query's
        _verify(WebhookRequest(body=BODY, headers=stored))

    def test_stored_events_keep_the_signed_query(self):
        # Given what the ingest keeps when the driver names its query parameters (the signed data.id, the type)
        request = _request()
        assert MercadoPagoDriver.replay_query == ("data.id", "type")
        kept = MercadoPagoDriver.replay_query
        stored_query = {name: request.query[name] for name in kept if name in request.query}
        stored = {h: request.headers[h] for h in driver.replay_headers if h in request.headers}
        # Then the event re-verifies exactly as it was received
        _verify(WebhookRequest(body=BODY, headers=stored, query=stored_query))

    def test_a_notification_signed_without_data_id_verifies(self):
        _verify(_request(data_id=None, signed_id=None, body=json.dumps({**NOTIFICATION, "data": {}}).encode()))

    def test_no_request_id_is_left_out_of_the_manifest(self):
        _verify(_request(request_id=None))

    def test_no_timestamp_tolerance_is_enforced(self):
        # The ts unit is not settled (ms per the guide, seconds per its example) and no tolerance is documented
        driver.verify(_request(), SigningSecrets(SECRET), now=NOW + 10**9, tolerance_seconds=0)
        assert driver.signs_timestamp is False

    @pytest.mark.parametrize(
        "header", ["garbage", "v1=abc", "ts=,v1=abc", "ts=12a,v1=abc", f"ts={TS},ts={TS},v1=abc", "ts=1" + "0" * 16]
    )
    def test_malformed_header(self, header):
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(_request(signature=header))

    def test_header_without_v1(self):
        with pytest.raises(SignatureInvalid, match="no v1 signature in header"):
            _verify(_request(signature=f"ts={TS}"))

    @pytest.mark.parametrize("signature", ["", None])
    def test_missing_header(self, signature):
        request = _request()
        headers = {k: v for k, v in request.headers.items() if k != "x-signature"}
        if signature is not None:
            headers["x-signature"] = signature
        with pytest.raises(SignatureInvalid, match="missing x-signature header"):
            _verify(WebhookRequest(body=BODY, headers=headers, query=request.query))

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(), SigningSecrets(""))


class TestParse:
    def test_payment_notification(self):
        event = driver.parse(_request())
        # the key is from signed parts (the URL's data.id, x-request-id), never the body's unsigned id
        signed = f"id:999999999;request-id:{REQUEST_ID};ts:"
        assert event.event_id == "s_" + hashlib.sha256(signed.encode()).hexdigest()[:40]
        assert event.event_type == "payment.created"
        assert event.resource_id == "999999999"
        assert event.occurred_at == datetime(2015, 3, 25, 14, 4, 58, 396000, tzinfo=UTC)
        # the webhook states no status or amount: the processor refetches the payment
        assert (event.provider_status, event.amount, event.currency) == (None, None, None)

    def test_type_when_there_is_no_action(self):
        body = json.dumps({k: v for k, v in NOTIFICATION.items() if k != "action"}).encode()
        assert driver.parse(_request(body)).event_type == "payment"

    @pytest.mark.parametrize("notification_type", ["merchant_order", "subscription_preapproval", "chargebacks"])
    def test_other_types_name_no_payment(self, notification_type):
        body = json.dumps({**NOTIFICATION, "type": notification_type, "action": None, "data": {"id": "7"}}).encode()
        event = driver.parse(_request(body, data_id="7"))
        assert (event.event_type, event.resource_id) == (notification_type, None)

    def test_numeric_data_id(self):
        body = json.dumps({**NOTIFICATION, "data": {"id": 999999999}}).encode()
        assert driver.parse(_request(body)).resource_id == "999999999"

    def test_the_key_is_what_the_manifest_signs_whatever_the_body_says(self):
        # Given one signed notification, and the same one posted with other body ids, actions and dates
        original = driver.parse(_request())
        replays = [
            {**NOTIFICATION, "id": 99999 + n, "action": "payment.updated", "date_created": "2099-01-01T00:00:00Z"}
            for n in range(5)
        ]
        # Then every copy has the original's key (a duplicate), however the unsigned body reads
        assert {driver.parse(_request(json.dumps(body).encode())).event_id for body in replays} == {original.event_id}
        # And another notification request (another x-request-id) is another key
        other = _request(request_id="cc56a2f1-6aae-46ac-982e-9dcd3581d08f")
        assert driver.parse(other).event_id != original.event_id

    def test_without_a_request_id_the_signed_ts_keys_it(self):
        first = driver.parse(_request(request_id=None))
        later_ts = f"ts=1704908011,v1={compute_signature('999999999', None, '1704908011', SECRET)}"
        assert driver.parse(_request(request_id=None, signature=later_ts)).event_id != first.event_id
        assert driver.parse(_request(request_id=None)).event_id == first.event_id

    def test_without_a_data_id_in_the_url_the_key_leaves_the_unsigned_body_id_out(self):
        # Given a notification whose URL carries no data.id (the manifest then signs none)
        first = driver.parse(_request(data_id=None, signed_id=None))
        moved = json.dumps({**NOTIFICATION, "data": {"id": "111"}}).encode()
        # Then another body data.id is not another key
        assert driver.parse(_request(moved, data_id=None, signed_id=None)).event_id == first.event_id

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"type": None, "action": None}, "missing field type"),
            ({"date_created": None}, "missing field date_created"),
            ({"date_created": "2015-03-25 10:04:58"}, "date_created has no time zone"),
            ({"data": {}}, "missing field data.id"),
            ({"data": "999"}, "field data must be an object"),
        ],
    )
    def test_invalid_notifications(self, changes, reason):
        body = json.dumps({k: v for k, v in {**NOTIFICATION, **changes}.items() if v is not None}).encode()
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(body, data_id=None, signed_id=None))

    def test_fallback_event_id_is_the_body_digest(self):
        assert driver.fallback_event_id(WebhookRequest(body=b"x", headers={})) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_samples_round_trip(self, status):
        body = sender.sample_body(event_id="73311", resource_id="1320000", status=status, amount=1990, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW, event_id="73311")
        assert request.query == {"data.id": "1320000", "type": "payment"}
        _verify(request)
        event = driver.parse(request)
        assert event.event_id.startswith("s_") and event.resource_id == "1320000"
        assert event.event_type == ("payment.created" if status == "pending" else "payment.updated")
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Mercado Pago sample for status 'bogus'"):
            sender.sample_body(event_id="e", resource_id="1", status="bogus", amount=1, occurred_at=NOW)
