"""Zoop (Brazil, marketplaces): webhooks of marketplace events, a refetch-verified provider.

Zoop documents its webhooks (docs.zoop.co, "Sobre os Webhooks": registered per marketplace and event type, through
the API or the Dashboard) and no signature over them: nothing found in its documentation or in the SDKs we read
proves a body came from Zoop. So Zoop is declared `trust="none"`: a notification is a hint that a
transaction changed, the processor reads the transaction back (`GET /v1/marketplaces/{marketplace}/transactions/
{id}`, shared/providers/zoop/client.py), and the ingest keeps no state from the body (shared/ingest.py).

Authentication (inferred): a webhook registration carries an `authorization` value (the field is in Zoop's webhook
resource, as an unofficial SDK models it), which we take to be sent as the `Authorization` header; the merchant
sets it to the source's signing secret (a scheme word such as `Basic ` is allowed in front). A proxy or gateway
that can add a header may send `X-Inbox-Secret` instead. Either is compared in constant time with the current and
the previous secret, and never stored.

Body (inferred from the SDKs' event model: docs.zoop.co "Corpo de um evento"): `{"id", "type", "payload":
{"object": {"id", "resource": "transaction", "status", ...}}}`. Only `type` and the object's `id` are read; the
status and amount in the body are ignored (the refetch decides). Event types `transaction.*` are routed to the
refetch; the others (seller.*, invoice.*, subscription.*...) are stored and end ignored.
"""

from __future__ import annotations

from shared.providers._refetch_verified import SECRET_HEADER, RefetchVerifiedDriver, resource_id_of
from shared.providers._schemes import TokenScheme
from shared.providers._signing import get_object, load_json_object, require_str
from shared.providers.base import (
    NormalizedEvent,
    ProviderDriver,
    WebhookRequest,
    derive_event_id,
)

AUTHENTICATION = TokenScheme(
    headers=("authorization", SECRET_HEADER),
    authorization_schemes=("basic ", "bearer "),
    called="header secret",
    described_as="Authorization or X-Inbox-Secret header",
)
TRANSACTION_PREFIX = "transaction."
_MAX_TYPE_LENGTH = 100


class ZoopDriver(RefetchVerifiedDriver):
    name: str = "zoop"
    authentication = AUTHENTICATION

    def parse(self, request: WebhookRequest) -> NormalizedEvent:
        body = load_json_object(request.body)
        event_type = require_str(body, "type", "type")[:_MAX_TYPE_LENGTH]
        payload = get_object(body, "payload", "payload", required=False) or {}
        obj = get_object(payload, "object", "payload.object", required=False) or {}
        is_transaction = event_type.startswith(TRANSACTION_PREFIX)
        resource_id = resource_id_of(obj.get("id"), "payload.object.id") if is_transaction else None
        return NormalizedEvent(
            # The hint's own identity; the ingest stores the delivery under a key of its own (refetch-verified).
            event_id=derive_event_id(resource_id or "", event_type, "", str(body.get("id") or "")[:64]),
            event_type=event_type,
            resource_id=resource_id,
            occurred_at=self.received_at(),  # a time in an unsigned body proves nothing
        )


driver: ProviderDriver = ZoopDriver()
