"""Provider id -> driver. Drivers are imported lazily so one function pays only for the drivers it uses.

The built-in drivers are the provider catalog's (`shared.definitions.PROVIDER_CATALOG`): a new provider is
declared there, not here."""

from __future__ import annotations

import importlib
from fnmatch import fnmatchcase
from functools import cache
from typing import Any, Final

from shared.definitions import PROVIDER_CATALOG
from shared.providers.base import ProviderDriver

# The modules this registry imports by name: each provider folder's driver module (shared/providers/<id>/driver.py,
# its driver and the event lists its routes name). It refuses any other reference, and infra/assets.py reads this
# pattern to stage with the registry the modules the catalog names that match it: the drivers, not the gateway
# clients the same catalog names beside them.
LOADS_MODULES: Final = "shared.providers.*.driver"


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
    """What a catalog reference "shared.providers.<id>.driver:<attribute>" names (a driver, a driver's event list).

    The one place that imports driver modules by name: a function's Lambda asset carries the driver modules the
    catalog names because it carries this loader (infra/assets.py stages, for a module that imports by a computed
    name, the modules its function's code names as data that match its LOADS_MODULES)."""
    module_name, _, attribute = reference.partition(":")
    if not fnmatchcase(module_name, LOADS_MODULES) or not attribute:
        raise ValueError(f"not a provider module reference: {reference!r}")
    return getattr(importlib.import_module(module_name), attribute)
