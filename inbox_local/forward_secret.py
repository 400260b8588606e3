"""The forwarding secret on the operator's machine: `INBOX_FORWARD_SECRET` (and `INBOX_FORWARD_SECRET_PREVIOUS`
during a rotation), read from the environment here and nowhere in what ships to AWS.

The local stack started with `INBOX_FORWARD_URL` checks the pair at start (a URL without a secret, or a secret that
is not `whsec_<base64>`, stops it with the reason) and stores it in its embedded Secrets Manager as the deployed
stack holds its forwarding secret, `{"current": ..., "previous": ...}` under `LocalNames.forward_secret_name`, then
points `INBOX_FORWARD_SECRET_NAME` at it: the local publisher's forwarder comes from the forwarder Lambda's own root
(shared/forwarding.py `build_forwarder`), which reads the pair from there as it does in AWS. `inbox outbox resend`
against the local stack signs with the same variables (against a deployed stack: the stack's secret).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from inbox_local.dev_secrets import put_signing_secrets
from shared.definitions import ENV_FORWARD_URL
from shared.providers.standard.driver import decode_secret

# Variable names, not secrets: the current secret (whsec_<base64>), and the previous one during a rotation (both sign).
ENV_FORWARD_SECRET: Final = "INBOX_FORWARD_SECRET"  # noqa: S105
ENV_FORWARD_SECRET_PREVIOUS: Final = "INBOX_FORWARD_SECRET_PREVIOUS"  # noqa: S105


@dataclass(frozen=True, slots=True)
class LocalForwarding:
    """Where the local stack forwards, and the Standard Webhooks pair it signs with (current first)."""

    url: str
    current: str
    previous: str | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.current, self.previous) if self.previous else (self.current,)


def local_forwarding(environ: Mapping[str, str] | None = None, *, url: str | None = None) -> LocalForwarding | None:
    """INBOX_FORWARD_URL (or `url`) and its pair from the environment; None when no URL is given. ValueError, naming
    the variable and never its value, when the URL has no secret or a secret is not `whsec_<base64>`."""
    env = os.environ if environ is None else environ
    url = (url if url is not None else env.get(ENV_FORWARD_URL, "")).strip()
    if not url:
        return None
    current = env.get(ENV_FORWARD_SECRET, "").strip()
    if not current:
        raise ValueError(f"{ENV_FORWARD_URL} is set but {ENV_FORWARD_SECRET} (whsec_<base64>) is not")
    previous = env.get(ENV_FORWARD_SECRET_PREVIOUS, "").strip() or None
    for variable, secret in ((ENV_FORWARD_SECRET, current), (ENV_FORWARD_SECRET_PREVIOUS, previous)):
        if secret is None:
            continue
        try:
            decode_secret(secret)  # at start, not at the first delivery
        except ValueError:
            raise ValueError(f"{variable} is not a Standard Webhooks secret (expected whsec_<base64>)") from None
    return LocalForwarding(url, current, previous)


def store_forwarding_secret(secretsmanager: Any, name: str, forwarding: LocalForwarding) -> None:
    """The pair into Secrets Manager's secret `name`, `{"current": ..., "previous": ...}` (created, or given the new
    value), where the forwarder's root reads it."""
    put_signing_secrets(secretsmanager, name, forwarding.current, forwarding.previous)
