"""Development signing secrets: the local stack's, never shipped to AWS.

Each catalog provider has one beside its sender (`inbox_local/providers/<id>/dev.py`), gathered here by its id
(tests/unit/test_catalog.py refuses a provider without one). They sign nothing real. The local stack loads a secret
per declared source into its embedded Secrets Manager at start (`store_signing_secrets`), under the names the
functions look up (`{INBOX_SECRET_PREFIX}{source}`), so the functions read them exactly as they read the deployed
stack's: `INBOX_SECRET_<SOURCE>` (and `INBOX_SECRET_<SOURCE>_PREVIOUS`; <SOURCE> is the name upper-cased, `-` as
`_`: `stripe-br` -> `INBOX_SECRET_STRIPE_BR`) replaces a source's development secret when set. A provider's default
source is named after it: `INBOX_SECRET_STRIPE`.

The CLI (`inbox send`, `inbox doctor`, `inbox simulate`), the senders and the tests sign with the same values
from here. Nothing under shared/ or functions/ may import this module (tests/unit/test_import_rules.py), and no
synthesized asset holds one of these values (tests/infra/test_packaging.py).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import string
from collections.abc import Iterable, Mapping
from importlib import import_module
from types import MappingProxyType
from typing import Any, Final

import inbox_local.providers
from shared.definitions import SourceSpec, source_env_suffix

# Each provider's development secret lives beside its sender: `DEV_SECRET` in `inbox_local/providers/<id>/dev.py`
# (standard library only, so the local stack's resource emulation may import it).
DEV_MODULE: Final = "dev"


def _folder_secrets() -> dict[str, str]:
    """{provider: its DEV_SECRET} of every local provider folder with a dev module, sorted by id (a folder without
    one is no provider's: tests/unit/test_catalog.py refuses it)."""
    folders = sorted(
        item.name
        for path in inbox_local.providers.__path__
        for item in os.scandir(path)
        if item.is_dir() and item.name.isidentifier() and not item.name.startswith("_")
    )
    secrets: dict[str, str] = {}
    for folder in folders:
        name = f"inbox_local.providers.{folder}.{DEV_MODULE}"
        try:
            module = import_module(name)
        except ModuleNotFoundError as error:
            if error.name == name:
                continue
            raise
        secrets[folder] = module.DEV_SECRET
    return secrets


DEV_SECRETS: Final[Mapping[str, str]] = MappingProxyType(_folder_secrets())


def signing_secret_variable(source: str) -> str:
    """`INBOX_SECRET_<SOURCE>`: the variable that sets the source's current signing secret locally
    (`..._PREVIOUS` the previous one)."""
    return f"INBOX_SECRET_{source_env_suffix(source)}"


def dev_signing_secret(source: SourceSpec) -> str:
    """The local stack's signing secret of `source` when INBOX_SECRET_<SOURCE> is unset (it signs nothing real).
    A default source (named after its provider) keeps the provider's dev secret; any other gets one derived from it
    and the name, so two local sources of one provider never verify each other's deliveries. The derived secret
    keeps the provider's shape where the shape is checked: a Standard Webhooks `whsec_<base64>` stays base64,
    Adyen's hex HMAC key stays hex."""
    # Not a catalog provider: only the local stack's own tests name one.
    base = DEV_SECRETS.get(source.provider, f"local-{source.provider}-secret")
    if source.name == source.provider:
        return base
    digest = hashlib.sha256(f"{base}-{source.name}".encode()).digest()
    if base.startswith(_WHSEC) and _is_base64(base.removeprefix(_WHSEC)):
        return _WHSEC + base64.b64encode(digest).decode("ascii")
    if base and all(character in string.hexdigits for character in base):
        return digest.hex()
    return f"{base}-{source.name}"


_WHSEC: Final = "whsec_"


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def local_signing_secrets(source: SourceSpec, environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """The (current, previous) signing secrets of `source` locally: INBOX_SECRET_<SOURCE> (and `_PREVIOUS`) when
    set, else its development secret and no previous one."""
    environ = os.environ if environ is None else environ
    variable = signing_secret_variable(source.name)
    if environ.get(variable):
        return environ[variable], environ.get(f"{variable}_PREVIOUS") or None
    return dev_signing_secret(source), None


def store_signing_secrets(
    secretsmanager: Any, prefix: str, sources: Iterable[SourceSpec], environ: Mapping[str, str] | None = None
) -> None:
    """Writes each source's signing secrets (`local_signing_secrets`) into Secrets Manager as the deployed stack
    holds them, `{"current": ..., "previous": ...}`, named `{prefix}{source}`: created, or given a new value when
    it exists."""
    for source in sources:
        put_signing_secrets(secretsmanager, f"{prefix}{source.name}", *local_signing_secrets(source, environ))


def put_signing_secrets(secretsmanager: Any, name: str, current: str, previous: str | None = None) -> None:
    """Secrets Manager's secret `name` holds `{"current": current, "previous": previous}` (created if need be)."""
    value = json.dumps({"current": current, "previous": previous or ""})
    try:
        secretsmanager.create_secret(Name=name, SecretString=value)
    except secretsmanager.exceptions.ResourceExistsException:
        secretsmanager.put_secret_value(SecretId=name, SecretString=value)
