"""The rejected-delivery log: what the ingest refused, from whom and why, kept a few days, never a secret.

The ingest calls `RejectionLog.note` once per refused delivery (shared/ingest.py, `_note_refusal`). Every refusal
is counted (`DeliveriesRejected`, dimension `reason`); at most `per_minute` refusals of one source and minute are
also recorded, as one item of the rejected table each (definitions, "rejected deliveries"; the schema is
`inbox_cli.rejected.RejectedDelivery`).

Bounded whatever an attacker sends, at one write at most per refused delivery:
- each Lambda instance keeps a token bucket per source (`per_minute` tokens, refilled continuously): past it, a
  refusal is only counted (`RejectionsNotRecorded{cause=rate_limited}`), with no I/O at all;
- the record's key is one of `per_minute` slots of its source and minute, chosen by a hash of the body's sha256
  and the reason, and the put is conditional (attribute_not_exists). However many instances a flood spreads
  over, at most `per_minute` items of a source and minute can exist; a put on a taken slot fails the condition
  (`cause=slot_taken`: a gateway's retry of the same refused body is recorded once a minute). The price: two
  different bodies may share a slot, so fewer than `per_minute` distinct refusals may be kept in a busy minute.
- the write uses a client that tries once with one-second timeouts; whatever goes wrong (the table missing or
  throttled, the fingerprint key unreadable, a bug) is caught, logged and counted (`cause=log_unavailable`): the
  refused delivery is answered 401 (or 400) all the same, never 5xx.

The id is "rej_" + the 26 characters of a ULID: 10 of the minute's epoch milliseconds, 16 of a hash of (source,
slot). Ids therefore sort by minute; the listing sorts by `received_at` (the index `rejected-by-day`).

What is stored of a delivery:
- every header, names lower-cased, except that the value of a secret-bearing one is replaced by
  `{"fingerprint": HMAC-SHA256(key, value) hex}`. Secret-bearing: the carriers of the driver's static-token
  scheme (Asaas' `asaas-access-token`, Hotmart's `x-hotmart-hottok`, iugu's `Authorization` and `?token=`) and,
  whatever the driver, any header or query parameter whose name says it holds a credential (authorization,
  cookie, token, secret, password, api key), unless the driver names it among its replay headers (which are
  signatures, never a secret: PagBank's `x-authenticity-token` is a digest). The key is per deployment (a
  generated Secrets Manager secret; locally a development value), so the doctor can tell "this is the previous
  token" by fingerprinting candidates with the same key, and a fingerprint says nothing outside the deployment.
- the body: its size and sha256 (of the whole body as received), and the body itself up to 64 KB, after the
  driver's secret body fields (Hotmart's `hottok`) and the deployment's personal-data fields
  (INBOX_REDACT_FIELDS, shared/redaction.py, as the archive) are redacted. A redacted body is re-serialized JSON
  (`body_redacted`), no longer the bytes that were signed. A body that cannot be redacted (not JSON) while
  redaction is configured is not kept at all (`body_withheld`): personal data is never stored unredacted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from shared import aws, definitions
from shared.observability import count_by, logger
from shared.redaction import parse_redact_fields
from shared.settings import ConfigurationError, EnvironmentSettings, text, whole

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from shared.providers.base import ProviderDriver

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PREFIX = "rej_"

# A name that says its value is a credential, whatever the driver (checked on lower-cased names).
_CREDENTIAL_NAME = re.compile(r"authorization|cookie|token|secret|passw|api[-_]?key|apikey|access[-_]?key|hottok")

# SignatureInvalid messages (shared/providers: they never hold a secret) -> reason code; first match wins.
# tests/unit/test_rejections.py runs every catalog driver's refusals through it.
_REASON_BY_MESSAGE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^missing |^notification item without"), "signature_missing"),
    (re.compile(r"timestamp outside tolerance"), "timestamp_out_of_tolerance"),
    (re.compile(r"malformed|^no \w+ signature in|^no signature in|unsupported|unreadable"), "signature_malformed"),
)


def reason_for_signature_refusal(message: str) -> str:
    """The reason code of a SignatureInvalid message (`signature_invalid` when nothing more precise applies)."""
    for pattern, reason in _REASON_BY_MESSAGE:
        if pattern.search(message):
            return reason
    return "signature_invalid"


# ------------------------------------------------------------------------------------------------ ids


def _crockford(value: int, length: int) -> str:
    characters = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        characters.append(_CROCKFORD[digit])
    return "".join(reversed(characters))


def rejection_id(source: str, minute: int, slot: int) -> str:
    """The id (and key) of slot `slot` of `source` in the minute starting at epoch second `minute`."""
    milliseconds = minute * 1000
    spread = int.from_bytes(hashlib.sha256(f"{source}\x00{slot}".encode()).digest()[:10], "big")
    return ID_PREFIX + _crockford(milliseconds, 10) + _crockford(spread, 16)


def is_rejection_id(value: str) -> bool:
    return (
        len(value) == len(ID_PREFIX) + 26
        and value.startswith(ID_PREFIX)
        and all(character in _CROCKFORD for character in value[len(ID_PREFIX) :])
    )


def slot_for(source: str, reason: str, body_sha256: str, slots: int) -> int:
    digest = hashlib.sha256(f"{source}\x00{reason}\x00{body_sha256}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % slots


# --------------------------------------------------------------------------------------- fingerprints


def fingerprint(key: bytes, value: str) -> str:
    """HMAC-SHA256 of a secret-bearing value under the deployment's fingerprint key, hex. Without the key it
    reveals nothing about the value (not even equality across deployments)."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def _token_carriers(scheme: Any) -> tuple[set[str], set[str]]:
    """(headers, query parameters) that carry a static token in `scheme` (a TokenScheme, or schemes within)."""
    headers: set[str] = set()
    query: set[str] = set()
    from shared.providers._schemes import FirstCarried, TokenScheme  # noqa: PLC0415 - only on the recording path

    if isinstance(scheme, TokenScheme):
        headers |= {name.lower() for name in scheme.headers}
        if scheme.query_param:
            query.add(scheme.query_param)
    elif isinstance(scheme, FirstCarried):
        for inner in scheme.schemes:
            inner_headers, inner_query = _token_carriers(inner)
            headers |= inner_headers
            query |= inner_query
    return headers, query


class SecretCarriers(NamedTuple):
    """Which header names and query parameters of a driver's deliveries hold a secret."""

    headers: frozenset[str]
    query: frozenset[str]
    safe_headers: frozenset[str]  # the driver's replay headers: signatures, never the secret
    safe_query: frozenset[str]

    @classmethod
    def of(cls, driver: ProviderDriver | None) -> SecretCarriers:
        if driver is None:
            return cls(frozenset(), frozenset(), frozenset(), frozenset())
        scheme = getattr(driver, "authentication", None) or getattr(driver, "scheme", None)
        headers, query = _token_carriers(scheme)
        return cls(
            frozenset(headers),
            frozenset(query),
            frozenset(name.lower() for name in driver.replay_headers) - headers,
            frozenset(driver.replay_query) - query,
        )

    def header_is_secret(self, name: str) -> bool:
        return name in self.headers or (name not in self.safe_headers and bool(_CREDENTIAL_NAME.search(name)))

    def query_is_secret(self, name: str) -> bool:
        lowered = name.lower()
        return name in self.query or (name not in self.safe_query and bool(_CREDENTIAL_NAME.search(lowered)))


def protected(
    values: Mapping[str, str], is_secret: Callable[[str], bool], key: bytes
) -> dict[str, str | dict[str, str]]:
    """`values` with every secret-bearing value replaced by its fingerprint."""
    return {
        name: {"fingerprint": fingerprint(key, value)} if is_secret(name) else value for name, value in values.items()
    }


# ----------------------------------------------------------------------------------------------- body


class KeptBody(NamedTuple):
    body: bytes | None  # None: withheld (it could not be redacted)
    truncated: bool
    redacted: bool


def kept_body(
    raw: bytes, *, redact_fields: frozenset[str], secret_body_fields: tuple[str, ...], limit: int
) -> KeptBody:
    """What the log keeps of a refused body: secrets and personal data redacted, then at most `limit` bytes."""
    from shared.redaction import (  # noqa: PLC0415 - the archive's redaction: one rule for personal data
        redact,
        redact_secret_fields,
    )

    body = redact_secret_fields(raw, secret_body_fields) if secret_body_fields else raw
    redacted = body != raw
    if redact_fields and body:
        try:
            document = json.loads(body)
        except (ValueError, RecursionError):  # not JSON (or not UTF-8): it cannot be redacted, so it is not kept
            return KeptBody(None, False, False)
        cleaned, count = redact(document, redact_fields)
        if count:
            body = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            redacted = True
    return KeptBody(body[:limit], len(body) > limit, redacted)


# --------------------------------------------------------------------------------------------- budget


class MinuteBudget:
    """A token bucket per source: `per_minute` tokens, refilled continuously. Per Lambda instance, thread-safe
    (the local stack runs concurrent invocations in threads). Sources are the configured ones: bounded memory."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, source: str) -> bool:
        now = self.clock()
        with self._lock:
            tokens, last = self._buckets.get(source, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * self.per_minute / 60.0)
            if tokens < 1.0:
                self._buckets[source] = (tokens, now)
                return False
            self._buckets[source] = (tokens - 1.0, now)
            return True


# ---------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class RejectionLogSettings(EnvironmentSettings):
    table: str | None = text(definitions.ENV_REJECTED_TABLE, None)  # None: refusals are only counted
    retention_days: int = whole(
        definitions.ENV_REJECTED_RETENTION_DAYS,
        definitions.DEFAULT_REJECTED_RETENTION_DAYS,
        low=1,
        high=definitions.MAX_REJECTED_RETENTION_DAYS,
        why="refused deliveries are diagnostics, kept days, not an archive",
    )
    per_minute: int = whole(
        definitions.ENV_REJECTED_PER_SOURCE_PER_MINUTE,
        definitions.DEFAULT_REJECTED_PER_SOURCE_PER_MINUTE,
        low=1,
        high=definitions.MAX_REJECTED_PER_SOURCE_PER_MINUTE,
        why="the bound on what a flood of forged deliveries can write",
    )
    fingerprint_key: str | None = text(definitions.ENV_FINGERPRINT_KEY, None)
    fingerprint_key_secret: str | None = text(definitions.ENV_FINGERPRINT_KEY_SECRET, None)
    redact_fields: str = text(definitions.ENV_REDACT_FIELDS, "")

    def __post_init__(self) -> None:
        EnvironmentSettings.__post_init__(self)
        if self.table and not (self.fingerprint_key or self.fingerprint_key_secret):
            raise ConfigurationError(
                f"{definitions.ENV_REJECTED_TABLE} is set but neither {definitions.ENV_FINGERPRINT_KEY_SECRET} nor "
                f"{definitions.ENV_FINGERPRINT_KEY}: a secret-bearing header could not be fingerprinted"
            )


def read_fingerprint_key(settings: RejectionLogSettings) -> bytes:
    """The deployment's fingerprint key: the local value, or the generated secret's `current` (cached 5 min)."""
    if settings.fingerprint_key:
        return settings.fingerprint_key.encode("utf-8")
    from shared.secrets import read_secret_pair  # noqa: PLC0415

    assert settings.fingerprint_key_secret  # __post_init__ requires one of the two
    return read_secret_pair(settings.fingerprint_key_secret, what="fingerprint key").current.encode("utf-8")


# ------------------------------------------------------------------------------------------------- log


class Refusal(NamedTuple):
    """One refused delivery as the ingest saw it (before anything is redacted)."""

    source: str
    provider: str
    reason: str
    detail: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes
    source_ip: str
    user_agent: str
    redact_fields: tuple[str, ...] = ()  # the source's own personal-data fields, besides the deployment's


class RejectionLog:
    def __init__(
        self,
        settings: RejectionLogSettings,
        *,
        dynamodb: DynamoDBClient | None = None,
        key: Callable[[], bytes] | None = None,
        clock: Callable[[], float] = time.time,
        budget: MinuteBudget | None = None,
    ) -> None:
        self.settings = settings
        self._dynamodb = dynamodb
        self._key = key or (lambda: read_fingerprint_key(settings))
        self.clock = clock
        self.budget = budget or MinuteBudget(settings.per_minute)
        self.redact_fields = parse_redact_fields(settings.redact_fields)

    @property
    def dynamodb(self) -> DynamoDBClient:
        return self._dynamodb or aws.dynamodb_best_effort()

    def note(self, refusal: Refusal, driver: ProviderDriver | None) -> str:
        """Count the refusal and record it if the budget allows. Returns what happened ("recorded", "counted" or a
        REJECTION_NOT_RECORDED_CAUSES value). Never raises."""
        count_by(definitions.METRIC_DELIVERIES_REJECTED, "reason", refusal.reason)
        if refusal.reason == "unknown_source" or not self.settings.table:
            return "counted"
        try:
            outcome = self._record(refusal, driver)
        except Exception as error:  # the log is best effort: the refusal's answer never depends on it
            logger.warning(
                "rejected delivery not recorded", extra={"source": refusal.source, "error": type(error).__name__}
            )
            outcome = "log_unavailable"
        if outcome == "recorded":
            count_by(definitions.METRIC_REJECTIONS_RECORDED, "reason", refusal.reason)
        else:
            count_by(definitions.METRIC_REJECTIONS_NOT_RECORDED, "cause", outcome)
        return outcome

    def _record(self, refusal: Refusal, driver: ProviderDriver | None) -> str:
        if not self.budget.take(refusal.source):
            return "rate_limited"
        now = self.clock()
        item = self.item(refusal, driver, now=now)
        from botocore.exceptions import ClientError  # noqa: PLC0415

        from shared.inbox.store import to_attributes  # noqa: PLC0415

        try:
            self.dynamodb.put_item(
                TableName=str(self.settings.table),
                Item=to_attributes(item),
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": definitions.REJECTED_PARTITION_KEY},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return "slot_taken"
            raise
        return "recorded"

    def item(self, refusal: Refusal, driver: ProviderDriver | None, *, now: float) -> dict[str, Any]:
        """The record of `refusal` received at `now` (epoch seconds)."""
        carriers = SecretCarriers.of(driver)
        key = self._key()
        digest = hashlib.sha256(refusal.body).hexdigest()
        minute = int(now // 60) * 60
        slot = slot_for(refusal.source, refusal.reason, digest, self.settings.per_minute)
        received = datetime.fromtimestamp(now, tz=UTC)
        kept = kept_body(
            refusal.body,
            redact_fields=self.redact_fields | {name.lower() for name in refusal.redact_fields},
            secret_body_fields=tuple(getattr(driver, "secret_body_fields", ()) or ()),
            limit=definitions.REJECTED_BODY_LIMIT_BYTES,
        )
        item: dict[str, Any] = {
            definitions.REJECTED_PARTITION_KEY: rejection_id(refusal.source, minute, slot),
            "source": refusal.source,
            "provider": refusal.provider,
            "received_at": received.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            definitions.REJECTED_BY_DAY_INDEX_PK: received.strftime("%Y-%m-%d"),
            "reason": refusal.reason,
            "detail": refusal.detail[:500],
            "source_ip": refusal.source_ip,
            "user_agent": refusal.user_agent[:500],
            "headers": protected({k.lower(): v for k, v in refusal.headers.items()}, carriers.header_is_secret, key),
            "query": protected(dict(refusal.query), carriers.query_is_secret, key),
            "body_size": len(refusal.body),
            "body_sha256": digest,
            "body_truncated": kept.truncated,
            "body_redacted": kept.redacted,
            definitions.REJECTED_TTL_ATTRIBUTE: int(now) + self.settings.retention_days * 86_400,
        }
        if kept.body is None:
            item["body_withheld"] = True
        elif kept.body:  # DynamoDB keeps no empty binary worth storing; an empty body is body_size 0
            item["body"] = kept.body
        return item
