"""`generic`: an HMAC driver configured by data, for HMAC-signing senders that have no driver of their own.

Configuration is a `GenericConfig` (a user can build one and `register_driver(GenericHmacDriver(config, name=...))`
for each of their senders), or, for the built-in provider id `generic`, the JSON object in the environment variable
`INBOX_GENERIC_CONFIG` (keys are the field names below; every key is optional). Without the variable the defaults
describe a common `sha256=<hex>` over `{timestamp}.{body}` scheme, which `inbox send generic` produces.

Verification:
- `signature_header`: the header carrying the signature; `prefix` is stripped from it first (e.g. `sha256=`,
  `v1=`); with `signature_separator` set (e.g. `" "` or `","`) the header is a list of signatures, any of which may
  match (senders send several while rotating a secret);
- the MAC is `algorithm` (`sha1`, `sha256`, `sha512`) keyed with the secret as UTF-8 (`secret_encoding` `hex` or
  `base64` decodes it first), encoded as `hex` (compared case-insensitively) or `base64` (compared as text);
- `signed_content` is a template over the raw body: `{body}` (exactly once: the raw bytes), `{timestamp}` (the
  `timestamp_header` value, verbatim) and `{id}` (the `id_header` value). Nothing else is allowed: a template that
  would sign a re-serialized body cannot be expressed;
- with `timestamp_header` set, the timestamp (epoch seconds) must be within `tolerance_seconds` of now, in both
  directions (default: the system tolerance); without it no tolerance is enforced (`signs_timestamp` is False).

Parsing (paths are dotted JSON paths into the body, list indices allowed: `data.items.0.id`):
- event id: the `id_header` value when the template signs it (`{id}`), else the body at `id_path`, else derived
  from the business fact (`derive_event_id(resource, type, status, occurred_at)`), never from the whole body. An
  id header the template does not sign is not an identity: whoever holds a captured delivery could change it;
- `type_path` (required), `resource_path`, `status_path`, `amount_path` (integer minor units), `currency_path`;
- `occurred_at_path`: an ISO-8601 string with a zone, or epoch seconds (milliseconds when >= 10^12); without it the
  timestamp header is used when the template signs it (`{timestamp}`); with neither, the body is PayloadInvalid
  (stored as failed);
- `status_map` maps the sender's statuses onto canonical ones (a status not in the map is kept as sent).

There is no API to refetch from: the processor orders these events by `occurred_at`, for the event types matching
`payment_event_types` (prefix patterns ending in `*`, or exact types), and needs canonical statuses.

A configuration that cannot be read (bad JSON, an unknown key, an invalid value) is a configuration error: `verify`
raises ValueError (the ingest answers 503 and the sender retries once it is fixed), never a 401.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from shared.providers._schemes import HmacScheme, SchemeError
from shared.providers._signing import (
    JsonObject,
    epoch_to_utc,
    iso_to_utc,
    load_json_object,
    parse_epoch_seconds,
)
from shared.providers.base import (
    DriverDefaults,
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
    derive_event_id,
)

ENV_CONFIG = "INBOX_GENERIC_CONFIG"
# Fields that may be null in the JSON configuration (the feature is then off).
_OPTIONAL = frozenset(
    {
        "signature_separator",
        "timestamp_header",
        "id_header",
        "id_path",
        "resource_path",
        "status_path",
        "amount_path",
        "currency_path",
        "occurred_at_path",
    }
)
_MILLISECONDS_FROM = 10**12


class GenericConfigError(ValueError):
    """The generic driver's configuration is unusable. A ValueError: the ingest answers 503, not 401."""


@dataclass(frozen=True, slots=True)
class GenericConfig:
    signature_header: str = "x-webhook-signature"
    algorithm: str = "sha256"
    encoding: str = "hex"
    prefix: str = "sha256="
    signature_separator: str | None = None
    signed_content: str = "{timestamp}.{body}"
    secret_encoding: str = "utf8"  # noqa: S105 - an encoding name, not a secret
    timestamp_header: str | None = "x-webhook-timestamp"
    tolerance_seconds: int | None = None  # None: the system tolerance
    id_header: str | None = "x-webhook-id"
    id_path: str | None = "id"
    type_path: str = "type"
    resource_path: str | None = "data.id"
    status_path: str | None = "data.status"
    amount_path: str | None = "data.amount"
    currency_path: str | None = "data.currency"
    occurred_at_path: str | None = "created_at"
    status_map: Mapping[str, str] = field(default_factory=dict)
    payment_event_types: tuple[str, ...] = ("payment.*",)

    @property
    def signs_id_header(self) -> bool:
        """Whether the `id_header` value is signed (the template holds `{id}`): only then is it an event id."""
        return bool(self.id_header) and "{id}" in self.signed_content

    @property
    def signs_timestamp_header(self) -> bool:
        """Whether the `timestamp_header` value is signed (the template holds `{timestamp}`)."""
        return bool(self.timestamp_header) and "{timestamp}" in self.signed_content

    def __post_init__(self) -> None:
        self.scheme()  # the signature fields are a row of the HMAC engine: it refuses what cannot work
        if not self.type_path.strip():
            raise GenericConfigError("generic: type_path is empty")
        for key, value in self.status_map.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise GenericConfigError("generic: status_map must map strings to strings")

    def scheme(self) -> HmacScheme:
        """The signature part of this configuration, as a row of the HMAC engine (`_schemes.HmacScheme`)."""
        try:
            return HmacScheme(
                headers=(self.signature_header.strip(),) if self.signature_header.strip() else (),
                algorithm=self.algorithm,
                encoding=self.encoding,
                prefix=self.prefix,
                separator=self.signature_separator,
                signed_content=self.signed_content,
                secret_encoding=self.secret_encoding,
                timestamp_header=self.timestamp_header,
                tolerance_seconds=self.tolerance_seconds,
                id_header=self.id_header,
            )
        except SchemeError as error:
            raise GenericConfigError(f"generic: {error}") from None

    @classmethod
    def from_json(cls, text: str) -> GenericConfig:
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            raise GenericConfigError(f"generic: {ENV_CONFIG} is not valid JSON") from None
        if not isinstance(document, dict):
            raise GenericConfigError(f"generic: {ENV_CONFIG} must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(document) - known)
        if unknown:
            raise GenericConfigError(f"generic: unknown configuration keys: {', '.join(unknown)}")
        values: dict[str, Any] = dict(document)
        for name, value in values.items():
            if name == "payment_event_types":
                if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                    raise GenericConfigError("generic: payment_event_types must be a list of strings")
                values[name] = tuple(value)
            elif name == "status_map":
                if not isinstance(value, dict):
                    raise GenericConfigError("generic: status_map must be an object")
            elif name == "tolerance_seconds":
                if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                    raise GenericConfigError("generic: tolerance_seconds must be an integer")
            elif not isinstance(value, str) and not (value is None and name in _OPTIONAL):
                raise GenericConfigError(f"generic: {name} must be a string")
        return cls(**values)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> GenericConfig:
        text = (os.environ if environ is None else environ).get(ENV_CONFIG, "").strip()
        return cls.from_json(text) if text else cls()


def _lookup(document: Any, path: str) -> Any:
    value = document
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _text_at(document: JsonObject, path: str | None) -> str | None:
    if not path:
        return None
    value = _lookup(document, path)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise PayloadInvalid(f"field {path} must be a string or an integer")
    return value


class GenericHmacDriver(DriverDefaults):
    """A data-configured HMAC driver. `config=None` reads `INBOX_GENERIC_CONFIG` (once, at construction)."""

    replay_headers: tuple[str, ...]
    replay_query: tuple[str, ...] = ()  # the configurable schemes sign headers and body, never the URL
    signs_timestamp: bool

    def __init__(self, config: GenericConfig | None = None, *, name: str = "generic") -> None:
        self.name = name
        self._error: str | None = None
        if config is None:
            try:
                config = GenericConfig.from_environ()
            except GenericConfigError as error:
                self._error, config = str(error), GenericConfig()
        self.config = config
        self.scheme = config.scheme()
        self.signs_timestamp = self.scheme.signs_timestamp
        self.replay_headers = self.scheme.replay_headers

    def usable_config(self) -> GenericConfig:
        """The configuration, or GenericConfigError when the one in the environment could not be read."""
        if self._error is not None:
            raise GenericConfigError(self._error)
        return self.config

    def compute_signature(self, body: bytes, secret: str, *, timestamp: str = "", event_id: str = "") -> str:
        """The signature (without prefix) the configured scheme produces."""
        return self.scheme.signature(body, secret, timestamp=timestamp, event_id=event_id)

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        self.usable_config()
        self.scheme.verify(request, secrets, provider=self.name, now=now, tolerance_seconds=tolerance_seconds)

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        config = self.usable_config()
        body = load_json_object(request.body)
        event_type = _text_at(body, config.type_path)
        if event_type is None:
            raise PayloadInvalid(f"missing field {config.type_path}")
        resource_id = _text_at(body, config.resource_path)
        status = _text_at(body, config.status_path)
        if status is not None:
            status = config.status_map.get(status, status)
        occurred_at = self._occurred_at(request, body)

        amount: int | None = None
        if config.amount_path:
            raw_amount = _lookup(body, config.amount_path)
            if raw_amount is not None:
                if isinstance(raw_amount, bool) or not isinstance(raw_amount, int):
                    raise PayloadInvalid(f"field {config.amount_path} must be an integer (minor units)")
                amount = raw_amount
        currency = _text_at(body, config.currency_path)

        signed_id_header = config.id_header if config.signs_id_header else None
        event_id = (request.header(signed_id_header) or "").strip() if signed_id_header else ""
        event_id = event_id or _text_at(body, config.id_path) or ""
        if not event_id:
            event_id = derive_event_id(resource_id or "", event_type, status or "", occurred_at)
        return NormalizedEvent(
            event_id=event_id,
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
            provider_status=status,
            amount=amount,
            currency=currency.upper() if currency else None,
        )

    def _occurred_at(self, request: WebhookRequest, body: JsonObject) -> datetime:
        config = self.config
        if config.occurred_at_path:
            value = _lookup(body, config.occurred_at_path)
            if isinstance(value, str) and value:
                return iso_to_utc(value, config.occurred_at_path)
            if isinstance(value, int) and not isinstance(value, bool):
                seconds = value / 1000 if value >= _MILLISECONDS_FROM else value
                return epoch_to_utc(int(seconds), config.occurred_at_path)
            if value is not None:
                raise PayloadInvalid(f"field {config.occurred_at_path} must be an ISO-8601 string or epoch seconds")
        if config.timestamp_header and config.signs_timestamp_header:
            try:
                seconds = parse_epoch_seconds((request.header(config.timestamp_header) or "").strip())
            except SignatureInvalid:
                pass
            else:
                return epoch_to_utc(seconds, config.timestamp_header)
        raise PayloadInvalid("no event time: neither the body's occurred_at nor a timestamp header")

    def fallback_event_id(self, request: WebhookRequest) -> str:
        header = self.config.id_header if self.config.signs_id_header else None
        return ((request.header(header) or "").strip() if header else "") or body_digest_id(request.body)

    def payment_event_patterns(self) -> tuple[str, ...]:
        """The event types the processor applies (router patterns); the default ones if the config is unusable."""
        return self.config.payment_event_types


def payment_event_patterns() -> tuple[str, ...]:
    """The router patterns for the built-in `generic` provider (read by `shared.process.handlers`)."""
    return BUILTIN.payment_event_patterns()


BUILTIN = GenericHmacDriver()  # the built-in `generic` provider, configured by INBOX_GENERIC_CONFIG
driver: ProviderDriver = BUILTIN
