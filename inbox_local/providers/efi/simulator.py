"""Efí Pix's face: `POST /oauth/token` (HTTP Basic `client_id:client_secret`, OAuth2 client credentials) and
`GET /v2/pix/{e2eId}` with the token as `Authorization: Bearer`, as `shared.providers.efi.client` reads them.

Not modelled: TLS and the client certificate Efí's API asks for (the simulator speaks plain HTTP; the client
presents its certificate only to an `https` base URL), the token's scopes and expiry (every token lasts an hour
and stays valid), the token request's body (`grant_type` is not read). The token is derived from the account's
credentials, so it needs no state: one account's token never reads another account's Pix.

The API key of an account is Efí's credential JSON, `{"client_id", "client_secret"}` (no certificate: see above).
A payment is a Pix to be received: while `pending` (the charge not paid yet) there is no Pix to read, and the API
answers 404 (the webhook raced the API is the other way round: a Pix always exists before its callback). Paid ->
`valor`; refunds -> `devolucoes` of DEVOLVIDO status adding up to `amount_refunded`. A Pix is never authorized,
failed, canceled or disputed: those statuses are not modelled.

Errors in Efí's envelope `{"nome": "...", "mensagem": "..."}` (dev.efipay.com.br, the Pix API's error answers).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from inbox_local.gateway_simulator.model import SimulatedPayment, Tokens
from inbox_local.gateway_simulator.shape import Answer, ApiRequest, PaymentLookup, SampledLifecycle, iso_utc, same
from inbox_local.providers.efi.sender import _reais
from shared.payments.status import PaymentStatus
from shared.providers.efi.driver import REFUND_DONE

S = PaymentStatus

_STATUSES = frozenset({S.PENDING, S.PAID, S.PARTIALLY_REFUNDED, S.REFUNDED})
_DIGITS = "0123456789"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
E2E_ID_LENGTH = 32  # Banco Central: "E" + the payer's ISPB (8 digits) + yyyyMMddHHmm + 11 characters


def basic_authorization(key: str) -> str:
    """The token request's Authorization for an account's credential JSON: Basic client_id:client_secret."""
    document = json.loads(key)
    pair = f"{document['client_id']}:{document['client_secret']}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


def token_for(basic: str) -> str:
    """The token issued to a Basic Authorization value (a digest of it: no state, one per account)."""
    return "sim_" + hashlib.sha256(basic.encode("utf-8")).hexdigest()[:40]


def pix(p: SimulatedPayment) -> dict[str, Any]:
    received = p.last_at(S.PAID) or p.created
    document: dict[str, Any] = {
        "endToEndId": p.resource_id,
        "txid": f"tx{p.resource_id[-24:]}".lower(),
        "chave": "contato@example.com",
        "valor": _reais(p.amount),
        "horario": iso_utc(received),
        "infoPagador": "Pedido de exemplo",
    }
    if p.amount_refunded:
        when = p.history[-1][1]
        document["devolucoes"] = [
            {
                "id": f"dev{p.resource_id[-12:]}".lower(),
                "rtrId": f"D{p.resource_id[1:]}",
                "valor": _reais(p.amount_refunded),
                "horario": {"solicitacao": iso_utc(when), "liquidacao": iso_utc(when)},
                "status": REFUND_DONE,
            }
        ]
    return document


class EfiShape(SampledLifecycle):
    name = "efi"
    default_api_key = json.dumps({"client_id": "Client_Id_simulator", "client_secret": "Client_Secret_simulator"})
    default_currency = "BRL"
    currencies: frozenset[str] | None = frozenset({"BRL"})
    routes: tuple[tuple[str, ...], ...] = (("v2", "pix"), ("oauth", "token"))
    post_routes: tuple[tuple[str, ...], ...] = (("oauth", "token"),)
    unauthorized_status = 401

    def account_key(self, account: str) -> str:
        """A distinct credential per account (the core's default appends to the key, which would break JSON)."""
        suffix = account.replace("-", "_")
        return json.dumps({"client_id": f"Client_Id_{suffix}", "client_secret": f"Client_Secret_{suffix}"})

    def statuses(self, resource_id: str) -> frozenset[PaymentStatus]:
        if len(resource_id) != E2E_ID_LENGTH or not resource_id.startswith("E") or not resource_id.isalnum():
            raise ValueError("an Efí Pix id is an endToEndId: E and 31 letters or digits")
        return _STATUSES

    def new_id(self, tokens: Tokens) -> str:
        return f"E{tokens(8, _DIGITS)}202406121945{tokens(11, _ALNUM)}"

    def event_id(self, tokens: Tokens) -> str:
        return tokens(16, _ALNUM)  # a devolução's id

    def authorized(self, request: ApiRequest, key: str) -> bool:
        basic = basic_authorization(key)
        if request.segments[:2] == ("oauth", "token"):
            return same(request.headers.get("authorization"), basic)
        return same(request.headers.get("authorization"), f"Bearer {token_for(basic)}")

    def serve(self, request: ApiRequest, payments: PaymentLookup) -> Answer:
        if request.segments[:2] == ("oauth", "token"):  # the core checked the Basic credentials are an account's
            token = token_for(request.headers.get("authorization", ""))
            return 200, {}, {"access_token": token, "token_type": "Bearer", "expires_in": 3600, "scope": "pix.read"}
        if len(request.segments) == 3:
            p = payments.fetch(request.segments[2])
            if p is not None and p.status is not S.PENDING:
                return 200, {}, pix(p)
        return 404, {}, {"nome": "pix_nao_encontrado", "mensagem": "Nenhum Pix encontrado para o e2eId informado"}

    def unauthorized(self, request: ApiRequest) -> Any:
        return {"nome": "nao_autorizado", "mensagem": "Credenciais inválidas"}

    def throttled(self, request: ApiRequest) -> Any:
        return {"nome": "limite_excedido", "mensagem": "Limite de requisições excedido"}

    def server_error(self, request: ApiRequest) -> Any:
        return {"nome": "erro_interno", "mensagem": "Erro interno do servidor"}

    def provider_status(self, p: SimulatedPayment) -> str:
        return {S.PENDING: "aguardando", S.PAID: "recebido", S.PARTIALLY_REFUNDED: "devolvido_parcial"}.get(
            p.status, "devolvido"
        )


SHAPE = EfiShape()
