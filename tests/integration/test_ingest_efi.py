"""Efí Pix through the ingest Lambda, against moto: the mutual-TLS front door's verified certificate, the skip-mTLS
`?hmac=`, and the `/pix` Efí appends to the registered URL."""

from __future__ import annotations

import json
import time
from typing import Any

from functions.ingest.handler import lambda_handler
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.senders import sender_for
from inbox_local.server import api_gateway_event, invoke_like_api_gateway
from shared.inbox.model import inline_body
from tests.integration.test_ingest_handler import stored_items

EFI_ISSUER = "C=BR,ST=Minas Gerais,O=Efi S.A. - Instituicao de Pagamento,OU=Infraestrutura,CN=webhook.efipay.com.br"
E2E = "E09089356202406121945abcdefghijk"


def _body(**extra: Any) -> bytes:
    body = sender_for("efi").sample_body(
        event_id="dev1", resource_id=E2E, status="paid", amount=1990, occurred_at=int(time.time())
    )
    return body if not extra else json.dumps({"pix": [{**json.loads(body)["pix"][0], **extra}]}).encode()


def _post(path: str, body: bytes, *, issuer: str | None = None) -> tuple[int, dict[str, Any]]:
    event = api_gateway_event("POST", path, {"content-type": "application/json"}, body, "34.193.116.226")
    if issuer is not None:  # what API Gateway's mTLS custom domain adds once it verified the client's chain
        event["requestContext"]["authentication"] = {
            "clientCert": {"subjectDN": "CN=efi-client", "issuerDN": issuer, "serialNumber": "0A", "validity": {}}
        }
    response = invoke_like_api_gateway(lambda_handler, event, LocalLambdaContext("ingest"))
    return response["statusCode"], json.loads(response["body"])


def test_a_delivery_over_mutual_tls_needs_no_hmac_and_reaches_the_source_through_pix(aws_world):
    # Given a Pix callback over a connection the front door verified with Efí's certificate, to the URL + /pix
    status, answer = _post("/webhooks/efi/pix", _body(), issuer=EFI_ISSUER)
    # Then it is stored as the Efí source's event, keyed by the Pix's endToEndId
    assert (status, answer) == (200, {"received": True})
    [item] = stored_items(aws_world)
    assert (item["pk"], item["event_type"], item["resource_id"]) == (f"efi#{E2E}", "pix", E2E)


def test_a_certificate_of_another_issuer_is_refused(aws_world):
    status, _ = _post("/webhooks/efi/pix", _body(), issuer="C=US,O=Someone Else,CN=webhook.efipay.com.br")
    assert status == 401
    assert stored_items(aws_world) == []


def test_skip_mtls_takes_the_registered_hmac_and_never_stores_it(aws_world):
    secret = DEV_SECRETS["efi"]
    assert _post("/webhooks/efi/pix?hmac=wrong", _body())[0] == 401
    assert _post(f"/webhooks/efi/pix?hmac={secret}&ignorar=", _body()) == (200, {"received": True})
    [item] = stored_items(aws_world)
    assert "query" not in item and secret.encode() not in (inline_body(item) or b"")


def test_pix_is_only_a_route_of_efis_sources(aws_world):
    assert _post("/webhooks/stripe/pix", _body())[0] == 404
    assert _post("/webhooks/efi/other", _body())[0] == 404


def test_a_refund_callback_stores_the_devolucao_beside_the_pix_stored_before(aws_world):
    # Given the Pix stored from its first callback
    secret = DEV_SECRETS["efi"]
    assert _post(f"/webhooks/efi/pix?hmac={secret}", _body())[0] == 200
    # When Efí calls back with the Pix and a devolução
    refund = {"id": "dev1", "valor": "19.90", "status": "DEVOLVIDO", "horario": {"solicitacao": "2024-06-12T20:00:00Z"}}
    status, answer = _post(f"/webhooks/efi/pix?hmac={secret}", _body(devolucoes=[refund]))
    # Then the delivery is accepted and the devolução is stored, once, as the payment's refund
    assert (status, answer) == (200, {"received": True})
    types = sorted(item["event_type"] for item in stored_items(aws_world))
    assert types == ["pix", "pix.devolucao"]
    [devolucao] = [item for item in stored_items(aws_world) if item["event_type"] == "pix.devolucao"]
    # (its status is the refetch's: `?hmac=` is a token, the body states nothing the processor applies)
    assert devolucao["resource_id"] == E2E and "provider_status" not in devolucao
