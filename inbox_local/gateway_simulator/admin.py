"""The admin API (JSON), for a driver in another process (`inbox simulate`, `inbox send`). Never faulted.

- `POST /_sim/payments {"provider" (or "source": an account), "amount", "currency"?, "status"?, "resource_id"?}`
  -> `{"id", "status",
  "webhooks"}`: a new payment (in the provider's default currency unless given; with a generated id in the
  provider's format unless `resource_id` names one), taken through the gateway steps to `status` (default:
  pending, just created); `webhooks` are the creation ones and those of each step, in order. 409 when the gateway
  cannot reach that status.
- `POST /_sim/payments/{provider}/{id}/transition {"status", "refund_amount"?, "at"?}` -> `{"webhooks"}`
  (409 for a step the gateway cannot take, 404 for an unknown payment).
- `POST /_sim/payments/known`: every payment answers its fetches from now on, whatever `unknown_fetches` it was
  created with -> `{"revealed"}`.
- `GET /_sim/payments` (every payment's truth); `GET|POST /_sim/faults` (read / change the fault knobs; POST
  takes any subset); `GET /_sim/stats` (requests served and faults injected); `GET /_sim/stats/providers` (the
  faults injected per provider and kind: `{"stripe": {"error": 2, "unknown": 1}, ...}`).

Each webhook is `{"event_type", "body" (the exact UTF-8 text), "occurred_at" (epoch s)}`.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from inbox_local.gateway_simulator.model import Webhook
from inbox_local.gateway_simulator.shape import Answer
from shared.payments.status import PaymentStatus

if TYPE_CHECKING:
    from inbox_local.gateway_simulator.core import GatewaySimulator


def admin_route(simulator: GatewaySimulator, method: str, path: list[str], body: bytes) -> Answer:
    if path == ["payments", "known"] and method == "POST":
        return 200, {}, {"revealed": simulator.make_all_known()}
    if path == ["payments"] and method == "GET":
        return 200, {}, simulator.payments()
    if path == ["payments"] and method == "POST":
        return _create(simulator, body)
    if len(path) == 4 and path[0] == "payments" and path[3] == "transition" and method == "POST":
        return _transition(simulator, path[1], path[2], body)
    if path == ["stats"] and method == "GET":
        return 200, {}, simulator.stats()
    if path == ["stats", "providers"] and method == "GET":
        return 200, {}, simulator.faults_by_provider()
    if path == ["faults"] and method == "GET":
        return 200, {}, asdict(simulator.faults)
    if path == ["faults"] and method == "POST":
        try:
            return 200, {}, asdict(simulator.set_faults(**_json_object(body)))
        except ValueError as error:
            return 400, {}, {"error": str(error)}
    return 404, {}, {"error": "no such admin route"}


def _create(simulator: GatewaySimulator, body: bytes) -> Answer:
    try:
        document = _json_object(body)
        # An account (a source's name) or a provider's id (its default account).
        provider, currency = document.get("source") or document.get("provider"), document.get("currency")
        status, resource_id = document.get("status", "pending"), document.get("resource_id")
        amount = _optional_int(document, "amount")
        if not isinstance(provider, str) or amount is None:
            raise ValueError("provider (string) and amount (integer) are required")
        if not isinstance(currency, str | None) or not isinstance(resource_id, str | None):
            raise ValueError("currency and resource_id must be strings")
        if not isinstance(status, str):
            raise ValueError("status must be a string")
        target = PaymentStatus(status)
        simulator.check_reachable(provider, target, resource_id)
        resource_id = simulator.create_payment(provider, amount, currency, resource_id=resource_id)
    except ValueError as error:
        return 400, {}, {"error": str(error)}
    webhooks = simulator.creation_webhooks(provider, resource_id)
    try:
        webhooks += simulator.advance_to(provider, resource_id, target)
    except ValueError as error:
        return 409, {}, {"error": str(error)}
    return 200, {}, {"id": resource_id, "status": str(target), "webhooks": webhooks_json(webhooks)}


def _transition(simulator: GatewaySimulator, provider: str, resource_id: str, body: bytes) -> Answer:
    try:
        document = _json_object(body)
        status = document.get("status")
        if not isinstance(status, str):
            raise ValueError("status (string) is required")
        target = PaymentStatus(status)
        refund_amount, at = _optional_int(document, "refund_amount"), _optional_int(document, "at")
    except ValueError as error:
        return 400, {}, {"error": str(error)}
    try:
        webhooks = simulator.transition(provider, resource_id, target, refund_amount=refund_amount, at=at)
    except KeyError as error:
        return 404, {}, {"error": str(error.args[0]) if error.args else "no such payment"}
    except ValueError as error:  # a step the gateway cannot take
        return 409, {}, {"error": str(error)}
    return 200, {}, {"webhooks": webhooks_json(webhooks)}


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        document = json.loads(body.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):  # JSONDecodeError is a ValueError
        raise ValueError("the body must be JSON") from None
    if not isinstance(document, dict):
        raise ValueError("the body must be a JSON object")
    return document


def _optional_int(document: dict[str, Any], key: str) -> int | None:
    value = document.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be an integer")
    return value


def webhooks_json(webhooks: list[Webhook]) -> list[dict[str, Any]]:
    """Webhooks for another process: the body as the exact UTF-8 text the gateway sends."""
    return [
        {"event_type": w.event_type, "body": w.body.decode("utf-8"), "occurred_at": w.occurred_at} for w in webhooks
    ]
