"""Provider drivers and their registry. `get_driver(name)` is the one way to find a driver."""

from __future__ import annotations

from shared.providers.base import (
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
)
from shared.providers.registry import UnknownProvider, get_driver, provider_names, register_driver

__all__ = [
    "NormalizedEvent",
    "PayloadInvalid",
    "ProviderDriver",
    "SignatureInvalid",
    "SigningSecrets",
    "UnknownProvider",
    "WebhookRequest",
    "get_driver",
    "provider_names",
    "register_driver",
]
