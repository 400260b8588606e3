"""Hotmart driver: the hottok header, 2.0.0 purchase webhooks, millisecond times, decimal prices, statuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from inbox_local.providers.hotmart.sender import SAMPLE_STATUSES, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.hotmart.driver import PURCHASE_STATUS, canonical_status, driver

HOTTOK = "ysewXlAZI1iHdUFqC4ZcV1J5RLhiVe518471"
PREVIOUS = "previous-hottok-0123456789"
NOW = 1_718_221_503

# A 2.0.0 test delivery as Hotmart sends it (PURCHASE_APPROVED, "Produto test postback2", captured in a public
# repository), trimmed
RAW: dict[str, Any] = {
    "data": {
        "product": {"has_co_production": False, "name": "Produto test postback2", "id": 0},
        "commissions": [{"source": "MARKETPLACE", "value": 149.5}, {"source": "PRODUCER", "value": 1350.5}],
        "purchase": {
            "offer": {"code": "test"},
            "order_date": 1511783344000,
            "original_offer_price": {"currency_value": "BRL", "value": 1500},
            "price": {"value": 1500, "currency_value": "BRL"},
            "payment": {"installments_number": 12, "type": "CREDIT_CARD"},
            "approved_date": 1511783346000,
            "full_price": {"value": 1500},
            "transaction": "HP1121336654889",
            "status": "APPROVED",
        },
        "buyer": {"name": "Teste Comprador", "email": "testeComprador271101postman15@example.com"},
    },
    "hottok": HOTTOK,
    "id": "d49b2661-a446-4b2a-aa9d-c3b2f1d8ee11",
    "creation_date": 1669954903916,
    "event": "PURCHASE_APPROVED",
    "version": "2.0.0",
}


def _request(body: dict[str, Any] | bytes, token: str | None = HOTTOK) -> WebhookRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return WebhookRequest(body=raw, headers={} if token is None else {"x-hotmart-hottok": token})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(HOTTOK), now=NOW, tolerance_seconds=300)


def _with(**purchase: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(json.dumps(RAW))
    body["data"]["purchase"].update(purchase)
    return body


class TestVerify:
    def test_current_token_passes(self):
        _verify(_request(RAW))

    def test_previous_token_passes_during_a_rotation(self):
        _verify(_request(RAW, token=PREVIOUS), SigningSecrets(HOTTOK, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(_request(RAW, token=PREVIOUS))

    @pytest.mark.parametrize("token", ["other", HOTTOK + " ", HOTTOK[:-1], HOTTOK.lower(), "ç\udcff"])
    def test_other_tokens_fail(self, token):
        with pytest.raises(SignatureInvalid, match="hottok does not match") as caught:
            _verify(_request(RAW, token=token), SigningSecrets(HOTTOK, PREVIOUS))
        assert HOTTOK not in str(caught.value)

    @pytest.mark.parametrize("token", [None, ""])
    def test_missing_token(self, token):
        with pytest.raises(SignatureInvalid, match="missing X-HOTMART-HOTTOK header"):
            _verify(_request(RAW, token=token))

    def test_the_token_in_the_body_is_not_authentication(self):
        # Given a forged delivery that copies a token into the body but not the header, Then it is refused
        with pytest.raises(SignatureInvalid):
            _verify(_request(RAW, token=None))

    def test_an_unconfigured_token_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(RAW, token=""), SigningSecrets(""))

    def test_the_token_header_is_never_stored(self):
        assert driver.replay_headers == ()
        assert driver.signs_timestamp is False


class TestParse:
    def test_fields(self):
        event = driver.parse(_request(RAW))
        assert event.event_id == "d49b2661-a446-4b2a-aa9d-c3b2f1d8ee11"
        assert event.event_type == "PURCHASE_APPROVED"
        assert event.resource_id == "HP1121336654889"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (150000, "BRL")
        # creation_date is epoch milliseconds: the millisecond is kept
        assert event.occurred_at == datetime(2022, 12, 2, 4, 21, 43, 916000, tzinfo=UTC)

    @pytest.mark.parametrize(("raw_value", "cents"), [("149.5", 14950), ("10.1", 1010), ("1500", 150000), ("0.29", 29)])
    def test_prices_are_exact_centavos(self, raw_value, cents):
        body = json.dumps(RAW).replace('"price": {"value": 1500', f'"price": {{"value": {raw_value}')
        assert driver.parse(_request(body.encode())).amount == cents

    @pytest.mark.parametrize(("status", "canonical"), sorted((k, v.value) for k, v in PURCHASE_STATUS.items()))
    def test_every_purchase_status(self, status, canonical):
        assert driver.parse(_request(_with(status=status))).provider_status == canonical

    @pytest.mark.parametrize(
        ("status", "canonical"),
        [
            ("APPROVED", "paid"),
            ("COMPLETE", "paid"),
            ("CANCELED", "canceled"),
            ("REFUNDED", "refunded"),
            ("CHARGEBACK", "charged_back"),
            ("PRINTED_BILLET", "pending"),
            ("WAITING_PAYMENT", "pending"),
            ("PROTESTED", "disputed"),
            ("EXPIRED", "failed"),
            ("UNKNOWN_NEW", None),
        ],
    )
    def test_the_statuses_of_the_brief(self, status, canonical):
        found = canonical_status(status)
        assert (found.value if found else None) == canonical

    def test_a_redelivery_keeps_its_id(self):
        reordered = json.dumps(dict(reversed(list(RAW.items())))).encode()
        assert driver.parse(_request(reordered)).event_id == driver.parse(_request(RAW)).event_id

    def test_without_an_id_the_fact_is_the_key(self):
        body = {key: value for key, value in RAW.items() if key != "id"}
        first = driver.parse(_request(body))
        later = driver.parse(_request({**body, "creation_date": body["creation_date"] + 60_000}))
        assert first.event_id == later.event_id and first.event_id.startswith("d_")
        refunded = {key: value for key, value in _with(status="REFUNDED").items() if key != "id"}
        assert driver.parse(_request({**refunded, "event": "PURCHASE_REFUNDED"})).event_id != first.event_id

    def test_events_without_a_purchase_have_no_resource(self):
        body = {
            "id": "e1",
            "creation_date": 1700000000000,
            "event": "SUBSCRIPTION_CANCELLATION",
            "version": "2.0.0",
            "data": {"subscriber": {"code": "I9OT62C3"}, "subscription": {"id": 1}},
        }
        event = driver.parse(_request(body))
        assert (event.resource_id, event.provider_status, event.amount) == (None, None, None)

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            ({**RAW, "version": "1.0.0"}, "version '1.0.0' is not supported"),
            ({key: v for key, v in RAW.items() if key != "event"}, "missing field event"),
            ({key: v for key, v in RAW.items() if key != "creation_date"}, "missing field creation_date"),
            ({**RAW, "creation_date": "2022-12-02"}, "creation_date must be an integer"),
            ({key: v for key, v in RAW.items() if key != "data"}, "missing field data"),
        ],
    )
    def test_invalid_bodies(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(body))

    def test_form_encoded_v1_postbacks_are_not_parsed(self):
        with pytest.raises(PayloadInvalid, match="not valid JSON"):
            driver.parse(_request(b"hottok=x&prod=1&status=approved&transaction=HP1"))
        assert driver.fallback_event_id(_request(b"x")) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="evt_h", resource_id="HP123", status=status, amount=1010, occurred_at=NOW)
        assert b"hottok" not in body  # the sample carries no secret in its stored body
        request = sender.sign(body, HOTTOK, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.resource_id, event.provider_status, event.amount) == (
            "evt_h",
            "HP123",
            status,
            1010,
        )
        assert event.occurred_at.timestamp() == NOW

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Hotmart sample for status 'authorized'"):
            sender.sample_body(event_id="e", resource_id="p", status="authorized", amount=1, occurred_at=NOW)


class TestProcessing:
    def test_purchase_events_are_ordered_by_event_time_and_others_are_not_routed(self):
        from shared.process.handlers import EventTimeOrderedHandler, default_router

        router = default_router(lambda provider: None)
        assert isinstance(router.resolve("hotmart", "PURCHASE_APPROVED"), EventTimeOrderedHandler)
        assert router.resolve("hotmart", "PURCHASE_OUT_OF_SHOPPING_CART") is None
        assert router.resolve("hotmart", "SUBSCRIPTION_CANCELLATION") is None

    def test_the_processor_reads_the_canonical_status_it_is_given(self):
        from shared.process.handlers import EventTimeOrderedHandler
        from shared.process.router import InboxEvent

        event = driver.parse(_request(RAW))
        inbox_event = InboxEvent(
            pk="hotmart#x",
            provider="hotmart",
            event_id=event.event_id,
            event_type=event.event_type,
            resource_id=event.resource_id,
            occurred_at=event.occurred_at.isoformat(),
            provider_status=event.provider_status,
            amount=event.amount,
            currency=event.currency,
            attempts=0,
        )
        observation = EventTimeOrderedHandler().prepare(inbox_event)
        assert observation.status.value == "paid"
        assert observation.ordered_by_event_time is True
