"""Provider id -> driver. Drivers are imported lazily so one function pays only for the drivers it uses.

The built-in drivers are the provider catalog's (`shared.definitions.PROVIDER_CATALOG`): a new provider is
declared there, not here."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from shared.definitions import PROVIDER_CATALOG
from shared.providers.base import ProviderDriver


class UnknownProvider(LookupError):
    pass


# provider id -> "module:attribute" of its driver instance
_BUILTIN: dict[str, str] = {entry.id: entry.driver for entry in PROVIDER_CATALOG}
_registered: dict[str, ProviderDriver] = {}


def register_driver(driver: ProviderDriver) -> None:
    """Add (or replace) a driver at run time: the extension point for a user's own provider."""
    _registered[driver.name] = driver


def provider_names() -> tuple[str, ...]:
    return tuple(sorted({*_BUILTIN, *_registered}))


def get_driver(name: str) -> ProviderDriver:
    if name in _registered:
        return _registered[name]
    if name not in _BUILTIN:
        raise UnknownProvider(name)
    return _load_builtin(name)


@cache
def _load_builtin(name: str) -> ProviderDriver:
    driver: ProviderDriver = load_reference(_BUILTIN[name])
    return driver


def load_reference(reference: str) -> Any:
    """What a catalog reference "shared.providers.<module>:<attribute>" names (a driver, a driver's event list).

    The one place that imports provider modules by name: a function's Lambda asset carries the provider modules
    the catalog names because it carries this loader (infra/assets.py stages, for a module that imports by a
    computed name, the modules of its own package that its function's code names as data)."""
    module_name, _, attribute = reference.partition(":")
    if not module_name.startswith(f"{__package__}.") or not attribute:
        raise ValueError(f"not a provider module reference: {reference!r}")
    return getattr(importlib.import_module(module_name), attribute)
