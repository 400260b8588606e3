"""The emulated pollers' pause when idle (inbox_local/polling.py)."""

from __future__ import annotations

import threading
import time

from inbox_local.polling import IdleBackoff


def test_a_busy_poller_keeps_its_short_pause_and_an_idle_one_slows_down_to_the_cap():
    # Given a poller pausing 50 ms, patient for 3 empty polls, capped at 0.5 s
    idle = IdleBackoff(0.05, cap_seconds=0.5, patience=3)
    # When polls keep coming back empty
    pauses = [idle.pause() for _ in range(10)]
    # Then the first ones keep the base pace, the later ones double, and none exceeds the cap
    assert pauses[:3] == [0.05, 0.05, 0.05]
    assert pauses[3:6] == [0.1, 0.2, 0.4]
    assert pauses[6:] == [0.5] * 4


def test_the_first_record_after_a_quiet_spell_restores_the_base_pace():
    idle = IdleBackoff(0.05, cap_seconds=0.5, patience=1)
    for _ in range(8):
        idle.pause()
    # When something arrives
    idle.reset()
    # Then the next empty poll pauses at the base pace again
    assert idle.pause() == 0.05


def test_a_nudge_ends_the_pause_at_once_and_restores_the_base_pace():
    # Given a poller well into its idle back-off (pausing at its 5 s cap)
    idle = IdleBackoff(0.05, cap_seconds=5.0, patience=1)
    for _ in range(12):
        idle.pause()
    # When a producer nudges it (from another thread), then it idles
    threading.Timer(0.05, idle.nudge).start()
    started = time.monotonic()
    idle.idle()
    # Then the pause ended with the nudge, not at the cap, and the next empty poll is back at the base pace
    assert time.monotonic() - started < 2.0
    assert idle.pause() == 0.05


def test_a_nudge_before_the_pause_makes_the_next_pause_none():
    idle = IdleBackoff(0.05, cap_seconds=5.0, patience=0)
    for _ in range(12):
        idle.pause()
    # Given a nudge that came while the poller was polling
    idle.nudge()
    started = time.monotonic()
    # When it idles next, Then it polls again at once
    idle.idle()
    assert time.monotonic() - started < 1.0
