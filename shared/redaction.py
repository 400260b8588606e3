"""Personal-data redaction (LGPD): one rule for every copy of a body that leaves the inbox table.

With `INBOX_REDACT_FIELDS` (comma-separated JSON key names, matched case-insensitively), every value under such a
key, at any depth of a JSON document, is replaced by "[redacted]". The archive (shared/retention.py) and the
rejected-delivery log (shared/rejections.py) apply it; stdlib only, cheap to import on the ingest's path.
"""

from __future__ import annotations

from typing import Any

REDACTED = "[redacted]"


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
