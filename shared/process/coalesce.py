"""Coalescing: one refetch serves every event of one payment in one batch (issue 15 §3).

Why it is sound: every message of a batch was in the queue before the batch was received, so every event in it was
sent by the gateway before any refetch of the batch is made. The payment as the gateway's API reports it at the
first refetch is therefore at least as new as what any later event of that payment in the batch announces (the
webhook is only a hint; the API is the truth). Each event still goes through its own decision and settlement, in
its group's order: the first one applies the change, the later ones find nothing to change and are ignored (or
whatever the state machine says); each still checks its own amount and currency against the snapshot.

Where a result is never reused:
- across batches: an event of a later batch may be newer than the snapshot (one `Refetches` lives for one FIFO
  group's run through one batch, shared/process/app.py);
- across a failure or a retry: once an event of the group raised or ended `failed`, everything fetched so far is
  forgotten (shared/process/service.py, `EventProcessor.handle`); the group's later messages are not even processed
  when one raised (FIFO order), and after a `failed` one they refetch;
- for another source, sub-account (a Stripe Connect account) or payment: the key is all three.

Not thread-safe, and need not be: one group's messages are processed one after the other, by one thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from shared.gateway.base import GatewayClient, PaymentSnapshot
from shared.sub_account import SubAccount

if TYPE_CHECKING:
    from shared.process.decide import Observation
    from shared.process.router import InboxEvent


class Refetches:
    """The gateway's answers for one FIFO group's messages in one batch, and how many calls they took."""

    def __init__(self, *, reuse: bool = True) -> None:
        self.reuse = reuse  # False: count the calls, share nothing (what the processor did before coalescing)
        self.fetched = 0  # calls to the gateway client (each one or more HTTP requests, each one rate-limit slot)
        self.reused = 0  # events served by an earlier event's answer
        self._snapshots: dict[tuple[str, str, SubAccount | None], PaymentSnapshot] = {}

    def fetch(
        self, client: GatewayClient, source: str, resource_id: str, *, account: SubAccount | None
    ) -> PaymentSnapshot:
        """The payment as the source's gateway reports it: an earlier answer of this group's run when there is one
        for the same source, payment and sub-account, else a call (whose errors propagate; nothing is kept)."""
        key = (source, resource_id, account)
        if self.reuse and key in self._snapshots:
            self.reused += 1
            return self._snapshots[key]
        self.fetched += 1
        snapshot = client.fetch_payment(resource_id, account=account)
        if self.reuse:
            self._snapshots[key] = snapshot
        return snapshot

    def forget(self) -> None:
        """A failure or a retry boundary: nothing fetched before it serves anything after it."""
        self._snapshots.clear()


@runtime_checkable
class SharesRefetches(Protocol):
    """A handler whose `prepare` can take its gateway reads from a group's `Refetches` (the built-in refetch
    handler does). Handlers without it (user handlers, the event-time ones) are called as `prepare(event)`."""

    def prepare_sharing(self, event: InboxEvent, refetches: Refetches | None) -> Observation: ...
