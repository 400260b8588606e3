"""A processor batch's refetch slots taken together: one conditional write on the source's limiter item for the
requests the batch's groups are about to make (shared/gateway/ratelimit.py holds the limiter and its schedule)."""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from shared.gateway.ratelimit import Grant, RateLimited, RateLimiter, Slot, taking_from

# The longest the first request of a batch to a source waits for the batch's other running groups to ask too
# (BatchSlots): in AWS they ask within a DynamoDB read of each other; this only bounds a group that is slow to.
GATHER_MAX_SECONDS = 0.5


class _Ask:
    """One request waiting for its slot in a batch (compared by identity: two asks of a group are two requests)."""

    __slots__ = ("done", "error", "group", "slot")

    def __init__(self, group: Hashable) -> None:
        self.group = group
        self.slot: Slot | None = None
        self.error: BaseException | None = None
        self.done = False


class _Pool:
    """One source's requests in one batch."""

    __slots__ = ("asked", "asking", "retry_at", "writing")

    def __init__(self) -> None:
        self.asking: list[_Ask] = []  # gathered, not yet written for
        self.writing = False  # a request is gathering, or writing for those gathered
        self.asked: set[Hashable] = set()  # groups that asked at least once
        self.retry_at = 0.0  # a write was refused (or granted fewer): no slot before this (epoch seconds)


class BatchSlots:
    """The refetch slots of one processor batch (shared/process/app.py): the requests the batch's groups are about
    to make to a source are gathered, and one write takes a slot for each of them, instead of one write each.

    `groups` maps each FIFO group of the batch (one payment each) to its source. The first request of a source
    waits, at most GATHER_MAX_SECONDS, until every group of that source that is running (its thread started it and
    it has not finished) and has not asked yet has asked too or finished: the batch's groups run concurrently and
    reach their refetch together (each after reading its event; coalescing makes it one refetch per payment), so
    that wait is about the slowest of those reads. Then one write takes a slot for each request gathered, used at
    once (each after the sleep for its turn a single request would have). A request that comes after (a group
    started when another finished, a group's second request, a retry) gathers again. Groups not started yet are
    not waited for, and a group that needs no refetch (its event already settled, a type nobody handles) simply
    finishes: no slot is taken for a request that is not being made.

    When the schedule grants fewer slots than were gathered, the requests left over are told when to come back
    (RateLimited, the wait a single refused request gets: the processor delays the message and counts no attempt),
    and so is every later request of this batch to that source until then, without another write. The limiter is
    told which groups were refused and which served (`note_refused`, `note_served`): the backlog its schedule,
    booked only `horizon` ahead, cannot show, and that tells a `when_behind` source it is behind.
    `writes`, `reserved` and `used` count what the batch did."""

    def __init__(self, groups: Mapping[Hashable, str | None], *, starting: Iterable[Hashable] = ()) -> None:
        """`starting`: the groups that start at once (the batch's first groups, one per worker thread), running
        from now on even if a thread of theirs is a little late to start."""
        self._cond = threading.Condition()
        self._source_of = dict(groups)
        self._running: dict[str, set[Hashable]] = {}
        for group in starting:
            source = self._source_of.get(group)
            if source:
                self._running.setdefault(source, set()).add(group)
        self._pools: dict[tuple[str, str], _Pool] = {}
        self.reserved = 0  # slots taken by this batch's writes
        self.used = 0  # slots handed to its requests
        self.writes = 0  # its writes that took slots

    @property
    def lost(self) -> int:
        return self.reserved - self.used

    @contextmanager
    def group(self, group: Hashable) -> Iterator[None]:
        """The current thread runs `group`: its requests take this batch's slots."""
        source = self._source_of.get(group)
        with self._cond:
            if source:
                self._running.setdefault(source, set()).add(group)
        try:
            with taking_from(self, group):
                yield
        finally:
            with self._cond:
                if source:
                    self._running[source].discard(group)
                self._cond.notify_all()  # a gathering request stops waiting for it

    def take(self, limiter: RateLimiter, group: Hashable) -> float:
        """A slot of `limiter`'s source for one request of `group`, sleeping until it may be used; the seconds
        slept. RateLimited as `RateLimiter.acquire`."""
        ask = _Ask(group)
        with self._cond:
            pool = self._pools.setdefault((limiter.table_name, limiter.source), _Pool())
            now = limiter.now()
            if pool.retry_at > now:
                limiter.note_refused((group,))
                raise RateLimited(
                    f"refetch rate of {limiter.source} is booked for this batch", retry_after=pool.retry_at - now
                )
            pool.asking.append(ask)
            pool.asked.add(group)
            self._cond.notify_all()  # a gathering request may have waited for this one
            while not ask.done:
                if pool.writing:
                    self._cond.wait()
                else:
                    self._write_for_gathered(limiter, pool)
        if ask.error is not None:
            raise ask.error
        assert ask.slot is not None
        return limiter.wait_for(ask.slot)

    def _write_for_gathered(self, limiter: RateLimiter, pool: _Pool) -> None:
        """Gather (the condition held), then one write for the requests gathered (released meanwhile)."""
        pool.writing = True
        deadline = time.monotonic() + GATHER_MAX_SECONDS
        while True:
            pending = self._running.get(limiter.source, set()) - pool.asked
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                break
            self._cond.wait(left)
        gathered, pool.asking = pool.asking, []
        outcome: Grant | BaseException
        self._cond.release()
        try:
            outcome = limiter.reserve(len(gathered))
        except BaseException as error:  # RateLimited; anything else reaches every request gathered
            outcome = error
        finally:
            self._cond.acquire()
        now = limiter.now()
        if isinstance(outcome, Grant):
            self.writes += 1
            self.reserved += len(outcome.slots)
            rest_after = (outcome.rest_retry_at or now) - now
            for index, waiting in enumerate(gathered):
                if index < len(outcome.slots):
                    waiting.slot = outcome.slots[index]
                    self.used += 1
                else:
                    waiting.error = RateLimited(
                        f"refetch rate of {limiter.source} ({limiter.rate:g}/s) is booked for this batch",
                        retry_after=max(rest_after, 0.0),
                    )
            pool.retry_at = outcome.rest_retry_at or 0.0
        else:
            for waiting in gathered:
                waiting.error = outcome
            if isinstance(outcome, RateLimited):
                pool.retry_at = now + (outcome.retry_after or 0.0)
        # What the source's backlog is, for `RateLimiter.next_free_at`: the groups refused wait, those served do not.
        limiter.note_served(waiting.group for waiting in gathered if waiting.slot is not None)
        limiter.note_refused(waiting.group for waiting in gathered if isinstance(waiting.error, RateLimited))
        for waiting in gathered:
            waiting.done = True
        pool.writing = False
        self._cond.notify_all()
