"""The local mutual-TLS front door in process (inbox_local/mtls.py), over real sockets: the truststore it is given
decides whom it trusts, TLS 1.2 is the minimum as API Gateway's TLS_1_2 policy has it, and the event it hands
the function carries the verified certificate (the whole stack: tests/e2e/test_mutual_tls_local.py)."""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from inbox_local.mtls import (
    DevCertificates,
    MutualTlsApiServer,
    client_context,
    ensure_dev_certificates,
    server_context,
)


@contextmanager
def serving(certificates: DevCertificates, ca_file: Path | None = None) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    events: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        events.append(event)
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}

    server = MutualTlsApiServer(
        ("127.0.0.1", 0), handler, context=server_context(certificates, ca_file), access_log=False
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], events
    finally:
        server.shutdown()
        server.server_close()


def post(port: int, tls: ssl.SSLContext) -> int:
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=tls)
    try:
        connection.request("POST", "/webhooks/pix", body=b"{}", headers={"content-type": "application/json"})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.fixture
def local(tmp_path: Path) -> DevCertificates:
    return ensure_dev_certificates(DevCertificates(tmp_path / "local"))


def test_a_given_ca_bundle_is_the_truststore_instead_of_the_development_ca(local: DevCertificates, tmp_path: Path):
    # Given the front door started with another CA's bundle (as INBOX_MTLS_CA_FILE names one, e.g. Efí's chain)
    other = ensure_dev_certificates(DevCertificates(tmp_path / "other"))
    with serving(local, ca_file=other.ca) as (port, events):
        # When a client of that CA posts, and one of the development CA
        trusted = ssl.create_default_context(cafile=str(local.ca))  # the server's certificate is still local's
        trusted.load_cert_chain(other.client_cert, other.client_key)
        status = post(port, trusted)
        with pytest.raises((ssl.SSLError, ConnectionError)):
            post(port, client_context(local))
    # Then only the given CA's client reaches the function, with its certificate in the event
    assert status == 200
    [event] = events
    assert event["requestContext"]["authentication"]["clientCert"]["issuerDN"].endswith(
        "CN=Webhook Inbox local development CA"
    )


def test_tls_1_2_is_the_minimum_as_the_domains_security_policy_has_it(local: DevCertificates):
    # Given the front door's TLS settings (API Gateway's custom domain: SecurityPolicy TLS_1_2)
    assert server_context(local).minimum_version == ssl.TLSVersion.TLSv1_2
    # When a client limited to TLS 1.2 posts with a trusted certificate, Then it is served
    only_1_2 = client_context(local)
    only_1_2.maximum_version = ssl.TLSVersion.TLSv1_2
    with serving(local) as (port, events):
        assert post(port, only_1_2) == 200
    assert len(events) == 1
