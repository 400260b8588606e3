"""The local stack's forwarding secret (inbox_local/forward_secret.py): INBOX_FORWARD_SECRET (and _PREVIOUS) checked
at start, a clear start-up error when missing or malformed, then stored in the embedded Secrets Manager where the
forwarder's root reads it as the deployed forwarder does."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from inbox_local.config import LocalNames
from inbox_local.forward_secret import (
    ENV_FORWARD_SECRET,
    ENV_FORWARD_SECRET_PREVIOUS,
    LocalForwarding,
    local_forwarding,
    store_forwarding_secret,
)
from inbox_local.runtime import _local_forwarding
from shared.definitions import ENV_FORWARD_URL
from shared.forwarding import Forwarder

URL = "http://127.0.0.1:8790/"
CURRENT = "whsec_" + base64.b64encode(b"local-forwarding-current-32-byte").decode()
PREVIOUS = "whsec_" + base64.b64encode(b"local-forwarding-previous-32-byt").decode()


def test_no_url_is_no_forwarding_whatever_the_secret() -> None:
    assert local_forwarding({}) is None
    assert local_forwarding({ENV_FORWARD_URL: "  ", ENV_FORWARD_SECRET: "not even base64"}) is None


def test_the_url_and_its_pair_are_read_current_first() -> None:
    # Given a URL, a current secret and, during a rotation, the previous one
    found = local_forwarding({ENV_FORWARD_URL: f" {URL} ", ENV_FORWARD_SECRET: CURRENT})
    rotating = local_forwarding(
        {ENV_FORWARD_URL: URL, ENV_FORWARD_SECRET: CURRENT, ENV_FORWARD_SECRET_PREVIOUS: PREVIOUS}
    )
    # Then both sign during the rotation, the current first
    assert found == LocalForwarding(URL, CURRENT) and found.secrets == (CURRENT,)
    assert rotating is not None and rotating.secrets == (CURRENT, PREVIOUS)


def test_a_url_given_by_the_caller_needs_the_same_secret() -> None:
    # `inbox outbox resend --url` against the local stack
    assert local_forwarding({ENV_FORWARD_SECRET: CURRENT}, url=URL) == LocalForwarding(URL, CURRENT)
    with pytest.raises(ValueError, match=f"{ENV_FORWARD_URL} is set but {ENV_FORWARD_SECRET}"):
        local_forwarding({}, url=URL)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({ENV_FORWARD_SECRET: "whsec_not base64!"}, ENV_FORWARD_SECRET),
        ({ENV_FORWARD_SECRET: "whsec_"}, ENV_FORWARD_SECRET),  # an empty key
        ({ENV_FORWARD_SECRET: CURRENT, ENV_FORWARD_SECRET_PREVIOUS: "whsec_%%%"}, ENV_FORWARD_SECRET_PREVIOUS),
    ],
)
def test_a_malformed_secret_is_refused_naming_its_variable_not_its_value(
    environ: dict[str, str], variable: str
) -> None:
    with pytest.raises(ValueError, match=f"^{variable} is not a Standard Webhooks secret") as refused:
        local_forwarding({ENV_FORWARD_URL: URL, **environ})
    assert "%%%" not in str(refused.value) and "not base64!" not in str(refused.value)


def test_the_local_stack_stops_at_start_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a forwarding URL and no secret
    monkeypatch.setenv(ENV_FORWARD_URL, URL)
    monkeypatch.delenv(ENV_FORWARD_SECRET, raising=False)
    # When the stack reads its forwarding, Then it stops with the variable to set, not a traceback
    with pytest.raises(SystemExit, match=f"^error: {ENV_FORWARD_URL} is set but {ENV_FORWARD_SECRET}"):
        _local_forwarding()


def test_the_stored_pair_is_what_the_forwarder_reads_from_secrets_manager(secretsmanager: Any) -> None:
    # Given the pair stored by the local stack, once and then again (a restart: the secret exists)
    name = LocalNames().forward_secret_name
    store_forwarding_secret(secretsmanager, name, LocalForwarding(URL, PREVIOUS))
    store_forwarding_secret(secretsmanager, name, LocalForwarding(URL, CURRENT, PREVIOUS))
    # Then it holds the deployed stack's shape, and the forwarder the root builds signs with both, current first
    stored = json.loads(secretsmanager.get_secret_value(SecretId=name)["SecretString"])
    assert stored == {"current": CURRENT, "previous": PREVIOUS}
    assert Forwarder.from_secret(URL, name).secrets == (CURRENT, PREVIOUS)
