"""Efí Pix driver: mutual TLS (the verified certificate's issuer), skip-mTLS's `?hmac=`, and one event per Pix and
per devolução."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inbox_local.providers.efi.sender import sender
from shared.providers.base import (
    ClientCertificate,
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
    parse_events,
)
from shared.providers.efi.driver import (
    EFI_WEBHOOK_IP_RANGES,
    PIX_EVENT,
    REFUND_EVENT,
    dn_attributes,
    driver,
    issued_by_efi,
)

SECRET = "efi-hmac-registered-with-the-url"
NOW = 1_718_221_503
E2E = "E09089356202406121945abcdefghijk"
# As API Gateway writes a verified client certificate's issuer (RFC 2253 order), from Efí's published chain.
EFI_ISSUER = "C=BR,ST=Minas Gerais,O=Efi S.A. - Instituicao de Pagamento,OU=Infraestrutura,CN=webhook.efipay.com.br"
SANDBOX_ISSUER = (
    "emailAddress=infra@sejaefi.com.br,CN=webhook-h.efipay.com.br,OU=Infraestrutura,"
    "O=Efi S.A. - Instituicao de Pagamento,ST=Minas Gerais,C=BR"
)


def _cert(issuer: str) -> ClientCertificate:
    return ClientCertificate(subject_dn="CN=efi-webhook-client", issuer_dn=issuer, serial_number="1")


def _request(body: bytes, *, query: dict[str, str] | None = None, cert: ClientCertificate | None = None):
    return WebhookRequest(
        body=body, headers={"content-type": "application/json"}, query=query or {}, client_certificate=cert
    )


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=NOW, tolerance_seconds=300)


def _pix(e2e: str = E2E, valor: str = "110.00", **extra: Any) -> dict[str, Any]:
    return {
        "endToEndId": e2e,
        "txid": "tx1",
        "chave": "k",
        "valor": valor,
        "horario": "2024-06-12T19:45:03.000Z",
        **extra,
    }


def _body(*pix: dict[str, Any]) -> bytes:
    return json.dumps({"pix": list(pix)}).encode()


class TestMutualTls:
    @pytest.mark.parametrize("issuer", [EFI_ISSUER, SANDBOX_ISSUER])
    def test_a_certificate_issued_by_efis_webhook_ca_is_enough(self, issuer):
        # Given a delivery the front door verified with Efí's certificate, and no hmac at all
        # When verified, Then it is accepted (the TLS handshake is the proof)
        _verify(_request(_body(_pix()), cert=_cert(issuer)))

    @pytest.mark.parametrize(
        "issuer",
        [
            "C=US,O=Another Sender Inc,CN=webhook.efipay.com.br",  # right CN, wrong organization
            "C=BR,O=Efi S.A. - Instituicao de Pagamento,CN=Efi Pay Root CA",  # the root signs the intermediates only
            "C=BR,O=Efi S.A. - Instituicao de Pagamento,CN=webhook.efipay.com.br.evil.example",
            "O=Efi S.A. - Instituicao de Pagamento,CN=webhook.efipay.com.br,CN=other",
            "",
            "CN=" + "x" * 5000,
        ],
    )
    def test_a_verified_certificate_of_another_issuer_is_refused_even_with_the_right_hmac(self, issuer):
        request = _request(_body(_pix()), query={"hmac": SECRET}, cert=_cert(issuer))
        with pytest.raises(SignatureInvalid, match="not issued by Efí's webhook CA"):
            _verify(request)

    def test_dn_parsing_keeps_escaped_commas_and_either_order(self):
        assert dn_attributes(r"CN=a\, b,O=Org") == {"CN": ["a, b"], "O": ["Org"]}
        assert issued_by_efi(EFI_ISSUER) and issued_by_efi(SANDBOX_ISSUER)
        assert issued_by_efi("/C=BR/O=Efi S.A. - Instituicao de Pagamento/CN=webhook.efipay.com.br")


class TestSkipMtls:
    def test_the_senders_delivery_verifies_with_the_current_or_the_previous_secret(self):
        request = sender.sign(_body(_pix()), SECRET, now=NOW)
        assert request.query["hmac"] == SECRET
        _verify(request)
        _verify(request, SigningSecrets("new-secret", previous=SECRET))  # during a rotation

    @pytest.mark.parametrize(
        ("query", "reason"),
        [({}, "missing client certificate or hmac query parameter"), ({"hmac": "guess"}, "hmac does not match")],
    )
    def test_without_a_certificate_the_hmac_must_match(self, query, reason):
        with pytest.raises(SignatureInvalid, match=reason):
            _verify(_request(_body(_pix()), query=query))

    def test_the_hmac_is_never_kept_and_efis_ip_is_published(self):
        assert driver.replay_query == () and driver.replay_headers == ()
        assert EFI_WEBHOOK_IP_RANGES == ("34.193.116.226/32",)

    def test_an_empty_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(_body(_pix()), query={"hmac": ""}), SigningSecrets(""))


class TestEvents:
    def test_one_pix_is_one_paid_event_keyed_by_its_end_to_end_id(self):
        [event] = driver.parse_many(_request(_body(_pix())))
        assert (event.event_id, event.event_type, event.resource_id) == (E2E, PIX_EVENT, E2E)
        assert (event.provider_status, event.amount, event.currency) == ("paid", 11000, "BRL")
        assert event.occurred_at.isoformat() == "2024-06-12T19:45:03+00:00"
        assert driver.parse(_request(_body(_pix()))) == event

    def test_several_pix_of_one_callback_are_several_events_in_order(self):
        # Given a callback grouping two Pix of one key (the Banco Central's spec allows it)
        other = "E09089356202406121946zyxwvutsrqp"
        events = driver.parse_many(_request(_body(_pix(), _pix(other, "5.50"))))
        assert [(e.event_id, e.amount) for e in events] == [(E2E, 11000), (other, 550)]
        with pytest.raises(PayloadInvalid, match="delivery holds 2 events"):
            driver.parse(_request(_body(_pix(), _pix(other))))

    @pytest.mark.parametrize(
        ("returned", "status", "expected"),
        [
            ("110.00", "DEVOLVIDO", "refunded"),
            ("10.00", "DEVOLVIDO", "partially_refunded"),
            ("10.00", "NAO_REALIZADO", "paid"),
            ("10.00", "EM_PROCESSAMENTO", "paid"),
        ],
    )
    def test_a_devolucao_is_its_own_event_of_the_same_payment(self, returned, status, expected):
        # Given the callback Efí sends when a devolução reaches a final status: the Pix and its devoluções
        refund = {
            "id": "D1",
            "rtrId": "D09089356202406121950abcdefghijk",
            "valor": returned,
            "horario": {"solicitacao": "2024-06-12T19:50:00Z", "liquidacao": "2024-06-12T19:50:03Z"},
            "status": status,
        }
        pix_event, refund_event = driver.parse_many(_request(_body(_pix(devolucoes=[refund]))))
        # Then the Pix is the same event as before (a duplicate once stored) and the devolução a new one
        assert pix_event.event_id == E2E
        assert refund_event.event_type == REFUND_EVENT and refund_event.resource_id == E2E
        assert refund_event.provider_status == expected
        assert refund_event.occurred_at.isoformat() == "2024-06-12T19:50:03+00:00"
        # and a later status of the same devolução is another event
        later = driver.parse_many(_request(_body(_pix(devolucoes=[{**refund, "status": "OTHER"}]))))[1]
        assert later.event_id != refund_event.event_id

    def test_a_single_object_is_read_as_a_list_of_one(self):
        # As the Banco Central's sample writes it: "pix": {...}, "devolucoes": {...}
        body = json.dumps({"pix": _pix(devolucoes={"id": "D1", "valor": "1.00", "status": "DEVOLVIDO"})}).encode()
        assert [e.event_type for e in driver.parse_many(_request(body))] == [PIX_EVENT, REFUND_EVENT]

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"{}", "field pix must be a non-empty list"),
            (b'{"pix": []}', "field pix must be a non-empty list"),
            (_body({**_pix(), "endToEndId": None}), r"pix\[0\].endToEndId"),
            (_body(_pix(valor="1,00")), r"pix\[0\].valor is not a decimal amount"),
            (_body(_pix(devolucoes=[{"valor": "1.00", "status": "DEVOLVIDO"}])), r"devolucoes\[0\].id"),
            (_body(_pix(devolucoes="x")), "devolucoes must be a list"),
        ],
    )
    def test_unreadable_callbacks_are_refused_whole(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse_many(_request(body))
        assert driver.fallback_event_id(_request(body)) == body_digest_id(body)

    def test_the_senders_refund_sample_reads_back_as_its_refund(self):
        body = sender.sample_body(event_id="dev1", resource_id=E2E, status="refunded", amount=1990, occurred_at=NOW)
        events = parse_events(driver, sender.sign(body, SECRET, now=NOW))
        assert [(e.event_type, e.provider_status) for e in events] == [(PIX_EVENT, "paid"), (REFUND_EVENT, "refunded")]
