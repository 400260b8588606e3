"""Efí Pix: a delivery as Efí sends it in skip-mTLS mode (the registered `hmac` in the query), and sample Pix
callbacks (shared/providers/efi/driver.py verifies and parses them). A mutual-TLS delivery carries no proof in the
request at all: the front door's verified client certificate is the proof (tests build that request directly)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from inbox_local.senders._samples import sample_values
from shared.providers.base import WebhookRequest
from shared.providers.efi.driver import HMAC_QUERY_PARAMETER, REFUND_DONE

# canonical status -> the share of the Pix returned by a devolução in the callback (None: no devolução)
_SAMPLES: dict[str, Decimal | None] = {
    "paid": None,
    "partially_refunded": Decimal("0.5"),
    "refunded": Decimal(1),
}
SAMPLE_STATUSES: tuple[str, ...] = tuple(_SAMPLES)


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _reais(centavos: int) -> str:
    return f"{Decimal(centavos) / 100:.2f}"


class EfiSender:
    sample_statuses: tuple[str, ...] = SAMPLE_STATUSES

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        """Skip-mTLS: the secret registered with the URL comes back as `?hmac=` (and the `ignorar=` that keeps
        Efí's appended `/pix` out of the path, as Efí's own examples register it). Nothing signs the body."""
        return WebhookRequest(
            body=body,
            headers={"content-type": "application/json"},
            query={HMAC_QUERY_PARAMETER: secret, "ignorar": ""},
        )

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A Pix callback about the Pix `resource_id` (its endToEndId) in the canonical `status`: the Pix, and for
        a refund a devolução (`event_id` names it) of half or all of it, DEVOLVIDO."""
        share = sample_values(_SAMPLES, status, gateway="Efí")
        pix: dict[str, object] = {
            "endToEndId": resource_id,
            "txid": f"tx{resource_id[-24:]}".lower(),
            "chave": "contato@example.com",
            "valor": _reais(amount),
            "horario": _iso(occurred_at - (60 if share is not None else 0)),
            "infoPagador": "Pedido de exemplo",
        }
        if share is not None:
            pix["devolucoes"] = [
                {
                    "id": event_id,
                    "rtrId": f"D{resource_id[1:]}"[:32],
                    "valor": _reais(int(amount * share)),
                    "horario": {"solicitacao": _iso(occurred_at - 5), "liquidacao": _iso(occurred_at)},
                    "status": REFUND_DONE,
                }
            ]
        return json.dumps({"pix": [pix]}).encode("utf-8")


sender = EfiSender()
