"""The signature schemes that are configuration, as rows of one engine: an HMAC, or a static token.

A provider whose proof of origin is only "an HMAC of the raw body in a header (or a query parameter)" or "a token
the sender presents" declares a row (`HmacScheme`, `TokenScheme`) instead of code; its driver delegates `verify` to
it. The user-configured `generic` driver is the same engine reading its row from configuration. A timestamped
signature list (`TimestampedListScheme`: Stripe's `t=...,v1=`, Paddle's `ts=...;h1=`) is a row too, declared by
its driver (not offered to `generic`). Schemes whose signed message is built from more than the body and the
scheme's own headers (Standard Webhooks' base64 key, Mercado Pago's manifest, Adyen's fields, the public-key ones)
stay code.

What every row gets from the engine, so no driver repeats it:
- every configured secret (current and previous, during a rotation) is tried against every presented signature,
  each pair compared in constant time, with no early exit;
- an empty configured secret is a configuration error (ValueError: 5xx, the sender retries), never a 401;
- with a timestamp header, the timestamp is checked after the signature (a forged stale delivery reads as a
  mismatch), within the tolerance in both directions;
- reasons never hold a secret, a signature or a header value: they are logged and stored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import string
from dataclasses import dataclass
from typing import Any, Protocol

from shared.providers._signing import (
    check_timestamp,
    matches_any,
    parse_epoch_seconds,
    require_header,
    require_match,
    signature_list,
    usable_secrets,
)
from shared.providers.base import DriverDefaults, SignatureInvalid, SigningSecrets, WebhookRequest

ALGORITHMS = ("sha1", "sha256", "sha512")  # hashlib names, passed to hmac as the digest
ENCODINGS = ("hex", "base64")
SECRET_ENCODINGS = ("utf8", "hex", "base64")
PLACEHOLDERS = frozenset({"body", "timestamp", "id"})


class SchemeError(ValueError):
    """A row that cannot work (an unknown algorithm, a template that would not sign the raw body...)."""


class Scheme(Protocol):
    """What a driver delegates to: a way to prove a delivery's origin that is configuration, not code."""

    @property
    def replay_headers(self) -> tuple[str, ...]:
        """The scheme's headers that are stored to re-verify the delivery later: never one that holds a secret."""
        ...

    @property
    def replay_query(self) -> tuple[str, ...]:
        """The same for query parameters."""
        ...

    @property
    def signs_timestamp(self) -> bool: ...

    def carried_by(self, request: WebhookRequest) -> bool:
        """Whether the delivery carries this scheme's proof at all (a header or parameter present, even empty)."""
        ...

    def verify(
        self, request: WebhookRequest, secrets: SigningSecrets, *, provider: str, now: float, tolerance_seconds: int
    ) -> None: ...


def template_fields(template: str) -> list[str]:
    """The placeholders of a signed-content template; SchemeError for anything but {body}, {timestamp}, {id}."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:
        raise SchemeError("signed_content is not a valid template") from None
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS or spec or conversion:
            raise SchemeError("signed_content may only use {body}, {timestamp} and {id}")
        names.append(name)
    return names


def signed_bytes(template: str, body: bytes, *, timestamp: str = "", event_id: str = "") -> bytes:
    """The bytes the sender signs: the template with the raw body spliced in, never re-encoded."""
    values = {"timestamp": timestamp, "id": event_id}
    parts: list[bytes] = []
    for literal, name, _, _ in string.Formatter().parse(template):  # literal text comes back unescaped
        parts.append(literal.encode("utf-8"))
        if name == "body":
            parts.append(body)
        elif name is not None:
            parts.append(values[name].encode("utf-8"))
    return b"".join(parts)


def _presented(request: WebhookRequest, headers: tuple[str, ...], query_param: str | None) -> str | None:
    """The first non-empty header of `headers`, else the query parameter; None when neither carries a value."""
    for name in headers:
        value = request.header(name)
        if value:
            return value
    if query_param:
        return request.query.get(query_param) or None
    return None


def _carries(request: WebhookRequest, headers: tuple[str, ...], query_param: str | None) -> bool:
    return any(request.header(name) is not None for name in headers) or (
        query_param is not None and query_param in request.query
    )


@dataclass(frozen=True, slots=True)
class HmacScheme:
    """An HMAC over the raw body (optionally with the scheme's timestamp and id headers spliced in).

    - the signature is in the first non-empty of `headers`, else in the `query_param`; `prefix` (e.g. `sha256=`,
      compared case-insensitively) is stripped first; with `separator` the value is a list of signatures, any of
      which may match (senders send several while rotating a secret);
    - the MAC is `algorithm` keyed with the secret as UTF-8 (`secret_encoding` `hex` or `base64` decodes it
      first), encoded as `hex` (compared case-insensitively) or `base64` (compared as text, against the canonical
      encoding: never after decoding, which would accept spellings nobody produces);
    - `signed_content` is a template over the raw body: `{body}` exactly once, `{timestamp}` (the
      `timestamp_header` value, verbatim), `{id}` (the `id_header` value);
    - with `timestamp_header`, the timestamp (epoch seconds) must be within `tolerance_seconds` of now (None: the
      system tolerance).
    `described_as` names the signature's carrier in the "missing" reason; `unreadable` is the reason when the
    carrier holds no value with the prefix.
    """

    headers: tuple[str, ...] = ()
    query_param: str | None = None
    algorithm: str = "sha256"
    encoding: str = "hex"
    prefix: str = ""
    separator: str | None = None
    signed_content: str = "{body}"
    secret_encoding: str = "utf8"  # noqa: S105 - an encoding name, not a secret
    timestamp_header: str | None = None
    tolerance_seconds: int | None = None
    id_header: str | None = None
    described_as: str = ""
    unreadable: str = "no signature in header"

    def __post_init__(self) -> None:
        if not any(h.strip() for h in self.headers) and not self.query_param:
            raise SchemeError("signature_header is empty")
        if self.algorithm not in ALGORITHMS:
            raise SchemeError(f"algorithm must be one of {', '.join(ALGORITHMS)}")
        if self.encoding not in ENCODINGS:
            raise SchemeError(f"encoding must be one of {', '.join(ENCODINGS)}")
        if self.secret_encoding not in SECRET_ENCODINGS:
            raise SchemeError(f"secret_encoding must be one of {', '.join(SECRET_ENCODINGS)}")
        if self.separator == "":
            raise SchemeError("signature_separator is empty (omit it for a single signature)")
        if self.tolerance_seconds is not None and self.tolerance_seconds < 0:
            raise SchemeError("tolerance_seconds cannot be negative")
        names = template_fields(self.signed_content)
        if names.count("body") != 1:
            raise SchemeError("signed_content must contain {body} exactly once")
        if "timestamp" in names and not self.timestamp_header:
            raise SchemeError("signed_content uses {timestamp} but timestamp_header is not set")
        if "id" in names and not self.id_header:
            raise SchemeError("signed_content uses {id} but id_header is not set")

    @property
    def replay_headers(self) -> tuple[str, ...]:
        """The signature, timestamp and id headers: MACs and metadata, never the key."""
        names = (*self.headers, self.timestamp_header, self.id_header)
        return tuple(name.lower() for name in names if name)

    @property
    def replay_query(self) -> tuple[str, ...]:
        return (self.query_param,) if self.query_param else ()

    @property
    def signs_timestamp(self) -> bool:
        return bool(self.timestamp_header)

    def key(self, secret: str) -> bytes:
        """The HMAC key a configured secret stands for. An undecodable one is a configuration error."""
        encoding = self.secret_encoding
        try:
            if encoding == "hex":
                return binascii.unhexlify(secret.strip())
            if encoding == "base64":
                return base64.b64decode(secret.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise SchemeError(f"signing secret is not {encoding}") from None
        return secret.encode("utf-8")

    def signature(self, body: bytes, secret: str, *, timestamp: str = "", event_id: str = "") -> str:
        """The signature (without prefix) this scheme computes for `body` with `secret`."""
        message = signed_bytes(self.signed_content, body, timestamp=timestamp, event_id=event_id)
        digest = hmac.new(self.key(secret), message, self.algorithm).digest()
        return digest.hex() if self.encoding == "hex" else base64.b64encode(digest).decode("ascii")

    def carried_by(self, request: WebhookRequest) -> bool:
        return _carries(request, self.headers, self.query_param)

    def verify(
        self, request: WebhookRequest, secrets: SigningSecrets, *, provider: str, now: float, tolerance_seconds: int
    ) -> None:
        candidates = usable_secrets(secrets, provider)
        value = _presented(request, self.headers, self.query_param)
        if not value:
            raise SignatureInvalid(f"missing {self.described_as or self.headers[0] + ' header'}")
        timestamp_text = ""
        timestamp: int | None = None
        if self.timestamp_header:
            timestamp_text = (request.header(self.timestamp_header) or "").strip()
            if not timestamp_text:
                raise SignatureInvalid(f"missing {self.timestamp_header} header")
            timestamp = parse_epoch_seconds(timestamp_text)
        event_id = (request.header(self.id_header) or "").strip() if self.id_header else ""

        signatures = self._signatures(value)
        if not signatures:
            raise SignatureInvalid(self.unreadable)
        expected = [self.signature(request.body, s, timestamp=timestamp_text, event_id=event_id) for s in candidates]
        if not matches_any(expected, signatures):
            raise SignatureInvalid("no signature matches")
        if timestamp is not None:
            limit = tolerance_seconds if self.tolerance_seconds is None else self.tolerance_seconds
            check_timestamp(timestamp, now=now, tolerance_seconds=limit)

    def _signatures(self, value: str) -> list[str]:
        signatures = []
        for item in value.split(self.separator) if self.separator else [value]:
            text = item.strip()
            if self.prefix:
                if text[: len(self.prefix)].lower() != self.prefix.lower():
                    continue
                text = text[len(self.prefix) :]
            if text:
                signatures.append(text.lower() if self.encoding == "hex" else text)
        return signatures


@dataclass(frozen=True, slots=True)
class TokenScheme:
    """A static token the sender presents (no signature over the body, no timestamp), compared in constant time.

    The token is in the first non-empty of `headers`, else in `query_param`. It is compared exactly as sent, unless
    `authorization_schemes` is set (e.g. `("basic ", "bearer ")`): the header is then an Authorization value,
    compared trimmed, and also without a leading scheme word. The carrier IS the secret: nothing of it is ever
    stored (`replay_headers` is empty), and a provider must not name it among its replay query parameters.
    """

    headers: tuple[str, ...] = ()
    query_param: str | None = None
    authorization_schemes: tuple[str, ...] = ()
    called: str = "token"  # what the refusal calls it: "<called> does not match"
    described_as: str = ""

    @property
    def replay_headers(self) -> tuple[str, ...]:
        return ()  # every carrier of a token is the secret itself

    @property
    def replay_query(self) -> tuple[str, ...]:
        return ()

    @property
    def signs_timestamp(self) -> bool:
        return False

    def carried_by(self, request: WebhookRequest) -> bool:
        return _carries(request, self.headers, self.query_param)

    def verify(
        self, request: WebhookRequest, secrets: SigningSecrets, *, provider: str, now: float, tolerance_seconds: int
    ) -> None:
        candidates = list(usable_secrets(secrets, provider))
        presented = self._presented(request)
        if not presented:
            raise SignatureInvalid(f"missing {self.described_as or self.headers[0] + ' header'}")
        if not matches_any(candidates, presented):
            raise SignatureInvalid(f"{self.called} does not match")

    def _presented(self, request: WebhookRequest) -> list[str]:
        presented: list[str] = []
        for name in self.headers:
            value = request.header(name)
            if not value:
                continue
            if not self.authorization_schemes:
                presented.append(value)
                continue
            trimmed = value.strip()
            presented.append(trimmed)
            for word in self.authorization_schemes:
                if trimmed.lower().startswith(word):
                    presented.append(trimmed[len(word) :].strip())
        if self.query_param and request.query.get(self.query_param):
            presented.append(request.query[self.query_param])
        return presented


@dataclass(frozen=True, slots=True)
class FirstCarried:
    """Several schemes, of which the first the delivery carries decides alone (GitHub's SHA-256 header, with the
    legacy SHA-1 one accepted only when there is no SHA-256 header at all: no downgrade path). A delivery that
    carries none is reported as missing the first."""

    schemes: tuple[Scheme, ...]

    @property
    def replay_headers(self) -> tuple[str, ...]:
        return tuple(name for scheme in self.schemes for name in scheme.replay_headers)

    @property
    def replay_query(self) -> tuple[str, ...]:
        return tuple(name for scheme in self.schemes for name in scheme.replay_query)

    @property
    def signs_timestamp(self) -> bool:
        return all(scheme.signs_timestamp for scheme in self.schemes)

    def carried_by(self, request: WebhookRequest) -> bool:
        return any(scheme.carried_by(request) for scheme in self.schemes)

    def verify(
        self, request: WebhookRequest, secrets: SigningSecrets, *, provider: str, now: float, tolerance_seconds: int
    ) -> None:
        chosen = next((scheme for scheme in self.schemes if scheme.carried_by(request)), self.schemes[0])
        chosen.verify(request, secrets, provider=provider, now=now, tolerance_seconds=tolerance_seconds)


@dataclass(frozen=True, slots=True)
class TimestampedListScheme:
    """A header listing one timestamp and a signature per active secret (`t=<epoch>,v1=<hex>,v1=<hex>`), each an
    HMAC-SHA256 hex of `{timestamp}{joiner}{raw body}` keyed by the secret's UTF-8 bytes: Stripe's and Paddle's.
    Any listed signature matching any secret passes (the gateway lists several while a secret rotates); the
    timestamp must be epoch seconds, within the tolerance, checked after the signature."""

    header: str  # lower-case
    called: str  # the header as the provider spells it, in reasons
    separator: str  # between the list's items
    timestamp_key: str
    scheme: str  # the key of the signatures verified; other schemes are ignored
    joiner: str  # between the timestamp and the body in the signed message
    strip_values: bool = False  # blanks around a value are dropped (as the provider's SDK does)

    @property
    def replay_headers(self) -> tuple[str, ...]:
        return (self.header,)  # signatures, not the secret

    @property
    def replay_query(self) -> tuple[str, ...]:
        return ()  # nothing in the URL is signed

    @property
    def signs_timestamp(self) -> bool:
        return True

    def carried_by(self, request: WebhookRequest) -> bool:
        return request.header(self.header) is not None

    def sign(self, timestamp: int | str, body: bytes, secret: str) -> str:
        """The hex signature the gateway computes for `body` at `timestamp` with `secret`."""
        signed = f"{timestamp}{self.joiner}".encode("ascii") + body
        return hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()

    def parse(self, value: str) -> tuple[int, list[str]]:
        """The header's value -> (timestamp, signatures of `scheme`)."""
        timestamp, signatures = signature_list(
            value,
            separator=self.separator,
            timestamp_key=self.timestamp_key,
            scheme=self.scheme,
            strip_values=self.strip_values,
        )
        return parse_epoch_seconds(timestamp), signatures

    def verify(
        self, request: WebhookRequest, secrets: SigningSecrets, *, provider: str, now: float, tolerance_seconds: int
    ) -> None:
        candidates = usable_secrets(secrets, provider)
        timestamp, signatures = self.parse(require_header(request, self.header, self.called))
        if not signatures:
            raise SignatureInvalid(f"no {self.scheme} signature in header")
        require_match([self.sign(timestamp, request.body, secret) for secret in candidates], signatures)
        # Checked after the signature, as the SDKs do: an authentic but stale delivery is reported as such, a
        # forged one as a mismatch.
        check_timestamp(timestamp, now=now, tolerance_seconds=tolerance_seconds)


class SchemeVerified(DriverDefaults):
    """Base of a driver whose proof of origin is a row of this engine: `verify` is its `authentication`, and what
    the row says about replay (its headers and query parameters, whether it signs a timestamp) is the driver's,
    unless the driver's class states its own (a driver may keep more headers than its scheme)."""

    name: str
    authentication: Scheme
    replay_headers: tuple[str, ...]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        scheme = cls.__dict__.get("authentication")
        if scheme is None:
            return
        for fact in ("replay_headers", "replay_query", "signs_timestamp"):
            if fact not in cls.__dict__:
                setattr(cls, fact, getattr(scheme, fact))

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        self.authentication.verify(request, secrets, provider=self.name, now=now, tolerance_seconds=tolerance_seconds)
