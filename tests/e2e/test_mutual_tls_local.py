"""The local stack's mutual-TLS front door (issue 13, Efí Pix), over real TLS: a source declaring mutual_tls takes
deliveries on the TLS port with a client certificate the development CA issued, and on no other way; the other
sources are unaffected (docs/sources.md, "Mutual TLS")."""

from __future__ import annotations

import http.client
import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inbox_local.dev_secrets import dev_signing_secret
from inbox_local.mtls import DevCertificates, client_context, ensure_dev_certificates
from inbox_local.senders import sender_for
from shared.definitions import SourceSpec
from tests.e2e.conftest import RunningStack, free_port, start_stack, stop_stack

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

PIX = SourceSpec(name="pix", provider="standard", mutual_tls=True)
SOURCES: list[dict[str, Any]] = [PIX.document(), {"name": "stripe", "provider": "stripe"}]


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> DevCertificates:
    return DevCertificates(tmp_path_factory.mktemp("mtls"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, certificates: DevCertificates) -> Iterator[RunningStack]:
    path: Path = tmp_path_factory.mktemp("sources") / "sources.json"
    path.write_text(json.dumps(SOURCES), encoding="utf-8")
    running = start_stack(
        {
            "INBOX_SOURCES_FILE": str(path),
            "INBOX_MTLS_PORT": str(free_port()),
            "INBOX_MTLS_DIR": str(certificates.directory),
            "INBOX_SWEEP_INTERVAL_SECONDS": "3600",
        }
    )
    yield running
    if running.process.poll() is None:
        stop_stack(running)


def signed_pix(event_id: str) -> tuple[bytes, dict[str, str]]:
    sender = sender_for("standard")
    now = int(time.time())
    body = sender.sample_body(
        event_id=event_id, resource_id=f"pay_{event_id}", status="paid", amount=990, occurred_at=now
    )
    signed = sender.sign(body, dev_signing_secret(PIX), now=now, event_id=event_id)
    return signed.body, {"content-type": "application/json", **signed.headers}


def post(
    stack: RunningStack, path: str, body: bytes, headers: dict[str, str], *, tls: ssl.SSLContext | None = None
) -> tuple[int, Any]:
    if tls is None:
        connection: http.client.HTTPConnection = http.client.HTTPConnection(
            "127.0.0.1", int(stack.env["INBOX_PORT"]), timeout=30
        )
    else:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", int(stack.env["INBOX_MTLS_PORT"]), timeout=30, context=tls
        )
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def stored(stack: RunningStack, source: str, event_id: str) -> bool:
    return stack.cli("events", "show", source, event_id, "--json", check=False).returncode == 0


def test_a_delivery_over_tls_with_the_development_client_certificate_is_stored(stack, certificates):
    # Given a correctly signed delivery to the mutual_tls source
    event_id = f"msg_tls_{int(time.time() * 1000)}"
    body, headers = signed_pix(event_id)
    # When it is posted on the TLS port presenting the development client certificate
    status, answer = post(stack, "/webhooks/pix", body, headers, tls=client_context(certificates))
    # Then it is accepted and stored, like any verified delivery
    assert (status, answer) == (200, {"received": True})
    assert stored(stack, "pix", event_id)


def test_without_a_client_certificate_or_with_an_untrusted_one_the_handshake_fails(stack, certificates, tmp_path):
    body, headers = signed_pix(f"msg_nocert_{int(time.time() * 1000)}")
    # Given a client that trusts the server but presents no certificate, and one whose certificate another CA issued
    no_certificate = ssl.create_default_context(cafile=str(certificates.ca))
    stranger = ensure_dev_certificates(DevCertificates(tmp_path / "stranger"))
    untrusted = ssl.create_default_context(cafile=str(certificates.ca))
    untrusted.load_cert_chain(stranger.client_cert, stranger.client_key)
    for tls in (no_certificate, untrusted):
        # When either posts on the TLS port, Then the TLS handshake fails: no HTTP answer at all
        with pytest.raises((ssl.SSLError, ConnectionError)):
            post(stack, "/webhooks/pix", body, headers, tls=tls)


def test_the_same_delivery_on_the_plain_port_is_refused_whatever_its_headers_claim(stack):
    # Given a correctly signed delivery to the mutual_tls source, with headers that claim a client certificate
    event_id = f"msg_plain_{int(time.time() * 1000)}"
    body, headers = signed_pix(event_id)
    forged = {**headers, "x-amzn-mtls-clientcert": "forged", "x-client-cert": "-----BEGIN CERTIFICATE-----"}
    # When it is posted on the plain port
    status, answer = post(stack, "/webhooks/pix", body, forged)
    # Then it is refused 403, not stored, and recorded as a rejection of its own reason
    assert (status, answer) == (403, {"error": "a verified client certificate is required for this source"})
    assert not stored(stack, "pix", event_id)
    listed = json.loads(stack.cli("rejected", "list", "--json", "--reason", "client_certificate_missing").stdout)
    assert any(row["source"] == "pix" for row in listed)


def test_inbox_send_posts_a_mutual_tls_source_over_tls_with_the_development_certificate(stack):
    # When `inbox send pix` runs against the local stack
    result = stack.cli("send", "pix")
    # Then it posted on the TLS port and the delivery was stored
    assert f"POST https://127.0.0.1:{stack.env['INBOX_MTLS_PORT']}/webhooks/pix -> 200" in result.stdout
    event_id = result.stdout.split("event ", 1)[1].split()[0]
    assert stored(stack, "pix", event_id)


def test_a_source_without_mutual_tls_is_unaffected(stack):
    # Given the plain Stripe source beside it, When `inbox send stripe` posts to the plain port
    result = stack.cli("send", "stripe")
    # Then it is accepted there as before
    assert f"POST {stack.url}/webhooks/stripe -> 200" in result.stdout
