"""Mercado Pago: `x-signature: ts=<ts>,v1=<hex>` + `x-request-id`, HMAC-SHA256 hex of a manifest, not of the body.

Signing, per Mercado Pago's "Validate notification origin" guide and its official Python SDK
(`mercadopago.webhook.WebhookSignatureValidator`, mercadopago >= 3.6):
- the manifest is `id:{data.id};request-id:{x-request-id};ts:{ts};` where `data.id` is the `data.id` QUERY
  parameter of the notification URL (Mercado Pago appends `?data.id=...&type=...`), `x-request-id` the header and
  `ts` the timestamp from `x-signature`, verbatim. A part whose value is absent is left out of the manifest;
- the key is the application's secret signature as UTF-8; the signature is the lower-case hex digest;
- `data.id`: the guide (and providers.md) say an alphanumeric id is signed lower-cased; the SDK signs it "exactly as
  received". Both spellings are tried (numeric payment ids are the same either way);
- the ingest keeps `data.id` and `type` of the query with the event (`replay_query`), so a stored event
  re-verifies as received; when a URL carries no `data.id`, the body's `data.id` is used, and the manifest
  without `id:` is tried too, as the guide's omission rule says;
- the body itself is NOT signed. So the signed `data.id` is the resource: a body whose `data.id` differs from the
  signed one is refused as a forgery;
- several `v1` values (a rotation) are all tried; `vN` other than `v1` are ignored.
- Timestamp: the guide calls `ts` milliseconds while its own example (`ts=1704908010`) and the SDK's tolerance
  arithmetic are seconds, and no tolerance is documented. None is enforced (`signs_timestamp = False`): a refused
  genuine delivery would be worse than a replayed one, and replays are harmless here because every notification
  only makes the processor refetch the payment (deduplicated, and the API is the truth).

Dedup: from what the manifest signs, never from the body (the `signed_fields` trust class): the key is `s_` + the
SHA-256 of the URL's `data.id` and `x-request-id` (`ts` instead when there is no `x-request-id`;
`signed_event_id`). The body's `id` ("Notification ID") is not signed: a captured notification posted again with
other body ids is the same event (a duplicate), not a new refetch each. Whether Mercado Pago keeps `x-request-id`
across its retries is not documented (the local sender keeps it); if a retry carries a new one it is stored once
more and its refetch changes nothing (`ignored`).

Time: `date_created` (the RESOURCE's creation date) is not signed: the ingest caps it at the receipt plus the
tolerance (shared/ingest.py, `trusted_events`), and the refetch, not the time, decides the payment.

Event type: `action` (`payment.created`, `payment.updated`), else `type`. The payment is `data.id` for `type`
`payment`; other types (merchant_order, chargebacks, subscription_*...) are stored with no resource. The webhook
states no status or amount: the processor refetches `GET /v1/payments/{id}` (`shared.providers.mercadopago.client`).
Deliveries are retried (5 attempts over about 4 days) until answered 200/201 within 22 s.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

from shared.providers._signing import (
    JsonObject,
    get_id,
    get_object,
    get_str,
    iso_to_utc,
    load_json_object,
    require_header,
    require_match,
    require_str,
    signature_list,
    usable_secrets,
)
from shared.providers.base import (
    DriverDefaults,
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
)

SIGNATURE_HEADER = "x-signature"
REQUEST_ID_HEADER = "x-request-id"
DATA_ID_QUERY = "data.id"
TYPE_QUERY = "type"
SCHEME = "v1"
PAYMENT_TYPE = "payment"
_MAX_TS_DIGITS = 16


def manifest(data_id: str | None, request_id: str | None, ts: str) -> str:
    """`id:{data_id};request-id:{request_id};ts:{ts};`, leaving out the parts that are absent."""
    parts = []
    if data_id:
        parts.append(f"id:{data_id}")
    if request_id:
        parts.append(f"request-id:{request_id}")
    parts.append(f"ts:{ts}")
    return ";".join(parts) + ";"


def compute_signature(data_id: str | None, request_id: str | None, ts: str, secret: str) -> str:
    """The hex `v1` signature Mercado Pago computes for the manifest with `secret`."""
    message = manifest(data_id, request_id, ts).encode("utf-8")
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def _parse_signature_header(value: str) -> tuple[str, list[str]]:
    """`ts=...,v1=...` -> (ts as sent, v1 signatures). Unknown items are ignored."""
    ts, signatures = signature_list(
        value, separator=",", timestamp_key="ts", scheme=SCHEME, strip_values=True, fold_keys=True
    )
    if not ts or len(ts) > _MAX_TS_DIGITS or not (ts.isascii() and ts.isdigit()):
        raise SignatureInvalid("malformed header")
    return ts, signatures


def body_data_id(body: bytes) -> str | None:
    """`data.id` of the body, if the body is a JSON object that has one; None otherwise (verify never fails on it)."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    data = payload.get("data") if isinstance(payload, dict) else None
    value: Any = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and value else None


def data_id_spellings(data_id: str) -> list[str]:
    lowered = data_id.lower()
    return [data_id] if lowered == data_id or not data_id.isalnum() else [data_id, lowered]


def signed_event_id(request: WebhookRequest) -> str:
    """The event's key from parts the manifest signs: the URL's `data.id` and `x-request-id` (Mercado Pago's id of
    the notification request), or, without an `x-request-id`, the `ts` of `x-signature`. Not the body's `data.id`:
    without one in the URL, a manifest signed without `id:` verifies whatever the body says. Not `ts` beside an
    `x-request-id`: a retry that keeps its request id but is signed at another time is the same notification."""
    request_id = (request.header(REQUEST_ID_HEADER) or "").strip() or None
    ts: str | None = None
    if request_id is None:
        header = request.header(SIGNATURE_HEADER)
        if not header:
            raise PayloadInvalid("missing x-signature header")
        try:
            ts, _ = _parse_signature_header(header)
        except SignatureInvalid:
            raise PayloadInvalid("malformed x-signature header") from None
    signed_id = (request.query.get(DATA_ID_QUERY) or "").strip() or None
    parts = [f"id:{signed_id.lower()}" if signed_id else "", f"request-id:{request_id or ''}", f"ts:{ts or ''}"]
    return "s_" + hashlib.sha256(";".join(parts).encode("utf-8")).hexdigest()[:40]


class MercadoPagoDriver(DriverDefaults):
    name: str = "mercadopago"
    replay_headers: tuple[str, ...] = (SIGNATURE_HEADER, REQUEST_ID_HEADER)
    # The signed data.id travels in the URL: kept with the event so that it re-verifies exactly as received.
    replay_query: tuple[str, ...] = (DATA_ID_QUERY, TYPE_QUERY)

    def verify(self, request: WebhookRequest, secrets: SigningSecrets, *, now: float, tolerance_seconds: int) -> None:
        candidates = usable_secrets(secrets, self.name)
        ts, signatures = _parse_signature_header(require_header(request, SIGNATURE_HEADER, SIGNATURE_HEADER))
        if not signatures:
            raise SignatureInvalid("no v1 signature in header")
        request_id = (request.header(REQUEST_ID_HEADER) or "").strip() or None

        signed_id = (request.query.get(DATA_ID_QUERY) or "").strip() or None
        body_id = body_data_id(request.body)
        ids: list[str | None]
        if signed_id is not None:
            ids = list(data_id_spellings(signed_id))
        else:
            ids = [*(data_id_spellings(body_id) if body_id else []), None]

        require_match([compute_signature(i, request_id, ts, s) for i in ids for s in candidates], signatures)
        if signed_id is not None and body_id is not None and body_id.lower() != signed_id.lower():
            raise SignatureInvalid("data.id in the body differs from the signed one")

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body)
        notification_type = get_str(body, "type", "type") or (request.query.get(TYPE_QUERY) or None)
        action = get_str(body, "action", "action")
        event_type = action or notification_type
        if not event_type:
            raise PayloadInvalid("missing field type")
        data = get_object(body, "data", "data", required=False) or {}
        data_id = get_id(data, "id", "data.id") or (request.query.get(DATA_ID_QUERY) or None)

        is_payment = notification_type == PAYMENT_TYPE or event_type.startswith(f"{PAYMENT_TYPE}.")
        resource_id = data_id if is_payment else None
        if is_payment and not resource_id:
            raise PayloadInvalid("missing field data.id")
        occurred_at = self._occurred_at(body)
        return NormalizedEvent(
            event_id=signed_event_id(request),
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=occurred_at,
        )

    @staticmethod
    def _occurred_at(body: JsonObject) -> datetime:
        return iso_to_utc(require_str(body, "date_created", "date_created"), "date_created")


driver: ProviderDriver = MercadoPagoDriver()
