"""`generic`: deliveries signed the way a generic driver's configuration says, with bodies shaped by its paths."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from shared.payments.status import PaymentStatus
from shared.providers._signing import JsonObject
from shared.providers.base import WebhookRequest, utc_from_epoch
from shared.providers.generic.driver import BUILTIN, GenericHmacDriver


class GenericSender:
    """Signs for one `GenericHmacDriver` (its scheme row) and writes bodies at its configured paths."""

    sample_statuses: tuple[str, ...] = tuple(status.value for status in PaymentStatus)

    def __init__(self, driver: GenericHmacDriver) -> None:
        self.driver = driver

    def sign(self, body: bytes, secret: str, *, now: int, event_id: str | None = None) -> WebhookRequest:
        config = self.driver.usable_config()
        message_id = event_id or "msg_" + hashlib.sha256(body).hexdigest()[:24]
        timestamp = str(now) if config.timestamp_header else ""
        signature = config.prefix + self.driver.compute_signature(
            body, secret, timestamp=timestamp, event_id=message_id if config.id_header else ""
        )
        headers = {"content-type": "application/json", config.signature_header.lower(): signature}
        if config.timestamp_header:
            headers[config.timestamp_header.lower()] = timestamp
        if config.id_header:
            headers[config.id_header.lower()] = message_id
        return WebhookRequest(body=body, headers=headers)

    def sample_body(self, *, event_id: str, resource_id: str, status: str, amount: int, occurred_at: int) -> bytes:
        """A body shaped by the configured paths: `payment.{status}` at `type_path`, the payment under the other
        paths. The event id is put at `id_path` unless the template signs the `id_header` (then it travels there)."""
        config = self.driver.usable_config()
        when = utc_from_epoch(occurred_at).isoformat().replace("+00:00", "Z")
        reverse_map = {canonical: sent for sent, canonical in config.status_map.items()}
        document: JsonObject = {}
        values: list[tuple[str | None, Any]] = [
            (config.type_path, f"payment.{status}"),
            (config.resource_path, resource_id),
            (config.status_path, reverse_map.get(status, status)),
            (config.amount_path, amount),
            (config.currency_path, "USD"),
            (config.occurred_at_path, when),
            (None if config.signs_id_header else config.id_path, event_id),
        ]
        for path, value in values:
            if path:
                _assign(document, path, value)
        return json.dumps(document).encode("utf-8")


def _assign(document: JsonObject, path: str, value: Any) -> None:
    parts = path.split(".")
    target = document
    for part in parts[:-1]:
        child = target.get(part)
        if not isinstance(child, dict):
            child = target[part] = {}
        target = child
    target[parts[-1]] = value


sender = GenericSender(BUILTIN)
