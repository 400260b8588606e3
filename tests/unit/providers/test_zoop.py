"""Zoop's webhook events: a header secret, and only the type and the transaction's id are read."""

from __future__ import annotations

import json

import pytest

from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.zoop.driver import driver

SECRET = "zoop-webhook-authorization-value"
TRANSACTION = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def delivery(body: object, **headers: str) -> WebhookRequest:
    return WebhookRequest(body=json.dumps(body).encode(), headers=headers or {"authorization": SECRET})


def event(kind: str, **obj: object) -> dict[str, object]:
    return {"id": "evt_1", "type": kind, "payload": {"object": {"id": TRANSACTION, **obj}}}


def test_a_transaction_event_names_its_transaction_and_states_nothing():
    parsed = driver.parse(delivery(event("transaction.succeeded", status="succeeded", amount="10.00")))
    assert (parsed.event_type, parsed.resource_id, parsed.provider_status, parsed.amount) == (
        "transaction.succeeded",
        TRANSACTION,
        None,
        None,
    )


def test_other_families_are_about_no_payment():
    assert driver.parse(delivery({"type": "seller.activated", "payload": {"object": {"id": "s1"}}})).resource_id is None


@pytest.mark.parametrize(
    "body",
    [
        {"payload": {}},
        event("transaction.failed") | {"payload": {"object": {"id": "a/b"}}},
        event("transaction.x", id=7),
    ],
)
def test_an_unusable_event_is_unparseable(body):
    with pytest.raises(PayloadInvalid):
        driver.parse(delivery(body))


@pytest.mark.parametrize(
    "headers",
    [{"authorization": SECRET}, {"authorization": f"Basic {SECRET}"}, {"x-inbox-secret": SECRET}],
)
def test_the_secret_is_accepted_in_authorization_or_x_inbox_secret(headers):
    driver.verify(
        delivery(event("transaction.succeeded"), **headers), SigningSecrets(SECRET), now=0, tolerance_seconds=0
    )


def test_a_wrong_secret_is_refused():
    with pytest.raises(SignatureInvalid):
        driver.verify(
            delivery(event("transaction.succeeded"), authorization="Basic nope"),
            SigningSecrets(SECRET),
            now=0,
            tolerance_seconds=0,
        )
