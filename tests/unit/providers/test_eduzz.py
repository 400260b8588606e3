"""Eduzz driver: the `x-signature` HMAC of the raw body, webhook v3 envelopes, invoice statuses, decimal prices."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from inbox_local.providers.eduzz.sender import SAMPLE_STATUSES, compute_signature, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.eduzz.driver import INVOICE_EVENTS, INVOICE_STATUS, canonical_status, driver

KEY = "eduzz-webhook-key-0123456789"
PREVIOUS = "eduzz-previous-key-9876543210"
NOW = 1_704_811_500

# Eduzz's published `myeduzz.invoice_paid` example (eduzz/eduzz-webhook-docs, events/myeduzz/invoice_paid.md), with
# the two commas its page leaves out put back so that it is JSON; otherwise as published.
PUBLISHED_INVOICE_PAID = b"""{
  "id": "g90wu09uwge",
  "event": "myeduzz.invoice_paid",
  "sentDate": "2024-01-09T14:45:00.000Z",
  "data": {
    "id": "12345678",
    "status": "paid",
    "producer": {
      "id": "123456",
      "email": "fulano@eduzz.com",
      "name": "Fulano da Silva"
    },
    "affiliate": {
      "id": "987654",
      "name": "Afiliado",
      "email": "afiliado@eduzz.com"
    },
    "buyer": {
      "name": "Alice Johnson",
      "email": "alice.johnson@example.com"
    },
    "createdAt": "2024-01-09T14:45:00.000Z",
    "price": {
      "currency": "BRL",
      "value": 301.5
    },
    "paymentMethod": "creditCard",
    "installments": 1,
    "items": [
      {"productId": "P567", "name": "Widget X", "price": {"currency": "BRL", "value": 150.75}},
      {"productId": "P789", "name": "Gadget Y", "price": {"currency": "BRL", "value": 150.75}}
    ]
  }
}"""


def _docs_signature(body: bytes, key: str) -> str:
    """The docs' formula, `hmac('sha256', chave_secreta, corpo_da_requisição)`, written with the stdlib."""
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


def _request(body: bytes, signature: str | None = None) -> WebhookRequest:
    headers = {"content-type": "application/json"}
    if signature is not None:
        headers["x-signature"] = signature
    return WebhookRequest(body=body, headers=headers)


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(KEY), now=NOW, tolerance_seconds=300)


def _with(**changes: Any) -> bytes:
    body = json.loads(PUBLISHED_INVOICE_PAID)
    data = changes.pop("data", {})
    body.update(changes)
    body["data"].update(data)
    return json.dumps(body).encode()


class TestVerify:
    def test_the_docs_formula_over_the_published_example_verifies(self):
        # Given Eduzz's published example signed as its docs describe  When verified  Then it passes
        _verify(_request(PUBLISHED_INVOICE_PAID, _docs_signature(PUBLISHED_INVOICE_PAID, KEY)))
        # and the sender signs exactly so
        assert compute_signature(PUBLISHED_INVOICE_PAID, KEY) == _docs_signature(PUBLISHED_INVOICE_PAID, KEY)

    def test_upper_case_hex_is_the_same_mac(self):
        _verify(_request(PUBLISHED_INVOICE_PAID, _docs_signature(PUBLISHED_INVOICE_PAID, KEY).upper()))

    def test_previous_key_passes_during_a_rotation(self):
        signed = _request(PUBLISHED_INVOICE_PAID, _docs_signature(PUBLISHED_INVOICE_PAID, PREVIOUS))
        _verify(signed, SigningSecrets(KEY, PREVIOUS))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(signed)

    def test_a_tampered_body_fails(self):
        signature = _docs_signature(PUBLISHED_INVOICE_PAID, KEY)
        tampered = PUBLISHED_INVOICE_PAID.replace(b"301.5", b"3.5")
        with pytest.raises(SignatureInvalid, match="no signature matches") as caught:
            _verify(_request(tampered, signature))
        assert KEY not in str(caught.value) and signature not in str(caught.value)

    def test_a_base64_mac_is_not_accepted(self):
        # Given the same MAC written in base64 (a spelling Eduzz does not produce)  Then it is refused
        import base64

        raw = hmac.new(KEY.encode(), PUBLISHED_INVOICE_PAID, hashlib.sha256).digest()
        with pytest.raises(SignatureInvalid):
            _verify(_request(PUBLISHED_INVOICE_PAID, base64.b64encode(raw).decode()))

    @pytest.mark.parametrize("signature", [None, ""])
    def test_a_missing_signature(self, signature):
        with pytest.raises(SignatureInvalid, match="missing x-signature header"):
            _verify(_request(PUBLISHED_INVOICE_PAID, signature))

    def test_an_unconfigured_key_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(PUBLISHED_INVOICE_PAID, "00"), SigningSecrets(""))

    def test_only_the_mac_is_stored(self):
        assert driver.replay_headers == ("x-signature",)
        assert driver.signs_timestamp is False


class TestParse:
    def test_the_published_example(self):
        event = driver.parse(_request(PUBLISHED_INVOICE_PAID))
        assert event.event_id == "g90wu09uwge"
        assert event.event_type == "myeduzz.invoice_paid"
        assert event.resource_id == "12345678"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (30150, "BRL")  # 301.5 read as a decimal: exact centavos
        assert event.occurred_at == datetime(2024, 1, 9, 14, 45, tzinfo=UTC)

    def test_the_published_invoice_opened_example(self):
        # Given eduzz/eduzz-webhook-docs events/myeduzz/invoice_opened.md: the same invoice, opened (awaiting payment)
        body = json.loads(PUBLISHED_INVOICE_PAID)
        body["event"] = "myeduzz.invoice_opened"
        body["data"]["status"] = "open"
        body["data"]["paidAt"] = None
        event = driver.parse(_request(json.dumps(body).encode()))
        # Then it is about the invoice, pending
        assert (event.event_type, event.resource_id, event.provider_status) == (
            "myeduzz.invoice_opened",
            "12345678",
            "pending",
        )

    @pytest.mark.parametrize(("status", "canonical"), sorted((k, v.value) for k, v in INVOICE_STATUS.items()))
    def test_every_invoice_status(self, status, canonical):
        assert driver.parse(_request(_with(data={"status": status}))).provider_status == canonical

    def test_an_unknown_status_is_left_unmapped(self):
        assert canonical_status("brand_new") is None
        assert driver.parse(_request(_with(data={"status": "brand_new"}))).provider_status is None

    @pytest.mark.parametrize(("raw_value", "cents"), [("149.5", 14950), ("10.1", 1010), ("1500", 150000), ("0.29", 29)])
    def test_prices_are_exact_centavos(self, raw_value, cents):
        body = PUBLISHED_INVOICE_PAID.replace(b'"value": 301.5', f'"value": {raw_value}'.encode())
        assert driver.parse(_request(body)).amount == cents

    def test_a_redelivery_keeps_its_id(self):
        reordered = json.dumps(dict(reversed(list(json.loads(PUBLISHED_INVOICE_PAID).items())))).encode()
        assert driver.parse(_request(reordered)).event_id == "g90wu09uwge"

    @pytest.mark.parametrize(
        "body",
        [
            b'{"id": "z154l2pvk6jltotg0xy86glx", "event": "nutror.lesson_started", "data": {},'
            b' "sentDate": "2023-08-31T18:34:23.023Z"}',  # the README's envelope example
            _with(event="myeduzz.contract_created"),
            _with(event="ping"),
        ],
    )
    def test_events_that_are_not_invoices_have_no_resource(self, body):
        event = driver.parse(_request(body))
        assert (event.resource_id, event.provider_status, event.amount) == (None, None, None)

    def test_the_readme_envelopes_time_keeps_its_milliseconds(self):
        body = b'{"id": "z1", "event": "nutror.lesson_started", "data": {}, "sentDate": "2023-08-31T18:34:23.023Z"}'
        assert driver.parse(_request(body)).occurred_at == datetime(2023, 8, 31, 18, 34, 23, 23000, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (_with(id=None), "id"),
            (_with(event=None), "event"),
            (_with(sentDate=None), "sentDate"),
            (_with(sentDate="yesterday"), "sentDate is not an ISO-8601"),
            (_with(sentDate="2024-01-09T14:45:00"), "sentDate has no time zone"),
            (_with(data={"id": None}), "data.id"),
            (_with(data={"price": {"currency": "BRL", "value": "lots"}}), "data.price.value"),
            (b"[1, 2]", "object"),
        ],
    )
    def test_invalid_bodies(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(body))
        assert driver.fallback_event_id(_request(body)) == body_digest_id(body)


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="evt_e", resource_id="987", status=status, amount=1010, occurred_at=NOW)
        request = sender.sign(body, KEY, now=NOW)
        assert request.header("x-signature") == _docs_signature(body, KEY)
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.resource_id, event.provider_status, event.amount) == (
            "evt_e",
            "987",
            status,
            1010,
        )
        assert event.occurred_at.timestamp() == NOW

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Eduzz sample for status 'authorized'"):
            sender.sample_body(event_id="e", resource_id="p", status="authorized", amount=1, occurred_at=NOW)


class TestProcessing:
    def test_invoice_events_are_ordered_by_event_time_and_others_are_not_routed(self):
        from shared.process.handlers import EventTimeOrderedHandler, default_router

        router = default_router(lambda provider: None)
        for event_type in INVOICE_EVENTS:
            assert isinstance(router.resolve("eduzz", event_type), EventTimeOrderedHandler)
        assert router.resolve("eduzz", "nutror.lesson_started") is None
        assert router.resolve("eduzz", "myeduzz.commission_processed") is None
