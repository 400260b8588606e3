"""Cielo's Notification Post: the header secret, `{PaymentId, ChangeType}` and nothing else."""

from __future__ import annotations

import json

import pytest

from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.cielo.driver import CHANGE_TYPES, ROUTED_EVENT_TYPES, driver

SECRET = "merchant-registered-header-value"
PAYMENT_ID = "24bc8366-fc31-4d6c-8555-17049a836a07"


def delivery(body: object, secret: str | None = SECRET) -> WebhookRequest:
    headers = {"x-inbox-secret": secret} if secret is not None else {}
    return WebhookRequest(body=json.dumps(body).encode(), headers=headers)


def test_the_documented_notification_reads_as_a_hint_about_its_payment():
    # Given Cielo's documented example body (ChangeType as a number, or a digit string in older examples)
    for change in (1, "1"):
        event = driver.parse(
            delivery({"RecurrentPaymentId": PAYMENT_ID, "PaymentId": PAYMENT_ID, "ChangeType": change})
        )
        # Then it is about the payment, typed by its ChangeType, with no status
        assert (event.resource_id, event.event_type, event.provider_status) == (
            PAYMENT_ID,
            "payment_status_changed",
            None,
        )


def test_every_documented_change_type_is_routed_and_an_unknown_one_is_named_by_number():
    assert set(ROUTED_EVENT_TYPES) == set(CHANGE_TYPES.values())
    assert driver.parse(delivery({"PaymentId": PAYMENT_ID, "ChangeType": 99})).event_type == "change_type_99"


@pytest.mark.parametrize(
    "body",
    [
        {"ChangeType": 1},
        {"PaymentId": PAYMENT_ID},
        {"PaymentId": "../../1/sales", "ChangeType": 1},
        {"PaymentId": "x" * 65, "ChangeType": 1},
        {"PaymentId": PAYMENT_ID, "ChangeType": True},
        {"PaymentId": PAYMENT_ID, "ChangeType": "1e9"},
        [PAYMENT_ID],
    ],
)
def test_a_body_that_names_no_usable_payment_is_unparseable(body):
    with pytest.raises(PayloadInvalid):
        driver.parse(delivery(body))


def test_the_header_secret_is_compared_with_the_current_and_the_previous_one():
    request = delivery({"PaymentId": PAYMENT_ID, "ChangeType": 1})
    driver.verify(request, SigningSecrets(SECRET), now=0, tolerance_seconds=300)
    driver.verify(request, SigningSecrets("new-secret", previous=SECRET), now=0, tolerance_seconds=300)
    with pytest.raises(SignatureInvalid):
        driver.verify(request, SigningSecrets("another"), now=0, tolerance_seconds=300)
    with pytest.raises(SignatureInvalid, match="missing"):
        driver.verify(delivery({}, secret=None), SigningSecrets(SECRET), now=0, tolerance_seconds=300)
    assert driver.replay_headers == ()
