"""What senders share: the lookup of a gateway's own values for a canonical status, and the token delivery."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from shared.providers._schemes import TokenScheme
from shared.providers.base import WebhookRequest

Values = TypeVar("Values")


def sample_values(samples: Mapping[str, Values], status: str, *, gateway: str) -> Values:
    """`samples[status]`; a status with no sample is a ValueError that names the supported ones (`inbox send`
    shows it as a usage error)."""
    try:
        return samples[status]
    except KeyError:
        supported = ", ".join(sorted(samples))
        raise ValueError(f"no {gateway} sample for status {status!r}; supported: {supported}") from None


def token_delivery(scheme: TokenScheme, body: bytes, token: str, *, content_type: str) -> WebhookRequest:
    """A delivery of a gateway that signs nothing: the token in the first header its scheme reads."""
    return WebhookRequest(body=body, headers={"content-type": content_type, scheme.headers[0]: token})
