"""Where signing secrets come from: the source's Secrets Manager secret, in AWS and locally alike.

Every source (docs/sources.md) has its own secrets: its Secrets Manager secret holds `{"current": "...",
"previous": "..."}`; it is cached for five minutes, so a rotation reaches every instance within that time while the
previous secret keeps verifying. The local stack loads its secrets (development values, or `INBOX_SECRET_<SOURCE>`
where set) into its embedded Secrets Manager at start (inbox_local/dev_secrets.py), so the functions read them by
this one path wherever they run.

Which secret is the source's (`secret_id`):
- Deployed, CloudFormation names the secrets (a fixed name would collide with the copy a deleted stack retained,
  or with one scheduled for deletion, on the next deploy), so the stack hands the functions a map instead:
  `INBOX_SIGNING_SECRETS` (and `INBOX_API_KEY_SECRETS` for the gateways' API keys) is a JSON object
  `{"stripe-br": "<secret ARN>", ...}`, one entry per declared source.
- The local stack and the tests have no CloudFormation and name their secrets themselves: when the map does not
  list a source, the secret is `{prefix}{source}` (`INBOX_SECRET_PREFIX`, `INBOX_API_KEY_SECRET_PREFIX`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from shared.definitions import ENV_SIGNING_SECRETS, SECRET_MAP_ARN_PREFIX_KEY

if TYPE_CHECKING:
    from shared.providers.base import SigningSecrets

SECRET_CACHE_SECONDS = 300


class SecretUnavailable(Exception):
    """The secret could not be read or is not set: the delivery must be retried later, not rejected."""


def secret_id(ids: Mapping[str, str], prefix: str, name: str) -> str | None:
    """The Secrets Manager id (ARN or name) of `name`'s secret: the map's entry, else `{prefix}{name}` when a
    prefix is configured, else None (nothing says where the secret is)."""
    if name in ids and name != SECRET_MAP_ARN_PREFIX_KEY:
        return _full_arn(ids, ids[name])
    return f"{prefix}{name}" if prefix else None


def secret_arns(ids: Mapping[str, str]) -> dict[str, str]:
    """A deployed map `{source: ARN}` with each ARN in full: the stack writes the ARNs' common part once, under
    SECRET_MAP_ARN_PREFIX_KEY (shared/definitions/resources.py explains); a map written in full is returned as it is."""
    return {name: _full_arn(ids, value) for name, value in ids.items() if name != SECRET_MAP_ARN_PREFIX_KEY}


def _full_arn(ids: Mapping[str, str], value: str) -> str:
    if value.startswith("arn:"):
        return value
    return f"{ids.get(SECRET_MAP_ARN_PREFIX_KEY, '')}{value}"


class SigningSecretSource:
    """A source's signing secrets, read from its Secrets Manager secret (`secret_id`)."""

    def __init__(self, prefix: str, *, ids: Mapping[str, str] | None = None) -> None:
        self._prefix = prefix
        self._ids = dict(ids or {})

    def signing_secrets(self, source: str) -> SigningSecrets:
        what = f"signing secret for {source!r}"
        identifier = secret_id(self._ids, self._prefix, source)
        if identifier is None:
            raise SecretUnavailable(f"{what} is not configured: no {ENV_SIGNING_SECRETS} entry and no prefix")
        return read_secret_pair(identifier, what=what)


def read_secret_pair(secret_name: str, *, what: str) -> SigningSecrets:
    """A Secrets Manager secret (`secret_name`: its name or ARN) holding `{"current": ..., "previous": ...}`,
    cached for SECRET_CACHE_SECONDS. SecretUnavailable when it cannot be read or has no current value (`what`
    names it in the message; the value never appears in one)."""
    # Imported here: Powertools' parameters module is only needed on the first fetch of each secret, and the
    # providers' interface with it (the processor names its API keys' secrets through this module, and its cold
    # start imports neither: bench/cold_start.py).
    from aws_lambda_powertools.utilities import parameters  # noqa: PLC0415

    from shared.providers.base import SigningSecrets  # noqa: PLC0415

    try:
        value: Any = parameters.get_secret(secret_name, transform="json", max_age=SECRET_CACHE_SECONDS)
    except Exception as error:  # any failure to read is the same answer: retry later
        raise SecretUnavailable(f"{what} unavailable: {type(error).__name__}") from error
    if not isinstance(value, dict) or not value.get("current"):
        raise SecretUnavailable(f"{what} has no 'current' value")
    return SigningSecrets(str(value["current"]), str(value.get("previous") or "") or None)
