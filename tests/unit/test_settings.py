"""Every function's settings: one frozen dataclass each, read by shared/settings.py's one helper, and a bad value
of each kind refused with an error that names its variable."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from shared import definitions
from shared.forwarding import ForwarderSettings, LogSettings
from shared.ingest import IngestSettings
from shared.payments.publishing import PublisherSettings
from shared.process.app import ProcessorSettings
from shared.retention import ArchiverSettings
from shared.settings import ConfigurationError, EnvironmentSettings
from shared.sweeper import SweeperSettings

# Each function's settings and the smallest environment it starts with.
FUNCTIONS: dict[type[EnvironmentSettings], dict[str, str]] = {
    IngestSettings: {"INBOX_TABLE": "inbox", "INBOX_BODY_BUCKET": "bodies"},
    ProcessorSettings: {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "p", "INBOX_QUEUE_URL": "q", "INBOX_DLQ_URL": "d"},
    SweeperSettings: {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "p", "INBOX_QUEUE_URL": "q"},
    ArchiverSettings: {"INBOX_ARCHIVE_BUCKET": "archive"},
    PublisherSettings: {"INBOX_EVENT_BUS_NAME": "bus"},
    ForwarderSettings: {"INBOX_FORWARD_URL": "https://x", "INBOX_FORWARD_SECRET_NAME": "s", "CONTROL_TABLE": "c"},
    LogSettings: {},  # the forwarding log's (forwarder and local publisher): all optional
}
REQUIRED = [(settings, name) for settings, environ in FUNCTIONS.items() for name in environ]

# (settings, variable, a bad value, what the error says besides the variable's name)
BAD_VALUES = [
    (SweeperSettings, "INBOX_SWEEP_MAX_ITEMS", "many", "must be an integer"),
    (SweeperSettings, "INBOX_SWEEP_MAX_ITEMS", "0", "at least 1"),
    (SweeperSettings, "INBOX_STALE_AFTER_SECONDS", "600", "longest backoff"),
    (SweeperSettings, "INBOX_RECONCILE_AFTER_SECONDS", "59", "at least 60"),
    (ProcessorSettings, "INBOX_MAX_ATTEMPTS", "51", "at most 50"),
    (ProcessorSettings, "INBOX_MAX_ATTEMPTS", "8.5", "must be an integer"),
    (ProcessorSettings, "INBOX_RETRY_BASE_SECONDS", "nan", "above 0"),
    (ProcessorSettings, "INBOX_RETRY_BASE_SECONDS", "0", "above 0"),
    (ProcessorSettings, "INBOX_RETRY_BASE_SECONDS", "soon", "must be a number"),
    (IngestSettings, "INBOX_RETENTION_DAYS", "6", "week-long gateway outage"),
    (IngestSettings, "INBOX_SIGNATURE_TOLERANCE_SECONDS", "-1", "at least 0"),
    (IngestSettings, "INBOX_SIGNING_SECRETS", '["arn"]', "JSON object"),
    (IngestSettings, "INBOX_SIGNING_SECRETS", "{", "JSON object"),
    (LogSettings, "INBOX_FORWARD_LOG_RETENTION_DAYS", "0", "at least 1"),
    (LogSettings, "INBOX_FORWARD_LOG_RETENTION_DAYS", "366", "at most 365"),
    (LogSettings, "INBOX_FORWARD_LOG_RETENTION_DAYS", "a month", "must be an integer"),
]


@pytest.mark.parametrize("settings", list(FUNCTIONS))
def test_each_functions_settings_are_a_frozen_dataclass_read_by_the_one_helper(settings):
    # Given the smallest environment of the function, When its settings are read
    parsed = settings.from_environ(FUNCTIONS[settings])
    # Then they are a frozen dataclass built by the shared helper
    assert dataclasses.is_dataclass(parsed) and isinstance(parsed, EnvironmentSettings)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.__setattr__(dataclasses.fields(parsed)[0].name, "changed")


@pytest.mark.parametrize(("settings", "missing"), REQUIRED, ids=[f"{s.__name__}-{n}" for s, n in REQUIRED])
@pytest.mark.parametrize("value", [None, "  "])
def test_a_missing_or_blank_required_variable_is_named(settings, missing, value):
    # Given the function's environment without one required variable (or with it blank)
    environ = {name: v for name, v in FUNCTIONS[settings].items() if name != missing}
    if value is not None:
        environ[missing] = value
    # When read, Then the error names it
    with pytest.raises(ConfigurationError, match=missing):
        settings.from_environ(environ)


def test_every_missing_variable_is_named_at_once():
    with pytest.raises(ConfigurationError, match="INBOX_TABLE, PAYMENTS_TABLE, INBOX_QUEUE_URL"):
        SweeperSettings.from_environ({})


@pytest.mark.parametrize(("settings", "name", "bad", "says"), BAD_VALUES)
def test_a_bad_value_of_each_kind_is_refused_with_its_name_and_why(settings, name, bad, says):
    # Given a value that is not a number, out of range or malformed
    environ = {**FUNCTIONS[settings], name: bad}
    # When read, Then the error names the variable and says what is wrong
    with pytest.raises(ConfigurationError, match=name) as refused:
        settings.from_environ(environ)
    assert says in str(refused.value)


def test_settings_built_directly_are_held_to_the_same_ranges():
    with pytest.raises(ConfigurationError, match="INBOX_SWEEP_MAX_ITEMS"):
        SweeperSettings("inbox", "payments", "queue", max_items=0)
    with pytest.raises(ConfigurationError, match="INBOX_RETENTION_DAYS"):
        IngestSettings("inbox", "bodies", retention_days=1)


def test_optional_values_default_when_unset_or_blank():
    ingest = IngestSettings.from_environ({**FUNCTIONS[IngestSettings], "INBOX_RETENTION_DAYS": " "})
    assert (ingest.retention_days, ingest.secret_prefix, dict(ingest.signing_secret_ids)) == (
        definitions.DEFAULT_RETENTION_DAYS,
        "",
        {},
    )
    archiver = ArchiverSettings.from_environ(FUNCTIONS[ArchiverSettings])
    assert (archiver.body_bucket, archiver.redact_fields) == (None, "")
    processor = ProcessorSettings.from_environ({**FUNCTIONS[ProcessorSettings], "CONTROL_TABLE": "control"})
    assert processor.control_table == "control"


def test_the_ingest_does_not_import_pydantic():
    # Given a fresh interpreter, When the ingest's handler module loads and its settings are read,
    # Then pydantic is not loaded (its import was ~200 ms of a cold start; the ingest is on the gateway's clock)
    code = (
        "import os, sys; os.environ.update(INBOX_TABLE='t', INBOX_BODY_BUCKET='b', AWS_DEFAULT_REGION='us-east-1');"
        " import functions.ingest.handler; from shared.ingest import IngestSettings; IngestSettings.from_environ();"
        " print('pydantic' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
