"""The usual mistakes, as candidate deliveries: each is the delivery as it would have been had one mistake not
been made. A candidate that the driver's own `verify` accepts names the mistake.

A fixed, small set per delivery (bounded work, whatever was posted): at most MAX_TOKENS signature-like tokens per
carrier are respelled, the body is re-serialized in at most len(LAYOUTS) x 2^4 ways (duplicates dropped), and the
secrets tried are the few the source's configuration names.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import product

from inbox_cli.doctor.profiles import MAC_TOKEN, MacAt
from shared.providers.base import WebhookRequest

MAX_TOKENS = 8  # signature-like tokens respelled per carrier: a header lists one or two signatures in practice


@dataclass(frozen=True, slots=True)
class SecretCandidate:
    """A secret the doctor may try, and how the answer names it (never by its value)."""

    label: str  # e.g. "the source's previous secret", "the secret of source stripe-br"
    value: str


# ------------------------------------------------------------------------------------------------- secrets


def prefix_variants(candidates: list[SecretCandidate], prefix: str | None) -> Iterator[SecretCandidate]:
    """Each candidate with the provider's key prefix dropped (when it has it) or added (when it has not)."""
    if not prefix:
        return
    for candidate in candidates:
        value = candidate.value.strip()
        if value.startswith(prefix):
            yield SecretCandidate(f"{candidate.label} with its `{prefix}` prefix dropped", value[len(prefix) :])
        else:
            yield SecretCandidate(f"{candidate.label} with the `{prefix}` prefix added", prefix + value)


# --------------------------------------------------------------------------------------- signature spellings

_HEX = re.compile(r"[0-9A-Fa-f]+")


def _decoded(token: str) -> bytes | None:
    """The bytes of a base64 or base64url token (padding optional), None if it is neither."""
    text = token.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _spellings(token: str, mac: MacAt) -> Iterator[tuple[str, str]]:
    """(what was wrong, the token as the scheme spells it) for each respelling that keeps the MAC's bytes."""
    is_hex = bool(_HEX.fullmatch(token)) and len(token) == 2 * mac.digest_size
    if mac.encoding == "hex":
        if is_hex and token != token.lower():
            yield "its hex is in upper case where the scheme compares lower case", token.lower()
        raw = None if is_hex else _decoded(token)
        if raw is not None and len(raw) == mac.digest_size:
            yield "it is spelled in base64 where the scheme expects hex", raw.hex()
        return
    if is_hex:
        yield (
            "it is spelled in hex where the scheme expects base64",
            base64.b64encode(bytes.fromhex(token)).decode("ascii"),
        )
        return
    raw = _decoded(token)
    canonical = base64.b64encode(raw).decode("ascii") if raw is not None else None
    if raw is not None and len(raw) == mac.digest_size and canonical != token:
        yield "it is base64url or unpadded where the scheme expects standard padded base64", str(canonical)


def respellings(request: WebhookRequest, mac: MacAt) -> Iterator[tuple[str, WebhookRequest]]:
    """The delivery with its MAC spelled as the scheme expects: other encoding, other case, the missing prefix."""
    carriers = [("header", name, request.header(name)) for name in mac.headers] + [
        ("query", name, request.query.get(name)) for name in mac.query
    ]
    for where, name, value in carriers:
        if not value:
            continue
        for match in list(MAC_TOKEN.finditer(value))[:MAX_TOKENS]:
            start, end, token = match.start(), match.end(), match.group()
            before, after = value[:start], value[end:]
            options = list(_spellings(token, mac))
            for problem, spelled in options:
                yield problem, _with_carrier(request, where, name, before + spelled + after)
            if mac.prefix and not before.lower().endswith(mac.prefix.lower()):
                missing = f"the `{mac.prefix}` prefix before it is missing"
                yield missing, _with_carrier(request, where, name, before + mac.prefix + token + after)
                for problem, spelled in options:
                    yield (
                        f"{missing} and {problem}",
                        _with_carrier(request, where, name, before + mac.prefix + spelled + after),
                    )


def _with_carrier(request: WebhookRequest, where: str, name: str, value: str) -> WebhookRequest:
    if where == "header":
        return replace(request, headers={**request.headers, name: value})
    return replace(request, query={**request.query, name: value})


# ------------------------------------------------------------------------------------------- re-serializations

# (how the answer names it, json.dumps keyword arguments): the layouts frameworks and SDKs write.
LAYOUTS: tuple[tuple[str, dict[str, object]], ...] = (
    ("compact separators (`,` and `:`, as JSON.stringify and most frameworks write)", {"separators": (",", ":")}),
    ("`, ` and `: ` separators (Python's json.dumps default)", {"separators": (", ", ": ")}),
    ("2-space indentation", {"indent": 2}),
    ("4-space indentation", {"indent": 4}),
)


def body_variants(body: bytes, *, pretty_indent: int | None = None) -> Iterator[tuple[str, bytes]]:
    """(how it was re-serialized, the bytes) for the given body's JSON re-encoded in each usual way, without
    repeats and never the given bytes themselves. A body that is not JSON has only its trailing-newline variant."""
    # Digests, not copies: a 6 MB body has up to 65 variants
    seen = {hashlib.sha256(body).digest()}
    toggled = body[:-1] if body.endswith(b"\n") else body + b"\n"
    what = "without the trailing newline" if body.endswith(b"\n") else "with a trailing newline added"
    seen.add(hashlib.sha256(toggled).digest())
    yield f"the same bytes {what}", toggled
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return
    layouts = list(LAYOUTS)
    if pretty_indent is not None:  # the provider's own pretty-printing first: the likeliest original
        layouts.sort(key=lambda layout: layout[1].get("indent") != pretty_indent)
    has_non_ascii = not json.dumps(value, ensure_ascii=False).isascii()
    for (layout, options), ensure_ascii, sort_keys in product(layouts, (False, True), (False, True)):
        try:  # one encoding per layout, escaping and key order; slashes and newline are edits of it
            encoded = json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=sort_keys, **options)  # type: ignore[arg-type]
        except (TypeError, ValueError, RecursionError):  # mixed-type keys cannot be sorted
            continue
        yield from _edits(encoded, layout, ensure_ascii, sort_keys, has_non_ascii, seen)


def _edits(
    encoded: str, layout: str, ensure_ascii: bool, sort_keys: bool, has_non_ascii: bool, seen: set[bytes]
) -> Iterator[tuple[str, bytes]]:
    """One encoding with slashes escaped or not and a trailing newline or not, each described, without repeats."""
    for escape_slashes, newline in product((False, True), (False, True)):
        text = encoded
        if escape_slashes:
            if "/" not in text:
                continue
            text = text.replace("/", "\\/")  # JSON has no `/` outside strings: every one is inside a string
        data = text.encode("utf-8") + (b"\n" if newline else b"")
        digest = hashlib.sha256(data).digest()
        if digest in seen:
            continue
        seen.add(digest)
        parts = [layout]
        if has_non_ascii:
            parts.append("non-ASCII as \\u escapes" if ensure_ascii else "non-ASCII as UTF-8")
        if sort_keys:
            parts.append("keys sorted")
        if escape_slashes:
            parts.append("`/` escaped as `\\/` (as PHP's json_encode does)")
        if newline:
            parts.append("a trailing newline")
        yield ", ".join(parts), data
