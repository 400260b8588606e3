"""Provider id -> driver. Drivers are imported lazily so one function pays only for the drivers it uses."""

from __future__ import annotations

import importlib
from functools import cache

from shared.providers.base import ProviderDriver


class UnknownProvider(LookupError):
    pass


# provider id -> "module:attribute" of its driver instance
_BUILTIN: dict[str, str] = {
    "stripe": "shared.providers.stripe:driver",
    "standard": "shared.providers.standard:driver",
    "asaas": "shared.providers.asaas:driver",
    "pagarme": "shared.providers.pagarme:driver",
    "kiwify": "shared.providers.kiwify:driver",
    "hotmart": "shared.providers.hotmart:driver",
    "pagbank": "shared.providers.pagbank:driver",
    "iugu": "shared.providers.iugu:driver",
    "github": "shared.providers.github:driver",
    "shopify": "shared.providers.shopify:driver",
    "paddle": "shared.providers.paddle:driver",
    "mercadopago": "shared.providers.mercadopago:driver",
    "adyen": "shared.providers.adyen:driver",
    "generic": "shared.providers.generic:driver",
}
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
    module_name, attribute = _BUILTIN[name].split(":")
    driver: ProviderDriver = getattr(importlib.import_module(module_name), attribute)
    return driver
