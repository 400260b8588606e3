"""The processor's settings read the environment exactly as the pydantic model they replaced did (pydantic left the
processor's cold start: bench/cold_start.py). That model is kept here as the oracle."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from shared.process.app import ProcessorSettings
from shared.settings import ConfigurationError


class PydanticProcessorSettings(BaseModel):
    """The model as it was in shared/process/app.py, field for field."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    inbox_table: str = Field(alias="INBOX_TABLE", min_length=1)
    payments_table: str = Field(alias="PAYMENTS_TABLE", min_length=1)
    control_table: str | None = Field(default=None, alias="CONTROL_TABLE")
    queue_url: str = Field(alias="INBOX_QUEUE_URL", min_length=1)
    dead_letter_queue_url: str = Field(alias="INBOX_DLQ_URL", min_length=1)
    max_attempts: int = Field(default=8, alias="INBOX_MAX_ATTEMPTS", ge=1, le=50)
    retry_base_seconds: float = Field(default=5.0, alias="INBOX_RETRY_BASE_SECONDS", gt=0, le=600)
    handler_modules: str = Field(default="", alias="INBOX_HANDLER_MODULES")


REQUIRED = {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "payments", "INBOX_QUEUE_URL": "q", "INBOX_DLQ_URL": "d"}
FIELDS = (
    "inbox_table",
    "payments_table",
    "control_table",
    "queue_url",
    "dead_letter_queue_url",
    "max_attempts",
    "retry_base_seconds",
    "handler_modules",
)


def outcome(model: Any, environ: dict[str, str]) -> tuple[str, Any]:
    """("ok", the values) or ("refused", None): a ValueError either way for a bad configuration."""
    try:
        parsed = model.model_validate(environ) if model is PydanticProcessorSettings else model.from_environ(environ)
    except ValueError:
        return ("refused", None)
    return ("ok", tuple((name, getattr(parsed, name), type(getattr(parsed, name))) for name in FIELDS))


NUMBER_TEXTS = [
    "8", " 8 ", "+8", "-1", "0", "1", "50", "51", "8.0", "8.00", "8.", "8.5", "08", "00050", "-0", "8_0", "1e1",
    "8e0", "", "  ", "abc", "8 8", "+-8", "0x8", "\u0663", "\uff18", "\t8\n", "\xa08", "\u20038", "\x0b8", "\x1c8",
    "5", "0.5", ".5", "5.", "600", "600.0", "600.1", "600.0000000001", "1e2", "1E2", "1e-3", "1_0", "1_0.5", "1__0",
    "_1", "1_", "inf", "infinity", "nan", "-nan", "5e-324", "\uff11", "0x1",
]  # fmt: skip


@pytest.mark.parametrize("text", NUMBER_TEXTS)
@pytest.mark.parametrize("variable", ["INBOX_MAX_ATTEMPTS", "INBOX_RETRY_BASE_SECONDS"])
def test_numbers_are_read_as_pydantic_read_them(variable, text):
    # Given the required variables and a number variable set to some text
    environ = {**REQUIRED, variable: text}
    # When both read it, Then both accept it with the same value and type, or both refuse it
    assert outcome(ProcessorSettings, environ) == outcome(PydanticProcessorSettings, environ)


@given(
    st.sampled_from(["INBOX_MAX_ATTEMPTS", "INBOX_RETRY_BASE_SECONDS"]),
    st.text(alphabet=st.sampled_from(list("0123456789+-._eEinfa \t\xa0\x1c\u2003\u0663")), max_size=10),
)
@settings(max_examples=500, deadline=None)
def test_any_number_text_is_read_as_pydantic_read_it(variable, text):
    # Given any short text of digits, signs, points, underscores, exponents, words and (odd) whitespace
    environ = {**REQUIRED, variable: text}
    # When both read it, Then they agree
    assert outcome(ProcessorSettings, environ) == outcome(PydanticProcessorSettings, environ)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"INBOX_TABLE": ""},
        {"INBOX_TABLE": " "},
        {"INBOX_DLQ_URL": ""},
        {"CONTROL_TABLE": ""},
        {"CONTROL_TABLE": "control"},
        {"INBOX_HANDLER_MODULES": "a.b, c"},
        {"SOMETHING_ELSE": "ignored"},
    ],
)
def test_strings_defaults_and_unknown_variables_are_read_as_pydantic_read_them(changes):
    environ = {**REQUIRED, **changes}
    assert outcome(ProcessorSettings, environ) == outcome(PydanticProcessorSettings, environ)


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_a_missing_required_variable_is_refused_with_its_name(missing):
    # Given every required variable but one
    environ = {name: value for name, value in REQUIRED.items() if name != missing}
    # When read, Then a configuration error names it (pydantic refused it too)
    with pytest.raises(ConfigurationError, match=missing):
        ProcessorSettings.from_environ(environ)
    assert outcome(PydanticProcessorSettings, environ) == ("refused", None)


def test_the_settings_are_frozen():
    parsed = ProcessorSettings.from_environ(REQUIRED)
    with pytest.raises(AttributeError):
        parsed.max_attempts = 3  # type: ignore[misc]


def test_the_processor_no_longer_imports_pydantic():
    # Given a fresh interpreter, When the processor's handler module and its init run, Then pydantic is not loaded
    code = (
        "import os, sys; os.environ.update(INBOX_TABLE='t', PAYMENTS_TABLE='p', INBOX_QUEUE_URL='q', "
        "INBOX_DLQ_URL='d', AWS_DEFAULT_REGION='us-east-1'); import functions.process.handler; "
        "from shared.process.app import default_processor; default_processor(); print('pydantic' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
