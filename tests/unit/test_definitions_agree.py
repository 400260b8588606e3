"""Values the Lambdas carry (shared/) must equal the stack's definitions (infra/), which they cannot import."""

from __future__ import annotations

from infra import definitions
from shared import settings
from shared.inbox import model, store


def test_the_open_events_index_is_the_one_the_stack_creates():
    assert store.OPEN_EVENTS_INDEX == definitions.OPEN_EVENTS_INDEX
    assert model.OPEN_EVENT_SHARDS == definitions.OPEN_EVENTS_SHARDS


def test_retention_and_size_limits_agree():
    assert settings.MINIMUM_RETENTION_DAYS == definitions.MINIMUM_RETENTION_DAYS
    assert settings.DEFAULT_RETENTION_DAYS == definitions.DEFAULT_RETENTION_DAYS
    assert settings.DEFAULT_SIGNATURE_TOLERANCE_SECONDS == definitions.DEFAULT_SIGNATURE_TOLERANCE_SECONDS
    assert settings.INLINE_BODY_LIMIT_BYTES == definitions.INLINE_BODY_LIMIT_BYTES


def test_dispatch_reasons_are_the_ones_the_pipe_filter_passes():
    passing = {reason.value for reason in model.DispatchReason if reason is not model.DispatchReason.ATTEMPT}
    assert passing == set(definitions.DISPATCH_REASONS)
    assert model.DispatchReason.ATTEMPT.value == definitions.NON_DISPATCH_REASON
