"""Retention: inbox items that DynamoDB's TTL removes are archived to S3, from the stream's REMOVE records.

The order is DynamoDB's: TTL deletes the item, the stream carries its last image (OldImage) for 24 hours, and the
archiver (an event source mapping filtered on TTL deletions, `ARCHIVE_FILTER_PATTERN`) writes it to the archive
bucket. A failing batch is retried by the mapping until it succeeds or its records leave the stream.

Layout: one gzip-compressed JSON-lines object per batch and partition,
`archive/provider=<provider>/date=<YYYY-MM-DD of received_at>/<first sequence>-<last sequence>.jsonl.gz`. The name
comes from the batch's own stream sequence numbers, so a retried batch overwrites the same objects instead of
adding copies (a batch the mapping bisects is written as two new objects: the archive is at-least-once, and every
line carries its `pk`). Each line is the item as it was, with the body inline and uncompressed (an item keeps it
zlib-compressed, `body_zlib`, or, written before compression, raw):
- `body` as text with `body_encoding: "utf-8"`, or base64 with `body_encoding: "base64"` when not UTF-8;
- bodies that lived in the body bucket (`body_s3_key`) are read from it and inlined the same way;
- `ttl_removed_at` (the stream record's time), `stream_sequence_number`.

One record never holds up its shard: a body the body bucket no longer has (its lifecycle rule expired it before
TTL deleted the item) or refuses is archived as `body: null` with `body_error` (S3's code) and `body_missing`
(what that means); an image that cannot be decoded, as its `pk` and `archive_error`. Both are counted
(`ArchivedIncomplete`, alarmed). Only faults a retry may cure (throttling, a 5xx, the archive's own PutObject)
fail the batch, which the mapping retries.

Redaction (LGPD): with `INBOX_REDACT_FIELDS` (comma-separated JSON key names, matched case-insensitively), every
value under such a key, at any depth of a JSON body, is replaced by "[redacted]" in the archive, and the line
says how many (`redacted_values`). The table is not changed. A redacted body is written back as compact JSON, so
it is no longer byte-for-byte the delivery (its signature no longer verifies; `body_sha256` is the original's).
Bodies that are not JSON (or not UTF-8) cannot be redacted and are archived as they are (`redaction: "skipped:
..."` says so).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from shared import aws, definitions
from shared.definitions import (
    ARCHIVE_KEY_PREFIX,
    ENV_ARCHIVE_BUCKET,
    ENV_BODY_BUCKET,
    ENV_REDACT_FIELDS,
    source_of,
)
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, inline_body
from shared.inbox.store import from_attributes
from shared.observability import count_for_provider, logger
from shared.redaction import parse_redact_fields, redact
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, text
from shared.sources import Sources, declared_sources

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

_UNSAFE_KEY_CHARACTERS = re.compile(r"[^A-Za-z0-9_.-]")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# S3's answers for a body no retry will bring back, and what the archive line says of each. With s3:ListBucket
# (the archiver has it: shared/definitions/s3_grants.py) a missing key is NoSuchKey (404 for a HEAD); AccessDenied is
# then a real refusal (a bucket or key policy), which a retry within the stream's 24 hours would not fix either.
BODY_UNAVAILABLE_CODES: Final[dict[str, str]] = {
    "NoSuchKey": "the body bucket no longer holds body_s3_key (expired before the item)",
    "404": "the body bucket no longer holds body_s3_key (expired before the item)",
    "AccessDenied": "the body bucket refused to read body_s3_key",
    "403": "the body bucket refused to read body_s3_key",
}


def archived_body(raw: bytes, fields: frozenset[str]) -> dict[str, Any]:
    """The body's fields of an archive line: text when UTF-8 (redacted when configured and JSON), else base64, and
    the digest of the body as stored (`body_sha256`: the item does not carry it, its body does)."""
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        archived: dict[str, Any] = {
            "body": base64.b64encode(raw).decode("ascii"),
            "body_encoding": "base64",
            "body_sha256": digest,
        }
        if fields:
            archived["redaction"] = "skipped: body is not UTF-8"
        return archived
    archived = {"body": text, "body_encoding": "utf-8", "body_sha256": digest}
    if not fields:
        return archived
    try:
        document = json.loads(text)
    except ValueError:
        archived["redaction"] = "skipped: body is not JSON"
        return archived
    redacted, count = redact(document, fields)
    if count:  # unchanged bodies keep their exact bytes
        archived["body"] = json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
    archived["redacted_values"] = count
    return archived


def _binary_as_bytes(value: Any) -> Any:
    """DynamoDB JSON as Lambda delivers it carries binary (B, BS) as base64 text; boto3 wants bytes."""
    if isinstance(value, dict):
        converted: dict[str, Any] = {}
        for kind, inner in value.items():
            if kind == "B" and isinstance(inner, str):
                converted[kind] = base64.b64decode(inner)
            elif kind == "BS" and isinstance(inner, list):
                converted[kind] = [base64.b64decode(v) if isinstance(v, str) else v for v in inner]
            elif kind == "M" and isinstance(inner, dict):
                converted[kind] = {name: _binary_as_bytes(v) for name, v in inner.items()}
            elif kind == "L" and isinstance(inner, list):
                converted[kind] = [_binary_as_bytes(v) for v in inner]
            else:
                converted[kind] = inner
        return converted
    return value


def item_from_image(image: Mapping[str, Any]) -> dict[str, Any]:
    """A stream record's image (DynamoDB JSON, binary as base64 text or bytes) as a plain item."""
    try:
        return from_attributes({name: _binary_as_bytes(value) for name, value in image.items()})
    except binascii.Error as error:
        raise ValueError(f"undecodable binary attribute in a stream image: {error}") from None


def undecodable_item(stream: Mapping[str, Any], error: str) -> dict[str, Any]:
    """What an archive line can keep of a record whose image did not decode: its key (a string attribute, whatever
    the rest holds) and why."""
    key = (stream.get("Keys") or {}).get("pk") or (stream.get("OldImage") or {}).get("pk") or {}
    return {"pk": key.get("S") if isinstance(key, dict) else None, "archive_error": error}


def _safe(value: Any, fallback: str) -> str:
    text = _UNSAFE_KEY_CHARACTERS.sub("_", str(value or "")).strip("_.")
    return text or fallback


def partition_of(item: Mapping[str, Any]) -> tuple[str, str]:
    """(provider, YYYY-MM-DD of received_at) of an item, safe for an S3 key."""
    received = str(item.get("received_at") or "")
    day = received[:10] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", received[:10]) else "unknown"
    return _safe(item.get("provider"), "unknown"), day


def batch_id(records: Iterable[Mapping[str, Any]]) -> str:
    """`<first>-<last>` stream sequence numbers of the batch: a retried batch gets the same id."""
    numbers = sorted(int(record["dynamodb"]["SequenceNumber"]) for record in records)
    if not numbers:
        raise ValueError("an empty batch has no id")
    return f"{numbers[0]}-{numbers[-1]}"


def archive_key(provider: str, day: str, batch: str) -> str:
    return f"{ARCHIVE_KEY_PREFIX}provider={provider}/date={day}/{batch}.jsonl.gz"


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == int(value) else float(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _iso_from_epoch(value: Any) -> str | None:
    if isinstance(value, int | float | Decimal):
        return datetime.fromtimestamp(float(value), tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(value) if value is not None else None


@dataclass
class _Partition:
    key: str
    provider: str
    buffer: io.BytesIO = field(default_factory=io.BytesIO)
    lines: int = 0
    writer: gzip.GzipFile | None = None

    def write(self, line: dict[str, Any]) -> None:
        if self.writer is None:  # mtime=0: the same batch compresses to the same bytes
            self.writer = gzip.GzipFile(filename="", mode="wb", fileobj=self.buffer, mtime=0)
        encoded = json.dumps(line, ensure_ascii=False, sort_keys=True, default=_json_default)
        self.writer.write(encoded.encode("utf-8") + b"\n")
        self.lines += 1

    def close(self) -> bytes:
        if self.writer is not None:
            self.writer.close()
        return self.buffer.getvalue()


class Archiver:
    def __init__(
        self,
        archive_bucket: str,
        body_bucket: str | None = None,
        *,
        redact_fields: frozenset[str] = frozenset(),
        source_redact_fields: Mapping[str, frozenset[str]] | None = None,
        s3: S3Client | None = None,
    ) -> None:
        self.archive_bucket = archive_bucket
        self.body_bucket = body_bucket
        self.redact_fields = redact_fields
        # A source's own `redact_fields` (sources.json), redacted from its items besides the deployment's.
        self.source_redact_fields = dict(source_redact_fields or {})
        self._s3 = s3

    @property
    def s3(self) -> S3Client:
        return self._s3 or aws.s3()

    def fields_for(self, item: Mapping[str, Any]) -> frozenset[str]:
        """The keys redacted from this item's body: the deployment's and its source's."""
        if not self.source_redact_fields:
            return self.redact_fields
        return self.redact_fields | self.source_redact_fields.get(source_of(item), frozenset())

    def _body(self, item: dict[str, Any]) -> dict[str, Any]:
        raw = inline_body(item)  # compressed (`body_zlib`) or, written before compression, raw (`body`)
        item.pop("body", None)
        item.pop(BODY_ZLIB_ATTRIBUTE, None)
        fields = self.fields_for(item)
        if raw is not None:
            return archived_body(raw, fields)
        s3_key = item.get("body_s3_key")
        if not s3_key:
            return {"body": None}
        if not self.body_bucket:
            raise RuntimeError("an archived item's body is in S3, but no body bucket is configured")
        try:
            response = self.s3.get_object(Bucket=self.body_bucket, Key=str(s3_key))
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code not in BODY_UNAVAILABLE_CODES:
                raise  # a fault that may pass (throttling, a 5xx): the mapping retries the batch
            # Gone already (the body bucket's lifecycle expired it before TTL deleted the item), or refused: a
            # retry cannot change that, and a failing batch would hold up every TTL removal of its shard until
            # the stream drops them. Archive the item without its body, say so on its line, count it (alarmed).
            logger.warning("archived without its body", extra={"pk": item.get("pk"), "key": s3_key, "error": code})
            count_for_provider(definitions.METRIC_ARCHIVED_INCOMPLETE, str(item.get("provider") or "unknown"))
            missing = {"body": None, "body_error": code, "body_missing": BODY_UNAVAILABLE_CODES[code]}
            digest = str(s3_key).rsplit("/", 1)[-1]  # a body's key ends with its sha256 (body_object_key)
            return {**missing, "body_sha256": digest} if _SHA256_HEX.fullmatch(digest) else missing
        return archived_body(response["Body"].read(), fields)

    def line_for(self, record: Mapping[str, Any]) -> dict[str, Any]:
        stream = record["dynamodb"]
        try:
            item = item_from_image(stream["OldImage"])
        except ValueError as error:  # a record no retry can decode: archived as what can be said of it
            item = undecodable_item(stream, str(error))
            logger.warning("archived without its attributes", extra={"pk": item["pk"], "error": str(error)})
            count_for_provider(definitions.METRIC_ARCHIVED_INCOMPLETE, "unknown")
            body: dict[str, Any] = {}
        else:
            body = self._body(item)  # takes the raw `body` out of the item
        line = {**item, **body}
        line["ttl_removed_at"] = _iso_from_epoch(stream.get("ApproximateCreationDateTime"))
        line["stream_sequence_number"] = str(stream.get("SequenceNumber"))
        return line

    def archive(self, records: list[Mapping[str, Any]]) -> dict[str, Any]:
        """Archive the REMOVE records of one stream batch. Raises when the archive was not written (the event
        source mapping retries the batch)."""
        removals = [r for r in records if r.get("eventName") == "REMOVE" and r.get("dynamodb", {}).get("OldImage")]
        skipped = len(records) - len(removals)
        if not removals:
            return {"archived": 0, "skipped": skipped, "objects": []}
        batch = batch_id(records)
        partitions: dict[tuple[str, str], _Partition] = {}
        for record in removals:
            line = self.line_for(record)
            provider, day = partition_of(line)
            partition = partitions.get((provider, day))
            if partition is None:
                partition = partitions[(provider, day)] = _Partition(archive_key(provider, day, batch), provider)
            partition.write(line)
        for partition in partitions.values():
            self.s3.put_object(
                Bucket=self.archive_bucket,
                Key=partition.key,
                Body=partition.close(),
                ContentType="application/gzip",
            )
        objects = sorted(partition.key for partition in partitions.values())
        logger.info("archived", extra={"archived": len(removals), "skipped": skipped, "objects": objects})
        return {"archived": len(removals), "skipped": skipped, "objects": objects}


@dataclass(frozen=True, slots=True)
class ArchiverSettings(EnvironmentSettings):
    archive_bucket: str = text(ENV_ARCHIVE_BUCKET)
    body_bucket: str | None = text(ENV_BODY_BUCKET, None)  # where large bodies live, to archive them too
    redact_fields: str = text(ENV_REDACT_FIELDS, "")  # comma-separated keys (parse_redact_fields)


def build_archiver(
    settings: ArchiverSettings,
    *,
    clients: AwsClients = SHARED_CLIENTS,
    sources: Sources | None = None,
    wrap: Wrap = unwrapped,
) -> Archiver:
    """The archiver's composition root: the archive and body buckets of `settings`, the deployment's redacted
    fields and each source's own (the declared sources, unless `sources` is given). `wrap` is applied to it."""
    declared = sources if sources is not None else declared_sources()
    archiver = Archiver(
        settings.archive_bucket,
        settings.body_bucket,
        redact_fields=parse_redact_fields(settings.redact_fields),
        source_redact_fields={
            source.name: parse_redact_fields(",".join(source.redact_fields))
            for source in declared.by_name.values()
            if source.redact_fields
        },
        s3=clients.s3,
    )
    return wrap(archiver)


def archiver_from_environ(wrap: Wrap = unwrapped) -> Archiver:
    """The archiver's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_archiver(ArchiverSettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first batch.
default_archiver: Root[Archiver] = Root(archiver_from_environ)


def archive_stream_batch(event: Mapping[str, Any], archiver: Archiver | None = None) -> dict[str, Any]:
    """The archiver Lambda's one call: one DynamoDB stream batch (already filtered to TTL deletions)."""
    return (archiver or default_archiver()).archive(list(event.get("Records", [])))
