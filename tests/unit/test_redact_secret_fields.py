"""Redacting a secret that a provider repeats inside its (unsigned) body, before the body is stored."""

from __future__ import annotations

import json

import pytest

from shared.redaction import redact_secret_fields


def test_the_named_fields_value_is_replaced_and_every_other_byte_kept():
    body = b'{"id": "e1",  "hottok" :  "tok\\"en\\\\x", "data": {"hottok_hint": "keep"}}'
    assert redact_secret_fields(body, ("hottok",)) == (
        b'{"id": "e1",  "hottok" :  "[redacted]", "data": {"hottok_hint": "keep"}}'
    )


def test_nested_occurrences_are_redacted_too_and_the_result_is_still_json():
    body = json.dumps({"a": {"hottok": "x1"}, "list": [{"hottok": "x2"}], "b": "hottok"}).encode()
    redacted = redact_secret_fields(body, ("hottok",))
    assert b"x1" not in redacted and b"x2" not in redacted
    assert json.loads(redacted) == {"a": {"hottok": "[redacted]"}, "list": [{"hottok": "[redacted]"}], "b": "hottok"}


@pytest.mark.parametrize(
    "body",
    [b'{"id": "e1"}', b"not json at all", b'{"hottok": 12}', b"", '{"nome": "Jo\u00e3o"}'.encode()],
)
def test_a_body_without_such_a_string_field_is_unchanged(body):
    assert redact_secret_fields(body, ("hottok",)) == body


def test_no_fields_means_no_change():
    body = b'{"hottok": "x"}'
    assert redact_secret_fields(body, ()) is body
