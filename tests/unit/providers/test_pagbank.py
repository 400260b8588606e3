"""PagBank driver: SHA-256 of `{token}-{body}` (not an HMAC), charge and order bodies, derived ids, time zones."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inbox_local.providers.pagbank.sender import SAMPLE_STATUSES, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.pagbank.driver import (
    CHARGE_STATUS,
    canonical_status,
    carries_hash_padding,
    compute_signature,
    driver,
)
from tests.length_extension import forge

TOKEN = "pagbank-account-token-0123456789"
PREVIOUS = "pagbank-account-token-previous"
NOW = 1_718_221_503

# The payload PagBank documents in "Confirmar autenticidade da notificação" (unformatted, trimmed)
CHARGE = (
    b'{"id":"CHAR_354828dd-786b-4cca-8ce4-6f7a1f3f2a1a","status":"WAITING","created_at":"2019-09-24T18:31:19.027-03:00",'
    b'"description":"This is the payment transaction description","amount":{"value":100,"currency":"BRL",'
    b'"summary":{"total":100,"paid":0,"refunded":0}},"payment_response":{"code":"20000","message":"SUCESSO"},'
    b'"payment_method":{"type":"BOLETO","boleto":{"id":"eafadc9b-6e15-41ff-ab07-86218770d93b",'
    b'"due_date":"2020-05-08"}}}'
)


def order(status: str = "PAID", paid: int = 500, refunded: int = 0, **charge_extra: Any) -> dict[str, Any]:
    charge = {
        "id": "CHAR_1",
        "status": status,
        "created_at": "2023-02-08T15:15:11.408-03:00",
        "paid_at": "2023-02-08T15:15:12.000-03:00",
        "amount": {"value": 500, "currency": "BRL", "summary": {"total": 500, "paid": paid, "refunded": refunded}},
        **charge_extra,
    }
    return {
        "id": "ORDE_1",
        "reference_id": "ex-00001",
        "created_at": "2023-02-08T15:15:11.408-03:00",
        "charges": [charge],
    }


def _request(body: bytes | dict[str, Any], token: str | None = TOKEN, signature: str | None = None) -> WebhookRequest:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    headers = {} if token is None else {"x-authenticity-token": signature or compute_signature(raw, token)}
    return WebhookRequest(body=raw, headers=headers)


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(TOKEN), now=NOW, tolerance_seconds=300)


class TestVerify:
    def test_plain_sha256_of_token_hyphen_body(self):
        expected = hashlib.sha256(f"{TOKEN}-".encode() + CHARGE).hexdigest()
        assert compute_signature(CHARGE, TOKEN) == expected
        _verify(_request(CHARGE, signature=expected))

    def test_an_hmac_is_not_what_pagbank_sends(self):
        wrong = hmac.new(TOKEN.encode(), CHARGE, hashlib.sha256).hexdigest()
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_request(CHARGE, signature=wrong))

    def test_previous_token_during_a_rotation(self):
        _verify(_request(CHARGE, token=PREVIOUS), SigningSecrets(TOKEN, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(_request(CHARGE, token=PREVIOUS))

    def test_tampered_body_fails_and_hex_case_does_not_matter(self):
        request = _request(CHARGE)
        with pytest.raises(SignatureInvalid):
            _verify(WebhookRequest(body=CHARGE.replace(b"WAITING", b"PAID"), headers=request.headers))
        _verify(_request(CHARGE, signature=compute_signature(CHARGE, TOKEN).upper()))

    @pytest.mark.parametrize("signature", [None, ""])
    def test_missing_header(self, signature):
        request = WebhookRequest(body=CHARGE, headers={} if signature is None else {"x-authenticity-token": ""})
        with pytest.raises(SignatureInvalid, match="missing x-authenticity-token header"):
            _verify(request)

    def test_an_unconfigured_token_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(CHARGE, token=""), SigningSecrets(""))

    def test_the_stored_header_reverifies_and_is_not_the_token(self):
        request = sender.sign(CHARGE, TOKEN, now=NOW)
        stored = {name: request.headers[name] for name in driver.replay_headers}
        assert TOKEN not in stored.values()
        _verify(WebhookRequest(body=CHARGE, headers=stored))


class TestLengthExtension:
    """sha256(token + "-" + body) is length-extendable: from one captured delivery a forger computes a valid digest
    for the body + SHA-256's padding + any suffix, guessing only the token's length. Such a forgery is refused."""

    SUFFIX = b',"status":"PAID"}'

    def _forged(self, guessed_token_length: int, body: bytes = CHARGE) -> WebhookRequest:
        # The forger holds the captured body and its header, and guesses len(token) + 1 (the hyphen)
        captured = _request(body)
        digest = captured.headers["x-authenticity-token"]
        glue, forged_digest = forge(digest, guessed_token_length + 1 + len(body), self.SUFFIX)
        return WebhookRequest(body=body + glue + self.SUFFIX, headers={"x-authenticity-token": forged_digest})

    def test_the_forgery_is_a_valid_digest_that_verify_refuses(self):
        # Given a forgery made with the token's length guessed right
        forged = self._forged(len(TOKEN))
        # Then its digest is exactly what PagBank's scheme computes for the forged body (the forgery works)...
        assert compute_signature(forged.body, TOKEN) == forged.headers["x-authenticity-token"]
        assert hashlib.sha256(f"{TOKEN}-".encode() + forged.body).hexdigest() == forged.headers["x-authenticity-token"]
        # ...and the driver refuses it, saying why
        with pytest.raises(SignatureInvalid, match="length extension"):
            _verify(forged)

    def test_every_guess_of_the_token_length_is_refused(self):
        for guess in range(1, 65):
            with pytest.raises(SignatureInvalid):
                _verify(self._forged(guess))

    def test_a_forgery_during_a_rotation_is_refused_for_the_previous_token_too(self):
        captured = _request(CHARGE, token=PREVIOUS)
        glue, digest = forge(captured.headers["x-authenticity-token"], len(PREVIOUS) + 1 + len(CHARGE), b"}")
        with pytest.raises(SignatureInvalid, match="length extension"):
            _verify(
                WebhookRequest(body=CHARGE + glue + b"}", headers={"x-authenticity-token": digest}),
                SigningSecrets(TOKEN, PREVIOUS),
            )

    @pytest.mark.parametrize(
        "body",
        [
            CHARGE,
            b"",
            b"\x80" + b"\x00" * 70,  # a 0x80 and zeros, but not followed by its own length
            "notificationCode=ABC&notificationType=transaction&nome=Jo\u00e3o".encode("latin-1"),
            bytes(range(256)) * 3,
        ],
        ids=["documented", "empty", "0x80-and-zeros", "latin-1-form", "every-byte"],
    )
    def test_genuine_bodies_carry_no_padding_and_verify(self, body):
        assert not carries_hash_padding(f"{TOKEN}-".encode() + body)
        _verify(_request(body))

    @given(st.binary(max_size=600))
    def test_no_random_body_is_mistaken_for_a_forgery(self, body):
        assert not carries_hash_padding(f"{TOKEN}-".encode() + body)

    @given(st.binary(min_size=1, max_size=300), st.binary(max_size=100), st.integers(min_value=1, max_value=80))
    def test_every_forgery_carries_the_padding(self, body, suffix, token_length):
        token = "t" * token_length
        glue, _ = forge(compute_signature(body, token), token_length + 1 + len(body), suffix)
        assert carries_hash_padding(f"{token}-".encode() + body + glue + suffix)


class TestParse:
    def test_the_documented_charge(self):
        event = driver.parse(_request(CHARGE))
        assert event.resource_id == "CHAR_354828dd-786b-4cca-8ce4-6f7a1f3f2a1a"
        assert event.event_type == "charge.WAITING"
        assert event.provider_status == "pending"
        assert (event.amount, event.currency) == (100, "BRL")
        # -03:00 with milliseconds, kept
        assert event.occurred_at == datetime(2019, 9, 24, 21, 31, 19, 27000, tzinfo=UTC)

    def test_an_order_is_the_payment_and_its_last_charge_states_it(self):
        event = driver.parse(_request(order()))
        assert (event.resource_id, event.event_type, event.provider_status) == ("ORDE_1", "order.PAID", "paid")
        assert event.occurred_at == datetime(2023, 2, 8, 18, 15, 12, tzinfo=UTC)  # paid_at dates a payment

    def test_a_redelivery_derives_the_same_id(self):
        body = order()
        reordered = dict(reversed(list(body.items())))
        assert driver.parse(_request(reordered)).event_id == driver.parse(_request(body)).event_id

    def test_a_partial_refund_is_another_fact(self):
        paid = driver.parse(_request(order()))
        partial = driver.parse(_request(order(refunded=200)))
        assert partial.event_id != paid.event_id
        assert partial.provider_status == "partially_refunded"

    @pytest.mark.parametrize(
        ("status", "paid", "refunded", "canonical"),
        [
            ("WAITING", 0, 0, "pending"),
            ("IN_ANALYSIS", 0, 0, "pending"),
            ("AUTHORIZED", 0, 0, "authorized"),
            ("PAID", 500, 0, "paid"),
            ("PAID", 500, 100, "partially_refunded"),
            ("PAID", 500, 500, "refunded"),
            ("DECLINED", 0, 0, "failed"),
            ("CANCELED", 0, 0, "canceled"),
            ("CANCELED", 500, 500, "refunded"),
            ("CANCELED", 500, 0, "refunded"),
            ("CANCELED", 500, 100, "partially_refunded"),
            ("SOMETHING_NEW", 0, 0, None),
        ],
    )
    def test_statuses(self, status, paid, refunded, canonical):
        assert driver.parse(_request(order(status, paid, refunded))).provider_status == canonical
        found = canonical_status(status, amount=500, paid=paid, refunded=refunded)
        assert (found.value if found else None) == canonical

    def test_every_documented_status_is_mapped(self):
        assert set(CHARGE_STATUS) == {"AUTHORIZED", "PAID", "IN_ANALYSIS", "DECLINED", "CANCELED", "WAITING"}

    def test_an_order_without_charges(self):
        body = {"id": "ORDE_2", "created_at": "2023-02-08T15:15:11.408-03:00", "charges": []}
        event = driver.parse(_request(body))
        assert (event.resource_id, event.event_type, event.provider_status) == ("ORDE_2", "order.CREATED", None)

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b'{"status": "PAID"}', "missing field id"),
            (b'{"id": "CHAR_1", "status": "PAID", "created_at": "2023-02-08T15:15:11"}', "has no time zone"),
            (b'{"id": "CHAR_1", "status": "PAID"}', "missing field created_at"),
            (b'{"id": "ORDE_1", "charges": {"id": "CHAR_1"}}', "charges must be an array"),
            (b"notification_code=ABC", "not valid JSON"),
        ],
    )
    def test_invalid_bodies(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(body))


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="e", resource_id="ORDE_9", status=status, amount=2990, occurred_at=NOW)
        request = sender.sign(body, TOKEN, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status, event.amount) == ("ORDE_9", status, 2990)

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no PagBank sample for status 'disputed'"):
            sender.sample_body(event_id="e", resource_id="ORDE_1", status="disputed", amount=1, occurred_at=NOW)
