"""bench/confirm_burst.py's pure part: the gateway's one-second windows, the times to the correct status and to
verified from the poller's recorded timelines, corrections, and the payments differing from the gateway's truth."""

from __future__ import annotations

import random

import pytest

from bench.confirm_burst import (
    SHARES,
    Seen,
    choose_kinds,
    corrected,
    gateway_windows,
    mismatches,
    mode_figures,
    p99_ratio,
    run_mode,
    source_entry,
    supports_confirm_from_payload,
    to_correct,
    to_verified,
)
from shared import definitions

T0 = 1_000_000.0


def second(n: int, requests: int, throttled: int = 0, provider: str = "stripe") -> dict[str, object]:
    return {"provider": provider, "second": 1_000 + n, "requests": requests, "throttled": throttled}


def test_the_windows_count_the_gateways_requests_429s_included_against_the_limit_plus_the_burst():
    # Given the simulator's seconds: one at the limit, one at limit + burst, one above it (with a 429), and a busy
    # second of another provider that is not this source's
    per_second = [second(0, 1), second(1, 2), second(2, 3, throttled=1), second(3, 9, provider="asaas")]

    # When the windows are counted for a 1/s source whose limiter bursts 1
    windows = gateway_windows(per_second, provider="stripe", limit=1.0, burst=1)

    # Then the busiest window is 3, and only it is above the bound of 2
    assert windows == {
        "requests": 6,
        "throttled_429": 1,
        "windows": 3,
        "per_second_max": 3,
        "bound_per_second": 2.0,
        "windows_over_bound": 1,
    }


def test_the_windows_of_a_run_within_the_bound_report_none_over_it():
    windows = gateway_windows([second(n, 1 + n % 2) for n in range(10)], provider="stripe", limit=1.0, burst=1)
    assert (windows["per_second_max"], windows["windows_over_bound"]) == (2, 0)


def test_the_correct_status_counts_from_when_it_held_for_good_not_from_its_first_appearance():
    # Given a payment first shown refunded, then (wrongly) paid, then refunded again and verified
    timeline = [
        Seen(T0 + 1, None, None),
        Seen(T0 + 2, "refunded", False),
        Seen(T0 + 3, "paid", False),
        Seen(T0 + 5, "refunded", False),
        Seen(T0 + 9, "refunded", True),
    ]

    # When the moments are read against the gateway's truth, refunded
    # Then it is correct from T0 + 5 (not T0 + 2) and verified from T0 + 9
    assert to_correct(timeline, "refunded") == T0 + 5
    assert to_verified(timeline, "refunded") == T0 + 9
    # And it was corrected: its status changed after it was first confirmed
    assert corrected(timeline)


def test_an_absent_verified_flag_counts_as_verified_and_a_wrong_final_status_never_reaches_either():
    # Given a payment that ends paid with no `verified` attribute (a version without the flag, or a refetched one)
    timeline = [Seen(T0, None, None), Seen(T0 + 4, "pending", None), Seen(T0 + 7, "paid", None)]

    # Then against the truth paid it is correct and verified at once; against refunded it never is
    assert to_correct(timeline, "paid") == to_verified(timeline, "paid") == T0 + 7
    assert to_correct(timeline, "refunded") is None and to_verified(timeline, "refunded") is None
    # And pending -> paid is a confirmation, not a correction
    assert not corrected(timeline)


def test_the_figures_are_percentiles_from_each_payments_first_post():
    # Given 4 payments first posted at T0: three correct (and verified) after 1, 2 and 3 s; one shown paid from the
    # payload after 1 s, unverified, corrected to refunded by the refetch at 10 s; and one never shown at all
    timelines = {f"pi_{n}": [Seen(T0 + 0.5, "pending", None), Seen(T0 + n, "paid", None)] for n in (1, 2, 3)} | {
        "pi_moved": [Seen(T0 + 1, "paid", False), Seen(T0 + 10, "refunded", None)],
        "pi_lost": [Seen(T0 + 1, None, None)],
    }
    started = dict.fromkeys(timelines, T0)
    truths = {f"pi_{n}": {"status": "paid"} for n in (1, 2, 3)} | {
        "pi_moved": {"status": "refunded"},
        "pi_lost": {"status": "paid"},
    }
    kinds = dict.fromkeys(timelines, "agreed") | {"pi_moved": "refunded_unannounced"}

    # When the mode's figures are computed
    figures = mode_figures(timelines, started, truths, kinds)

    # Then to correct: 1, 2, 3, 10 s (p50 2.5, p99 linear between 3 and 10), one payment missing
    assert figures["to_correct"] == {"p50_s": 2.5, "p99_s": 9.79, "max_s": 10.0, "count": 4, "missing": 1}
    # And to confirmed: the moved one counts from its payload (1 s), right or wrong
    assert figures["to_confirmed"]["p50_s"] == 1.5 and figures["to_confirmed"]["missing"] == 1
    assert figures["to_verified"]["max_s"] == 10.0
    # And the moved payment is one correction and one wrong first confirmation, split out by its kind
    assert (figures["corrections"], figures["first_confirmed_wrong"]) == (1, 1)
    assert figures["to_correct_by_kind"]["refunded_unannounced"]["to_correct"]["p50_s"] == 10.0
    assert figures["to_correct_by_kind"]["agreed"]["to_correct"]["missing"] == 1


def test_a_final_row_differing_from_the_truth_in_status_or_refund_or_missing_is_a_mismatch():
    truths = {
        "pi_ok": {"status": "paid", "amount": 990, "amount_refunded": 0},
        "pi_status": {"status": "refunded", "amount": 990, "amount_refunded": 990},
        "pi_refund": {"status": "refunded", "amount": 990, "amount_refunded": 990},
        "pi_missing": {"status": "paid", "amount": 990, "amount_refunded": 0},
    }
    final = {
        "pi_ok": {"status": "paid", "amount": 990, "amount_refunded": 0},
        "pi_status": {"status": "paid", "amount": 990, "amount_refunded": 0},
        "pi_refund": {"status": "refunded", "amount": 990, "amount_refunded": 0},
    }
    assert mismatches(final, truths) == ["pi_missing", "pi_refund", "pi_status"]
    assert mismatches(final | {"pi_missing": dict(truths["pi_missing"])}, truths) == ["pi_refund", "pi_status"]


def test_the_ratio_is_when_behinds_p99_over_nevers_and_absent_when_when_behind_was_not_run():
    never = {"to_correct": {"p99_s": 400.0}}
    assert p99_ratio({"available": True, "to_correct": {"p99_s": 50.0}}, never) == 0.125
    assert p99_ratio({"available": False, "reason": "no option"}, never) is None
    assert p99_ratio(None, never) is None


def test_the_kinds_are_the_shares_of_the_payments_drawn_the_same_for_the_same_seed():
    kinds = choose_kinds(240, random.Random(29))
    assert kinds == choose_kinds(240, random.Random(29))
    counts = {kind: kinds.count(kind) for kind in SHARES}
    assert counts == {kind: round(240 * share) for kind, share in SHARES.items()}
    assert kinds.count("agreed") == 240 - sum(counts.values())


@pytest.mark.parametrize("mode", ["never", "when_behind"])
def test_a_sources_json_that_takes_the_option_gets_the_mode_never_included(monkeypatch, mode):
    # Given a sources.json parser that takes confirm_from_payload (a version with the option)
    monkeypatch.setattr(definitions, "parse_sources", lambda document, **_: tuple(document))

    # When the bench declares its source
    entry = source_entry(mode, 1.0)

    # Then the mode is written, never included (an eligible provider's default is when_behind), with its threshold
    assert (entry["confirm_from_payload"], entry["confirm_behind_seconds"]) == (mode, 30)
    assert entry["refetch_rate_per_second"] == 1.0
    assert supports_confirm_from_payload()


def test_a_sources_json_that_refuses_the_option_gets_the_rate_alone(monkeypatch):
    # Given a parser that refuses the options it does not know
    def refuse(document, **_):
        if any("confirm_from_payload" in entry for entry in document):
            raise definitions.SourcesInvalid("unknown option(s) confirm_from_payload")
        return tuple(document)

    monkeypatch.setattr(definitions, "parse_sources", refuse)

    # Then the source is declared without the mode (its behaviour is never's), and when_behind is not available
    assert source_entry("never", 1.0) == {"name": "stripe", "provider": "stripe", "refetch_rate_per_second": 1.0}
    assert not supports_confirm_from_payload()
    assert run_mode("when_behind", 24)["available"] is False
