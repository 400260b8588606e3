"""Forwarding published events to the customer's HTTP endpoint, signed with Standard Webhooks.

Per https://www.standardwebhooks.com: headers `webhook-id` (the event's `id`: the same on every retry, so the
receiver's dedup key), `webhook-timestamp` (epoch seconds of this attempt), `webhook-signature` = space-separated
`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per secret: during a rotation both the current and
the previous secret sign, so a receiver holding either verifies. The signing function is the one the `standard`
provider driver verifies with (`shared.providers.standard.compute_signature`), not a copy.

Delivery is at least once: a 2xx is success; anything else (or a network error) is retried with exponential
backoff. The caller decides what a delivery that keeps failing blocks (the local publisher: everything after it).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.providers.standard import SCHEME, compute_signature, decode_secret

ENV_FORWARD_URL = "INBOX_FORWARD_URL"  # equal to infra.definitions.ENV_FORWARD_* (a test compares)
ENV_FORWARD_SECRET = "INBOX_FORWARD_SECRET"  # noqa: S105 - a variable name
ENV_FORWARD_SECRET_PREVIOUS = "INBOX_FORWARD_SECRET_PREVIOUS"  # noqa: S105 - a variable name


class DeliveryFailed(Exception):
    """The endpoint did not accept the event within the attempts allowed: deliver it again later."""


def event_body(event: Mapping[str, Any]) -> bytes:
    """The exact bytes sent and signed: compact JSON, keys sorted (the same event always gives the same body)."""
    return json.dumps(dict(event), sort_keys=True, separators=(",", ":"), default=str).encode()


def signature_headers(
    msg_id: str, body: bytes, secrets: tuple[str, ...], *, timestamp: int | None = None
) -> dict[str, str]:
    """The three Standard Webhooks headers for `body`, one `v1` signature per secret (current first)."""
    if not secrets:
        raise ValueError("no forwarding secret configured")
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signatures = " ".join(
        f"{SCHEME},{compute_signature(msg_id, stamp, body, decode_secret(secret))}" for secret in secrets
    )
    return {"webhook-id": msg_id, "webhook-timestamp": stamp, "webhook-signature": signatures}


def backoff(attempt: int, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt N (1-based): base * 2^(N-1), capped."""
    return float(min(cap, base * (2 ** (attempt - 1))))


@dataclass
class Forwarder:
    url: str
    secrets: tuple[str, ...]  # current first; the previous one too during a rotation
    timeout_seconds: float = 10.0
    max_attempts: int = 5  # per call of `deliver`; the caller calls again later
    base_delay_seconds: float = 0.5
    max_delay_seconds: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    attempts: int = field(default=0, init=False)  # HTTP attempts made, for tests and the console

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Forwarder | None:
        """None when no URL is configured. A URL without a secret is a configuration error."""
        env = os.environ if environ is None else environ
        url = env.get(ENV_FORWARD_URL, "").strip()
        if not url:
            return None
        current = env.get(ENV_FORWARD_SECRET, "").strip()
        if not current:
            raise ValueError(f"{ENV_FORWARD_URL} is set but {ENV_FORWARD_SECRET} (whsec_<base64>) is not")
        previous = env.get(ENV_FORWARD_SECRET_PREVIOUS, "").strip()
        secrets = (current, previous) if previous else (current,)
        for secret in secrets:
            decode_secret(secret)  # fail at start-up, not at the first delivery
        return cls(url=url, secrets=secrets)

    def post_once(self, event: Mapping[str, Any]) -> int:
        """One signed POST; returns the HTTP status (0 for a network error)."""
        body = event_body(event)
        headers = signature_headers(str(event["id"]), body, self.secrets)
        request = urllib.request.Request(  # noqa: S310 - the operator's configured URL
            self.url, data=body, method="POST", headers={"content-type": "application/json", **headers}
        )
        self.attempts += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:  # noqa: S310
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except (urllib.error.URLError, OSError):
            return 0

    def deliver(self, event: Mapping[str, Any]) -> None:
        """POST until a 2xx, backing off exponentially; DeliveryFailed after `max_attempts`."""
        status = 0
        for attempt in range(1, self.max_attempts + 1):
            status = self.post_once(event)
            if 200 <= status < 300:
                return
            if attempt < self.max_attempts:
                self.sleep(backoff(attempt, self.base_delay_seconds, self.max_delay_seconds))
        raise DeliveryFailed(f"{event.get('id')}: no 2xx after {self.max_attempts} attempts (last status {status})")
