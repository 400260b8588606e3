"""The forwarding log: every forwarding attempt, what went out and what the endpoint answered.

One item per HTTP attempt (the forwarder Lambda's, the local publisher's, `inbox outbox resend`'s), in the
forwarding log table (`definitions.FORWARD_LOG_*`), keyed by the event's `webhook-id` and the attempt's time, so
one Query gives an event's attempts oldest first. The item holds the payment, the event's sequence and type,
the endpoint (scheme, host, port and path: never the URL's credentials or query), the HTTP status (0 when there
was no answer, then `error` says why; a 3xx, never followed, has `error` name its Location), the latency, the
response headers (at most FORWARD_LOG_MAX_HEADERS, each name and value cut, secret-bearing ones such as Set-Cookie
kept by name only, a Location without its query) and the first
FORWARD_LOG_BODY_BYTES of the response body. An item is written once (PutItem) and only ever deleted by its TTL
(`expires_at`, INBOX_FORWARD_LOG_RETENTION_DAYS days, default DEFAULT_FORWARD_LOG_RETENTION_DAYS): whoever
forwards owns the write, nobody updates it.

Recording never changes forwarding's outcome: a write that fails (throttled, the table unreachable, a timeout)
is logged as a warning and dropped. That attempt has no record; the delivery, its checkpoint and its retries go
on as if the log did not exist. What is lost is only what `inbox outbox attempts` shows and, when the lost record
was an event's only 2xx after recorded failures, `inbox outbox list --undelivered` lists that event and a resend
sends it once more (with the same `webhook-id`, which the receiver dedups).
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shared.definitions import (
    DEFAULT_FORWARD_LOG_RETENTION_DAYS,
    FORWARD_LOG_BODY_BYTES,
    FORWARD_LOG_ERROR_CHARS,
    FORWARD_LOG_HEADER_NAME_CHARS,
    FORWARD_LOG_HEADER_VALUE_CHARS,
    FORWARD_LOG_MAX_HEADERS,
    FORWARD_LOG_PARTITION_KEY,
    FORWARD_LOG_SORT_KEY,
    FORWARD_LOG_TTL_ATTRIBUTE,
)
from shared.inbox.model import iso_utc

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Response headers that can carry a credential or a session of the endpoint: kept by name, their value never.
_SECRET_HEADER_NAMES = frozenset({"set-cookie", "set-cookie2", "authorization", "proxy-authorization", "cookie"})
_SECRET_HEADER_WORDS = ("token", "secret", "api-key", "apikey", "password", "signature")
# Response headers holding a URL (a redirect's target): kept as `endpoint_label` shows one, its query dropped.
_URL_HEADER_NAMES = frozenset({"location", "content-location"})
REDACTED = "[redacted]"
# Who made an attempt (the item's `sender`): the forwarding itself (Lambda or local publisher) or a resend.
SENDER_FORWARDER = "forwarder"
SENDER_RESEND = "resend"


@dataclass(frozen=True, slots=True)
class Answer:
    """What one POST got back: `status` 0 when no HTTP answer came (then `error` says what happened instead)."""

    status: int
    latency_ms: float
    headers: tuple[tuple[str, str], ...] = ()
    body_head: bytes = b""  # at most FORWARD_LOG_BODY_BYTES
    body_truncated: bool = False
    error: str | None = None

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


def is_accepted(status: int) -> bool:
    """A 2xx: the endpoint acknowledged the event (Standard Webhooks' success)."""
    return 200 <= status < 300


def endpoint_label(url: str) -> str:
    """The URL as logged: scheme, host, port and path. Credentials (`user:pass@`), the query (where tokens
    travel) and the fragment are dropped."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _secret_header(name: str) -> bool:
    return name in _SECRET_HEADER_NAMES or any(word in name for word in _SECRET_HEADER_WORDS)


def bounded_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """At most FORWARD_LOG_MAX_HEADERS headers, names lower-cased and cut, values cut, repeated names joined
    with ", " (RFC 9110 §5.3), secret-bearing values replaced by REDACTED, a URL (a redirect's Location) without
    its credentials, query or fragment."""
    kept: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = str(raw_name).strip().lower()[:FORWARD_LOG_HEADER_NAME_CHARS]
        if not name:
            continue
        if _secret_header(name):
            value = REDACTED
        elif name in _URL_HEADER_NAMES:
            value = endpoint_label(str(raw_value))[:FORWARD_LOG_HEADER_VALUE_CHARS]
        else:
            value = str(raw_value)[:FORWARD_LOG_HEADER_VALUE_CHARS]
        if name in kept:
            if kept[name] != REDACTED:
                kept[name] = f"{kept[name]}, {value}"[:FORWARD_LOG_HEADER_VALUE_CHARS]
            continue
        if len(kept) >= FORWARD_LOG_MAX_HEADERS:
            continue
        kept[name] = value
    return kept


def payment_of(event: Mapping[str, Any]) -> str | None:
    """The payment an event is about, `{source}#{resource_id}` (None for an event about no payment)."""
    resource_id = event.get("resource_id")
    source = event.get("source") or event.get("provider")
    return f"{source}#{resource_id}" if source and resource_id else None


def attempt_item(
    event: Mapping[str, Any],
    *,
    url: str,
    answer: Answer,
    attempted_at: datetime,
    sender: str,
    retention_days: int = DEFAULT_FORWARD_LOG_RETENTION_DAYS,
) -> dict[str, Any]:
    """The log item of one attempt (plain values; bounded whatever the endpoint answered)."""
    item: dict[str, Any] = {
        FORWARD_LOG_PARTITION_KEY: str(event["id"]),
        FORWARD_LOG_SORT_KEY: iso_utc(attempted_at),
        "event_type": event.get("type"),
        "sequence": event.get("sequence"),
        "payment": payment_of(event),
        "endpoint": endpoint_label(url),
        "sender": sender,
        "status": int(answer.status),
        "latency_ms": round(answer.latency_ms),  # whole milliseconds (DynamoDB's serializer takes no floats)
        "response_headers": bounded_headers(answer.headers),
        # Cut bytes, then decoded: a character cut in two or a binary body shows as U+FFFD, never fails.
        "response_body": answer.body_head[:FORWARD_LOG_BODY_BYTES].decode("utf-8", errors="replace"),
        "response_body_truncated": answer.body_truncated or len(answer.body_head) > FORWARD_LOG_BODY_BYTES,
        FORWARD_LOG_TTL_ATTRIBUTE: int(attempted_at.timestamp()) + retention_days * 86_400,
    }
    if answer.error:
        item["error"] = answer.error[:FORWARD_LOG_ERROR_CHARS]
    return {name: value for name, value in item.items() if value is not None}


class ForwardLog:
    """Writes (`record`, never raising) and reads (`attempts`) the forwarding log table."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        *,
        retention_days: int = DEFAULT_FORWARD_LOG_RETENTION_DAYS,
        sender: str = SENDER_FORWARDER,
        clock: Callable[[], float] = time.time,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.dynamodb = dynamodb
        self.table = table
        self.retention_days = retention_days
        self.sender = sender
        self.clock = clock
        self.warn = warn or _log_warning
        self.written = 0
        self.write_failures = 0

    def record(self, event: Mapping[str, Any], url: str, answer: Answer, started_epoch: float) -> None:
        """Put the attempt's item. Any failure is a warning, never an exception: forwarding goes on unchanged."""
        try:
            item = attempt_item(
                event,
                url=url,
                answer=answer,
                attempted_at=datetime.fromtimestamp(started_epoch, UTC),
                sender=self.sender,
                retention_days=self.retention_days,
            )
            self.dynamodb.put_item(TableName=self.table, Item=_typed(item))
            self.written += 1
        except Exception as error:  # whatever the log's failure, the delivery must not see it
            self.write_failures += 1
            # The id and the error's type only: the error text may quote the item (the endpoint's answer).
            self.warn(f"forwarding log: attempt of {event.get('id')} not recorded ({type(error).__name__})")

    def attempts(self, webhook_id: str) -> list[dict[str, Any]]:
        """Every recorded attempt of one event, oldest first (a consistent Query, all pages)."""
        from shared.inbox.store import from_attributes  # noqa: PLC0415 - boto3's types: only when reading

        return [from_attributes(raw) for raw in self._query(webhook_id)]

    def statuses(self, webhook_id: str) -> list[int]:
        """Only the statuses of an event's attempts, oldest first (what `reached_endpoint` needs)."""
        return [int(raw["status"]["N"]) for raw in self._query(webhook_id, projection="#status")]

    def _query(self, webhook_id: str, projection: str | None = None) -> list[dict[str, Any]]:
        # Expired items are filtered out: TTL deletes them in the background, typically within days of their
        # expiry, and until then a Query returns them (https://docs.aws.amazon.com/amazondynamodb/latest/
        # developerguide/ttl-expired-items.html). The local stack's moto never deletes them at all.
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "FilterExpression": "#ttl > :now",
            "ExpressionAttributeNames": {"#pk": FORWARD_LOG_PARTITION_KEY, "#ttl": FORWARD_LOG_TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {":pk": {"S": webhook_id}, ":now": {"N": str(int(self.clock()))}},
            "ScanIndexForward": True,
            "ConsistentRead": True,
        }
        if projection:
            kwargs["ProjectionExpression"] = projection
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
        items: list[dict[str, Any]] = []
        while True:
            page = self.dynamodb.query(**kwargs)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def reached_endpoint(sequence: int, checkpoint: int, statuses: Iterable[int]) -> bool:
    """Whether an outbox record reached the endpoint: a recorded 2xx says so. Without one, the forwarding
    checkpoint says so only when no attempt is recorded at all (delivered before the log existed, or its 2xx
    record was lost with no failure recorded before it): recorded failures under a checkpoint mean the checkpoint
    moved past the record without it, as when the forwarding Pipe gives a batch up and delivers the next one."""
    seen = list(statuses)
    if any(is_accepted(status) for status in seen):
        return True
    return sequence <= checkpoint and not seen


def _typed(item: dict[str, Any]) -> dict[str, Any]:
    # Imported here, not at the top: boto3's type serializer pulls in boto3 and botocore (~0.7 s measured on a
    # loaded machine), which the forwarder's handler module should not pay at import for a batch with no event.
    from shared.inbox.store import to_attributes  # noqa: PLC0415

    return to_attributes(item)


def _log_warning(message: str) -> None:
    from shared.observability import logger  # noqa: PLC0415 - Powertools' Logger, only where it is used

    logger.warning(message)
