"""Helpers the drivers share: constant-time comparison, timestamp tolerance, secrets, strict JSON reading.

Everything here is stdlib and cheap to import: `verify` runs on the gateway's clock.

Error messages never include a secret, a signature or a header value: they are logged and stored.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn

from shared.providers.base import (
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    parse_iso_utc,
    utc_from_epoch,
)

JsonObject = dict[str, Any]


# ---------------------------------------------------------------------------------------------------------------
# Signatures


def constant_time_equals(expected: str | bytes, received: str | bytes) -> bool:
    """Compare in constant time. Strings are compared as UTF-8 bytes.

    `hmac.compare_digest` refuses `str` holding non-ASCII characters with a TypeError; a header value is
    attacker-controlled, so never hand it over as `str`.
    """
    a = expected.encode("utf-8", "surrogatepass") if isinstance(expected, str) else expected
    b = received.encode("utf-8", "surrogatepass") if isinstance(received, str) else received
    return hmac.compare_digest(a, b)


def matches_any(expected: Sequence[str], presented: Sequence[str]) -> bool:
    """Whether any presented value equals any expected one; every pair compared in constant time, no early exit."""
    matched = False
    for value in presented:
        for candidate in expected:
            matched |= constant_time_equals(candidate, value)
    return matched


def usable_secrets(secrets: SigningSecrets, provider: str) -> tuple[str, ...]:
    """The secrets to try, current first. An empty current secret is a configuration error, not a bad request.

    Raises ValueError (not SignatureInvalid): a missing secret must fail loudly (5xx, the gateway retries and
    nothing is lost once it is fixed) rather than answer 401 to every genuine delivery. With an empty key,
    anybody could compute a valid HMAC, so it is never tried.
    """
    if not secrets.current or not secrets.current.strip():
        raise ValueError(f"no signing secret configured for provider {provider!r}")
    return tuple(s for s in secrets.candidates() if s and s.strip())


def check_timestamp(timestamp: int, *, now: float, tolerance_seconds: int) -> None:
    """Refuse a signed timestamp further than `tolerance_seconds` from `now`, in either direction.

    The past bound stops replays of a captured delivery. The future bound matters as much: a timestamp ahead
    of our clock is as suspicious as a stale one (a signature minted for later, to be replayed once the past
    bound would otherwise have expired it), and a genuine gateway's clock is never minutes ahead of ours.
    """
    if now - timestamp > tolerance_seconds or timestamp - now > tolerance_seconds:
        raise SignatureInvalid("timestamp outside tolerance")


def parse_epoch_seconds(text: str) -> int:
    """An epoch-seconds header value: ASCII digits only, no sign, fraction, spaces or leading zero.

    Strict on purpose: the official SDKs sign `str(int(value))`, so a value that does not round-trip through
    `int` (`0123`, `123.0`) would make what we verify differ from what was signed.
    """
    if not text or len(text) > 12 or not (text.isascii() and text.isdigit()) or (len(text) > 1 and text[0] == "0"):
        raise SignatureInvalid("malformed header")
    return int(text)


# ---------------------------------------------------------------------------------------------------------------
# Payloads


def _refuse_constant(name: str) -> NoReturn:
    raise PayloadInvalid(f"body holds a non-finite number ({name})")


def load_json_object(body: bytes, *, parse_float: Callable[[str], Any] | None = None) -> JsonObject:
    """Decode a webhook body: strict UTF-8, JSON, a top-level object. Anything else is PayloadInvalid."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadInvalid("body is not valid UTF-8") from None
    try:
        value = json.loads(text, parse_float=parse_float, parse_constant=_refuse_constant)
    except PayloadInvalid:
        raise
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; so is an over-long integer
        raise PayloadInvalid("body is not valid JSON") from None
    if not isinstance(value, dict):
        raise PayloadInvalid("body is not a JSON object")
    return value


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a number"


def get_object(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> JsonObject | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise PayloadInvalid(f"missing field {where}")
        return None
    if not isinstance(value, dict):
        raise PayloadInvalid(f"field {where} must be an object, not {_describe(value)}")
    return value


def require_object(obj: Mapping[str, Any], key: str, where: str) -> JsonObject:
    value = get_object(obj, key, where)
    assert value is not None  # required=True never returns None
    return value


def get_str(obj: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            raise PayloadInvalid(f"missing field {where}")
        return None
    if not isinstance(value, str):
        raise PayloadInvalid(f"field {where} must be a string, not {_describe(value)}")
    return value


def require_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = get_str(obj, key, where, required=True)
    assert value is not None
    return value


def get_id(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """An identifier: a non-empty string, or an integer (some providers number their resources)."""
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return get_str(obj, key, where)


def get_int(obj: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> int | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise PayloadInvalid(f"missing field {where}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadInvalid(f"field {where} must be an integer, not {_describe(value)}")
    return value


def require_int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = get_int(obj, key, where, required=True)
    assert value is not None
    return value


def get_currency(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    value = get_str(obj, key, where)
    return value.upper() if value is not None else None


def epoch_to_utc(seconds: int, where: str) -> datetime:
    """Epoch seconds from a body field as aware UTC; an out-of-range value is PayloadInvalid."""
    try:
        return utc_from_epoch(seconds)
    except (OverflowError, OSError, ValueError):
        raise PayloadInvalid(f"field {where} is not a valid epoch timestamp") from None


def iso_to_utc(text: str, where: str, *, assume_timezone: str | None = None) -> datetime:
    """An ISO-8601 body field as aware UTC; a malformed value (or a naive one, without a zone) is PayloadInvalid."""
    try:
        return parse_iso_utc(text, assume_timezone=assume_timezone)
    except PayloadInvalid:
        raise PayloadInvalid(f"field {where} has no time zone") from None
    except (ValueError, OverflowError):
        raise PayloadInvalid(f"field {where} is not an ISO-8601 timestamp") from None


def signature_list(
    value: str, *, separator: str, timestamp_key: str, scheme: str, strip_values: bool = False, fold_keys: bool = False
) -> tuple[str, list[str]]:
    """A `key=value` list header holding one timestamp and signatures (`t=...,v1=...,v1=...`) -> (the timestamp as
    sent, the `scheme` signatures). Unknown keys are ignored; two timestamps make the signed one ambiguous and are
    refused, as is none. `strip_values` drops blanks around a value; `fold_keys` reads keys case-insensitively and
    without blanks (each as the provider's own SDK reads its header)."""
    timestamp: str | None = None
    signatures: list[str] = []
    for item in value.split(separator):
        key, sep, item_value = item.strip().partition("=")
        if not sep:
            continue
        if fold_keys:
            key = key.strip().lower()
        if strip_values:
            item_value = item_value.strip()
        if key == timestamp_key:
            if timestamp is not None:  # two timestamps: which one was signed is ambiguous
                raise SignatureInvalid("malformed header")
            timestamp = item_value
        elif key == scheme and item_value:
            signatures.append(item_value)
    if timestamp is None:
        raise SignatureInvalid("malformed header")
    return timestamp, signatures


def require_header(request: WebhookRequest, name: str, called: str) -> str:
    """The signature header `name`, or SignatureInvalid naming it as the provider spells it (`called`)."""
    value = request.header(name)
    if not value:
        raise SignatureInvalid(f"missing {called} header")
    return value


def require_match(expected: Sequence[str], presented: Sequence[str]) -> None:
    """SignatureInvalid unless a presented signature equals an expected one (all compared, in constant time)."""
    if not matches_any(expected, presented):
        raise SignatureInvalid("no signature matches")
