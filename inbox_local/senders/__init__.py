"""Senders: what a gateway does that the inbox only imitates — sign a delivery, write a sample notification.

`inbox send`, the gateway simulator, `inbox simulate`/chaos, the benches and the tests need them; no Lambda does
(the ingest only verifies and parses, `shared/providers/`). So they live outside every Lambda asset: one module in
each provider's folder, `inbox_local/providers/<provider>/sender.py`, exposing `sender`; this package holds what they
share. The one signer a Lambda needs, the forwarder's Standard Webhooks one, stays in `shared/`
(`shared.providers.standard.driver.compute_signature`), and the Standard Webhooks sender uses it.

`sender_for(provider)` finds a provider's sender (or a declared source's provider's) by that naming rule, so there
is no list to keep in step with the driver registry; a driver registered at run time that is a `GenericHmacDriver`
gets a sender for its own configuration.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from shared.providers.base import WebhookRequest
from shared.providers.generic.driver import GenericHmacDriver
from shared.providers.registry import UnknownProvider, get_driver, provider_names


class Sender(Protocol):
    """What a provider's gateway does when it notifies: the body it writes and how it signs the delivery."""

    # The canonical statuses `sample_body` can write a notification for.
    sample_statuses: tuple[str, ...]

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """The delivery the gateway would send for this body (headers, query), signed with `secret` at `now`."""
        ...

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A realistic payment notification in the canonical `status`; ValueError for a status it has none for."""
        ...


def sender_for(provider: str) -> Sender:
    """The sender of `provider` (a built-in one, or a generic driver registered under that name), or of a declared
    source's provider when `provider` is a source's name (sign its deliveries with `signing_secret(source)`)."""
    if provider not in provider_names():
        from inbox_local.config import local_source  # noqa: PLC0415 - reads sources.json only for a source name

        declared = local_source(provider).provider
        if declared == provider or declared not in provider_names():
            raise UnknownProvider(provider)
        provider = declared
    driver = get_driver(provider)
    if isinstance(driver, GenericHmacDriver):  # built-in or registered: it signs as its own configuration says
        from inbox_local.providers.generic.sender import GenericSender  # noqa: PLC0415 - lazy, like the other senders

        return GenericSender(driver)
    try:
        module = importlib.import_module(f"inbox_local.providers.{provider}.sender")
    except ModuleNotFoundError:
        raise UnknownProvider(f"{provider} (no sender: inbox_local/providers/{provider}/sender.py)") from None
    sender: Sender = module.sender
    return sender
