"""The helpers every driver shares: comparison, tolerance, secrets, strict JSON."""

from __future__ import annotations

from decimal import Decimal

import pytest

from shared.providers._schemes import TimestampedListScheme
from shared.providers._signing import (
    check_timestamp,
    constant_time_equals,
    get_id,
    get_int,
    get_str,
    iso_to_utc,
    load_json_object,
    parse_epoch_seconds,
    require_object,
    signature_list,
    usable_secrets,
)
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest


class TestConstantTimeEquals:
    def test_equal_and_different_strings(self):
        # Given two strings, When compared, Then only identical ones are equal
        assert constant_time_equals("abc", "abc")
        assert not constant_time_equals("abc", "abd")
        assert not constant_time_equals("abc", "abcd")

    def test_non_ascii_input_is_compared_not_raised(self):
        # Given an attacker-controlled header with non-ASCII characters (hmac.compare_digest raises TypeError
        # for such str), When compared, Then the answer is simply "not equal"
        assert not constant_time_equals("abc", "ab\u00e7")
        assert not constant_time_equals("abc", "\udcff")  # a lone surrogate, as a lax decoder may produce
        assert constant_time_equals("ç", "ç")

    def test_bytes_are_accepted(self):
        assert constant_time_equals(b"\x00\x01", b"\x00\x01")


class TestCheckTimestamp:
    @pytest.mark.parametrize("delta", [-300, -1, 0, 1, 300])
    def test_within_tolerance_passes(self, delta):
        # Given a timestamp at most `tolerance` seconds from now, in either direction, Then it is accepted
        check_timestamp(1_000_000 + delta, now=1_000_000.0, tolerance_seconds=300)

    @pytest.mark.parametrize("delta", [-301, 301, -(10**6), 10**6])
    def test_outside_tolerance_fails(self, delta):
        # Given a stale (negative delta) or future (positive) timestamp, Then it is refused
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            check_timestamp(1_000_000 + delta, now=1_000_000.0, tolerance_seconds=300)

    def test_fractional_now(self):
        # Given now = t + 300.5, Then the delivery is stale by half a second
        with pytest.raises(SignatureInvalid):
            check_timestamp(1_000_000, now=1_000_300.5, tolerance_seconds=300)


class TestParseEpochSeconds:
    def test_digits(self):
        assert parse_epoch_seconds("1614265330") == 1614265330
        assert parse_epoch_seconds("0") == 0

    @pytest.mark.parametrize(
        "value", ["", " 1614265330", "1614265330.0", "-5", "+5", "0123", "1e9", "\uff11\uff12\uff13", "9" * 13, "abc"]
    )
    def test_anything_else_is_malformed(self, value):
        # Given a value the SDKs would not have signed verbatim, Then the header is malformed
        with pytest.raises(SignatureInvalid, match="malformed header"):
            parse_epoch_seconds(value)


class TestUsableSecrets:
    def test_current_then_previous(self):
        assert usable_secrets(SigningSecrets("a", "b"), "x") == ("a", "b")

    def test_blank_previous_is_skipped(self):
        # Given a rotation slot that is blank, Then it is never tried (an empty HMAC key is public knowledge)
        assert usable_secrets(SigningSecrets("a", "  "), "x") == ("a",)

    @pytest.mark.parametrize("current", ["", "   "])
    def test_missing_current_is_a_configuration_error(self, current):
        # Given no configured secret, Then verification fails loudly as a server error, not as a 401
        with pytest.raises(ValueError, match="no signing secret configured for provider 'x'"):
            usable_secrets(SigningSecrets(current, "b"), "x")


class TestLoadJsonObject:
    def test_object(self):
        assert load_json_object(b'{"a": 1}') == {"a": 1}

    def test_decimal_floats(self):
        assert load_json_object(b'{"v": 10.1}', parse_float=Decimal) == {"v": Decimal("10.1")}

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"\xff\xfe{}", "not valid UTF-8"),
            (b"", "not valid JSON"),
            (b"{", "not valid JSON"),
            (b"<xml/>", "not valid JSON"),
            (b"[1, 2]", "not a JSON object"),
            (b'"text"', "not a JSON object"),
            (b"null", "not a JSON object"),
            (b'{"v": NaN}', "non-finite"),
            (b'{"v": -Infinity}', "non-finite"),
            (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
            (b'{"v": ' + b"9" * 5000 + b"}", "not valid JSON"),
        ],
    )
    def test_invalid_bodies(self, body, reason):
        # Given a body that is not a JSON object, When loaded, Then PayloadInvalid says why
        with pytest.raises(PayloadInvalid, match=reason):
            load_json_object(body)


class TestFieldReaders:
    def test_missing_required(self):
        with pytest.raises(PayloadInvalid, match="missing field data"):
            require_object({}, "data", "data")

    def test_wrong_types_name_the_field_and_the_type(self):
        with pytest.raises(PayloadInvalid, match=r"field a\.b must be a string, not a number"):
            get_str({"b": 1}, "b", "a.b")
        with pytest.raises(PayloadInvalid, match="field n must be an integer, not a boolean"):
            get_int({"n": True}, "n", "n")
        with pytest.raises(PayloadInvalid, match="field n must be an integer, not a number"):
            get_int({"n": Decimal("1.5")}, "n", "n")
        with pytest.raises(PayloadInvalid, match="field d must be an object, not an array"):
            require_object({"d": []}, "d", "d")

    def test_empty_string_counts_as_missing(self):
        assert get_str({"s": ""}, "s", "s") is None

    def test_ids_may_be_numbers(self):
        assert get_id({"id": 42}, "id", "id") == "42"
        assert get_id({"id": "pay_1"}, "id", "id") == "pay_1"
        with pytest.raises(PayloadInvalid):
            get_id({"id": True}, "id", "id")

    @pytest.mark.parametrize(
        ("text", "reason"), [("yesterday", "not an ISO-8601"), ("2024-06-12T16:45:03", "no time zone")]
    )
    def test_iso_timestamps(self, text, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            iso_to_utc(text, "timestamp")


class TestSignatureList:
    """The `key=value` list header Stripe, Paddle and Mercado Pago sign with, each read as its SDK reads it."""

    def test_the_timestamp_and_the_schemes_signatures_are_read_others_ignored(self):
        value = "t=1700000000,v1=aa,v0=bb,v1=cc,junk"
        assert signature_list(value, separator=",", timestamp_key="t", scheme="v1") == ("1700000000", ["aa", "cc"])

    def test_two_timestamps_or_none_are_refused(self):
        for value in ("t=1,t=2,v1=aa", "v1=aa"):
            with pytest.raises(SignatureInvalid, match="malformed header"):
                signature_list(value, separator=",", timestamp_key="t", scheme="v1")

    def test_blanks_around_values_stay_unless_stripped(self):
        # Given a value with a blank after "="
        value = "ts= 1700000000; h1= aa "
        # Then read as sent the blank is part of the value; stripped it is not
        assert signature_list(value, separator=";", timestamp_key="ts", scheme="h1") == (" 1700000000", [" aa"])
        assert signature_list(value, separator=";", timestamp_key="ts", scheme="h1", strip_values=True) == (
            "1700000000",
            ["aa"],
        )

    def test_keys_are_folded_only_when_asked(self):
        value = " TS =17, V1 =aa"
        with pytest.raises(SignatureInvalid, match="malformed header"):
            signature_list(value, separator=",", timestamp_key="ts", scheme="v1", strip_values=True)
        assert signature_list(
            value, separator=",", timestamp_key="ts", scheme="v1", strip_values=True, fold_keys=True
        ) == ("17", ["aa"])


class TestTimestampedListScheme:
    SCHEME = TimestampedListScheme(
        header="x-sig", called="X-Sig", separator=",", timestamp_key="t", scheme="v1", joiner="."
    )

    def request(self, header: str | None, body: bytes = b'{"a":1}') -> WebhookRequest:
        return WebhookRequest(body=body, headers={} if header is None else {"x-sig": header})

    def test_a_listed_signature_of_either_secret_passes_within_the_tolerance(self):
        signature = self.SCHEME.sign(1000, b'{"a":1}', "old")
        secrets = SigningSecrets(current="new", previous="old")
        self.SCHEME.verify(
            self.request(f"t=1000,v1=deadbeef,v1={signature}"), secrets, provider="p", now=1100, tolerance_seconds=300
        )

    @pytest.mark.parametrize(
        ("header", "now", "reason"),
        [
            (None, 1000, "missing X-Sig header"),
            ("t=1000", 1000, "no v1 signature in header"),
            ("t=1000,v1=00", 1000, "no signature matches"),
            ("t=01000,v1=00", 1000, "malformed header"),
            ("SIGNED", 2000, "timestamp outside tolerance"),
        ],
    )
    def test_each_failure_says_what_failed(self, header, now, reason):
        if header == "SIGNED":
            header = "t=1000,v1=" + self.SCHEME.sign(1000, b'{"a":1}', "new")
        with pytest.raises(SignatureInvalid, match=reason):
            self.SCHEME.verify(
                self.request(header), SigningSecrets(current="new"), provider="p", now=now, tolerance_seconds=300
            )
