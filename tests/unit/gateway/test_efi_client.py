"""Efí Pix refetch: the OAuth2 token (cached until it expires, renewed on a 401), `GET /v2/pix/{e2eId}`, the
devoluções, and the client certificate for Efí's API."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.efi.client import EfiClient, EfiCredentials, certificate_pool, pix_snapshot
from tests.unit.gateway.fakes import Clock, FakePool, FakeResponse, Sleeps

E2E = "E09089356202406121945abcdefghijk"
SECRET = json.dumps({"client_id": "Client_Id_1", "client_secret": "Client_Secret_1"})
TOKEN = {"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600, "scope": "pix.read"}


def _pix(**extra: object) -> dict[str, object]:
    return {"endToEndId": E2E, "txid": "tx1", "valor": "19.90", "horario": "2024-06-12T19:45:03Z", **extra}


def make_client(pool: FakePool, *, base: str = "http://efi.test", secret: str = SECRET, clock: Clock | None = None):
    http = JsonHttpClient(base, provider="efi", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return EfiClient(http, lambda: secret, clock=clock or Clock())


def test_a_token_is_asked_for_with_basic_credentials_then_the_pix_read_with_it():
    pool = FakePool([FakeResponse(200, TOKEN), FakeResponse(200, _pix())])
    snapshot = make_client(pool).fetch_payment(E2E)
    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.amount_refunded) == (S.PAID, 1990, "BRL", 0)
    (token_method, token_url, token_call), (method, url, call) = pool.calls
    basic = base64.b64encode(b"Client_Id_1:Client_Secret_1").decode()
    assert (token_method, token_url) == ("POST", "http://efi.test/oauth/token")
    assert token_call["headers"]["Authorization"] == f"Basic {basic}"
    assert json.loads(token_call["body"]) == {"grant_type": "client_credentials"}
    assert (method, url) == ("GET", f"http://efi.test/v2/pix/{E2E}")
    assert call["headers"]["Authorization"] == "Bearer tok-1"


def test_the_token_is_reused_until_it_expires():
    # Given a token that lasts an hour
    clock = Clock()
    pool = FakePool([FakeResponse(200, TOKEN), FakeResponse(200, _pix()), FakeResponse(200, _pix())])
    client = make_client(pool, clock=clock)
    client.fetch_payment(E2E)
    clock.advance(3000)
    client.fetch_payment(E2E)  # within the hour less the margin: no new token
    assert [m for m, _, _ in pool.calls] == ["POST", "GET", "GET"]
    # When it nears its expiry, Then a new one is asked for
    clock.advance(600)
    pool.script += [FakeResponse(200, {**TOKEN, "access_token": "tok-2"}), FakeResponse(200, _pix())]
    client.fetch_payment(E2E)
    assert pool.calls[-1][2]["headers"]["Authorization"] == "Bearer tok-2"


def test_a_401_renews_the_token_once():
    pool = FakePool(
        [
            FakeResponse(200, TOKEN),
            FakeResponse(401, {"nome": "nao_autorizado"}),
            FakeResponse(200, {**TOKEN, "access_token": "tok-2"}),
            FakeResponse(200, _pix()),
        ]
    )
    assert make_client(pool).fetch_payment(E2E).status is S.PAID
    assert pool.calls[-1][2]["headers"]["Authorization"] == "Bearer tok-2"


def test_a_second_401_is_an_operators_problem():
    pool = FakePool([FakeResponse(200, TOKEN), FakeResponse(401, {}), FakeResponse(200, TOKEN), FakeResponse(401, {})])
    with pytest.raises(GatewayRejected):
        make_client(pool).fetch_payment(E2E)


def test_an_unknown_pix_is_not_found_yet():
    pool = FakePool([FakeResponse(200, TOKEN), FakeResponse(404, {"nome": "pix_nao_encontrado"})])
    with pytest.raises(ResourceNotFound):
        make_client(pool).fetch_payment(E2E)


@pytest.mark.parametrize(
    ("refunds", "status", "refunded"),
    [
        ([{"id": "1", "valor": "19.90", "status": "DEVOLVIDO"}], S.REFUNDED, 1990),
        (
            [{"id": "1", "valor": "5.00", "status": "DEVOLVIDO"}, {"id": "2", "valor": "4.90", "status": "DEVOLVIDO"}],
            S.PARTIALLY_REFUNDED,
            990,
        ),
        ([{"id": "1", "valor": "19.90", "status": "EM_PROCESSAMENTO"}], S.PAID, 0),
        ([{"id": "1", "valor": "19.90", "status": "NAO_REALIZADO"}], S.PAID, 0),
    ],
)
def test_devolucoes_make_it_refunded_in_part_or_whole(refunds, status, refunded):
    snapshot = pix_snapshot(E2E, _pix(devolucoes=refunds))
    assert (snapshot.status, snapshot.amount_refunded) == (status, refunded)


@pytest.mark.parametrize(
    "pix",
    [
        _pix(endToEndId="E0000"),
        _pix(valor="19,90"),
        _pix(devolucoes="x"),
        _pix(devolucoes=[{"valor": 1.5, "status": "DEVOLVIDO"}]),
    ],
)
def test_an_unreadable_pix_is_invalid(pix):
    with pytest.raises(GatewayResponseInvalid):
        pix_snapshot(E2E, pix)


@pytest.mark.parametrize("secret", ["not json", "[]", '{"client_id": "a"}', '{"client_id": "a", "client_secret": ""}'])
def test_a_malformed_credential_is_refused_before_any_request(secret):
    pool = FakePool([])
    with pytest.raises(GatewayRejected, match="efi API secret"):
        make_client(pool, secret=secret).fetch_payment(E2E)
    assert pool.calls == []


def test_efis_real_api_needs_the_certificate():
    # Given a credential with no certificate, and Efí's https API
    pool = FakePool([])
    with pytest.raises(GatewayRejected, match="requires mutual TLS"):
        make_client(pool, base="https://pix.api.efipay.com.br").fetch_payment(E2E)
    assert pool.calls == []


def test_the_certificate_is_loaded_into_memory_and_its_file_removed(monkeypatch):
    # Given a certificate and key in one PEM (what `openssl pkcs12 -nodes` makes of Efí's .p12)
    pem = _self_signed_pem()
    created: list[str] = []
    real_mkstemp = tempfile.mkstemp

    def recording_mkstemp(*args: object, **kwargs: object) -> tuple[int, str]:
        descriptor, path = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        created.append(path)
        assert os.stat(path).st_mode & 0o077 == 0  # private to this process's user
        return descriptor, path

    monkeypatch.setattr(tempfile, "mkstemp", recording_mkstemp)
    # When a pool is made for it, Then its TLS context holds the certificate and no file is left behind
    pool = certificate_pool(pem)
    assert pool.connection_pool_kw["ssl_context"] is not None
    assert created and not any(Path(path).exists() for path in created)


def test_an_unusable_certificate_is_refused_and_leaves_no_file(monkeypatch):
    with pytest.raises(GatewayRejected, match="certificate unusable"):
        certificate_pool("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")


def test_credentials_parse_the_certificate_and_identify_themselves_without_printing_secrets():
    secret = "Client_Secret_do_not_print"
    credentials = EfiCredentials.parse(json.dumps({"client_id": "a", "client_secret": secret, "certificate": "PEM"}))
    assert credentials.certificate == "PEM"
    assert len(credentials.fingerprint) == 64 and secret not in credentials.fingerprint


def _self_signed_pem() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "efi-client-test")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode() + key_pem.decode()
