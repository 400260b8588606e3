"""The local mutual-TLS front door's pieces (inbox_local/mtls.py): the development CA, the truststore rules API
Gateway applies, and the clientCert the event carries, in API Gateway's shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from inbox_cli.target import Target, _deployed_sources
from inbox_local.mtls import DevCertificates, client_cert_of, ensure_dev_certificates, truststore_pem
from inbox_local.server import ApiServer, api_gateway_event
from shared.providers.base import ClientCertificate

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _self_signed(key: object, algorithm: hashes.HashAlgorithm, name: str, *, days: int = 30) -> bytes:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())  # type: ignore[attr-defined]
        .serial_number(0x1A2B3C)
        .not_valid_before(NOW - timedelta(days=1))
        .not_valid_after(NOW + timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, algorithm)  # type: ignore[arg-type]
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def test_the_development_ca_is_generated_once_and_reused_while_valid(tmp_path: Path) -> None:
    # Given no files yet, When the certificates are ensured twice
    certificates = ensure_dev_certificates(DevCertificates(tmp_path / "mtls"), now=NOW)
    first = certificates.ca.read_bytes()
    ensure_dev_certificates(certificates, now=NOW + timedelta(days=30))
    # Then the second start keeps them (a client configured once keeps working), keys readable by the owner only
    assert certificates.ca.read_bytes() == first
    assert certificates.client_key.stat().st_mode & 0o077 == 0
    # And a day before they expire they are generated anew
    ensure_dev_certificates(certificates, now=NOW + timedelta(days=365))
    assert certificates.ca.read_bytes() != first


def test_the_truststore_leaves_out_what_api_gateway_would_not_trust() -> None:
    # Given a bundle of a good EC CA, a SHA-224 signed CA, a 1024-bit RSA CA and an expired CA
    good = _self_signed(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256(), "Good CA")
    short = _self_signed(ec.generate_private_key(ec.SECP256R1()), hashes.SHA224(), "Short hash CA")
    weak = _self_signed(rsa.generate_private_key(65537, 1024), hashes.SHA256(), "Weak key CA")  # noqa: S505
    expired = _self_signed(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256(), "Expired CA", days=-1)
    # When it is read as a truststore
    trusted, warnings = truststore_pem(good + short + weak + expired, now=NOW)
    # Then only the good one is trusted, and each other one is named with why
    assert [c.subject.rfc4514_string() for c in x509.load_pem_x509_certificates(trusted.encode())] == ["CN=Good CA"]
    assert [warning.split(":")[0] for warning in warnings] == ["CN=Short hash CA", "CN=Weak key CA", "CN=Expired CA"]
    assert "SHA-256 or stronger" in warnings[0] and "RSA-2048" in warnings[1] and "not valid now" in warnings[2]


def test_a_bundle_without_a_certificate_is_refused() -> None:
    with pytest.raises(ValueError):
        truststore_pem(b"not a PEM bundle")


def test_the_client_cert_has_api_gateways_fields_and_reaches_the_request(tmp_path: Path) -> None:
    # Given the development client certificate as the handshake hands it over (DER)
    certificates = ensure_dev_certificates(DevCertificates(tmp_path / "mtls"), now=NOW)
    der = x509.load_pem_x509_certificate(certificates.client_cert.read_bytes()).public_bytes(serialization.Encoding.DER)
    # When it becomes the event's clientCert
    cert = client_cert_of(der)
    # Then it has API Gateway's field names and formats (payload 2.0)
    assert cert["subjectDN"] == "C=BR,O=Webhook Inbox local stack,CN=inbox-local-client"
    assert cert["issuerDN"] == "C=BR,O=Webhook Inbox local stack,CN=Webhook Inbox local development CA"
    assert all(len(pair) == 2 for pair in cert["serialNumber"].split(":"))
    assert cert["validity"]["notBefore"] == "Dec  1 11:55:00 2026 GMT"
    assert cert["clientCertPem"].startswith("-----BEGIN CERTIFICATE-----")
    # And the ingest reads it from where API Gateway writes it
    event = api_gateway_event("POST", "/webhooks/pix", {}, b"{}", "127.0.0.1", client_cert=cert)
    assert ClientCertificate.from_api_event(event) == ClientCertificate(
        cert["subjectDN"], cert["issuerDN"], cert["serialNumber"]
    )


def test_the_plain_front_door_never_puts_a_certificate_in_the_event() -> None:
    server = ApiServer.__new__(ApiServer)  # the method reads nothing of the server
    assert server.client_certificate(object()) is None
    event = api_gateway_event("POST", "/webhooks/pix", {"x-client-cert": "forged"}, b"{}", "127.0.0.1")
    assert "authentication" not in event["requestContext"]


def test_the_cli_posts_a_mutual_tls_source_on_the_mutual_tls_front_door() -> None:
    # Given a deployed stack's outputs: its sources, and which of them require mutual TLS
    sources = _deployed_sources('{"stripe":"stripe","pix":"standard"}', {}, '["pix"]')
    assert [(s.name, s.mutual_tls) for s in sources] == [("stripe", False), ("pix", True)]
    target = Target(
        "https://abc.execute-api.sa-east-1.amazonaws.com",
        "inbox",
        "payments",
        "bodies",
        local=False,
        sources=sources,
        mtls_api_url="https://pix.webhooks.example.com",
    )
    # Then the mutual_tls source's URL is on the custom domain, the other stays on the default endpoint
    assert target.webhook_url("pix") == "https://pix.webhooks.example.com/webhooks/pix"
    assert target.webhook_url("stripe") == "https://abc.execute-api.sa-east-1.amazonaws.com/webhooks/stripe"
    # And a stack deployed before the option lists no such source
    assert not any(s.mutual_tls for s in _deployed_sources('{"pix":"standard"}', {}, None))
