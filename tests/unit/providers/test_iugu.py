"""iugu driver: form-encoded triggers, the token in the Authorization header or the URL, derived ids."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode

import pytest

from inbox_local.providers.iugu.sender import SAMPLE_STATUSES, sender
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.iugu.driver import INVOICE_STATUS, IuguDriver, driver

TOKEN = "iugu-webhook-authorization-0123456789"
PREVIOUS = "iugu-webhook-authorization-previous"
NOW = 1_718_221_503

# The shape iugu documents for "Mudança de estado da fatura" (form-encoded, brackets percent-encoded)
BODY = (
    b"event=invoice.status_changed&data%5Bid%5D=1757E1D7FD5E410A9C563024250015BF"
    b"&data%5Bstatus%5D=paid&data%5Baccount_id%5D=70CA2A8AAB8E4C4D8B0E2B2F1F7E0D11&data%5Bsubscription_id%5D="
)


def _request(
    body: bytes = BODY, *, authorization: str | None = TOKEN, query: dict[str, str] | None = None
) -> WebhookRequest:
    headers = {"content-type": "application/x-www-form-urlencoded"}
    if authorization is not None:
        headers["authorization"] = authorization
    return WebhookRequest(body=body, headers=headers, query=query or {})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(TOKEN), now=NOW, tolerance_seconds=300)


class TestVerify:
    @pytest.mark.parametrize("header", [TOKEN, f"Basic {TOKEN}", f"bearer {TOKEN}", f"  {TOKEN} "])
    def test_the_authorization_header(self, header):
        _verify(_request(authorization=header))

    def test_the_token_query_parameter(self):
        _verify(_request(authorization=None, query={"token": TOKEN}))

    def test_previous_token_during_a_rotation(self):
        _verify(_request(authorization=PREVIOUS), SigningSecrets(TOKEN, PREVIOUS))
        with pytest.raises(SignatureInvalid, match="token does not match"):
            _verify(_request(authorization=PREVIOUS))

    @pytest.mark.parametrize("header", ["other", f"Basic {TOKEN}x", TOKEN[:-1], "Basic ", "ç\udcff"])
    def test_other_values_fail(self, header):
        with pytest.raises(SignatureInvalid, match="token does not match") as caught:
            _verify(_request(authorization=header, query={"token": "nope"}))
        assert TOKEN not in str(caught.value)

    def test_nothing_presented(self):
        with pytest.raises(SignatureInvalid, match="missing Authorization header or token parameter"):
            _verify(_request(authorization=None))

    def test_an_unconfigured_token_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(authorization=""), SigningSecrets(""))

    def test_neither_carrier_of_the_token_is_ever_stored(self):
        assert driver.replay_headers == ()
        assert IuguDriver.replay_query == ()
        assert "authorization" in sender.sign(BODY, TOKEN, now=NOW).headers


class TestParse:
    def test_fields(self):
        event = IuguDriver(clock=lambda: NOW).parse(_request())
        assert event.event_type == "invoice.status_changed"
        assert event.resource_id == "1757E1D7FD5E410A9C563024250015BF"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (None, None)  # iugu states no amount: the refetch reads it
        # No time in the body: the time it was received
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_a_redelivery_derives_the_same_id_whenever_it_arrives(self):
        fields = parse_qsl(BODY.decode(), keep_blank_values=True)
        redelivered = urlencode(list(reversed(fields)), safe="[]").encode()  # another order, unescaped brackets
        first = IuguDriver(clock=lambda: NOW).parse(_request())
        later = IuguDriver(clock=lambda: NOW + 3600).parse(_request(redelivered))
        assert first.event_id == later.event_id and first.event_id.startswith("d_")

    def test_another_status_or_event_is_another_fact(self):
        first = driver.parse(_request())
        assert driver.parse(_request(BODY.replace(b"status%5D=paid", b"status%5D=refunded"))).event_id != first.event_id
        assert driver.parse(_request(BODY.replace(b"status_changed", b"created"))).event_id != first.event_id

    @pytest.mark.parametrize(("status", "canonical"), sorted((k, v.value) for k, v in INVOICE_STATUS.items()))
    def test_every_invoice_status(self, status, canonical):
        body = BODY.replace(b"status%5D=paid", f"status%5D={status}".encode())
        assert driver.parse(_request(body)).provider_status == canonical

    def test_an_unknown_status_maps_to_none(self):
        assert driver.parse(_request(BODY.replace(b"=paid", b"=brand_new"))).provider_status is None

    def test_other_families_are_not_payments(self):
        body = b"event=withdraw_request.status_changed&data%5Bid%5D=W1&data%5Bstatus%5D=accepted"
        event = driver.parse(_request(body))
        assert (event.resource_id, event.provider_status) == (None, None)

    def test_utf8_and_plus_encoded_values(self):
        body = b"event=invoice.created&data%5Bid%5D=A1&data%5Bstatus%5D=pending&data%5Bnote%5D=S%C3%A3o+Paulo"
        assert driver.parse(_request(body)).resource_id == "A1"

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"data%5Bid%5D=A1", "missing field event"),
            (b"event=invoice.created", "missing field data\\[id\\]"),
            (b"event=invoice.created&data%5Bid%5D=%FF", "not form-encoded"),
            (b"\xff", "not valid UTF-8"),
            (b"", "body is empty"),
            (b"this is not a form", "not form-encoded"),
        ],
    )
    def test_invalid_bodies(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(body))


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="e", resource_id="INV1", status=status, amount=1990, occurred_at=NOW)
        request = sender.sign(body, TOKEN, now=NOW)
        assert request.header("content-type") == "application/x-www-form-urlencoded"
        _verify(request)
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status) == ("INV1", status)

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no iugu sample for status 'partially_refunded'"):
            sender.sample_body(event_id="e", resource_id="I", status="partially_refunded", amount=1, occurred_at=NOW)
