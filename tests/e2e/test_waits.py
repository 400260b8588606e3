"""The local end-to-end tier's one wait: a condition polled until it holds, failing at the wait when it never does."""

from __future__ import annotations

import itertools

import pytest

from tests.e2e.conftest import WaitTimedOut, wait_until


def test_a_wait_returns_the_first_answer_for_which_its_condition_holds() -> None:
    # Given a probe whose answers count up
    answers = itertools.count()
    # When the wait is for an answer of at least 3
    seen = wait_until(lambda: next(answers), lambda answer: answer >= 3, timeout=5)
    # Then it is the first such answer
    assert seen == 3


def test_a_wait_whose_condition_never_holds_fails_with_the_last_answer() -> None:
    # Given a probe that keeps answering "pending"
    # When the wait for "processed" runs out of time
    with pytest.raises(WaitTimedOut) as failed:
        wait_until(lambda: {"status": "pending"}, lambda item: item["status"] == "processed", timeout=0.3)
    # Then the test fails at the wait, saying what it saw last, instead of handing back the pending item
    assert "not done after 0.3 s" in str(failed.value) and "'pending'" in str(failed.value)
