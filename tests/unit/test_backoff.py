"""The one backoff policy every retry loop uses (shared/backoff.py), with an injected random source."""

from __future__ import annotations

import random

import pytest

from shared.backoff import MAX_BACKOFF_SECONDS, Backoff, Jitter
from shared.forwarding import Forwarder, worst_delivery_seconds
from shared.gateway.ratelimit import MAX_BLOCK_SECONDS
from shared.process.messages import backoff_seconds, retry_backoff


def test_without_jitter_the_wait_doubles_from_the_base_up_to_the_cap():
    # Given the forwarder's policy: 0.5 s, doubling, at most 30 s, no jitter
    policy = Backoff(base=0.5, cap=30.0)
    # When the waits after attempts 1..9 are asked for, with a random source that must not be consulted
    waits = [
        policy.delay(attempt, rand=lambda: pytest.fail("no jitter reads no random number")) for attempt in range(1, 10)
    ]
    # Then they double and stop at the cap
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_without_a_cap_the_wait_keeps_doubling():
    # Given the bus publisher's policy: 0.2 s, doubling, no cap
    policy = Backoff(base=0.2)
    # Then its rounds wait 0.2, 0.4, 0.8 s: the same as base * 2**(round - 1)
    assert [policy.delay(round_) for round_ in (1, 2, 3)] == [0.2 * 2 ** (n - 1) for n in (1, 2, 3)]
    assert policy.delay(40) == 0.2 * 2**39


def test_full_jitter_is_uniform_below_the_capped_wait():
    # Given the gateway client's policy: 0.25 s, doubling, at most 2 s, full jitter
    policy = Backoff(base=0.25, cap=2.0, jitter=Jitter.FULL)
    # Then the random number scales the capped wait: 0 gives no wait, just under 1 almost all of it
    assert policy.delay(1, rand=lambda: 0.0) == 0.0
    assert policy.delay(1, rand=lambda: 0.5) == 0.125
    assert policy.delay(3, rand=lambda: 0.5) == 0.5
    assert policy.delay(10, rand=lambda: 1.0) == 2.0  # the cap applies before the jitter
    # And with a seeded generator every wait lies in [0, ceiling]
    rng = random.Random(7)
    for attempt in range(1, 12):
        assert 0.0 <= policy.delay(attempt, rng.random) <= policy.ceiling(attempt)


def test_proportional_jitter_spreads_the_doubled_wait_by_its_fraction_then_caps():
    # Given the processor's policy: 5 s, doubling, +-20 %, at most MAX_BACKOFF_SECONDS
    policy = Backoff(base=5, cap=MAX_BACKOFF_SECONDS, jitter=Jitter.PROPORTIONAL, spread=0.2)
    # Then the random number picks the factor in [0.8, 1.2] (random.uniform's formula, from the injected source)
    assert policy.delay(1, rand=lambda: 0.0) == pytest.approx(4.0)
    assert policy.delay(1, rand=lambda: 0.5) == pytest.approx(5.0)
    assert policy.delay(2, rand=lambda: 1.0) == pytest.approx(12.0)
    # And the cap applies after the spread: a long series ends at the cap, not at 1.2 x the cap
    assert policy.delay(20, rand=lambda: 1.0) == MAX_BACKOFF_SECONDS
    assert policy.delay(20, rand=lambda: 0.0) == MAX_BACKOFF_SECONDS


def test_proportional_jitter_draws_what_random_uniform_draws_from_the_same_seed():
    # Given two generators with the same seed
    ours, reference = random.Random(42), random.Random(42)
    policy = Backoff(base=5, cap=10_000, jitter=Jitter.PROPORTIONAL, spread=0.2)
    # Then each wait is exactly base * 2**(n-1) * uniform(0.8, 1.2), the processor's formula
    for attempt in range(1, 10):
        assert policy.delay(attempt, ours.random) == 5 * 2 ** (attempt - 1) * reference.uniform(0.8, 1.2)


def test_the_processors_visibility_delay_is_the_policy_in_whole_seconds_at_least_one():
    # Given the processor's policy for a base of 5 s
    assert retry_backoff(5) == Backoff(base=5, cap=MAX_BACKOFF_SECONDS, jitter=Jitter.PROPORTIONAL, spread=0.2)
    # Then its delays are the policy's, rounded (SQS counts whole seconds), never 0, never above the cap
    for seed in range(20):
        expected = round(retry_backoff(5).delay(3, random.Random(seed).random))
        assert backoff_seconds(3, 5, rng=random.Random(seed)) == expected
    assert backoff_seconds(1, 0.1, rng=random.Random(1)) == 1
    assert backoff_seconds(30, 5, rng=random.Random(1)) == MAX_BACKOFF_SECONDS


def test_the_longest_wait_is_one_figure_for_the_processor_and_the_rate_limit():
    # The processor's cap and the longest a gateway's Retry-After blocks a source are the same fact
    assert MAX_BACKOFF_SECONDS == 600
    assert MAX_BLOCK_SECONDS == MAX_BACKOFF_SECONDS


def test_total_is_the_most_the_waits_between_attempts_add_up_to():
    # Given policies of each jitter kind
    plain = Backoff(base=0.5, cap=30.0)
    full = Backoff(base=0.5, cap=30.0, jitter=Jitter.FULL)
    spread = Backoff(base=1.0, cap=3.0, jitter=Jitter.PROPORTIONAL, spread=0.2)
    # Then the waits between 3 attempts add up to at most the waits after attempts 1 and 2, each at its largest
    assert plain.total(3) == 0.5 + 1.0
    assert full.total(3) == 0.5 + 1.0
    assert spread.total(3) == pytest.approx(1.2 + 2.4)
    assert spread.total(5) == pytest.approx(1.2 + 2.4 + 3.0 + 3.0)
    assert plain.total(1) == 0
    # And the forwarder's worst delivery counts exactly its policy's waits
    forwarder = Forwarder(url="https://example.com/hook", secrets=("whsec_AAAA",), max_attempts=3, timeout_seconds=5.0)
    assert worst_delivery_seconds(forwarder) == 3 * 5.0 + forwarder.backoff.total(3)
    assert forwarder.backoff == Backoff(base=0.5, cap=30.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base": -1.0}, "cannot be negative"),
        ({"base": 1.0, "cap": -1.0}, "cannot be negative"),
        ({"base": 1.0, "jitter": Jitter.PROPORTIONAL, "spread": 1.0}, r"spread must be in \[0, 1\)"),
        ({"base": 1.0, "jitter": Jitter.FULL, "spread": 0.2}, "only a proportional jitter has a spread"),
    ],
)
def test_a_policy_that_makes_no_sense_is_refused(options, message):
    with pytest.raises(ValueError, match=message):
        Backoff(**options)


def test_attempts_count_from_one():
    for jitter in Jitter:
        with pytest.raises(ValueError, match="attempts count from 1"):
            Backoff(base=1.0, jitter=jitter).delay(0, rand=lambda: 0.5)
