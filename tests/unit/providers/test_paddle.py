"""Paddle Billing driver: the published vectors, paddle-python-sdk both ways, rotation, tolerance, and parsing."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from paddle_billing.Notifications import PaddleSignature, Secret, Verifier

from inbox_local.providers.paddle.sender import SAMPLE_STATUSES, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.paddle.driver import compute_signature, driver

SECRET = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_GrOWLNef+vmtjJYq4mSnHNzvc8uWoJ1I"
PREVIOUS = "pdl_ntfset_01hs0t3tw21j988db1pam5xg8m_previous0000000000000000000"
NOW = 1_718_221_503
TOLERANCE = 300


def _event(data: dict[str, Any], event_type: str = "transaction.completed", **extra: Any) -> bytes:
    event = {
        "event_id": "evt_01hv8x2acma2gz3he8dt0hpsn2",
        "event_type": event_type,
        "occurred_at": "2024-04-12T10:18:49.621022Z",
        "notification_id": "ntf_01hv8x2af8fx7vc9zwp1ed4ydy",
        "data": data,
        **extra,
    }
    return json.dumps(event).encode()


TRANSACTION = {
    "id": "txn_01hv8wptq8987qeep44cyrewp9",
    "status": "completed",
    "currency_code": "usd",
    "details": {"totals": {"subtotal": "2500", "total": "2750", "grand_total": "2750", "currency_code": "USD"}},
}
BODY = _event(TRANSACTION)


def _request(body: bytes, header: str | None) -> WebhookRequest:
    return WebhookRequest(body=body, headers={} if header is None else {"paddle-signature": header})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None, now: float = NOW) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=now, tolerance_seconds=TOLERANCE)


class _SdkRequest:
    """What paddle-python-sdk's Verifier reads from a request: `headers` and the raw `body`."""

    def __init__(self, request: WebhookRequest) -> None:
        self.headers = {"Paddle-Signature": request.header("paddle-signature")}
        self.body = request.body


class TestPublishedVectors:
    def test_vector_6(self):
        # Given the published vector: secret VALID_SECRET, body {"data": ["1", "2"]} at ts 1698796800
        body, ts = b'{"data": ["1", "2"]}', 1698796800
        header = "ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"
        assert f"ts={ts};h1={compute_signature(ts, body, 'VALID_SECRET')}" == header
        # Then it verifies at its own time, and not with one hex digit changed
        _verify(_request(body, header), SigningSecrets("VALID_SECRET"), now=ts)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(body, header[:-1] + "8"), SigningSecrets("VALID_SECRET"), now=ts)

    def test_sdk_rotation_vector_with_two_h1(self):
        # Given paddle-python-sdk's own rotation test: a header with two h1 (one bogus), body "hello-world", and
        # three candidate secrets of which only the third signed it
        header = "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02"
        signer = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh"
        other = "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_vB/yIOnTOCWIvpBadM5jzBZPHc7OmdSo"
        request = _request(b"hello-world", header)
        # Then the signer verifies as current or as previous, and a wrong pair does not
        _verify(request, SigningSecrets(signer), now=1696195954)
        _verify(request, SigningSecrets(other, signer), now=1696195954)
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(other), now=1696195954)


class TestAgainstPaddleSdk:
    def test_sdk_signature_verifies(self):
        # Given a signature computed by the SDK's PaddleSignature.calculate_hmac
        signature = PaddleSignature.calculate_hmac(SECRET, f"{NOW}:".encode() + BODY).hexdigest()
        # Then our verifier accepts it
        _verify(_request(BODY, f"ts={NOW};h1={signature}"))

    def test_our_sign_is_accepted_by_the_sdk_verifier(self):
        # Given our delivery signed now (the SDK checks its 5 s drift against the real clock)
        request = sender.sign(BODY, SECRET, now=int(time.time()))
        # Then the SDK's Verifier accepts it, with the current secret alone or in a rotation list
        assert Verifier().verify(_SdkRequest(request), Secret(SECRET)) is True
        assert Verifier().verify(_SdkRequest(request), [Secret(PREVIOUS), Secret(SECRET)]) is True

    def test_the_sdk_refuses_what_we_refuse(self):
        request = sender.sign(BODY, "pdl_ntfset_somebody_else", now=int(time.time()))
        with pytest.raises(ConnectionRefusedError):
            Verifier().verify(_SdkRequest(request), [Secret(SECRET)])
        with pytest.raises(SignatureInvalid):
            _verify(request, now=time.time())


class TestVerify:
    def test_round_trip(self):
        _verify(sender.sign(BODY, SECRET, now=NOW))

    def test_tampered_body_or_timestamp_fails(self):
        signature = compute_signature(NOW, BODY, SECRET)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(BODY + b" ", f"ts={NOW};h1={signature}"))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(BODY, f"ts={NOW + 1};h1={signature}"))

    def test_previous_secret_and_several_h1(self):
        # Given Paddle signing with both secrets during a rotation (one h1 each)
        header = f"ts={NOW};h1={compute_signature(NOW, BODY, SECRET)};h1={compute_signature(NOW, BODY, PREVIOUS)}"
        # Then either configured secret verifies it
        _verify(_request(BODY, header), SigningSecrets(SECRET))
        _verify(_request(BODY, header), SigningSecrets(PREVIOUS))
        # and a delivery signed only with the previous secret needs it configured
        only_previous = sender.sign(BODY, PREVIOUS, now=NOW)
        _verify(only_previous, SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(only_previous, SigningSecrets(SECRET))

    @pytest.mark.parametrize("offset", [0, 5, TOLERANCE])
    def test_the_system_tolerance_applies_not_the_sdks_5_seconds(self, offset):
        _verify(sender.sign(BODY, SECRET, now=NOW), now=NOW + offset)

    def test_stale_and_future_timestamps_fail(self):
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sender.sign(BODY, SECRET, now=NOW), now=NOW + TOLERANCE + 1)
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sender.sign(BODY, SECRET, now=NOW + TOLERANCE + 1), now=NOW)

    def test_forged_stale_delivery_reports_mismatch(self):
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sender.sign(BODY, "pdl_ntfset_forger", now=NOW), now=NOW + 10_000)

    def test_unknown_keys_and_whitespace_are_tolerated(self):
        signature = compute_signature(NOW, BODY, SECRET)
        _verify(_request(BODY, f"ts={NOW}; h2=future-scheme; h1={signature}"))

    @pytest.mark.parametrize(
        "header",
        ["garbage", "h1=abc", "ts=;h1=abc", "ts=abc;h1=abc", "ts=-1;h1=abc", f"ts={NOW};ts={NOW};h1=abc"],
    )
    def test_malformed_header(self, header):
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(_request(BODY, header))

    def test_header_without_h1(self):
        with pytest.raises(SignatureInvalid, match="no h1 signature in header"):
            _verify(_request(BODY, f"ts={NOW}"))

    @pytest.mark.parametrize("header", [None, ""])
    def test_missing_header(self, header):
        with pytest.raises(SignatureInvalid, match="missing Paddle-Signature header"):
            _verify(_request(BODY, header))

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(sender.sign(BODY, SECRET, now=NOW), SigningSecrets(""))

    def test_reasons_never_leak_the_secret_or_the_signature(self):
        request = sender.sign(BODY, "pdl_ntfset_forger", now=NOW)
        with pytest.raises(SignatureInvalid) as caught:
            _verify(request)
        assert SECRET not in str(caught.value)
        assert (request.header("paddle-signature") or "").split("h1=")[1] not in str(caught.value)


def _parse(body: bytes):
    return driver.parse(WebhookRequest(body=body, headers={}))


class TestParse:
    def test_transaction_event(self):
        event = _parse(BODY)
        assert event.event_id == "evt_01hv8x2acma2gz3he8dt0hpsn2"
        assert event.event_type == "transaction.completed"
        assert event.resource_id == "txn_01hv8wptq8987qeep44cyrewp9"
        assert event.provider_status == "completed"
        assert (event.amount, event.currency) == (2750, "USD")
        # RFC 3339 with microseconds, kept at full precision
        assert event.occurred_at == datetime(2024, 4, 12, 10, 18, 49, 621022, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("status", "has_amount"),
        [
            ("draft", False),
            ("ready", False),
            ("billed", False),
            ("past_due", False),
            ("paid", True),
            ("completed", True),
        ],
    )
    def test_the_amount_is_reported_once_the_transaction_is_final(self, status, has_amount):
        event = _parse(_event({**TRANSACTION, "status": status}, f"transaction.{status}"))
        assert event.provider_status == status
        assert (event.amount == 2750) is has_amount

    def test_total_when_grand_total_is_absent(self):
        totals = {"total": "1099", "currency_code": "EUR"}
        event = _parse(_event({**TRANSACTION, "details": {"totals": totals}}))
        assert event.amount == 1099

    @pytest.mark.parametrize("event_type", ["adjustment.created", "adjustment.updated"])
    def test_adjustments_belong_to_their_transaction(self, event_type):
        adjustment = {
            "id": "adj_01hv8x6f6bcr3cn8vq2b5xv1y6",
            "action": "refund",
            "transaction_id": "txn_01hv8wptq8987qeep44cyrewp9",
            "status": "pending_approval",
            "currency_code": "USD",
            "totals": {"total": "500"},
        }
        event = _parse(_event(adjustment, event_type))
        assert (event.resource_id, event.provider_status, event.amount) == (
            "txn_01hv8wptq8987qeep44cyrewp9",
            None,
            None,
        )

    def test_other_events_name_no_payment(self):
        event = _parse(_event({"id": "sub_01hv8y5ehszzq0yv20ttx3166y", "status": "active"}, "subscription.created"))
        assert (event.resource_id, event.provider_status) == (None, None)

    @pytest.mark.parametrize(
        ("mutate", "reason"),
        [
            (lambda e: e.pop("event_id"), "missing field event_id"),
            (lambda e: e.pop("event_type"), "missing field event_type"),
            (lambda e: e.pop("occurred_at"), "missing field occurred_at"),
            (lambda e: e.update(occurred_at="2024-04-12 10:18:49"), "occurred_at has no time zone"),
            (lambda e: e.update(occurred_at="today"), "occurred_at is not an ISO-8601"),
            (lambda e: e.pop("data"), "missing field data"),
            (lambda e: e["data"].pop("id"), "missing field data.id"),
            (lambda e: e["data"]["details"]["totals"].update(grand_total=27.5), "not an amount in minor units"),
            (lambda e: e["data"]["details"]["totals"].update(grand_total="27.50"), "not an amount in minor units"),
        ],
    )
    def test_invalid_payloads(self, mutate, reason):
        event = json.loads(BODY)
        mutate(event)
        with pytest.raises(PayloadInvalid, match=reason):
            _parse(json.dumps(event).encode())

    def test_fallback_event_id_is_the_body_digest(self):
        assert driver.fallback_event_id(WebhookRequest(body=b"x", headers={})) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_samples_round_trip(self, status):
        body = sender.sample_body(event_id="evt_9", resource_id="txn_9", status=status, amount=1990, occurred_at=NOW)
        request = sender.sign(body, SECRET, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.resource_id) == ("evt_9", "txn_9")
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        if status == "paid":
            assert (event.event_type, event.amount, event.currency) == ("transaction.completed", 1990, "USD")

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Paddle sample for status 'bogus'"):
            sender.sample_body(event_id="e", resource_id="t", status="bogus", amount=1, occurred_at=NOW)

    def test_sign_header_and_replay_headers(self):
        request = sender.sign(b"{}", SECRET, now=NOW)
        assert request.header("Paddle-Signature") == f"ts={NOW};h1={compute_signature(NOW, b'{}', SECRET)}"
        assert driver.replay_headers == ("paddle-signature",)
        assert driver.signs_timestamp is True
