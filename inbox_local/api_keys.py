"""The gateways' API keys in the local stack: loaded into its embedded Secrets Manager, never handed to a function.

The functions read a source's API key from Secrets Manager, locally as in AWS (shared/gateway/registry.py): the
secret `{INBOX_API_KEY_SECRET_PREFIX}{source}` here, the one the stack generated for the source there. At start the
local stack writes one per declared source whose provider has a refetch API (`store_api_keys`): the value of
`INBOX_API_KEY_<SOURCE>` when it is set in the local stack's environment (<SOURCE> is the name upper-cased, `-` as
`_`: a gateway sandbox's key, with `INBOX_API_BASE_<SOURCE>` pointing at its API), else the gateway simulator's key
of the source's account. `inbox sources list` says which.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from shared.definitions import SourceSpec, source_env_suffix


def api_key_variable(source: str) -> str:
    """`INBOX_API_KEY_<SOURCE>`: the variable that gives the local stack a source's API key."""
    return f"INBOX_API_KEY_{source_env_suffix(source)}"


def local_api_keys(
    sources: Iterable[SourceSpec], simulated: Mapping[str, str | None], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """{source: API key} of the sources with a refetch API: INBOX_API_KEY_<SOURCE> when set, else the simulator's
    key of the source's account (`simulated`, by account); a source with neither has none (its refetch is refused
    for want of a key, as a deployed source whose secret was never set)."""
    environ = os.environ if environ is None else environ
    keys: dict[str, str] = {}
    for source in sources:
        if not source.has_api:
            continue
        key = environ.get(api_key_variable(source.name), "").strip() or simulated.get(source.name)
        if key:
            keys[source.name] = key
    return keys


def store_api_keys(secretsmanager: Any, prefix: str, keys: Mapping[str, str]) -> None:
    """Writes each source's API key into Secrets Manager as the deployed stack holds it (a plain string), named
    `{prefix}{source}`: created, or given the new value when it exists."""
    for source, key in keys.items():
        name = f"{prefix}{source}"
        try:
            secretsmanager.create_secret(Name=name, SecretString=key)
        except secretsmanager.exceptions.ResourceExistsException:
            secretsmanager.put_secret_value(SecretId=name, SecretString=key)
