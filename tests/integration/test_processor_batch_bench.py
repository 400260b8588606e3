"""bench/processor_batch.py on a small run: the real processor through the gateway simulator, before (one group at
a time, a refetch per event) and after (groups at once, one refetch per payment per batch)."""

from __future__ import annotations

from bench import processor_batch
from shared import definitions


def test_after_takes_one_refetch_per_payment_per_batch_and_nothing_fails():
    # Given the bench made small (one batch of each shape and way, short latencies)
    # When it runs (every batch is asserted to settle with no failure inside)
    figures = processor_batch.measure(rounds=1, latency=0.01, dynamodb_latency=0.001)

    # Then before, every event took a refetch; after, the typical batch (3 payments) still one each, and the burst
    # batch (10 events of 4 payments) 4 in all
    assert figures["typical"]["before"]["refetches_per_event"] == figures["typical"]["after"]["refetches_per_event"]
    assert figures["typical"]["after"]["refetches_per_event"] == 1.0
    assert figures["burst"]["before"]["refetches_per_event"] == 1.0
    assert figures["burst"]["after"]["refetches_per_event"] == 0.4
    assert figures["scenario"]["max_concurrent_groups"] == definitions.PROCESSOR_BATCH_SIZE  # every group at once
