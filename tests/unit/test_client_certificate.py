"""The mutual-TLS client certificate reaches the driver only from what the front door verified."""

from __future__ import annotations

from typing import Any

from shared.ingest import request_from_api_event


def _event(request_context: dict[str, Any]) -> dict[str, Any]:
    return {
        "body": "{}",
        "headers": {"x-client-cert": "forged"},
        "rawPath": "/webhooks/efi",
        "requestContext": request_context,
    }


def test_a_verified_client_certificate_is_carried_to_the_request() -> None:
    # Given an HTTP API event of a mutual-TLS custom domain, as API Gateway writes it
    event = _event(
        {
            "authentication": {
                "clientCert": {
                    "subjectDN": "CN=webhooks.efipay.com.br",
                    "issuerDN": "CN=Efi CA",
                    "serialNumber": "1a:2b",
                    "validity": {"notBefore": "May 28 12:30:02 2019 GMT", "notAfter": "Aug  5 09:36:04 2021 GMT"},
                }
            }
        }
    )
    # When it becomes a WebhookRequest
    request = request_from_api_event(event)
    # Then the certificate's names are there
    assert request.client_certificate is not None
    assert request.client_certificate.subject_dn == "CN=webhooks.efipay.com.br"
    assert request.client_certificate.issuer_dn == "CN=Efi CA"
    assert request.client_certificate.serial_number == "1a:2b"


def test_no_certificate_without_the_front_door_having_verified_one() -> None:
    # Given events without a verified certificate (a plain endpoint; a header claiming one; a partial record)
    for context in ({}, {"authentication": None}, {"authentication": {"clientCert": {"subjectDN": "CN=x"}}}):
        # When / Then: there is no certificate
        assert request_from_api_event(_event(context)).client_certificate is None
