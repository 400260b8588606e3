"""Stand-ins for what the ingest writes to, shared by the tests that drive IngestService without AWS."""

from __future__ import annotations

from typing import Any

from shared.inbox.store import PutOutcome


class UniqueKeyStore:
    """The inbox table's unique key, as the ingest sees it: a second put of one key is a duplicate."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    def put_new(self, item: dict[str, Any]) -> PutOutcome:
        if item["pk"] in self.items:
            return PutOutcome.DUPLICATE
        self.items[item["pk"]] = item
        return PutOutcome.STORED

    def put_all_new(self, items: list[dict[str, Any]]) -> list[PutOutcome]:
        return [self.put_new(item) for item in items]

    def put_body(self, key: str, body: bytes) -> None:
        raise AssertionError("the samples are stored inline")
