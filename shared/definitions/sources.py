"""A deployment's sources (sources.json): the declaration's types, its parsing and validation, and the rules of a
source's keys and names."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from shared.definitions.catalog import PROVIDER_CATALOG, PROVIDERS, REFETCH_PROVIDERS, provider_entry

# ------------------------------------------------------------------------------------------------- sources
# A source is a named endpoint bound to one catalog provider (docs/sources.md): its own signing secrets,
# gateway API credentials and options. Declared as data in `sources.json` at the repository root
# (INBOX_SOURCES_FILE overrides the path), read by the CDK app, the local stack and the CLI (`inbox cost`,
# `inbox sources list`); the functions receive the parsed declaration in INBOX_SOURCES. Without a file there is
# one source per catalog provider, named after it, so `/webhooks/stripe` and the `stripe#...` keys keep working.
#
# Here, the declaration's types and the rules that parse it, so that the stack, the local runtime and the functions
# parse it by one set of rules; reading the file is infra/sources_file.py's, which no Lambda carries.
SOURCES_FILE_NAME: Final = "sources.json"
ENV_SOURCES_FILE: Final = "INBOX_SOURCES_FILE"  # where sources.json is (CDK app, local stack, CLI)
ENV_SOURCES: Final = "INBOX_SOURCES"  # the declared sources as compact JSON, handed to the functions
# Lower-case letters, digits and '-', starting with a letter, at most 32 characters: a source name goes into
# URLs, secret names, CloudFormation logical ids, metric dimensions and FIFO group ids.
SOURCE_NAME_MAX_LENGTH: Final = 32
SOURCE_NAME_PATTERN: Final = re.compile(r"[a-z][a-z0-9-]{0,31}")
SOURCE_NAME_RULE: Final = "lower-case letters, digits and '-', starting with a letter, at most 32 characters"
# A gateway that documents no API rate limit is refetched at this rate per source (requests per second).
DEFAULT_REFETCH_RATE_PER_SECOND: Final = 5.0
MAX_REFETCH_RATE_PER_SECOND: Final = 10_000.0
MAX_SOURCE_IP_RANGES: Final = 64
# Confirming a payment from its signed payload before the refetch verifies it (docs/sources.md): `never`, `when_behind`
# (when the source's refetches are behind by `confirm_behind_seconds`: the default for an eligible provider) or
# `always`. Only a provider whose catalog entry `confirms_from_payload` may have a value other than `never`.
CONFIRM_NEVER: Final = "never"
CONFIRM_WHEN_BEHIND: Final = "when_behind"
CONFIRM_ALWAYS: Final = "always"
CONFIRM_MODES: Final[tuple[str, ...]] = (CONFIRM_NEVER, CONFIRM_WHEN_BEHIND, CONFIRM_ALWAYS)
DEFAULT_CONFIRM_BEHIND_SECONDS: Final = 30
MAX_CONFIRM_BEHIND_SECONDS: Final = 3600
# The event type of the inbox's own verification items (`{source}#verify:{resource_id}:{transitions}`): written in
# the transaction that confirms a payment from a payload, dispatched in the payment's FIFO group, processed by
# refetching the payment (shared/process/service.py). No provider sends it: the ingest never stores one.
VERIFY_EVENT_TYPE: Final = "webhook-inbox.verify"


class SourcesInvalid(ValueError):
    """sources.json (or INBOX_SOURCES) does not declare valid sources; the message lists every bad entry."""


class SourceSpec(NamedTuple):
    """One declared source. Options left None take the deployment's (or the provider's) default."""

    name: str  # the URL segment (/webhooks/{name}), the first part of its keys ("{name}#{event_id}")
    provider: str  # a PROVIDER_CATALOG id: the driver that verifies and parses its deliveries
    signature_tolerance_seconds: int | None = None  # None: INBOX_SIGNATURE_TOLERANCE_SECONDS
    refetch_rate_per_second: float | None = None  # None: the provider's documented rate (refetch_rate(...))
    allowed_ip_ranges: tuple[str, ...] = ()  # CIDRs; empty: any sender (a delivery from elsewhere gets 403)
    redact_fields: tuple[str, ...] = ()  # JSON keys redacted from stored bodies, besides the deployment's own
    # Deliveries must come through the mutual-TLS front door (API Gateway's custom domain with a truststore; the
    # local stack's TLS port) with a client certificate it verified; any other is refused 403 before verification.
    mutual_tls: bool = False
    # True: the provider's deprecated scheme (its catalog entry's `legacy_signature`) is accepted too. None: not.
    legacy_signature: bool | None = None
    # CONFIRM_MODES; None: `when_behind` for a provider that confirms from the payload, else `never`.
    confirm_from_payload: str | None = None
    confirm_behind_seconds: int | None = None  # None: DEFAULT_CONFIRM_BEHIND_SECONDS

    @property
    def confirm_mode(self) -> str:
        """When this source confirms a payment from its signed payload (CONFIRM_MODES)."""
        if self.confirm_from_payload is not None:
            return self.confirm_from_payload
        return CONFIRM_WHEN_BEHIND if provider_entry(self.provider).confirms_from_payload else CONFIRM_NEVER

    @property
    def behind_seconds(self) -> int:
        """How far behind its refetches may be before a payment is confirmed from its payload (`when_behind`)."""
        return self.confirm_behind_seconds or DEFAULT_CONFIRM_BEHIND_SECONDS

    @property
    def env_suffix(self) -> str:
        return source_env_suffix(self.name)

    @property
    def has_api(self) -> bool:
        """Its provider has a refetch API: the source has an API key (a secret of its own in AWS)."""
        return self.provider in REFETCH_PROVIDERS

    @property
    def refetch_rate(self) -> float:
        """Requests per second this source may send to its gateway's API."""
        if self.refetch_rate_per_second is not None:
            return self.refetch_rate_per_second
        return provider_entry(self.provider).refetch_rate_per_second or DEFAULT_REFETCH_RATE_PER_SECOND

    def document(self) -> dict[str, Any]:
        """The entry as sources.json spells it (options at their default left out)."""
        entry: dict[str, Any] = {"name": self.name, "provider": self.provider}
        for option in _SOURCE_OPTIONS:
            value = getattr(self, option)
            if value is not None and value != () and value is not False:
                entry[option] = list(value) if isinstance(value, tuple) else value
        return entry


_SOURCE_OPTIONS: Final = (
    "signature_tolerance_seconds",
    "refetch_rate_per_second",
    "allowed_ip_ranges",
    "redact_fields",
    "mutual_tls",
    "legacy_signature",
    "confirm_from_payload",
    "confirm_behind_seconds",
)


def mutual_tls_sources(sources: tuple[SourceSpec, ...]) -> tuple[SourceSpec, ...]:
    """The declared sources that only accept deliveries through the mutual-TLS front door."""
    return tuple(source for source in sources if source.mutual_tls)


def source_env_suffix(name: str) -> str:
    """`stripe-br` -> `STRIPE_BR`: the suffix of INBOX_SECRET_<SOURCE>, INBOX_API_KEY_<SOURCE>, ..."""
    return name.upper().replace("-", "_")


def source_name_problem(name: object) -> str | None:
    """Why `name` cannot be a source name, or None when it can."""
    if not isinstance(name, str) or not name:
        return "a source needs a 'name'"
    if not SOURCE_NAME_PATTERN.fullmatch(name):
        return f"source name {name!r} is invalid: {SOURCE_NAME_RULE}"
    return None


def default_sources() -> tuple[SourceSpec, ...]:
    """With no sources.json: one source per catalog provider, named after it."""
    return tuple(SourceSpec(name=entry.id, provider=entry.id) for entry in PROVIDER_CATALOG)


def declared_providers(sources: Iterable[SourceSpec]) -> tuple[str, ...]:
    """The providers of `sources`, once each, in catalog order (the per-provider alarms and metrics are theirs)."""
    declared = {source.provider for source in sources}
    return tuple(provider for provider in PROVIDERS if provider in declared)


def parse_sources(document: Any, *, where: str = SOURCES_FILE_NAME) -> tuple[SourceSpec, ...]:
    """The sources a parsed sources.json declares; SourcesInvalid naming every bad entry (`where` says which
    file or variable, so the message points at it)."""
    if not isinstance(document, list) or not document:
        raise SourcesInvalid(f"{where}: expected a non-empty JSON list of sources, e.g. {_EXAMPLE}")
    problems: list[str] = []
    sources: list[SourceSpec] = []
    seen: set[str] = set()
    for position, entry in enumerate(document, start=1):
        label = f"{where}: entry {position}"
        if not isinstance(entry, dict):
            problems.append(f"{label}: expected an object like {_EXAMPLE}")
            continue
        name = entry.get("name")
        if isinstance(name, str) and name:
            label = f"{label} ({name!r})"
        entry_problems = _entry_problems(entry)
        if not entry_problems and name in seen:
            entry_problems.append(f"the name {name!r} is declared twice")
        if entry_problems:
            problems.extend(f"{label}: {problem}" for problem in entry_problems)
            continue
        seen.add(str(name))
        sources.append(
            SourceSpec(
                name=str(name),
                provider=str(entry["provider"]),
                signature_tolerance_seconds=entry.get("signature_tolerance_seconds"),
                refetch_rate_per_second=(
                    None if entry.get("refetch_rate_per_second") is None else float(entry["refetch_rate_per_second"])
                ),
                allowed_ip_ranges=tuple(
                    str(ipaddress.ip_network(r, strict=False)) for r in entry.get("allowed_ip_ranges", ())
                ),
                redact_fields=tuple(entry.get("redact_fields", ())),
                mutual_tls=entry.get("mutual_tls", False),
                legacy_signature=True if entry.get("legacy_signature") is True else None,
                confirm_from_payload=entry.get("confirm_from_payload"),
                confirm_behind_seconds=entry.get("confirm_behind_seconds"),
            )
        )
    if problems:
        raise SourcesInvalid("\n".join(problems))
    return tuple(sources)


_EXAMPLE: Final = '[{"name": "stripe-br", "provider": "stripe"}]'


def _entry_problems(entry: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    name_problem = source_name_problem(entry.get("name"))
    if name_problem:
        problems.append(name_problem)
    provider = entry.get("provider")
    if not isinstance(provider, str) or provider not in PROVIDERS:
        problems.append(f"'provider' must be one of {', '.join(PROVIDERS)} (got {provider!r})")
    unknown = sorted(set(entry) - {"name", "provider", *_SOURCE_OPTIONS})
    if unknown:
        problems.append(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(_SOURCE_OPTIONS)}")
    tolerance = entry.get("signature_tolerance_seconds")
    if tolerance is not None and (isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0):
        problems.append("'signature_tolerance_seconds' must be a whole number of seconds, 0 or more")
    rate = entry.get("refetch_rate_per_second")
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= MAX_REFETCH_RATE_PER_SECOND
    ):
        problems.append(
            f"'refetch_rate_per_second' must be a number above 0 and at most {MAX_REFETCH_RATE_PER_SECOND:g}"
        )
    ranges = entry.get("allowed_ip_ranges", [])
    if not isinstance(ranges, list) or len(ranges) > MAX_SOURCE_IP_RANGES:
        problems.append(f"'allowed_ip_ranges' must be a list of at most {MAX_SOURCE_IP_RANGES} CIDRs")
    else:
        for cidr in ranges:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except (TypeError, ValueError):
                problems.append(f"'allowed_ip_ranges': {cidr!r} is not an IP address or CIDR range")
    fields = entry.get("redact_fields", [])
    if not isinstance(fields, list) or not all(isinstance(field, str) and field for field in fields):
        problems.append("'redact_fields' must be a list of JSON key names")
    if not isinstance(entry.get("mutual_tls", False), bool):
        problems.append("'mutual_tls' must be true or false")
    problems.extend(_legacy_signature_problems(entry))
    problems.extend(_confirm_problems(entry))
    return problems


def _confirm_problems(entry: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    mode = entry.get("confirm_from_payload")
    if mode is not None and mode not in CONFIRM_MODES:
        problems.append(f"'confirm_from_payload' must be one of {', '.join(CONFIRM_MODES)} (got {mode!r})")
    elif mode not in (None, CONFIRM_NEVER):
        provider = entry.get("provider")
        eligible = next((e for e in PROVIDER_CATALOG if e.id == provider and e.confirms_from_payload), None)
        if eligible is None and provider in PROVIDERS:
            with_one = ", ".join(e.id for e in PROVIDER_CATALOG if e.confirms_from_payload)
            problems.append(
                f"'confirm_from_payload': {mode!r} needs a provider whose signature binds the whole body and whose "
                f"body states the payment's status and a signed time; {provider!r} does not (providers that do: "
                f"{with_one}), so its events always wait for the refetch: use 'never' or leave it out"
            )
    seconds = entry.get("confirm_behind_seconds")
    if seconds is not None and (
        isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_CONFIRM_BEHIND_SECONDS
    ):
        problems.append(
            f"'confirm_behind_seconds' must be a whole number of seconds from 1 to {MAX_CONFIRM_BEHIND_SECONDS}"
        )
    return problems


def _legacy_signature_problems(entry: Mapping[str, Any]) -> list[str]:
    legacy = entry.get("legacy_signature")
    if legacy is None or legacy is False:
        return []
    if legacy is not True:
        return ["'legacy_signature' must be true or false"]
    provider = entry.get("provider")
    declared = next((e.legacy_signature for e in PROVIDER_CATALOG if e.id == provider), None)
    if declared is None:
        with_one = ", ".join(e.id for e in PROVIDER_CATALOG if e.legacy_signature) or "none"
        return [
            f"'legacy_signature': provider {provider!r} has no legacy signature to enable "
            f"(providers with one: {with_one})"
        ]
    return []


def sources_from_environment(environ: Mapping[str, str]) -> tuple[SourceSpec, ...]:
    """The sources handed to the functions in INBOX_SOURCES (the stack and the local stack set it from
    sources.json), else default_sources(): a function never reads a file."""
    handed = environ.get(ENV_SOURCES, "").strip()
    return parse_sources_json(handed, where=ENV_SOURCES) if handed else default_sources()


def parse_sources_json(text: str, *, where: str) -> tuple[SourceSpec, ...]:
    """The sources a sources.json text declares (`where` names the file or variable it came from)."""
    return parse_sources(_json(text, where), where=where)


def sources_json(sources: tuple[SourceSpec, ...]) -> str:
    """Compact JSON of the declaration (INBOX_SOURCES): what parse_sources reads back."""
    return json.dumps([source.document() for source in sources], separators=(",", ":"))


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SourcesInvalid(f"{where}: not valid JSON ({error.msg} at line {error.lineno})") from None


def find_source(sources: tuple[SourceSpec, ...], name: str) -> SourceSpec:
    """The source named `name` (KeyError when none is declared)."""
    for source in sources:
        if source.name == name:
            return source
    raise KeyError(name)


def source_of(item: Mapping[str, Any]) -> str:
    """The source an inbox item, payment or published event belongs to: its `source`, else its key's first part
    (`source_key`: inbox items no longer store the source, their key holds it), else its `provider` (an item of a
    provider's default source, which is named after it)."""
    if item.get("source"):
        return str(item["source"])
    key = str(item.get("pk") or "")
    return key.split("#", 1)[0] if "#" in key else str(item["provider"])


def source_key(source: str, part: str) -> str:
    """`{source}#{part}`, the one rule of every key that belongs to a source: an event's (part = its event id),
    a payment's and its FIFO group (its resource id), its reconcile partition (its status), its breaker. A
    source name has no '#', so the source is everything before the first one."""
    return f"{source}#{part}"
