"""Form-encoded webhook bodies (`application/x-www-form-urlencoded`): iugu, Pagar.me <=v4 postbacks.

Signatures are always checked on the raw bytes, never on a re-encoding of these fields: two encoders disagree
on `+` versus `%20`, on key order and on which characters they escape.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from shared.providers.base import PayloadInvalid

MAX_FIELDS = 1000


def parse_form(body: bytes) -> dict[str, str]:
    """Strict UTF-8 form fields, flat (`data[id]` stays the key `data[id]`). A repeated key keeps its first value.

    Anything that is not a form (invalid UTF-8, a field without `=`, too many fields) is PayloadInvalid.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadInvalid("body is not valid UTF-8") from None
    if not text.strip():
        raise PayloadInvalid("body is empty")
    try:
        pairs = parse_qsl(
            text.strip(),
            keep_blank_values=True,
            strict_parsing=True,
            encoding="utf-8",
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except (ValueError, UnicodeDecodeError):
        raise PayloadInvalid("body is not form-encoded") from None
    fields: dict[str, str] = {}
    for key, value in pairs:
        fields.setdefault(key, value)
    return fields


def form_value(fields: dict[str, str], key: str, *, required: bool = False) -> str | None:
    value = fields.get(key)
    if value is None or value == "":
        if required:
            raise PayloadInvalid(f"missing field {key}")
        return None
    return value
