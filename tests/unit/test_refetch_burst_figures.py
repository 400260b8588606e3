"""bench/refetch_burst.py's figures from the simulator's per-second counts and the events' items."""

from __future__ import annotations

from bench.refetch_burst import figures


def second(n: int, requests: int, throttled: int = 0, provider: str = "stripe") -> dict[str, object]:
    return {"provider": provider, "second": 1_000 + n, "requests": requests, "throttled": throttled}


def item(status: str, attempts: int = 1) -> dict[str, object]:
    return {"status": {"S": status}, "attempts": {"N": str(attempts)}}


def test_rates_429s_and_the_drain_against_what_the_limit_allows():
    # Given 4 seconds seen by the gateway (one of another provider, not counted) and 4 events settled
    per_second = [second(0, 20), second(1, 22, throttled=2), second(2, 18), second(3, 99, provider="asaas")]
    items = [item("processed"), item("ignored"), item("processed", attempts=2), item("ignored")]

    result = figures(per_second, items, events=4, limit=20.0, seconds=6.0)

    # Then the rate is the gateway's own count per second, 429s included, and the baseline is what 20/s allows
    assert (result["gateway_requests"], result["gateway_per_second_max"], result["gateway_429s"]) == (60, 22, 2)
    assert result["gateway_per_second_p99"] == round(20 + 0.98 * 2, 1)  # linear between the two highest seconds
    assert result["ideal_drain_seconds"] == 2.9  # 58 answered at 20/s
    assert result["drain_vs_ideal"] == round(6.0 / 2.9, 3)
    assert (result["failed"], result["pending"]) == (0, 0)
    assert result["attempts_per_event"] == {"1": 3, "2": 1}


def test_events_never_stored_count_as_pending():
    result = figures([second(0, 1)], [item("failed")], events=3, limit=20.0, seconds=1.0)
    assert (result["failed"], result["pending"]) == (1, 2)
