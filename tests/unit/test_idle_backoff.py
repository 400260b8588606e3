"""The emulated pollers' pause when idle (inbox_local/polling.py)."""

from __future__ import annotations

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
