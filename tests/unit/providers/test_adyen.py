"""Adyen driver: the published vector, Adyen's Python library both ways, every item verified, and the mapping."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from Adyen.util import generate_notification_sig, is_valid_hmac_notification

from inbox_local.providers.adyen.sender import SAMPLE_STATUSES, sender
from shared.providers.adyen.driver import (
    PAYMENT_EVENT_CODES,
    STATUS_TABLE,
    compute_signature,
    decode_key,
    driver,
    signing_string,
)
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id

# Published vector #8 (Adyen's libraries' tests)
VECTOR_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
VECTOR_ITEM: dict[str, Any] = {
    "pspReference": "7914073381342284",
    "merchantReference": "TestPayment-1407325143704",
    "merchantAccountCode": "TestMerchant",
    "amount": {"currency": "EUR", "value": 1130},
    "eventCode": "AUTHORISATION",
    "success": "true",
    "eventDate": "2019-05-06T17:15:34.121+02:00",
    "operations": ["CANCEL", "CAPTURE", "REFUND"],
    "paymentMethod": "visa",
}
VECTOR_SIGNATURE = "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="
KEY = "6c6f63616c2d646576656c6f706d656e742d6f6e6c792d6164796e2d6b6579"
PREVIOUS = "70726576696f75732d6b65792d70726576696f75732d6b65792d707265766b65"
NOW = 1_718_221_503


def _signed_item(item: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    signed = copy.deepcopy(item)
    signed.setdefault("additionalData", {})["hmacSignature"] = generate_notification_sig(item, key).decode()
    return signed


def _notification(*items: dict[str, Any]) -> bytes:
    return json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": i} for i in items]}).encode()


def _request(body: bytes) -> WebhookRequest:
    return WebhookRequest(body=body, headers={"content-type": "application/json"})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(KEY), now=NOW, tolerance_seconds=300)


def _item(event_code: str = "AUTHORISATION", success: str = "true", **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "amount": {"currency": "EUR", "value": 1990},
        "eventCode": event_code,
        "eventDate": "2024-06-12T21:45:03+02:00",
        "merchantAccountCode": "InboxMerchantECOM",
        "merchantReference": "order-7",
        "pspReference": "QFQTPCQ8HXSKGK82",
        "success": success,
    }
    item.update(extra)
    return item


class TestPublishedVector:
    def test_vector_8(self):
        # Given the published signing string and key, Then our signature is the published one
        text = "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"
        assert signing_string(VECTOR_ITEM) == text
        assert compute_signature(text, decode_key(VECTOR_KEY)) == VECTOR_SIGNATURE
        # And a notification carrying it verifies (with the key in either case of hex digits)
        body = _notification({**VECTOR_ITEM, "additionalData": {"hmacSignature": VECTOR_SIGNATURE}})
        _verify(_request(body), SigningSecrets(VECTOR_KEY))
        _verify(_request(body), SigningSecrets(VECTOR_KEY.lower()))

    def test_vector_8_with_another_amount_fails(self):
        tampered = {**VECTOR_ITEM, "amount": {"currency": "EUR", "value": 1131}}
        body = _notification({**tampered, "additionalData": {"hmacSignature": VECTOR_SIGNATURE}})
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(body), SigningSecrets(VECTOR_KEY))


class TestAgainstAdyensLibrary:
    def test_library_signatures_verify(self):
        body = _notification(
            _signed_item(_item()),
        )
        _verify(_request(body))

    def test_our_signatures_pass_the_library(self):
        # Given a notification signed by our sign()
        request = sender.sign(_notification(_item("REFUND", originalReference="QFQTPCQ8HXSKGK82")), KEY, now=NOW)
        # Then Adyen's is_valid_hmac_notification accepts it
        assert is_valid_hmac_notification(json.loads(request.body), KEY) is True

    @pytest.mark.parametrize("event_code", ["CAPTURE", "REFUND", "CHARGEBACK"])
    def test_modifications_sign_the_original_reference(self, event_code):
        item = _item(event_code, originalReference="QFQTPCQ8HXSKGK82", pspReference="LKJHGFDSA1234567")
        body = _notification(_signed_item(item))
        _verify(_request(body))
        with pytest.raises(SignatureInvalid):
            _verify(_request(body.replace(b"QFQTPCQ8HXSKGK82", b"QFQTPCQ8HXSKGK83")))


class TestVerify:
    def test_every_item_must_verify(self):
        # Given two signed items, one of which was altered after signing
        good, bad = _signed_item(_item()), _signed_item(_item("CAPTURE", pspReference="X"))
        bad["success"] = "false"
        # Then the delivery is refused, whichever position the bad item has (the library only checks the first)
        for body in (_notification(good, bad), _notification(bad, good)):
            with pytest.raises(SignatureInvalid, match="no signature matches"):
                _verify(_request(body))
        assert is_valid_hmac_notification(json.loads(_notification(good, bad)), KEY) is True

    def test_previous_key_verifies_during_rotation(self):
        body = _notification(_signed_item(_item(), PREVIOUS))
        _verify(_request(body), SigningSecrets(KEY, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(_request(body), SigningSecrets(KEY))

    def test_a_reserialized_body_still_verifies(self):
        # Adyen signs fields, not bytes: key order and spacing do not matter
        body = _notification(_signed_item(_item()))
        _verify(_request(json.dumps(json.loads(body), indent=4, sort_keys=True).encode()))

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"not json", "body is not an Adyen notification"),
            (b'{"live": "false"}', "body is not an Adyen notification"),
            (b'{"notificationItems": [{"other": {}}]}', "body is not an Adyen notification"),
            (b'{"notificationItems": []}', "no notification items"),
            (_notification(_item()), "notification item without hmacSignature"),
            (_notification({**_item(), "additionalData": {"hmacSignature": ""}}), "without hmacSignature"),
            (
                _notification({**_item(), "pspReference": {"x": 1}, "additionalData": {"hmacSignature": "x"}}),
                "malformed notification item",
            ),
        ],
    )
    def test_unsigned_or_malformed_deliveries(self, body, reason):
        with pytest.raises(SignatureInvalid, match=reason):
            _verify(_request(body))

    @pytest.mark.parametrize("key", ["not-hex-at-all", "abc", "zz" * 32])
    def test_a_key_that_is_not_hex_is_a_configuration_error(self, key):
        with pytest.raises(ValueError, match="not a hex HMAC key") as caught:
            _verify(_request(_notification(_signed_item(_item()))), SigningSecrets(key))
        assert key not in str(caught.value)

    def test_no_timestamp_is_enforced(self):
        driver.verify(_request(_notification(_signed_item(_item()))), SigningSecrets(KEY), now=0, tolerance_seconds=0)
        assert driver.signs_timestamp is False
        assert driver.replay_headers == ()


class TestParse:
    def test_authorisation(self):
        event = driver.parse(_request(_notification(_signed_item(_item()))))
        assert event.event_type == "AUTHORISATION"
        assert event.resource_id == "QFQTPCQ8HXSKGK82"
        assert event.provider_status == "authorized"
        assert (event.amount, event.currency) == (1990, "EUR")
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)

    def test_the_event_id_is_derived_from_psp_reference_event_code_and_success(self):
        # Given the same notification redelivered (another eventDate, other additionalData, re-serialized)
        first = driver.parse(_request(_notification(_item())))
        again = driver.parse(_request(_notification(_item(eventDate="2024-06-13T08:00:00+02:00", reason="x"))))
        # Then it maps to the same event id; a different outcome or code is another event
        assert first.event_id == again.event_id
        assert first.event_id.startswith("d_")
        assert driver.parse(_request(_notification(_item(success="false")))).event_id != first.event_id
        assert driver.parse(_request(_notification(_item("CAPTURE")))).event_id != first.event_id

    def test_a_modification_belongs_to_its_original_payment(self):
        item = _item("REFUND", originalReference="QFQTPCQ8HXSKGK82", pspReference="RFND000000000001")
        event = driver.parse(_request(_notification(item)))
        assert (event.resource_id, event.provider_status, event.amount) == ("QFQTPCQ8HXSKGK82", "refunded", None)

    @pytest.mark.parametrize(("event_code", "outcomes"), sorted(STATUS_TABLE.items()))
    def test_status_table(self, event_code, outcomes):
        for success, expected in zip(("true", "false"), outcomes, strict=True):
            event = driver.parse(_request(_notification(_item(event_code, success))))
            assert event.provider_status == expected

    @pytest.mark.parametrize(("action", "expected"), [("cancel", "canceled"), ("refund", "refunded"), (None, None)])
    def test_cancel_or_refund_reads_the_modification_action(self, action, expected):
        additional = {"modification.action": action} if action else {}
        item = _item("CANCEL_OR_REFUND", additionalData=additional, originalReference="P")
        assert driver.parse(_request(_notification(item))).provider_status == expected

    def test_unknown_event_codes_parse_without_a_status(self):
        event = driver.parse(_request(_notification(_item("REPORT_AVAILABLE"))))
        assert (event.event_type, event.provider_status) == ("REPORT_AVAILABLE", None)
        assert "REPORT_AVAILABLE" not in PAYMENT_EVENT_CODES

    def test_a_boolean_success_is_tolerated(self):
        assert driver.parse(_request(_notification(_item(success=False)))).provider_status == "failed"  # type: ignore[arg-type]

    def test_a_multi_item_delivery_is_one_event_per_item_in_order(self):
        # Given an authentic delivery of two items: an authorisation and a capture of another payment
        body = _notification(_signed_item(_item()), _signed_item(_item("CAPTURE", pspReference="B")))
        _verify(_request(body))  # authentic: every item verifies
        # When it is parsed into its events
        events = driver.parse_many(_request(body))
        # Then one event per item, in the delivery's order, each with its own dedup key
        assert [event.event_type for event in events] == ["AUTHORISATION", "CAPTURE"]
        assert len({event.event_id for event in events}) == 2
        assert events[0] == driver.parse(_request(_notification(_signed_item(_item()))))
        # and parse (one event) refuses it rather than pick one
        with pytest.raises(PayloadInvalid, match="delivery holds 2 notification items"):
            driver.parse(_request(body))

    def test_one_unreadable_item_makes_the_delivery_unparseable_naming_the_item(self):
        # Given a delivery whose second item has no eventDate
        second = {k: v for k, v in _item("CAPTURE", pspReference="B").items() if k != "eventDate"}
        body = _notification(_item(), second)
        # When parsed, Then it is refused whole (stored once as failed), the reason naming item 1
        with pytest.raises(PayloadInvalid, match="notification item 1: missing field eventDate"):
            driver.parse_many(_request(body))
        assert driver.fallback_event_id(_request(body)) == body_digest_id(body)

    def test_the_answer_acknowledges_as_adyen_documents(self):
        from shared.providers.base import accept_fields

        assert accept_fields(driver) == {"notificationResponse": "[accepted]"}

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"pspReference": None}, "missing field pspReference"),
            ({"eventCode": None}, "missing field eventCode"),
            ({"success": "yes"}, 'field success must be "true" or "false"'),
            ({"eventDate": None}, "missing field eventDate"),
            ({"eventDate": "2024-06-12T21:45:03"}, "eventDate has no time zone"),
            ({"amount": {"currency": "EUR", "value": "1990"}}, "field amount.value must be an integer"),
        ],
    )
    def test_invalid_items(self, changes, reason):
        item = {k: v for k, v in {**_item(), **changes}.items() if v is not None}
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(_notification(item)))

    @pytest.mark.parametrize("body", [b"[]", b"{}", b'{"notificationItems": [1]}', b"\xff"])
    def test_unparseable_bodies(self, body):
        with pytest.raises(PayloadInvalid):
            driver.parse(_request(body))


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_samples_round_trip(self, status):
        body = sender.sample_body(
            event_id="MOD0000000000001", resource_id="PAY0000000000001", status=status, amount=1990, occurred_at=NOW
        )
        request = sender.sign(body, KEY, now=NOW)
        _verify(request)
        assert is_valid_hmac_notification(json.loads(request.body), KEY) is True
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status) == ("PAY0000000000001", status)
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Adyen sample for status 'pending'"):
            sender.sample_body(event_id="e", resource_id="p", status="pending", amount=1, occurred_at=NOW)

    def test_sign_leaves_a_body_that_is_not_a_notification_alone(self):
        assert sender.sign(b'{"k": 1}', KEY, now=NOW).body == b'{"k": 1}'
