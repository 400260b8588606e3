"""Redaction: one rule for every copy of a body that leaves the inbox table, and one for a URL's query in a log.

Personal data (LGPD): with `INBOX_REDACT_FIELDS` (comma-separated JSON key names, matched case-insensitively),
every value under such a key, at any depth of a JSON document, is replaced by "[redacted]". The archive
(shared/retention.py) and the rejected-delivery log (shared/rejections.py) apply it.

Secrets in a body: a provider that repeats its secret inside an unsigned body (Hotmart's `hottok`) has it replaced
in the stored body byte for byte (`redact_secret_fields`), every other byte as received; the ingest and the
rejected-delivery log apply it.

Query values: some gateways put the secret itself in the URL (iugu's `?token=`, Efí's `?hmac=`). A log shows a
query parameter's value only when its driver stores that parameter with the event anyway (`replay_query`: the
parameters the driver declares safe to keep, as signed data); every other value is "[redacted]", its name kept.
Stdlib only, cheap to import on the ingest's path.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import cache
from typing import Any
from urllib.parse import unquote_plus

REDACTED = "[redacted]"
_REDACTED_JSON_STRING = b'"' + REDACTED.encode() + b'"'


def parse_redact_fields(raw: str | None) -> frozenset[str]:
    """`email, CPF,name` -> {"email", "cpf", "name"}: key names compared case-insensitively."""
    return frozenset(name.strip().lower() for name in (raw or "").split(",") if name.strip())


def redact(document: Any, fields: frozenset[str]) -> tuple[Any, int]:
    """A copy of the JSON document with every value under one of `fields` (at any depth) replaced by
    "[redacted]", and how many were replaced."""
    if isinstance(document, dict):
        result: dict[str, Any] = {}
        count = 0
        for key, value in document.items():
            if key.lower() in fields:
                result[key] = REDACTED
                count += 1
            else:
                result[key], inner = redact(value, fields)
                count += inner
        return result, count
    if isinstance(document, list):
        items: list[Any] = []
        count = 0
        for value in document:
            redacted, inner = redact(value, fields)
            items.append(redacted)
            count += inner
        return items, count
    return document, 0


def redact_query(query: str, shown: Collection[str]) -> str:
    """A URL's query (without its `?`) as a log may print it: each `name=value` whose decoded name is in `shown`
    kept as it came, every other value replaced by "[redacted]" (the name kept), a bare value with no name
    replaced whole (it may be the secret itself)."""
    parts = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        if unquote_plus(name) in shown:
            parts.append(part)
        elif equals:
            parts.append(f"{name}={REDACTED}")
        elif part:
            parts.append(REDACTED)
        else:
            parts.append(part)
    return "&".join(parts)


def redact_secret_fields(body: bytes, fields: tuple[str, ...]) -> bytes:
    """The body with the string value of every JSON field named in `fields` (at any depth) replaced by
    "[redacted]", every other byte as received. For providers that repeat their secret inside an unsigned body
    (Hotmart's `hottok`): the stored body, its digest and the archive then hold no secret."""
    for name in fields:
        body = _secret_field_pattern(name).sub(lambda match: match.group(1) + _REDACTED_JSON_STRING, body)
    return body


@cache
def _secret_field_pattern(name: str) -> re.Pattern[bytes]:
    """`"name": "<JSON string>"`, compiled once per field name (not per delivery)."""
    return re.compile(rb'("' + re.escape(name.encode()) + rb'"\s*:\s*)"(?:[^"\\]|\\.)*"')
