"""How the emulated pollers (the Pipe, the queue -> Lambda mapping, the outbox publisher) wait when there is nothing
to do.

They short-poll (moto's long poll spins over the whole queue: inbox_local/queue_mapping.py), so an idle stack
that polled every 50 ms kept nearly a whole core busy (measured: 0.92 cores for a `make run` doing nothing).
Busy, they keep the short pause, so the latency of a flow of events is unchanged; only after a second of empty
polls does the pause double, up to a cap, and the first record after a quiet spell resets it.

A producer in the same process nudges the poller that reads what it just wrote (the front door after an ingest ->
the Pipe; the Pipe after a send -> the queue mapping; the queue mapping after a batch -> the outbox publisher): the
pause ends at once. So an event arriving after a quiet spell does not wait out each poller's idle pause in turn,
and pollers can pause longer when idle. Writes from other processes (a replay's Step Functions execution, the CLI)
are found by the next poll, within the cap.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

IDLE_POLLS_BEFORE_BACKOFF = 20
MAX_IDLE_PAUSE_SECONDS = 0.5


@dataclass
class IdleBackoff:
    base_seconds: float
    cap_seconds: float = MAX_IDLE_PAUSE_SECONDS
    patience: int = IDLE_POLLS_BEFORE_BACKOFF
    _empty_polls: int = field(default=0, init=False)
    _nudged: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def pause(self) -> float:
        """The pause after one more empty poll."""
        self._empty_polls += 1
        extra = self._empty_polls - self.patience
        if extra <= 0:
            return self.base_seconds
        return min(self.cap_seconds, self.base_seconds * 2.0 ** min(extra, 16))

    def reset(self) -> None:
        """Something arrived: poll at the base pace again."""
        self._empty_polls = 0

    def nudge(self) -> None:
        """Something was just written for this poller (any thread may call it): its current pause ends now, and the
        next empty polls start again from the base pace."""
        self._nudged.set()

    def idle(self) -> None:
        """After an empty poll: sleep the pause, cut short by a nudge."""
        if self._nudged.wait(self.pause()):
            self._nudged.clear()
            self.reset()
