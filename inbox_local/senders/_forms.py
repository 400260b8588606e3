"""Form-encoded sample bodies (iugu, Pagar.me <=v4 postbacks), in the order given."""

from __future__ import annotations

from urllib.parse import urlencode


def encode_form(fields: list[tuple[str, str]]) -> bytes:
    """Fields as a form body, in the given order (how the samples are written)."""
    return urlencode(fields).encode("ascii")
