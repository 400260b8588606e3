"""Efí (formerly Gerencianet) Pix: the Pix webhook, `{"pix": [...]}`, one event per Pix and per devolução.

Authentication, two ways, both from Efí (docs/providers.md, "Efí Pix", says which are verified):
- **mutual TLS** (the Pix API's standard, a Banco Central rule; dev.efipay.com.br/docs/api-pix/webhooks): Efí
  presents a client certificate signed by its webhook CA chain (`certificate-chain-prod.crt` /
  `certificate-chain-homolog.crt`). The front door (API Gateway's mTLS custom domain, or the local mTLS front door)
  verifies the chain against its truststore and hands over the certificate it verified
  (`WebhookRequest.client_certificate`; a header can never produce one). The truststore may hold other senders'
  CAs too, so the driver also checks the certificate's ISSUER is Efí's webhook intermediate CA: `O=Efi S.A. -
  Instituicao de Pagamento` with `CN=webhook.efipay.com.br` (production) or `CN=webhook-h.efipay.com.br`
  (homologação). Those DNs are read from the chain Efí publishes (github.com/efipay/mtls-webhook `certs/prod.crt`,
  `certs/homolog.crt`: each an intermediate, CA:TRUE pathlen 0, under `CN=Efi Pay Root CA`). A delivery with a
  verified certificate of another issuer is refused: it is not Efí's, whatever its query says.
- **skip-mTLS** (`x-skip-mtls-checking: true` when the webhook is registered; for hosts that cannot ask for a
  client certificate): Efí then sends the `hmac` query parameter registered with the URL
  (`.../webhooks/efi?hmac=<secret>&ignorar=`), compared in constant time with the source's signing secret
  (current or previous), plus its one sending IP (the source's `allowed_ip_ranges`: 34.193.116.226/32). The
  value is the secret itself: it is never stored, and the rejected-delivery log masks it (`authentication`).
No timestamp is signed in either mode.

Path: Efí appends `/pix` to the registered URL (github.com/efipay/mtls-webhook README), so `/webhooks/{source}/pix`
reaches the same source as `/webhooks/{source}` (shared/ingest.py, the API route, the local server).

Body (Banco Central's Pix API callback, which Efí follows): `{"pix": [{"endToEndId", "txid", "chave", "valor",
"horario", "infoPagador"?, "devolucoes"?: [{"id", "rtrId", "valor", "horario": {"solicitacao", "liquidacao"?},
"status"}]}]}`. The PSP may group several Pix of one key in one callback, and calls again when a devolução
reaches a final status (`DEVOLVIDO`, `NAO_REALIZADO`) with the Pix and its `devolucoes`. So one delivery is
several events (`parse_many`), stored all or none (shared/ingest_batch.py):
- each Pix: event `pix`, id = its `endToEndId` (the Pix's unique id across the whole Pix system: a repeat of
  the Pix in a later callback is a duplicate), time = `horario`, canonical `paid` (a Pix received is settled),
  amount = `valor` (decimal reais -> centavos);
- each devolução: event `pix.devolucao`, id = derive_event_id(endToEndId, "pix.devolucao:" + its `id`, its
  `status`, "") (a devolução of one Pix, in one status; a later status is a new event), time = `horario.liquidacao`
  else `horario.solicitacao`, canonical `refunded` when the DEVOLVIDO devoluções add up to `valor`, else
  `partially_refunded` (`EM_PROCESSAMENTO`, `NAO_REALIZADO`: still `paid`).
The payment is the Pix (`endToEndId`). The processor refetches it (`GET /v2/pix/{e2eId}`,
shared/providers/efi/client.py).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from shared.payments.status import PaymentStatus
from shared.providers._money import decimal_to_minor_units
from shared.providers._schemes import SchemeVerified, TokenScheme
from shared.providers._signing import JsonObject, get_object, iso_to_utc, load_json_object, require_str
from shared.providers.base import (
    MultiEventDriver,
    NormalizedEvent,
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    derive_event_id,
)

CURRENCY = "BRL"
HMAC_QUERY_PARAMETER = "hmac"
PIX_EVENT = "pix"
REFUND_EVENT = "pix.devolucao"
EVENT_TYPES: tuple[str, ...] = (PIX_EVENT, REFUND_EVENT)
# The issuer of the client certificate Efí's webhooks present: its webhook intermediate CAs (production,
# homologação), as their subjects read in the chain Efí publishes.
EFI_CA_ORGANIZATION = "Efi S.A. - Instituicao de Pagamento"
EFI_CA_COMMON_NAMES = frozenset({"webhook.efipay.com.br", "webhook-h.efipay.com.br"})
# Efí's one webhook sending address, for a skip-mTLS source's allowed_ip_ranges (docs/providers.md).
EFI_WEBHOOK_IP_RANGES: tuple[str, ...] = ("34.193.116.226/32",)
MAX_DN_LENGTH = 2048

S = PaymentStatus
REFUND_DONE = "DEVOLVIDO"

# The skip-mTLS proof: the registered `hmac` value, in the query, compared to the signing secret.
AUTHENTICATION = TokenScheme(
    query_param=HMAC_QUERY_PARAMETER,
    called="hmac",
    described_as="client certificate or hmac query parameter",
)

_DN_PART = re.compile(r"\s*([A-Za-z0-9.]+)\s*=\s*((?:[^,\\]|\\.)*)")


def dn_attributes(dn: str) -> dict[str, list[str]]:
    """The attributes of a distinguished name, `C=BR,O=Efi S.A. - ...,CN=...` (RFC 2253 order or the reverse;
    escaped commas kept): name (upper case) -> values. Bounded: a DN longer than MAX_DN_LENGTH reads as empty."""
    attributes: dict[str, list[str]] = {}
    if len(dn) > MAX_DN_LENGTH:
        return attributes
    for part in re.split(r"(?<!\\)[,/]", dn):
        match = _DN_PART.fullmatch(part)
        if match:
            name, value = match.group(1).upper(), match.group(2).replace("\\", "").strip()
            attributes.setdefault(name, []).append(value)
    return attributes


def issued_by_efi(issuer_dn: str) -> bool:
    """Whether a client certificate's issuer is one of Efí's webhook CAs (organization and common name)."""
    attributes = dn_attributes(issuer_dn)
    common_names = attributes.get("CN", [])
    organization_matches = attributes.get("O") == [EFI_CA_ORGANIZATION]
    return organization_matches and len(common_names) == 1 and common_names[0] in EFI_CA_COMMON_NAMES


def centavos(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise PayloadInvalid(f"field {where} is not a decimal amount")
    try:
        return decimal_to_minor_units(value, CURRENCY)
    except ValueError:
        raise PayloadInvalid(f"field {where} is not a decimal amount") from None


def refunded_centavos(refunds: list[JsonObject]) -> int:
    """What went back to the payer: the DEVOLVIDO devoluções, summed."""
    return sum(
        centavos(refund.get("valor"), "devolucoes[].valor") for refund in refunds if refund.get("status") == REFUND_DONE
    )


def refund_status(amount: int, refunds: list[JsonObject]) -> PaymentStatus:
    """The payment's status after its devoluções: what was returned against the Pix's amount."""
    returned = refunded_centavos(refunds)
    if returned <= 0:
        return S.PAID
    return S.REFUNDED if returned >= amount else S.PARTIALLY_REFUNDED


def _refunds(pix: JsonObject, where: str) -> list[JsonObject]:
    refunds = pix.get("devolucoes")
    if refunds is None:
        return []
    if isinstance(refunds, dict):  # the Banco Central's sample writes one devolução as an object
        refunds = [refunds]
    if not isinstance(refunds, list) or not all(isinstance(refund, dict) for refund in refunds):
        raise PayloadInvalid(f"field {where}.devolucoes must be a list of objects")
    return refunds


class EfiDriver(SchemeVerified):
    name: str = "efi"
    authentication = AUTHENTICATION
    replay_headers: tuple[str, ...] = ()  # nothing signs the body: a stored event is re-verified by neither proof
    replay_query: tuple[str, ...] = ()  # `hmac` is the secret itself

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        certificate = request.client_certificate
        if certificate is not None:
            if not issued_by_efi(certificate.issuer_dn):
                raise SignatureInvalid("client certificate not issued by Efí's webhook CA")
            return
        super().verify(request, secrets, now=now, tolerance_seconds=tolerance_seconds)

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        events = self.parse_many(request)
        if len(events) != 1:
            raise PayloadInvalid(f"delivery holds {len(events)} events: parse_many reads them")
        return events[0]

    def parse_many(self, request: WebhookRequest) -> tuple[NormalizedEvent, ...]:
        body = load_json_object(request.body, parse_float=Decimal)
        entries = body.get("pix")
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            raise PayloadInvalid("field pix must be a non-empty list of objects")
        events: list[NormalizedEvent] = []
        for index, pix in enumerate(entries):
            events.extend(self._events(pix, f"pix[{index}]"))
        return tuple(events)

    def _events(self, pix: JsonObject, where: str) -> list[NormalizedEvent]:
        e2e_id = require_str(pix, "endToEndId", f"{where}.endToEndId")
        amount = centavos(pix.get("valor"), f"{where}.valor")
        received_at = iso_to_utc(require_str(pix, "horario", f"{where}.horario"), f"{where}.horario")
        events = [
            NormalizedEvent(
                event_id=e2e_id,
                event_type=PIX_EVENT,
                resource_id=e2e_id,
                occurred_at=received_at,
                provider_status=S.PAID.value,
                amount=amount,
                currency=CURRENCY,
            )
        ]
        refunds = _refunds(pix, where)
        status_after = refund_status(amount, refunds)
        for position, refund in enumerate(refunds):
            at = f"{where}.devolucoes[{position}]"
            refund_id = require_str(refund, "id", f"{at}.id")
            status = require_str(refund, "status", f"{at}.status")
            times = get_object(refund, "horario", f"{at}.horario", required=False) or {}
            when = times.get("liquidacao") or times.get("solicitacao")
            occurred_at = iso_to_utc(when, f"{at}.horario") if isinstance(when, str) else received_at
            events.append(
                NormalizedEvent(
                    event_id=derive_event_id(e2e_id, f"{REFUND_EVENT}:{refund_id}", status, ""),
                    event_type=REFUND_EVENT,
                    resource_id=e2e_id,
                    occurred_at=occurred_at,
                    provider_status=(status_after if status == REFUND_DONE else S.PAID).value,
                    amount=amount,
                    currency=CURRENCY,
                )
            )
        return events


driver: MultiEventDriver = EfiDriver()
