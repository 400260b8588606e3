"""The processor's settings: read from the environment with shared/settings.py's readers (as the ingest's and the
sweeper's are), validated, and without pydantic on the processor's cold start (bench/cold_start.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.process.app import ProcessorSettings
from shared.settings import ConfigurationError

REQUIRED = {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "payments", "INBOX_QUEUE_URL": "q", "INBOX_DLQ_URL": "d"}


def test_the_required_values_and_the_defaults():
    # Given only the required variables (and one nobody reads)
    parsed = ProcessorSettings.from_environ({**REQUIRED, "SOMETHING_ELSE": "x"})
    # Then they are read, and every optional value has its default
    assert (parsed.inbox_table, parsed.payments_table, parsed.queue_url, parsed.dead_letter_queue_url) == (
        "inbox",
        "payments",
        "q",
        "d",
    )
    assert (parsed.control_table, parsed.max_attempts, parsed.retry_base_seconds, parsed.handler_modules) == (
        None,
        8,
        5.0,
        "",
    )


@pytest.mark.parametrize(
    ("text", "expected"), [("8", 8), (" 12 ", 12), ("+3", 3), ("1", 1), ("50", 50), ("", 8), ("  ", 8)]
)
def test_max_attempts_accepted(text, expected):
    assert ProcessorSettings.from_environ({**REQUIRED, "INBOX_MAX_ATTEMPTS": text}).max_attempts == expected


@pytest.mark.parametrize("text", ["0", "-1", "51", "8.0", "8.5", "abc", "8 8", "0x8", "1e1"])
def test_max_attempts_refused_with_its_name(text):
    with pytest.raises(ConfigurationError, match="INBOX_MAX_ATTEMPTS"):
        ProcessorSettings.from_environ({**REQUIRED, "INBOX_MAX_ATTEMPTS": text})


@pytest.mark.parametrize(("text", "expected"), [("5", 5.0), ("0.5", 0.5), (" 600 ", 600.0), ("1e2", 100.0), ("", 5.0)])
def test_retry_base_accepted(text, expected):
    assert ProcessorSettings.from_environ({**REQUIRED, "INBOX_RETRY_BASE_SECONDS": text}).retry_base_seconds == expected


@pytest.mark.parametrize("text", ["0", "-1", "600.1", "nan", "inf", "abc", "5 s"])
def test_retry_base_refused_with_its_name(text):
    with pytest.raises(ConfigurationError, match="INBOX_RETRY_BASE_SECONDS"):
        ProcessorSettings.from_environ({**REQUIRED, "INBOX_RETRY_BASE_SECONDS": text})


@given(st.integers(min_value=-1000, max_value=1000))
def test_any_whole_number_is_accepted_exactly_within_its_range(number):
    environ = {**REQUIRED, "INBOX_MAX_ATTEMPTS": str(number)}
    if 1 <= number <= 50:
        assert ProcessorSettings.from_environ(environ).max_attempts == number
    else:
        with pytest.raises(ConfigurationError):
            ProcessorSettings.from_environ(environ)


@pytest.mark.parametrize("missing", sorted(REQUIRED))
@pytest.mark.parametrize("value", [None, "", "   "])
def test_a_missing_or_blank_required_variable_is_refused_with_its_name(missing, value):
    # Given every required variable but one, absent or blank
    environ = {name: v for name, v in REQUIRED.items() if name != missing}
    if value is not None:
        environ[missing] = value
    # When read, Then a configuration error names it
    with pytest.raises(ConfigurationError, match=missing):
        ProcessorSettings.from_environ(environ)


def test_the_settings_are_frozen():
    parsed = ProcessorSettings.from_environ(REQUIRED)
    with pytest.raises(AttributeError):
        parsed.max_attempts = 3  # type: ignore[misc]


def test_the_processor_does_not_import_pydantic():
    # Given a fresh interpreter, When the processor's handler module and its init run, Then pydantic is not loaded
    code = (
        "import os, sys; os.environ.update(INBOX_TABLE='t', PAYMENTS_TABLE='p', INBOX_QUEUE_URL='q', "
        "INBOX_DLQ_URL='d', AWS_DEFAULT_REGION='us-east-1'); import functions.process.handler; "
        "from shared.process.app import default_processor; default_processor(); print('pydantic' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
