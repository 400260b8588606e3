"""`sender_for`: a provider's gateway imitation, found by the naming rule; a registered generic driver's own."""

from __future__ import annotations

import pytest

from inbox_local.providers.generic.sender import GenericSender
from inbox_local.senders import sender_for
from shared.providers import registry
from shared.providers.base import SigningSecrets
from shared.providers.generic.driver import GenericConfig, GenericHmacDriver
from shared.providers.registry import UnknownProvider, provider_names, register_driver
from shared.providers.stripe.driver import StripeDriver

NOW = 1_718_221_503


@pytest.fixture
def registered():
    """Drivers registered by a test are removed afterwards (the registry is process-wide)."""
    names: list[str] = []

    def register(driver):
        register_driver(driver)
        names.append(driver.name)

    yield register
    for name in names:
        registry._registered.pop(name, None)


def test_a_registered_generic_driver_gets_a_sender_for_its_own_configuration(registered):
    # Given a user's sender configured as a generic driver with its own header and algorithm
    acme = GenericHmacDriver(GenericConfig(signature_header="x-acme-sig", algorithm="sha512", prefix=""), name="acme")
    registered(acme)
    # When its sender signs a sample
    sender = sender_for("acme")
    body = sender.sample_body(event_id="e1", resource_id="r1", status="paid", amount=5, occurred_at=NOW)
    request = sender.sign(body, "acme-secret", now=NOW, event_id="e1")
    # Then it is signed the way that configuration says, and the driver accepts it
    assert isinstance(sender, GenericSender)
    assert "x-acme-sig" in request.headers
    acme.verify(request, SigningSecrets("acme-secret"), now=NOW, tolerance_seconds=300)
    assert acme.parse(request).resource_id == "r1"


def test_an_unknown_provider_or_one_without_a_sender_module_is_unknown(registered):
    with pytest.raises(UnknownProvider):
        sender_for("nobody")
    # Given a driver registered at run time that is not a generic one and has no module in inbox_local/senders
    custom = StripeDriver()
    custom.name = "stripe-fork"
    registered(custom)
    assert "stripe-fork" in provider_names()
    # Then there is no sender to be found, and the lookup says why
    with pytest.raises(UnknownProvider, match="no sender"):
        sender_for("stripe-fork")
