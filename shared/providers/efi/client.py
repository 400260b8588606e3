"""Efí Pix refetch: `GET /v2/pix/{e2eId}` (a Pix received, with its devoluções), with an OAuth2 client-credentials
token and, against Efí's API, a client certificate (mutual TLS).

As Efí's SDK does it (github.com/efipay/sdk-python-apis-efi, `efipay/constants.py`, `efipay/endpoints.py`):
- base URL `https://pix.api.efipay.com.br` (homologação `https://pix-h.api.efipay.com.br`);
- token: `POST /oauth/token`, HTTP Basic `client_id:client_secret`, body `{"grant_type": "client_credentials"}`,
  over the account's certificate (Efí's API refuses a connection without it); the answer's `access_token` is
  sent as `Authorization: Bearer ...` and is kept until `expires_in` seconds (less a margin) have passed. A 401 to
  a read drops the token and asks for a new one once (Efí's SDK does the same);
- `GET /v2/pix/:e2eId` -> `{endToEndId, txid, valor, horario, devolucoes: [{id, rtrId, valor, status, ...}]}`.

The source's API-key secret (locally, INBOX_API_KEY_<SOURCE> stored as it) is a JSON object:
`{"client_id": "Client_Id_...", "client_secret": "Client_Secret_...", "certificate": "<PEM: the certificate and
its private key>"}` (Efí issues a .p12; `openssl pkcs12 -in cert.p12 -out cert.pem -nodes` gives the PEM, as
Efí's conversor-p12-efi does). `certificate` is required for an `https` base URL; the gateway simulator
(plain HTTP, no TLS) needs none. The PEM is written to a private temporary file only for as long as
`ssl.SSLContext.load_cert_chain` reads it (the ssl module loads a chain from files only), then removed; the
context is kept in memory per credential, never the file.

-> canonical: a Pix received is `paid`; with DEVOLVIDO devoluções adding up to `valor`, `refunded`, less,
`partially_refunded` (the devoluções' sum is `amount_refunded`). Not found -> ResourceNotFound; 401/403 ->
GatewayRejected; 429/5xx -> GatewayUnavailable (shared/gateway/http.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import urllib3

from shared.gateway.base import GatewayRejected, PaymentSnapshot, no_sub_accounts
from shared.gateway.http import (
    CONNECT_TIMEOUT_SECONDS,
    READ_TIMEOUT_SECONDS,
    GatewayHttpRejected,
    GatewayResponseInvalid,
    HttpPool,
    JsonHttpClient,
    basic_authorization,
    path_segment,
)
from shared.payments.status import PaymentStatus
from shared.providers.base import PayloadInvalid
from shared.providers.efi.driver import CURRENCY, centavos, refund_status, refunded_centavos
from shared.sub_account import SubAccount

PROVIDER = "efi"
DEFAULT_BASE_URL = "https://pix.api.efipay.com.br"
TOKEN_PATH = "/oauth/token"  # noqa: S105 - a path, not a credential
TOKEN_MARGIN_SECONDS = 60.0  # renewed this long before Efí says it expires
DEFAULT_TOKEN_SECONDS = 600.0  # when the answer names no `expires_in` (Efí's SDK tests show 600)

S = PaymentStatus


@dataclass(frozen=True, slots=True)
class EfiCredentials:
    client_id: str
    client_secret: str
    certificate: str | None  # PEM: certificate and private key

    @classmethod
    def parse(cls, secret: str) -> EfiCredentials:
        try:
            document = json.loads(secret)
        except ValueError:
            raise GatewayRejected(
                "efi API secret is not a JSON object of client_id, client_secret, certificate"
            ) from None
        if not isinstance(document, dict):
            raise GatewayRejected("efi API secret is not a JSON object of client_id, client_secret, certificate")
        client_id, client_secret = document.get("client_id"), document.get("client_secret")
        certificate = document.get("certificate")
        if not isinstance(client_id, str) or not client_id or not isinstance(client_secret, str) or not client_secret:
            raise GatewayRejected("efi API secret needs client_id and client_secret")
        if certificate is not None and not isinstance(certificate, str):
            raise GatewayRejected("efi API secret's certificate must be PEM text")
        return cls(client_id, client_secret, certificate or None)

    @property
    def fingerprint(self) -> str:
        """Identifies the credential (a rotation gets a new token and pool), never printed."""
        text = "\x00".join((self.client_id, self.client_secret, self.certificate or ""))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def certificate_pool(pem: str) -> urllib3.PoolManager:
    """A connection pool presenting the client certificate `pem` (certificate + key) on every TLS connection."""
    context = ssl.create_default_context()
    descriptor, path = tempfile.mkstemp(prefix="efi-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:  # mkstemp: mode 0600, this process only
            handle.write(pem)
        context.load_cert_chain(path)
    except (ssl.SSLError, OSError) as error:
        raise GatewayRejected(f"efi client certificate unusable: {type(error).__name__}") from None
    finally:
        os.unlink(path)
    return urllib3.PoolManager(
        num_pools=2,
        maxsize=10,
        ssl_context=context,
        timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS),
        retries=False,
    )


def pix_snapshot(resource_id: str, pix: dict[str, Any]) -> PaymentSnapshot:
    """A Pix received as Efí answers it, read as a payment."""
    if pix.get("endToEndId") not in (None, resource_id):
        raise GatewayResponseInvalid("efi answered a different Pix than the one asked for")
    refunds = pix.get("devolucoes") or []
    if not isinstance(refunds, list) or not all(isinstance(refund, dict) for refund in refunds):
        raise GatewayResponseInvalid("efi devolucoes is not a list of objects")
    try:
        amount = centavos(pix.get("valor"), "valor")
        status = refund_status(amount, refunds)
        returned = refunded_centavos(refunds)
    except PayloadInvalid as invalid:
        raise GatewayResponseInvalid(f"efi Pix unreadable: {invalid}") from None
    provider_status = {S.PAID: "recebido", S.PARTIALLY_REFUNDED: "devolvido_parcial", S.REFUNDED: "devolvido"}[status]
    return PaymentSnapshot(
        resource_id=resource_id,
        status=status,
        provider_status=provider_status,
        amount=amount,
        currency=CURRENCY,
        amount_refunded=returned if status is not S.PAID else 0,
    )


class EfiClient:
    provider: str = PROVIDER

    def __init__(
        self, http: JsonHttpClient, api_key: Callable[[], str], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._http = http
        self._api_key = api_key
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[str, float]] = {}  # credential fingerprint -> (token, expires at)
        self._pools: dict[str, HttpPool] = {}

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        no_sub_accounts(self.provider, account)
        credentials = EfiCredentials.parse(self._api_key())
        path = f"/v2/pix/{path_segment(resource_id)}"
        pool = self._pool(credentials)
        for attempt in (1, 2):
            token = self._token(credentials, pool)
            try:
                pix = self._http.get_json(
                    path, headers={"Authorization": f"Bearer {token}"}, parse_float=Decimal, pool=pool
                )
            except GatewayHttpRejected as rejected:
                if rejected.status != 401 or attempt == 2:
                    raise
                with self._lock:  # the token was revoked or expired early: ask for a new one, once
                    self._tokens.pop(credentials.fingerprint, None)
                continue
            return pix_snapshot(resource_id, pix)
        raise AssertionError("unreachable")  # pragma: no cover

    def _pool(self, credentials: EfiCredentials) -> HttpPool | None:
        if not self._http.base_url.startswith("https://"):
            return None  # a stand-in without TLS (the gateway simulator): no certificate to present
        if credentials.certificate is None:
            raise GatewayRejected("efi API secret has no certificate: Efí's API requires mutual TLS")
        with self._lock:
            pool = self._pools.get(credentials.fingerprint)
            if pool is None:
                pool = self._pools[credentials.fingerprint] = certificate_pool(credentials.certificate)
            return pool

    def _token(self, credentials: EfiCredentials, pool: HttpPool | None) -> str:
        now = self._clock()
        with self._lock:
            cached = self._tokens.get(credentials.fingerprint)
            if cached is not None and cached[1] > now:
                return cached[0]
        basic = basic_authorization(credentials.client_id, credentials.client_secret)
        answer = self._http.post_json(
            TOKEN_PATH,
            headers={"Authorization": basic, "Content-Type": "application/json"},
            body=b'{"grant_type": "client_credentials"}',
            pool=pool,
        )
        token, lifetime = answer.get("access_token"), answer.get("expires_in", DEFAULT_TOKEN_SECONDS)
        if not isinstance(token, str) or not token:
            raise GatewayResponseInvalid("efi token answer has no access_token")
        if isinstance(lifetime, bool) or not isinstance(lifetime, int | float):
            lifetime = DEFAULT_TOKEN_SECONDS
        with self._lock:
            self._tokens[credentials.fingerprint] = (token, now + max(0.0, float(lifetime) - TOKEN_MARGIN_SECONDS))
        return token
