"""The provider driver interface: what the ingest needs from each payment gateway.

A driver knows three things about its gateway: how a delivery's origin is proven (verify), how a body becomes a
normalized event, and which key deduplicates redeliveries. It knows nothing about producing deliveries: signing and
sample bodies are what the CLI, the simulator and the tests need, and they live with them (`inbox_local/senders/`),
outside every Lambda asset. Adding a provider is adding a driver to the registry; the handler never changes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, NamedTuple, Protocol

from shared.sub_account import SubAccount


class SignatureInvalid(Exception):
    """The delivery is not provably from the provider. The message is safe to log: it never holds a secret."""


class PayloadInvalid(Exception):
    """The body is authentic but cannot be turned into an event (not JSON, a required field missing...)."""


class ClientCertificate(NamedTuple):
    """The client certificate of a mutual-TLS connection, as the front door verified it against the truststore
    (API Gateway's `requestContext.authentication.clientCert`). Present only when the front door did verify it:
    a header can never produce one."""

    subject_dn: str
    issuer_dn: str
    serial_number: str

    @classmethod
    def from_api_event(cls, event: dict[str, Any]) -> ClientCertificate | None:
        cert = ((event.get("requestContext") or {}).get("authentication") or {}).get("clientCert")
        if not isinstance(cert, dict):
            return None
        fields = (cert.get("subjectDN"), cert.get("issuerDN"), cert.get("serialNumber"))
        if not all(isinstance(value, str) and value for value in fields):
            return None
        subject_dn, issuer_dn, serial_number = fields
        return cls(subject_dn=str(subject_dn), issuer_dn=str(issuer_dn), serial_number=str(serial_number))


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One delivery exactly as it reached us. Header names are lower-cased; `body` is the raw bytes."""

    body: bytes
    headers: dict[str, str]
    query: dict[str, str] = field(default_factory=dict)
    path: str = ""
    client_certificate: ClientCertificate | None = None  # set only for a mutual-TLS delivery the front door verified

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class SigningSecrets:
    """The provider's current signing secret and, during a rotation, the previous one. Either verifies."""

    current: str
    previous: str | None = None

    def candidates(self) -> tuple[str, ...]:
        return (self.current,) if not self.previous else (self.current, self.previous)


class NormalizedEvent(NamedTuple):
    """A provider's notification reduced to what the inbox and the processor need."""

    event_id: str  # stable across redeliveries: the dedup key together with the provider
    event_type: str  # the provider's own type name, e.g. "payment_intent.succeeded", "PAYMENT_RECEIVED"
    resource_id: str | None  # the payment this event is about; None when the event is not about one
    occurred_at: datetime  # the provider's time, timezone-aware UTC
    provider_status: str | None = None  # the resource's status as the webhook states it, if it does
    amount: int | None = None  # integer minor units, as stated by the webhook
    currency: str | None = None  # ISO 4217, upper case
    account: SubAccount | None = None  # the sub-account the resource lives in; None: the source's own account


class ProviderDriver(Protocol):
    """What every provider driver implements."""

    name: str  # lower-case provider id used in URLs, env vars and the CLI
    # Headers stored with the event so that it can be re-verified later. Never a header that carries the
    # secret itself (Asaas sends its token as a header: that one is not kept).
    replay_headers: tuple[str, ...]
    signs_timestamp: bool  # whether verify() enforces a timestamp tolerance
    # Query parameters stored for re-verification. The ingest keeps no other query parameter: some providers
    # (iugu) put the secret itself in the URL.
    replay_query: tuple[str, ...]
    # Top-level JSON fields of the body that repeat a secret (Hotmart's `hottok`): their string values are
    # replaced by "[redacted]" in the stored body, every other byte kept. Parsing uses the body as received.
    secret_body_fields: tuple[str, ...]

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        """Raise SignatureInvalid unless the raw body is signed by the current or the previous secret."""
        ...

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        """Raise PayloadInvalid when the authentic body cannot be understood."""
        ...

    def fallback_event_id(self, request: WebhookRequest) -> str:
        """An id for a verified body that could not be parsed, so it can be stored as failed and deduplicated."""
        ...


class DriverDefaults:
    """What a driver has unless it says otherwise: nothing of the URL kept to re-verify, no body field redacted, no
    signed timestamp, and the digest of a body that does not parse as its last-resort id (`body_digest_id`).

    A driver that inherits it still names itself and its `replay_headers`, and implements `verify` and `parse`."""

    replay_query: tuple[str, ...] = ()
    secret_body_fields: tuple[str, ...] = ()
    signs_timestamp: bool = False

    def fallback_event_id(self, request: WebhookRequest) -> str:
        return body_digest_id(request.body)


class MultiEventDriver(ProviderDriver, Protocol):
    """A driver whose one delivery may carry several events (Adyen's `notificationItems`, Efí's `{"pix": [...]}`).

    Optional: the ingest calls `parse_many` when a driver has it, else `parse` (one event per delivery). Each event
    becomes its own inbox item, all stored or none (shared/ingest_batch.py)."""

    def parse_many(self, request: WebhookRequest) -> tuple[NormalizedEvent, ...]:
        """Every event of the delivery, in its order (at least one). Raise PayloadInvalid when any cannot be
        understood: the delivery is then stored once, as failed, like any authentic body that does not parse."""
        ...


def parse_events(driver: ProviderDriver, request: WebhookRequest) -> tuple[NormalizedEvent, ...]:
    """The events of one delivery: the driver's `parse_many` if it has one, else its one `parse`."""
    parse_many = getattr(driver, "parse_many", None)
    if parse_many is None:
        return (driver.parse(request),)
    events = tuple(parse_many(request))
    if not events:
        raise PayloadInvalid("delivery holds no event")
    return events


def accept_fields(driver: ProviderDriver) -> dict[str, str]:
    """Fields a provider wants in the answer that accepts a delivery (Adyen's `notificationResponse`), beside
    `received`. Optional on a driver (`accept_fields` attribute); none by default."""
    fields = getattr(driver, "accept_fields", None)
    return dict(fields) if isinstance(fields, dict) else {}


class LegacySignatureDriver(ProviderDriver, Protocol):
    """A driver whose provider also has a deprecated scheme (its catalog entry's `legacy_signature`)."""

    def with_legacy_signature(self) -> ProviderDriver:
        """The same driver, also accepting the deprecated scheme: for a source that enables it."""


def derive_event_id(resource_id: str, event_type: str, status: str, occurred_at: datetime | str) -> str:
    """The dedup key for providers whose envelope id is missing or changes per retry.

    Built from the business fact, never from the whole body: a redelivery with a new envelope id, a new
    delivery timestamp or re-ordered JSON keys still maps to the same key.
    """
    when = occurred_at.astimezone(UTC).isoformat() if isinstance(occurred_at, datetime) else occurred_at
    fact = "|".join((resource_id, event_type, status, when))
    return "d_" + hashlib.sha256(fact.encode("utf-8")).hexdigest()[:40]


def body_digest_id(body: bytes) -> str:
    """Last-resort id for a verified body that cannot be parsed at all: nothing else identifies it."""
    return "b_" + hashlib.sha256(body).hexdigest()[:40]


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def parse_iso_utc(text: str, *, assume_timezone: str | None = None) -> datetime:
    """Parse an ISO-8601 timestamp into aware UTC. A naive value needs `assume_timezone` (an IANA name)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        if assume_timezone is None:
            raise PayloadInvalid(f"timestamp without a time zone: {text!r}")
        value = value.replace(tzinfo=time_zone(assume_timezone))
    return value.astimezone(UTC)


def time_zone(name: str) -> tzinfo:
    """The IANA zone `name` (e.g. "America/Sao_Paulo"), with its whole history (Brazil's DST until 2019 included).

    zoneinfo reads the system tz database when there is one, else the `tzdata` package. The Lambda runtime does
    not promise a system database, so `tzdata` is a runtime dependency (pyproject.toml; the stack's dependency
    layer carries it). With neither, ZoneInfoNotFoundError (a KeyError) propagates: a configuration error the
    gateway's retry survives, never a guessed offset.
    """
    from zoneinfo import ZoneInfo  # noqa: PLC0415 - lazy: only the providers with naive local times pay for it

    return ZoneInfo(name)
