"""Why a delivery does not verify: verify it exactly as the ingest does, then try the usual mistakes one at a time,
each only where the delivery's scheme makes it possible (`SchemeProfile.applicable`).

Every attempt is the provider driver's own `verify` (shared/providers/) on a candidate delivery: nothing here
computes a MAC, so the doctor cannot disagree with the ingest. Attempts are made at the delivery's own timestamp
(when it has one), so a stale timestamp never hides the other mistakes; the skew is reported beside them.
The answers name secrets by their role ("the source's previous secret"), never by value, and hold no header
value: `Diagnosis` scrubs any known secret out of its detail as a last defence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from inbox_cli.doctor.candidates import SecretCandidate, body_variants, prefix_variants, respellings
from inbox_cli.doctor.profiles import SchemeProfile, profiles_for, scheme_of
from shared.definitions import PROVIDER_CATALOG, provider_entry
from shared.providers.base import ProviderDriver, SignatureInvalid, SigningSecrets, WebhookRequest


class DoctorError(Exception):
    """The doctor cannot verify at all (an unusable configured secret, keys not configured): not a diagnosis."""


@dataclass(frozen=True, slots=True)
class Diagnosis:
    diagnosis: str
    detail: str

    @property
    def valid(self) -> bool:
        return self.diagnosis == "valid"

    def document(self) -> dict[str, Any]:
        return {"valid": self.valid, "diagnosis": self.diagnosis, "detail": self.detail}

    def sentence(self) -> str:
        return f"{self.detail} [{self.diagnosis}]"


@dataclass(frozen=True)
class Case:
    """One delivery to diagnose, and what the ingest would verify it with."""

    source: str
    provider: str
    driver: ProviderDriver
    request: WebhookRequest
    secrets: SigningSecrets  # what the ingest verifies with (or what --secret says)
    now: float  # when it is (or was) received
    tolerance_seconds: int  # the source's signature tolerance
    # The other secrets worth trying (previous, other sources', test mode), computed only when needed.
    alternatives: Callable[[], Sequence[SecretCandidate]] = lambda: ()
    # What the answer calls the secret verified with: "the source's configured secret", "the secret given".
    secret_label: str = "the source's configured secret"  # noqa: S105 - a label, not a secret
    # False for a recorded body that was truncated or redacted: the MAC over it cannot be recomputed.
    byte_exact: bool = True
    body_note: str = ""  # why it is not byte-exact, for the answer
    # Sources by provider, to say where a delivery of another provider belongs.
    sources_by_provider: dict[str, list[str]] = field(default_factory=dict)


def _verify(case: Case, request: WebhookRequest, secrets: SigningSecrets, now: float) -> str | None:
    """None when the driver accepts `request`, else its reason. A candidate secret the scheme cannot use (not hex,
    not base64) is a failed attempt, not an error."""
    try:
        case.driver.verify(request, secrets, now=now, tolerance_seconds=case.tolerance_seconds)
    except SignatureInvalid as error:
        return str(error) or "signature invalid"
    except ValueError as error:
        return f"unusable secret ({error})"
    return None


def _reason_kind(reason: str) -> str | None:
    """missing_header / malformed_header when the verifier's reason says so (its messages are fixed strings)."""
    text = reason.lower()
    if text.startswith(("missing ", "request path unknown")):
        return "missing_header"
    if (
        "malformed" in text
        or (text.startswith("no ") and text.endswith(" in header"))
        or "without hmacsignature" in text
        or "not an adyen notification" in text
        or text == "no notification items"
    ):
        return "malformed_header"
    return None


def _foreign(case: Case, own: tuple[SchemeProfile, ...]) -> dict[str, list[str]]:
    """{other provider: its proof headers this delivery carries} — headers this source's own schemes do not use."""
    from shared.providers.registry import get_driver  # noqa: PLC0415 - the other drivers, only when asked

    mine = {name for profile in own for name in profile.proof_headers}
    found: dict[str, list[str]] = {}
    for entry in PROVIDER_CATALOG:
        if entry.id == case.provider:
            continue
        for profile in profiles_for(entry.id, get_driver(entry.id)):
            names = [n for n in profile.proof_headers if n not in mine and case.request.header(n) is not None]
            if names:
                found.setdefault(entry.id, []).extend(n for n in names if n not in found.get(entry.id, []))
    # A header two providers share (x-hub-signature: GitHub's legacy one, Pagar.me's) names the one whose other
    # headers are there too.
    return {
        provider: names
        for provider, names in found.items()
        if not any(set(names) < set(others) for other, others in found.items() if other != provider)
    }


def _wrong_provider(case: Case, foreign: dict[str, list[str]]) -> Diagnosis:
    theirs = " and ".join(f"{display_name(p)}'s headers ({', '.join(names)})" for p, names in foreign.items())
    targets = [f"/webhooks/{case.sources_by_provider[p][0]}" for p in foreign if case.sources_by_provider.get(p)]
    where = f"post it to {' or '.join(targets)}" if targets else "post it to the source of that provider"
    return Diagnosis(
        "wrong_provider",
        f"The delivery carries {theirs}, not {display_name(case.provider)}'s: {where}, or declare source "
        f"{case.source!r} with the provider that sends it.",
    )


def _catalog_ids() -> set[str]:
    return {entry.id for entry in PROVIDER_CATALOG}


def _skew_text(skew: int) -> str:
    return f"{abs(skew)} s {'old' if skew >= 0 else 'in the future'}"


def diagnose(case: Case) -> Diagnosis:
    """The diagnosis of one delivery (DoctorError when nothing can be verified at all)."""
    known = [*case.secrets.candidates()]
    result = _diagnose(case, known)
    return _scrubbed(result, known)


def _diagnose(case: Case, known: list[str]) -> Diagnosis:
    try:
        case.driver.verify(case.request, case.secrets, now=case.now, tolerance_seconds=case.tolerance_seconds)
    except ValueError as error:  # what the ingest answers 503 for: the configuration, not the delivery
        raise DoctorError(f"cannot verify for source {case.source!r}: {error}") from None
    except SignatureInvalid as error:
        reason = str(error)
    else:
        return _valid(case)

    profiles = profiles_for(case.provider, case.driver)
    scheme = scheme_of(profiles, case.request)
    foreign = _foreign(case, profiles)
    if foreign and not any(profile.carried_by(case.request) for profile in profiles):
        return _wrong_provider(case, foreign)

    timestamp = scheme.timestamp.read(case.request) if scheme.timestamp else None
    at = case.now if timestamp is None else float(timestamp)  # verify at the delivery's own time
    skew = 0 if timestamp is None else int(case.now) - timestamp
    limit = case.tolerance_seconds
    if scheme.timestamp is not None and scheme.timestamp.tolerance_seconds is not None:
        limit = scheme.timestamp.tolerance_seconds
    stale = timestamp is not None and abs(skew) > limit
    stale_note = f" (and its timestamp is {_skew_text(skew)}, beyond the {limit} s tolerance)" if stale else ""

    if stale and _verify(case, case.request, case.secrets, at) is None:
        return Diagnosis(
            "timestamp_out_of_tolerance",
            f"The signature is otherwise valid but the timestamp is {_skew_text(skew)}, beyond the {limit} s "
            "tolerance: deliver it promptly (a replay of an old capture is refused), check the sender's and this "
            "machine's clocks, or re-send it from the provider.",
        )

    if case.byte_exact:
        for attempt in _attempts(case, scheme, known):
            diagnosis, detail, request, secrets = attempt
            if _verify(case, request, secrets, at) is None:
                return Diagnosis(diagnosis, detail + stale_note + ".")

    kind = _reason_kind(reason)
    unreadable = scheme.unreadable(case.request)
    if kind is None and unreadable is not None:
        kind, reason = "malformed_header", unreadable
    if kind is not None:
        return Diagnosis(
            kind,
            f"The delivery is refused ({reason}): the {display_name(case.provider)} scheme expects "
            f"{scheme.expected}"
            + (" — pass every header of the delivery exactly as received." if kind == "missing_header" else "."),
        )
    if stale:
        return Diagnosis(
            "timestamp_out_of_tolerance",
            f"The timestamp is {_skew_text(skew)}, beyond the {limit} s tolerance, and the signature does not match "
            "either: the delivery was altered, or is signed with a secret the doctor does not know.",
        )
    if foreign:
        return _wrong_provider(case, foreign)
    if not case.byte_exact:
        return Diagnosis(
            "unexplained",
            f"The recorded body was {case.body_note}, so the signature cannot be re-verified byte for byte; the "
            f"headers are well-formed ({reason}): fetch the delivery again from the provider to diagnose it.",
        )
    return Diagnosis(
        "unexplained",
        f"No usual mistake explains it ({reason}): the body was changed after it was signed, or it is signed with a "
        f"secret the doctor does not know — check that {case.secret_label} is the one of this endpoint in the "
        f"{display_name(case.provider)} dashboard.",
    )


def display_name(provider: str) -> str:
    """The provider's name as people write it ("Stripe"); a provider outside the catalog by its id."""
    return provider_entry(provider).facts.display_name if provider in _catalog_ids() else provider


def _valid(case: Case) -> Diagnosis:
    if case.secrets.previous and _verify(case, case.request, SigningSecrets(case.secrets.current), case.now):
        return Diagnosis(
            "valid",
            "The delivery verifies, with the source's previous secret: the sender still signs with it, so keep it "
            "until the sender has switched to the current one.",
        )
    return Diagnosis("valid", f"The delivery verifies with {case.secret_label}: the ingest would accept it.")


Attempt = tuple[str, str, WebhookRequest, SigningSecrets]


def _attempts(case: Case, scheme: SchemeProfile, known: list[str]) -> Iterator[Attempt]:
    """The candidate deliveries, cheapest and likeliest first: respellings, other secrets, re-serializations."""
    applicable = scheme.applicable()
    if "encoding_mismatch" in applicable and scheme.mac is not None:
        for problem, request in respellings(case.request, scheme.mac):
            yield (
                "encoding_mismatch",
                f"The signature is right, but {problem}: send it exactly as the provider does",
                request,
                case.secrets,
            )
    if "wrong_secret" in applicable:
        for candidate in _secret_candidates(case, scheme):
            known.append(candidate.value)
            yield (
                "wrong_secret",
                f"The delivery is signed with {candidate.label}, not with {case.secret_label}: configure the "
                "source with that secret, exactly as the provider's dashboard shows it (INBOX_SECRET_<SOURCE>, or "
                "the source's secret in the stack)",
                case.request,
                SigningSecrets(candidate.value),
            )
    if "body_reserialized" in applicable:
        for how, body in body_variants(case.request.body, pretty_indent=scheme.pretty_indent):
            yield (
                "body_reserialized",
                "The body was re-serialized before verification: the signature matches it re-encoded with "
                f"{how}, not the bytes given — verify the raw request body exactly as received",
                replace(case.request, body=body),
                case.secrets,
            )


def _secret_candidates(case: Case, scheme: SchemeProfile) -> Iterator[SecretCandidate]:
    used = [
        SecretCandidate("the same secret", case.secrets.current),
        *([SecretCandidate("the source's previous secret", case.secrets.previous)] if case.secrets.previous else []),
    ]
    yield from prefix_variants(used, scheme.secret_prefix)
    others = [c for c in case.alternatives() if c.value and c.value not in case.secrets.candidates()]
    yield from others
    yield from prefix_variants(others, scheme.secret_prefix)


def _scrubbed(result: Diagnosis, known: Sequence[str]) -> Diagnosis:
    """The answer with any secret the doctor handled removed from it (none should ever be there)."""
    detail = result.detail
    for secret in sorted({s for s in known if s and len(s.strip()) >= 4}, key=len, reverse=True):
        detail = detail.replace(secret, "[secret]")
    return result if detail == result.detail else Diagnosis(result.diagnosis, detail)
