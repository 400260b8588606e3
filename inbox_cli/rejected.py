"""What the rejected-delivery log holds, read for `inbox rejected`, the console and `inbox doctor --rejected`.

The ingest writes the log (shared/rejections.py explains what it keeps and why it is bounded); these functions
only read it, through the per-day index for listings (newest first, never a scan of the bodies) and one GetItem
for a record. Records past their `expires_at` are not shown: DynamoDB's TTL deletes expired items within a few
days, not at once (and locally only `inbox retention run` deletes them).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from inbox_cli.operations import NotFound, StackNotReady
from inbox_cli.target import Target
from shared import aws, definitions
from shared.inbox.store import from_attributes
from shared.rejections import fingerprint, is_rejection_id

# What a listing shows of each record (the CLI's table columns and its --json keys).
REJECTED_COLUMNS = ["id", "received_at", "source", "provider", "reason", "detail", "source_ip"]
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
# TTL deletes an expired item "within a few days" (typically 48 hours): look that much further back.
_TTL_LAG_DAYS = 2
_PAGE_SIZE = 200


@dataclass(frozen=True)
class RejectedDelivery:
    """One recorded refusal (the schema agreed with `inbox doctor`). `headers` maps lower-cased names to the value
    as sent or, for a secret-bearing header, to {"fingerprint": hex}; the same for `query`. `body` is the kept
    body (at most 64 KB, redacted as `body_redacted` says; empty when withheld or empty)."""

    id: str
    source: str
    provider: str
    received_at: str
    reason: str
    detail: str
    source_ip: str
    user_agent: str
    headers: dict[str, Any]
    query: dict[str, Any]
    body_size: int
    body_sha256: str
    body: bytes
    body_truncated: bool
    body_redacted: bool
    expires_at: int
    body_withheld: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> RejectedDelivery:
        known = {
            "pk", "source", "provider", "received_at", "reason", "detail", "source_ip", "user_agent", "headers",
            "query", "body_size", "body_sha256", "body", "body_truncated", "body_redacted", "expires_at",
            "body_withheld", definitions.REJECTED_BY_DAY_INDEX_PK,
        }  # fmt: skip
        return cls(
            id=str(item[definitions.REJECTED_PARTITION_KEY]),
            source=str(item.get("source", "")),
            provider=str(item.get("provider", "")),
            received_at=str(item.get("received_at", "")),
            reason=str(item.get("reason", "")),
            detail=str(item.get("detail", "")),
            source_ip=str(item.get("source_ip", "")),
            user_agent=str(item.get("user_agent", "")),
            headers=dict(item.get("headers") or {}),
            query=dict(item.get("query") or {}),
            body_size=int(item.get("body_size", 0)),
            body_sha256=str(item.get("body_sha256", "")),
            body=bytes(item.get("body") or b""),
            body_truncated=bool(item.get("body_truncated", False)),
            body_redacted=bool(item.get("body_redacted", False)),
            expires_at=int(item.get("expires_at", 0)),
            body_withheld=bool(item.get("body_withheld", False)),
            extra={name: value for name, value in item.items() if name not in known},
        )

    def fingerprinted(self) -> dict[str, str]:
        """{header or `?param`: fingerprint} of the secret-bearing values it presented."""
        found = {name: value["fingerprint"] for name, value in self.headers.items() if isinstance(value, dict)}
        found.update({f"?{n}": v["fingerprint"] for n, v in self.query.items() if isinstance(v, dict)})
        return found

    def to_json(self) -> dict[str, Any]:
        """A JSON document: the body as text when it is UTF-8, else base64 (`body_encoding` says which)."""
        document = asdict(self)
        document.pop("extra")
        body = document.pop("body")
        try:
            document.update(body=body.decode("utf-8"), body_encoding="utf-8")
        except UnicodeDecodeError:
            document.update(body=base64.b64encode(body).decode("ascii"), body_encoding="base64")
        return document


def _table(target: Target) -> str:
    if not target.rejected_table:
        raise StackNotReady("this stack has no rejected-delivery log (output RejectedTableName): deploy this version")
    return target.rejected_table


def load_rejected(target: Target, rejected_id: str, *, now: datetime | None = None) -> RejectedDelivery:
    """The record `rejected_id` (NotFound when there is none, or it has expired)."""
    if not is_rejection_id(rejected_id):
        raise NotFound(f"{rejected_id!r} is not a rejection id (rej_ and 26 characters, as `inbox rejected list`)")
    response = aws.dynamodb().get_item(
        TableName=_table(target), Key={definitions.REJECTED_PARTITION_KEY: {"S": rejected_id}}, ConsistentRead=True
    )
    item = response.get("Item")
    moment = int((now or datetime.now(UTC)).timestamp())
    if not item or int(from_attributes(item).get("expires_at", 0)) <= moment:
        raise NotFound(f"no rejected delivery {rejected_id} (or it has expired)")
    return RejectedDelivery.from_item(from_attributes(item))


def list_rejected(
    target: Target,
    *,
    source: str | None = None,
    reason: str | None = None,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The records that match, newest first, at most `limit`, each reduced to REJECTED_COLUMNS: one Query per UTC
    day of the retention window (the index `rejected-by-day`), from today back."""
    if limit < 1 or limit > MAX_LIMIT:
        raise ValueError(f"limit must be within 1..{MAX_LIMIT}, got {limit}")
    moment = now or datetime.now(UTC)
    dynamodb = aws.dynamodb()
    rows: list[dict[str, Any]] = []
    names = {"#day": definitions.REJECTED_BY_DAY_INDEX_PK, "#ttl": definitions.REJECTED_TTL_ATTRIBUTE}
    values: dict[str, Any] = {":now": {"N": str(int(moment.timestamp()))}}
    conditions = ["#ttl > :now"]
    for name, wanted in (("source", source), ("reason", reason)):
        if wanted:
            names[f"#{name}"] = name
            values[f":{name}"] = {"S": wanted}
            conditions.append(f"#{name} = :{name}")
    for back in range(definitions.MAX_REJECTED_RETENTION_DAYS + _TTL_LAG_DAYS + 1):
        day = (moment - timedelta(days=back)).strftime("%Y-%m-%d")
        query: dict[str, Any] = {
            "TableName": _table(target),
            "IndexName": definitions.REJECTED_BY_DAY_INDEX,
            "KeyConditionExpression": "#day = :day",
            "FilterExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {**values, ":day": {"S": day}},
            "ScanIndexForward": False,
            "Limit": _PAGE_SIZE,
        }
        while len(rows) < limit:
            page = dynamodb.query(**query)
            for item in page.get("Items", []):
                rows.append(_row(from_attributes(item)))
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if len(rows) >= limit:
            break
    rows.sort(key=lambda row: (row["received_at"], row["id"]), reverse=True)
    return rows[:limit]


def _row(item: dict[str, Any]) -> dict[str, Any]:
    row = {column: item.get(column) for column in REJECTED_COLUMNS}
    row["id"] = item[definitions.REJECTED_PARTITION_KEY]
    return row


def show_rejected(target: Target, rejected_id: str) -> dict[str, Any]:
    """`inbox rejected show --json`: the record as JSON (never a secret: those were fingerprinted when written)."""
    return load_rejected(target, rejected_id).to_json()


def fingerprint_key(target: Target) -> bytes:
    """The key the stack's fingerprints were made with: locally the development key, deployed the generated
    secret's `current` (read with the operator's credentials)."""
    if target.local:
        from inbox_local.config import fingerprint_key as local_key  # noqa: PLC0415

        return local_key().encode("utf-8")
    if not target.fingerprint_key_secret:
        raise StackNotReady("this stack has no fingerprint key (output FingerprintKeySecretArn): deploy this version")
    import boto3  # noqa: PLC0415

    secret = boto3.client("secretsmanager").get_secret_value(SecretId=target.fingerprint_key_secret)
    value = json.loads(secret["SecretString"])
    return str(value["current"]).encode("utf-8")


def fingerprint_for(target: Target) -> Callable[[str], str]:
    """A candidate secret -> the fingerprint it would have in `target`'s log (what `inbox doctor --rejected` compares
    with a record's); the key is read once, on the first call."""
    key: list[bytes] = []

    def of(candidate: str) -> str:
        if not key:
            key.append(fingerprint_key(target))
        return fingerprint(key[0], candidate)

    return of


def fingerprint_of(target: Target, candidate: str) -> str:
    """The fingerprint `candidate` (a token, a header value) would have in `target`'s log: compare it with a
    record's to tell which secret a refused delivery presented, without the record ever holding it."""
    return fingerprint(fingerprint_key(target), candidate)
