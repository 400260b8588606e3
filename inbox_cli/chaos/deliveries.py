"""What the delivering side saw of a chaos run: every webhook, every send, every attempt's HTTP status."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import dataclass, field

from inbox_cli.simulate import Delivery


@dataclass
class SentWebhook:
    provider: str
    resource_id: str
    event_type: str
    body: bytes
    occurred_at: int = 0
    statuses: list[int] = field(default_factory=list)  # the final status of each send

    @property
    def acknowledged(self) -> bool:
        return any(200 <= status < 300 for status in self.statuses)


class DeliveryLog:
    """Every send's statuses, per webhook (its provider and body)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.webhooks: dict[bytes, SentWebhook] = {}
        self.concurrent_pairs = 0
        self.sends = 0
        self.sends_by_provider: Counter[str] = Counter()
        self.refused_by_provider: Counter[str] = Counter()  # attempts not answered 2xx (the ingest's 503s)
        self._concurrent_seen: set[int] = set()

    def delivered(self, delivery: Delivery, attempts: list[int]) -> None:
        digest = hashlib.sha256(delivery.provider.encode() + b"\0" + delivery.body).digest()
        with self._lock:
            self.sends += 1
            self.sends_by_provider[delivery.provider] += 1
            self.refused_by_provider[delivery.provider] += sum(1 for s in attempts if not 200 <= s < 300)
            sent = self.webhooks.setdefault(
                digest,
                SentWebhook(
                    delivery.provider, delivery.resource_id, delivery.event_type, delivery.body, delivery.occurred_at
                ),
            )
            sent.statuses.append(attempts[-1])
            if delivery.concurrent and id(delivery) not in self._concurrent_seen:
                self._concurrent_seen.add(id(delivery))
                self.concurrent_pairs += 1

    def unacknowledged(self) -> list[SentWebhook]:
        with self._lock:
            return [sent for sent in self.webhooks.values() if not sent.acknowledged]

    def acknowledged(self) -> list[SentWebhook]:
        with self._lock:
            return [sent for sent in self.webhooks.values() if sent.acknowledged]

    def resource_ids(self) -> set[tuple[str, str]]:
        with self._lock:
            return {(sent.provider, sent.resource_id) for sent in self.webhooks.values()}

    def webhooks_by_provider(self) -> Counter[str]:
        with self._lock:
            return Counter(sent.provider for sent in self.webhooks.values())
