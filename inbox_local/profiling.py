"""`INBOX_PROFILE=<directory>`: profile the local stack process's CPU, every thread (cProfile).

Off unless set. Each thread gets its own cProfile profiler timed by `time.thread_time`, so what is counted is CPU:
a thread waiting on a socket, a lock or the GIL adds nothing. The profile is written in pstats format
(`python -m pstats`, snakeviz) to `<directory>/stack.prof`:
- SIGUSR1 starts the window of interest over: what the profilers hold then (start-up, warm-up) is left out;
- SIGUSR2 writes the profile of the window so far (and stops profiling); so does shutdown, if SIGUSR2 did not.

Only the stack process (API front door, functions, Pipe and queue emulation) is profiled. The embedded AWS
process serves each request on a thread of its own: one profiler per request thread made the profile cost more
to collect than the run it measured; its CPU is read from its process clock instead (bench/end_to_end.py).
Profiling slows the stack: `make bench` takes no timing from a profiled run.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import signal
import threading
import time
from pathlib import Path
from typing import Any

ENV_PROFILE = "INBOX_PROFILE"
RESTART_SIGNAL = signal.SIGUSR1
WRITE_SIGNAL = signal.SIGUSR2
PROFILE_NAME = "stack.prof"

# pstats' layout: {(file, line, function): (primitive calls, calls, self, cumulative, {caller: (same four)})}
Stats = dict[tuple[str, int, str], tuple[Any, ...]]


class _Snapshot:
    """What `pstats.Stats` accepts as a profile: an object with `create_stats()` and `stats`."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats

    def create_stats(self) -> None:
        return


def subtract(after: Stats, before: Stats) -> Stats:
    """`after` minus `before`, two snapshots of one profiler: what happened in between."""
    difference: Stats = {}
    for function, (cc, nc, own, cumulative, callers) in after.items():
        earlier = before.get(function)
        if earlier is None:
            difference[function] = (cc, nc, own, cumulative, callers)
            continue
        if nc - earlier[1] <= 0:
            continue
        earlier_callers = earlier[4]
        edges = {}
        for caller, edge in callers.items():
            previous = earlier_callers.get(caller)
            edge_now = edge if previous is None else tuple(a - b for a, b in zip(edge, previous, strict=True))
            if edge_now[0] > 0:
                edges[caller] = edge_now
        difference[function] = (cc - earlier[0], nc - earlier[1], own - earlier[2], cumulative - earlier[3], edges)
    return difference


class ThreadProfiles:
    """One profiler per thread: the one that installs it, and every thread started after that."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._profilers: list[cProfile.Profile] = []
        self._marks: dict[int, Stats] = {}
        self._written = False
        self._installer: cProfile.Profile | None = None

    def _start_in_this_thread(self) -> cProfile.Profile:
        profiler = cProfile.Profile(timer=time.thread_time)
        with self._lock:
            self._profilers.append(profiler)
        profiler.enable()  # replaces this thread's profile hook with the profiler itself
        return profiler

    def _first_event_of_thread(self, _frame: Any, _event: str, _arg: Any) -> None:
        self._start_in_this_thread()

    def install(self) -> ThreadProfiles:
        self._installer = self._start_in_this_thread()
        threading.setprofile(self._first_event_of_thread)
        return self

    @staticmethod
    def _read(profiler: cProfile.Profile) -> Stats:
        # Read, never stop, another thread's profiler: stopping it from here would close its open calls with
        # this thread's clock.
        profiler.snapshot_stats()
        return dict(profiler.stats)  # type: ignore[attr-defined,unused-ignore]  # set by snapshot_stats

    def restart(self) -> None:
        """The window of interest starts now: what every profiler holds so far is left out. Called from the
        installing thread (the signal handler runs there), whose profiler pauses meanwhile: reading the others is
        not part of the window."""
        if self._installer is not None:
            self._installer.disable()
        with self._lock:
            profilers = list(self._profilers)
        self._marks = {id(profiler): self._read(profiler) for profiler in profilers}
        if self._installer is not None:
            self._installer.enable()

    def write(self) -> None:
        """Merge every thread's profile since the restart into the profile file (once)."""
        threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]  # None removes the hook
        with self._lock:
            if self._written:
                return
            self._written = True
            profilers = list(self._profilers)
        snapshots = []
        for profiler in profilers:
            stats = subtract(self._read(profiler), self._marks.get(id(profiler), {}))
            if stats:
                snapshots.append(_Snapshot(stats))
        if snapshots:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            pstats.Stats(*snapshots).dump_stats(partial)  # type: ignore[arg-type,unused-ignore]  # duck-typed
            partial.replace(self.path)  # whoever waits for the file never reads half of it


def start() -> ThreadProfiles | None:
    """From the main thread, before any other starts: profile this process if INBOX_PROFILE is set."""
    directory = os.environ.get(ENV_PROFILE, "").strip()
    if not directory:
        return None
    profiles = ThreadProfiles(Path(directory) / PROFILE_NAME).install()

    def write_in_background(*_: Any) -> None:
        # From a thread of its own (not inside the handler that interrupted the main thread), unprofiled.
        threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]
        threading.Thread(target=profiles.write, name="profile-writer").start()

    signal.signal(RESTART_SIGNAL, lambda *_: profiles.restart())
    signal.signal(WRITE_SIGNAL, write_in_background)
    return profiles


def finish(profiles: ThreadProfiles | None) -> None:
    if profiles is not None:
        profiles.write()
