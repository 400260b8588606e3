"""The local mutual-TLS front door: what API Gateway's custom domain with a truststore does, on a second port.

When the declaration has a `mutual_tls` source, `make run` also listens with TLS on INBOX_MTLS_PORT (default
INBOX_PORT + 5, inbox_local/config.py) and requires a client certificate that verifies against the truststore: the
local development CA generated at start into INBOX_MTLS_DIR (default `.local-state/mtls/`), or the CA bundle
INBOX_MTLS_CA_FILE names (e.g. Efí's chain). What API Gateway holds, this port holds too (docs/aws-limits.md):
- TLS 1.2 at least (the domain's security policy TLS_1_2);
- no certificate, or one the truststore does not trust, or an expired one: the handshake fails and nothing
  reaches the function;
- truststore certificates signed with less than SHA-256, or with RSA keys under 2048 bits or EC keys under 256,
  are not trusted (API Gateway warns about them when the domain is created, and clients they issued fail);
- the verified certificate reaches the function as `requestContext.authentication.clientCert` (subject and
  issuer DNs, serial number, validity, PEM), exactly where API Gateway writes it. The plain port never writes it:
  a header can never stand in for a handshake.
The handshake runs in the connection's own thread, never in the accept loop, so a slow or hostile client
cannot stall the others.

The development CA signs a server certificate for 127.0.0.1/localhost and one client certificate, the one
`inbox send` and the tests present (`client_context`). They sign nothing real and are reused across starts while
valid, so a client configured once keeps working.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import socket
import ssl
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from inbox_local.server import ApiServer, Handler, TokenBucket

ENV_MTLS_DIR = "INBOX_MTLS_DIR"
ENV_MTLS_CA_FILE = "INBOX_MTLS_CA_FILE"
DEFAULT_MTLS_DIR = Path(__file__).resolve().parents[1] / ".local-state" / "mtls"
HANDSHAKE_TIMEOUT_SECONDS = 10.0
DEV_CERTIFICATE_DAYS = 365
RENEW_BEFORE = timedelta(days=1)
# What API Gateway's truststore accepts: "SHA-256 or stronger, RSA-2048 or stronger, ECDSA-256 or stronger"
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-mutual-tls.html).
TRUSTSTORE_HASHES = frozenset({"sha256", "sha384", "sha512"})
TRUSTSTORE_MIN_RSA_BITS = 2048
TRUSTSTORE_MIN_EC_BITS = 256


@dataclass(frozen=True)
class DevCertificates:
    """The files of the local development CA (PEM): the truststore, the server's pair, the client's pair."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.directory / "server-key.pem"

    @property
    def client_cert(self) -> Path:
        return self.directory / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.directory / "client-key.pem"

    def files(self) -> tuple[Path, ...]:
        return (self.ca, self.server_cert, self.server_key, self.client_cert, self.client_key)


def mtls_directory(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    configured = env.get(ENV_MTLS_DIR, "").strip()
    return Path(configured) if configured else DEFAULT_MTLS_DIR


def dev_certificates(environ: dict[str, str] | None = None) -> DevCertificates:
    """Where the development CA's files are (they may not exist yet: `ensure_dev_certificates` makes them)."""
    return DevCertificates(mtls_directory(environ))


# ------------------------------------------------------------------------------------------ development CA
def ensure_dev_certificates(certificates: DevCertificates, *, now: datetime | None = None) -> DevCertificates:
    """The development CA, server and client certificates in `certificates.directory`: kept while they are valid
    for at least a day and belong together, generated anew otherwise. Two stacks starting at once share the
    directory safely (a lock around the check and the writes)."""
    moment = now or datetime.now(UTC)
    certificates.directory.mkdir(parents=True, exist_ok=True)
    with _locked(certificates.directory / ".lock"):
        if not _usable(certificates, moment):
            _generate(certificates, moment)
    return certificates


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _usable(certificates: DevCertificates, now: datetime) -> bool:
    if not all(path.is_file() for path in certificates.files()):
        return False
    try:
        ca = x509.load_pem_x509_certificate(certificates.ca.read_bytes())
        leaves = [
            x509.load_pem_x509_certificate(path.read_bytes())
            for path in (certificates.server_cert, certificates.client_cert)
        ]
    except ValueError:
        return False
    return all(cert.issuer == ca.subject and cert.not_valid_after_utc - now > RENEW_BEFORE for cert in [ca, *leaves])


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "BR"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Webhook Inbox local stack"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _generate(certificates: DevCertificates, now: datetime) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Webhook Inbox local development CA")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server_key, server = _leaf(
        ca,
        ca_key,
        "localhost",
        now,
        ExtendedKeyUsageOID.SERVER_AUTH,
        san=x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
    )
    client_key, client = _leaf(ca, ca_key, "inbox-local-client", now, ExtendedKeyUsageOID.CLIENT_AUTH)
    _write(certificates.server_key, _private_pem(server_key), private=True)
    _write(certificates.client_key, _private_pem(client_key), private=True)
    _write(certificates.server_cert, server.public_bytes(serialization.Encoding.PEM))
    _write(certificates.client_cert, client.public_bytes(serialization.Encoding.PEM))
    _write(certificates.ca, ca.public_bytes(serialization.Encoding.PEM))  # last: what _usable checks against


def _builder(subject: x509.Name, issuer: x509.Name, public_key: Any, now: datetime) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=DEV_CERTIFICATE_DAYS))
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _leaf(
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    now: datetime,
    usage: x509.ObjectIdentifier,
    *,
    san: x509.SubjectAlternativeName | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(_name(common_name), ca.subject, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, content: bytes, *, private: bool = False) -> None:
    """Written whole or not at all (a temporary file renamed over it); private keys readable by the owner only."""
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(content)
    os.replace(temporary, path)


# ------------------------------------------------------------------------------------------------ truststore
def truststore_pem(bundle: bytes, *, now: datetime | None = None) -> tuple[str, list[str]]:
    """The certificates of a CA bundle that API Gateway's truststore would use, as PEM, and a warning for each it
    would not (a weak hash or key, or not valid now), naming its subject. Raises ValueError for a bundle with no
    certificate at all."""
    moment = now or datetime.now(UTC)
    certificates = x509.load_pem_x509_certificates(bundle)
    kept: list[str] = []
    warnings: list[str] = []
    for certificate in certificates:
        problem = _truststore_problem(certificate, moment)
        if problem:
            warnings.append(f"{certificate.subject.rfc4514_string()}: {problem}")
        else:
            kept.append(certificate.public_bytes(serialization.Encoding.PEM).decode("ascii"))
    return "".join(kept), warnings


def _truststore_problem(certificate: x509.Certificate, now: datetime) -> str | None:
    algorithm = certificate.signature_hash_algorithm
    if algorithm is None or algorithm.name not in TRUSTSTORE_HASHES:
        return f"signed with {algorithm.name if algorithm else 'no hash'} (SHA-256 or stronger is required)"
    key = certificate.public_key()
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < TRUSTSTORE_MIN_RSA_BITS:
        return f"an RSA key of {key.key_size} bits (RSA-2048 or stronger is required)"
    if isinstance(key, ec.EllipticCurvePublicKey) and key.curve.key_size < TRUSTSTORE_MIN_EC_BITS:
        return f"an EC key of {key.curve.key_size} bits (ECDSA-256 or stronger is required)"
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        return "not valid now"
    return None


# ------------------------------------------------------------------------------------ the event's clientCert
def client_cert_of(der: bytes) -> dict[str, Any]:
    """`requestContext.authentication.clientCert` for a verified certificate, with API Gateway's field names
    (payload format 2.0): the DNs as `C=..,O=..,CN=..` in the certificate's order, the serial number as
    colon-separated hex pairs, the validity in OpenSSL's `Mon DD HH:MM:SS YYYY GMT`."""
    certificate = x509.load_der_x509_certificate(der)
    return {
        "clientCertPem": certificate.public_bytes(serialization.Encoding.PEM).decode("ascii"),
        "subjectDN": _distinguished_name(certificate.subject),
        "issuerDN": _distinguished_name(certificate.issuer),
        "serialNumber": _serial(certificate.serial_number),
        "validity": {
            "notBefore": _openssl_time(certificate.not_valid_before_utc),
            "notAfter": _openssl_time(certificate.not_valid_after_utc),
        },
    }


def _distinguished_name(name: x509.Name) -> str:
    return ",".join(attribute.rfc4514_string() for attribute in name)


def _serial(number: int) -> str:
    digits = f"{number:x}"
    digits = digits if len(digits) % 2 == 0 else f"0{digits}"
    return ":".join(digits[i : i + 2] for i in range(0, len(digits), 2))


def _openssl_time(moment: datetime) -> str:
    return f"{moment:%b} {moment.day:2d} {moment:%H:%M:%S %Y} GMT"


# -------------------------------------------------------------------------------------------- TLS contexts
def server_context(certificates: DevCertificates, ca_file: Path | None = None) -> ssl.SSLContext:
    """The TLS server side: the development server certificate, a client certificate required and verified
    against the truststore (`ca_file`, else the development CA), TLS 1.2 at least. Certificates the truststore
    would not use are left out and reported on stderr, as API Gateway warns about them."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(certificates.server_cert, certificates.server_key)
    bundle = (ca_file or certificates.ca).read_bytes()
    trusted, warnings = truststore_pem(bundle)
    for warning in warnings:
        print(f"mutual TLS truststore {ca_file or certificates.ca}: not trusted: {warning}", file=sys.stderr)
    if not trusted:
        raise SystemExit(f"error: the mutual-TLS truststore {ca_file or certificates.ca} trusts no certificate")
    context.load_verify_locations(cadata=trusted)
    return context


def client_context(certificates: DevCertificates) -> ssl.SSLContext:
    """What `inbox send` and the tests connect with: the development client certificate, the local server verified
    against the development CA."""
    missing = [str(path) for path in certificates.files() if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"the local stack's mutual-TLS certificates are missing ({', '.join(missing)}): start `make run` with "
            f"a mutual_tls source declared (and the same {ENV_MTLS_DIR})"
        )
    context = ssl.create_default_context(cafile=str(certificates.ca))
    context.load_cert_chain(certificates.client_cert, certificates.client_key)
    return context


# ------------------------------------------------------------------------------------------------ the server
class MutualTlsApiServer(ApiServer):
    """The front door of ApiServer behind a mutual-TLS handshake; every verified connection's certificate goes into
    the event as API Gateway's custom domain puts it there."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: Handler,
        *,
        context: ssl.SSLContext,
        access_log: bool = True,
        throttle: TokenBucket | None = None,
    ) -> None:
        super().__init__(address, handler, access_log=access_log, throttle=throttle)
        self.context = context

    def finish_request(self, request: Any, client_address: Any) -> None:
        # Called in the connection's thread (ThreadingMixIn): the handshake never holds up the accept loop.
        assert isinstance(request, socket.socket)
        request.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
        try:
            connection = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as error:  # no certificate, an untrusted one, not TLS at all
            if self.access_log:
                print(f"mutual TLS handshake refused: {error.__class__.__name__}", file=sys.stderr, flush=True)
            return
        connection.settimeout(None)
        try:
            super().finish_request(connection, client_address)
        finally:
            connection.close()

    def client_certificate(self, connection: Any) -> dict[str, Any] | None:
        der = connection.getpeercert(binary_form=True) if isinstance(connection, ssl.SSLSocket) else None
        return client_cert_of(der) if der else None
