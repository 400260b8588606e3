"""The doctor on a recorded rejection (`inbox doctor --rejected ID`): the delivery as the rejected-delivery log
kept it (docs/operations.md, "Rejected deliveries"), verified as of when it was received.

What the log keeps limits what can be said:
- a secret-bearing header (a static token) is kept only as a keyed fingerprint `{"fingerprint": "<hex>"}`: the
  candidate tokens are fingerprinted with the same key and compared (in constant time), so "this is the
  previous token" can still be said without any token being stored;
- a body over 64 KB is truncated, and personal-data fields may be redacted: such a body cannot be re-verified
  byte for byte, so only what the headers alone show is diagnosed (missing or malformed header, another
  provider's headers, a stale timestamp), and the answer says why no more.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from inbox_cli.doctor.candidates import SecretCandidate, prefix_variants
from inbox_cli.doctor.diagnose import Case, Diagnosis, diagnose, display_name
from inbox_cli.doctor.profiles import SchemeProfile, profiles_for, scheme_of
from shared.providers._signing import constant_time_equals
from shared.providers.base import ProviderDriver, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver

Fingerprint = Callable[[str], str]  # a candidate secret -> its keyed fingerprint (hex), as the log computes it


class RecordedDelivery(Protocol):
    """The fields of a rejected-delivery record the doctor reads (inbox_cli.rejected.RejectedDelivery has them;
    `body_redacted` and `body_sha256` are read when present)."""

    @property
    def source(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def received_at(self) -> str: ...  # ISO-8601 UTC
    @property
    def headers(self) -> Mapping[str, Any]: ...  # name -> value, or {"fingerprint": hex} for a secret-bearing one
    @property
    def query(self) -> Mapping[str, Any]: ...
    @property
    def body(self) -> bytes: ...
    @property
    def body_truncated(self) -> bool: ...


@dataclass(frozen=True)
class SourceSetup:
    """What the doctor verifies a source's deliveries with (inbox_cli/doctor/command.py builds it)."""

    source: str
    provider: str
    secrets: SigningSecrets
    tolerance_seconds: int
    alternatives: Callable[[], Sequence[SecretCandidate]] = lambda: ()
    secret_label: str = "the source's configured secret"  # noqa: S105 - a label, not a secret
    sources_by_provider: dict[str, list[str]] = field(default_factory=dict)
    fingerprint: Fingerprint | None = None  # None: the deployment's fingerprint key is not available here
    driver: ProviderDriver | None = None  # None: the registry's (tests hand one with their own keys)

    def provider_driver(self) -> ProviderDriver:
        return self.driver if self.driver is not None else get_driver(self.provider)


def _fingerprinted(value: Any) -> str | None:
    if isinstance(value, Mapping) and isinstance(value.get("fingerprint"), str):
        return str(value["fingerprint"])
    return None


def _received_epoch(received_at: str) -> float:
    return datetime.fromisoformat(received_at.replace("Z", "+00:00")).timestamp()


def doctor_for_rejected(record: RecordedDelivery, setup: SourceSetup) -> Diagnosis:
    """The diagnosis of a recorded rejection, as of when it was received."""
    headers = {k.lower(): str(v) for k, v in record.headers.items() if _fingerprinted(v) is None}
    query = {k: str(v) for k, v in record.query.items() if _fingerprinted(v) is None}
    secret_carriers = {
        **{k.lower(): fp for k, v in record.headers.items() if (fp := _fingerprinted(v)) is not None},
        **{f"?{k}": fp for k, v in record.query.items() if (fp := _fingerprinted(v)) is not None},
    }
    request = WebhookRequest(body=record.body, headers=headers, query=query, path=f"/webhooks/{record.source}")
    driver = setup.provider_driver()
    scheme = scheme_of(profiles_for(setup.provider, driver), request)
    now = _received_epoch(record.received_at)

    if scheme.kind == "token" and secret_carriers:
        return _token_by_fingerprint(setup, scheme, secret_carriers)

    redacted = bool(getattr(record, "body_redacted", False))
    digest = getattr(record, "body_sha256", None)
    altered = isinstance(digest, str) and digest != hashlib.sha256(record.body).hexdigest()
    notes = [
        *(["truncated to the log's 64 KB"] if record.body_truncated else []),
        *(["redacted of personal-data fields"] if redacted else []),
        *(["not the bytes received (its sha256 differs)"] if altered and not record.body_truncated else []),
    ]
    case = Case(
        source=setup.source,
        provider=setup.provider,
        driver=driver,
        request=request,
        secrets=setup.secrets,
        now=now,
        tolerance_seconds=setup.tolerance_seconds,
        alternatives=setup.alternatives,
        secret_label=setup.secret_label,
        byte_exact=not notes,
        body_note=" and ".join(notes),
        sources_by_provider=setup.sources_by_provider,
    )
    return diagnose(case)


def _token_by_fingerprint(setup: SourceSetup, scheme: SchemeProfile, carriers: dict[str, str]) -> Diagnosis:
    """Which known token the recorded fingerprint is of: the current one, the previous one, another source's..."""
    where = ", ".join(sorted(carriers))
    if setup.fingerprint is None:
        return Diagnosis(
            "unexplained",
            f"The {where} token was recorded as a keyed fingerprint and the deployment's fingerprint key is not "
            "available here, so it cannot be compared with the source's tokens.",
        )
    fingerprint = setup.fingerprint
    used = [
        SecretCandidate("current", setup.secrets.current),
        *([SecretCandidate("previous", setup.secrets.previous)] if setup.secrets.previous else []),
    ]
    others = [c for c in setup.alternatives() if c.value not in setup.secrets.candidates()]
    candidates = [*used, *others, *prefix_variants([*used, *others], scheme.secret_prefix)]
    recorded = list(carriers.values())
    for candidate in candidates:
        words = (word.strip().title() for word in scheme.authorization_schemes)
        spellings = [candidate.value, *(f"{word} {candidate.value}" for word in words)]
        matched = False
        for spelling in spellings:  # every spelling compared, in constant time, no early exit
            for value in recorded:
                matched |= constant_time_equals(fingerprint(spelling), value)
        if not matched:
            continue
        if candidate.label == "current":
            return Diagnosis(
                "valid",
                f"The {where} token is the source's current one: the delivery was refused for another reason "
                "(see the record's reason).",
            )
        if candidate.label == "previous":
            return Diagnosis(
                "wrong_secret",
                f"The {where} token is the source's previous one: update the token configured in the "
                f"{display_name(setup.provider)} dashboard to the current one.",
            )
        return Diagnosis(
            "wrong_secret",
            f"The {where} token is {candidate.label}, not the one of source {setup.source!r}: configure the right "
            "token on one side or the other.",
        )
    return Diagnosis(
        "unexplained",
        f"The {where} token is none of the tokens the doctor knows (current, previous, other sources', test mode): "
        f"someone posted with a token that was never configured here, or the {display_name(setup.provider)} dashboard "
        "holds a token this deployment does not.",
    )
