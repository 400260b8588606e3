"""Provider drivers: verification and parsing of each gateway's deliveries (`base.py`: the interface).

The registry (`shared.providers.registry.get_driver`) is the one way to find a driver. It is not re-exported
here: every module importing the interface (`shared.providers.base`) runs this package's `__init__`, and a
registry imported from it would make every Lambda asset carry every driver (infra/assets.py follows imports).
"""

from __future__ import annotations

from shared.providers.base import (
    ClientCertificate,
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
)

__all__ = [
    "ClientCertificate",
    "NormalizedEvent",
    "PayloadInvalid",
    "ProviderDriver",
    "SignatureInvalid",
    "SigningSecrets",
    "WebhookRequest",
]
