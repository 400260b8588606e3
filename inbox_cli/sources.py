"""`inbox sources list` and `inbox secrets set`: the target stack's sources, their URLs and whether their secrets
are set; storing a source's signing secret or API key in a deployed stack from standard input.

Neither prints a secret. `sources list` says where a secret comes from (locally: INBOX_SECRET_<SOURCE> or the
development secret) or in what state it is (deployed: set, or still the placeholder the stack generated), never its
value; `secrets set` reads the value from standard input (without echo on a terminal) and reports what it stored
by name only.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal

from inbox_cli.target import Target, UnknownSource
from inbox_local.api_keys import api_key_variable
from inbox_local.dev_secrets import signing_secret_variable
from shared import definitions
from shared.definitions import SourceSpec

if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

SecretKind = Literal["signing", "api-key"]
SECRET_KINDS: tuple[SecretKind, ...] = ("signing", "api-key")  # definitions.SECRET_KIND_SIGNING, _API_KEY
# A gateway's signing secret or API key is well under a kilobyte (an RSA public key in PEM, the longest kind, under
# 1 KB); this bound is ours. Secrets Manager's own is 65,536 bytes per SecretString
# (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_SecretValueEntry.html), which the signing
# JSON of two values at this bound stays far below.
MAX_SECRET_VALUE_BYTES = 8192
# PutSecretValue moves AWSCURRENT to the new version and AWSPREVIOUS to the one it replaced
# (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_PutSecretValue.html): a secret with an
# AWSPREVIOUS version was written after the stack created it with its generated placeholder.
_PREVIOUS_STAGE = "AWSPREVIOUS"

# States of a deployed secret in `inbox sources list`.
SET = "set"
PLACEHOLDER = "placeholder"  # the random value the stack generated: verifies (or authenticates) nothing
EMPTY = "empty"  # written, but with no `current` (signing) or an empty key
NOT_IN_STACK = "not in stack"
NO_API = None  # the provider has no refetch API: no key to set

SOURCE_COLUMNS = ["name", "provider", "url", "signing_secret", "api_key", "confirm"]


class SecretsRefused(ValueError):
    """`inbox secrets set` cannot store this (unknown source, no API, no value...): the message says why."""


# ------------------------------------------------------------------------------------------------------ list
def source_rows(target: Target, secrets: SecretsManagerClient | None = None) -> list[dict[str, Any]]:
    """One row per source of the target: name, provider, url, signing_secret, api_key (None: no API),
    secrets_set (the signing secret, and the API key where there is an API, are set), and confirm: when a payment
    is confirmed from its signed payload before the refetch verifies it (`confirm_from_payload`, with its
    `confirm_behind_seconds` for `when_behind`; docs/sources.md)."""
    rows = []
    for source in target.sources:
        if target.local:
            signing: str | None = _local_state(signing_secret_variable(source.name), "dev secret")
            api_key = _local_state(api_key_variable(source.name), "gateway simulator") if source.has_api else NO_API
            ready = True  # the dev secret signs `inbox send`, the simulator answers without a key
        else:
            assert secrets is not None, "a deployed stack's secrets are read with a Secrets Manager client"
            signing = _deployed_state(secrets, target.signing_secret_arns.get(source.name), signing=True)
            api_key = (
                _deployed_state(secrets, target.api_key_secret_arns.get(source.name), signing=False)
                if source.has_api
                else NO_API
            )
            ready = signing == SET and api_key in (SET, NO_API)
        rows.append(
            {
                "name": source.name,
                "provider": source.provider,
                "url": target.webhook_url(source.name),
                "signing_secret": signing,
                "api_key": api_key,
                "secrets_set": ready,
                "confirm": confirm_setting(source),
            }
        )
    return rows


def confirm_setting(source: SourceSpec) -> str:
    """`never`, `always`, or `when_behind (30 s)`: the source's confirm_from_payload as it applies."""
    mode = source.confirm_mode
    return f"{mode} ({source.behind_seconds} s)" if mode == definitions.CONFIRM_WHEN_BEHIND else mode


def _local_state(variable: str, fallback: str) -> str:
    return variable if os.environ.get(variable) else fallback


def _deployed_state(secrets: SecretsManagerClient, arn: str | None, *, signing: bool) -> str:
    """set / placeholder / empty / not in stack / unreadable (<error code>), never the value."""
    from botocore.exceptions import ClientError  # noqa: PLC0415

    if arn is None:
        return NOT_IN_STACK
    try:
        written = _written_after_creation(secrets, arn)
        value = secrets.get_secret_value(SecretId=arn).get("SecretString", "")
    except ClientError as error:
        return f"unreadable ({error.response.get('Error', {}).get('Code', 'error')})"
    present = bool(_current(value)) if signing else bool(value.strip())
    if not present:
        return EMPTY
    return SET if written else PLACEHOLDER


def _written_after_creation(secrets: SecretsManagerClient, arn: str) -> bool:
    stages = secrets.describe_secret(SecretId=arn).get("VersionIdsToStages", {})
    return any(_PREVIOUS_STAGE in labels for labels in stages.values())


def _current(secret_string: str) -> str:
    """The `current` of a signing secret's JSON ('' when it has none or is not that JSON)."""
    try:
        value = json.loads(secret_string)
    except ValueError:
        return ""
    current = value.get("current") if isinstance(value, dict) else None
    return current if isinstance(current, str) else ""


# ------------------------------------------------------------------------------------------------------- set
def read_secret_value(stream: IO[str], *, prompt: str) -> str:
    """The value from standard input: asked for without echo on a terminal, else read (bounded) from the pipe.
    Surrounding whitespace (the newline of `echo`) is not part of a secret."""
    raw = getpass.getpass(prompt) if stream.isatty() else stream.read(MAX_SECRET_VALUE_BYTES + 1)
    value = raw.strip()
    if not value:
        raise SecretsRefused("no value on standard input: pipe the secret in, or type it at the prompt")
    if len(value.encode()) > MAX_SECRET_VALUE_BYTES or len(raw) > MAX_SECRET_VALUE_BYTES:
        raise SecretsRefused(f"the value is longer than {MAX_SECRET_VALUE_BYTES} bytes: not a gateway secret")
    return value


@dataclass(frozen=True)
class SecretTarget:
    """Which secret of the stack `inbox secrets set` writes."""

    source: SourceSpec
    kind: SecretKind
    arn: str


def secret_to_set(target: Target, source_name: str, kind: SecretKind, *, previous: bool) -> SecretTarget:
    """The secret of `source_name` of this `kind` in the deployed stack; SecretsRefused when there is none."""
    if target.local:
        raise SecretsRefused(
            "the local stack reads its secrets from the environment: set INBOX_SECRET_<SOURCE> (signing) or "
            "INBOX_API_KEY_<SOURCE> (API key) before `make run`; `inbox secrets set` writes a deployed stack's "
            "(--stack NAME)"
        )
    try:
        source = target.source(source_name)
    except UnknownSource as error:
        raise SecretsRefused(str(error)) from None
    if kind == definitions.SECRET_KIND_API_KEY:
        if previous:
            raise SecretsRefused("--previous is for signing secrets: an API key has one value")
        if not source.has_api:
            raise SecretsRefused(
                f"source {source.name}'s provider {source.provider} has no refetch API: there is no API key to set "
                f"(providers with one: {', '.join(definitions.REFETCH_PROVIDERS)})"
            )
        arns = target.api_key_secret_arns
    else:
        arns = target.signing_secret_arns
    arn = arns.get(source.name)
    if arn is None:
        raise SecretsRefused(f"the stack lists no {kind} secret for source {source.name}: deploy it first")
    return SecretTarget(source=source, kind=kind, arn=arn)


def store_secret(secrets: SecretsManagerClient, chosen: SecretTarget, value: str, *, previous: bool) -> str:
    """Write `value` as a new version of the chosen secret; a line for the operator (no value in it).

    signing: ``{"current": value, "previous": ""}``, or with `previous` the value it replaces kept as
    ``previous`` (a rotation: deliveries signed with either verify until the next set). The generated placeholder
    is never kept as previous. api-key: the plain value."""
    if chosen.kind == definitions.SECRET_KIND_API_KEY:
        secrets.put_secret_value(SecretId=chosen.arn, SecretString=value)
        return f"stored the API key of source {chosen.source.name}; the processor reads it within five minutes"
    kept = ""
    if previous and _written_after_creation(secrets, chosen.arn):
        kept = _current(secrets.get_secret_value(SecretId=chosen.arn).get("SecretString", ""))
    secrets.put_secret_value(SecretId=chosen.arn, SecretString=json.dumps({"current": value, "previous": kept}))
    if previous and kept:
        return (
            f"stored the signing secret of source {chosen.source.name} as current; the one it replaced is kept as "
            "previous (both verify)"
        )
    if previous:
        return (
            f"stored the signing secret of source {chosen.source.name} as current; the secret held only the "
            "stack's placeholder, so there is no previous to keep"
        )
    return f"stored the signing secret of source {chosen.source.name} as current (no previous)"
