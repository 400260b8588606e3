"""Helpers of `inbox retention run`: the emulated moment, and what the archive holds."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from typing import Any

from shared.definitions import ARCHIVE_KEY_PREFIX

_read_objects: dict[tuple[str, str, str], frozenset[str]] = {}  # (bucket, key, etag) -> pks: objects never change


def parse_moment(text: str | None) -> datetime:
    """ISO-8601 (UTC when it has no offset; `Z` accepted); None means now."""
    if not text:
        return datetime.now(UTC)
    moment = datetime.fromisoformat(text.strip())
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_archive_object(s3: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return [json.loads(line) for line in gzip.decompress(body).splitlines() if line.strip()]


def archived_event_keys(s3: Any, bucket: str) -> set[str]:
    """Every event key (`pk`) in the archive bucket."""
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=ARCHIVE_KEY_PREFIX):
        for entry in page.get("Contents", []):
            cache_key = (bucket, entry["Key"], entry.get("ETag", ""))
            if cache_key not in _read_objects:
                lines = read_archive_object(s3, bucket, entry["Key"])
                _read_objects[cache_key] = frozenset(str(line.get("pk")) for line in lines)
            keys |= _read_objects[cache_key]
    return keys
