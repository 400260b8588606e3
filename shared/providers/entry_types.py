"""The types a provider's catalog entry is written in (`shared/providers/<id>/entry.py`): the entry, its routes and
documented facts, the handler kinds and the trust classes.

Standard library only, and apart from the catalog that gathers the entries (shared/definitions/catalog.py): an
entry imports this module, the catalog imports every entry, so the types cannot live in the definitions package,
whose `__init__` assembles the catalog (an entry imported first would wait on a catalog waiting on it). The
definitions package re-exports every name here (`definitions.ProviderEntry`). The entries are NamedTuples,
immutable like frozen dataclasses but without the code a dataclass generates and compiles when its class is created
(~0.75 ms a class against ~0.12 ms, measured here): they are on every function's cold start.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

# How the processor applies an event (shared/process/handlers.py maps each kind to its handler class).
# refetch: the webhook is a hint, the payment is read back from the gateway's API. occurred_at: no API, the event
# states the status, and only an event newer than the payment's last one may apply it.
HandlerKind = Literal["refetch", "occurred_at"]
HANDLER_REFETCH: Final[HandlerKind] = "refetch"
HANDLER_OCCURRED_AT: Final[HandlerKind] = "occurred_at"
HANDLER_KINDS: Final[tuple[HandlerKind, ...]] = (HANDLER_REFETCH, HANDLER_OCCURRED_AT)
# A provider's ordering defence (docs/architecture.md): its routes' handler kind, or "none" when the
# processor has no route for its events (they are stored and end `ignored`).
ORDERING_NONE: Final = "none"

# Where a documented fact about a provider comes from (docs/providers.md, "Sources").
FactSource = Literal["verified", "secondary", "project-notes", "inferred", "configured"]


class Route(NamedTuple):
    """Events of these types are applied by the handler of this kind. A type is exact, a prefix ending in `*`
    (`"charge.*"`), or `"*"`. `event_types_from` names ("module:attribute") a tuple of types kept beside the
    driver's status tables (or a function returning one, for a driver configured at run time), read when the
    processor builds its routing table."""

    handler: HandlerKind
    event_types: tuple[str, ...] = ()
    event_types_from: str | None = None


class ProviderFacts(NamedTuple):
    """What the provider tables (docs/sources.md, docs/providers.md) show, in short."""

    display_name: str  # the provider column of docs/sources.md's table
    signature: str  # the scheme, in a few words
    signature_source: FactSource  # where the scheme was checked (docs/providers.md, "Sources")
    dedup_key: str  # what deduplicates its redeliveries: the inbox key's event_id
    docs_url: str | None  # the provider's own page on its webhooks (None: the engine is ours)


# What a provider's scheme authenticates: its trust class (docs/architecture.md, "Trust classes"; each provider's
# class and its documentation source: docs/providers.md, "Trust classes"). What a captured delivery is worth follows
# from it: someone who holds a delivery but not the secret, changing a part its class leaves unauthenticated, can
# at most produce a duplicate or an event that settles `ignored` without touching the payment or its watermark.
# - body: an HMAC or public-key signature over the raw bytes (and, for some, a signed id or timestamp beside
#   them): the body is the provider's word. Identity, time and state may all come from it.
# - signed_fields: a signing string of named fields (`signed_fields`), not the body: identity comes only from those
#   fields, the time is the receipt time (no time is among them), the state from those fields or from the refetch.
# - secret_prefix: a plain hash of `{secret}{body}`: binds the body against whoever lacks the secret, but is
#   length-extendable (the driver refuses a body carrying a hash's padding: shared/providers/pagbank/driver.py).
# - token: a static token or URL secret compared as it is: the body is not authenticated at all; whoever holds the
#   token is the gateway, and the inbox never stores nor logs it. The state comes from the refetch when the provider
#   has an API, else from the body ordered by event time (the residual risk docs/providers.md names).
# - none: nothing the gateway sends is authenticated beyond a header secret (Cielo, Zoop): a notification is only a
#   hint that the processor refetches the payment from the gateway's API; the stored event carries no state from
#   the body (no status, no amount, the receive time) and each delivery is stored under its own key (no
#   body-derived key to dedup on). Only a provider with a refetch API whose every route refetches may be `none`:
#   `catalog_problems` refuses any other at import.
TrustClass = Literal["body", "signed_fields", "secret_prefix", "token", "none"]
TRUST_BODY: Final[TrustClass] = "body"
TRUST_SIGNED_FIELDS: Final[TrustClass] = "signed_fields"
TRUST_SECRET_PREFIX: Final[TrustClass] = "secret_prefix"
TRUST_TOKEN: Final[TrustClass] = "token"
TRUST_NONE: Final[TrustClass] = "none"
TRUST_CLASSES: Final[tuple[TrustClass, ...]] = (
    TRUST_BODY,
    TRUST_SIGNED_FIELDS,
    TRUST_SECRET_PREFIX,
    TRUST_TOKEN,
    TRUST_NONE,
)
# The classes whose scheme binds the whole body (against anyone without the secret): a body of theirs may state a
# payment's status and time, and one that cannot be parsed is still the provider's (stored `failed`).
BODY_BINDING_TRUST: Final[frozenset[TrustClass]] = frozenset({TRUST_BODY, TRUST_SECRET_PREFIX})


class ProviderEntry(NamedTuple):
    # The URL id (/webhooks/{id}) of its default source, the env var suffix (INBOX_API_KEY_{ID}), the driver's `name`.
    id: str
    driver: str  # "module:attribute" of the driver instance (shared/providers/<id>/driver.py)
    refetch_client: str | None  # "module:Class" of the API client (shared/providers/<id>/client.py); None: no API
    routes: tuple[Route, ...]  # what the processor applies; event types not routed are stored and end ignored
    facts: ProviderFacts
    # Refetch requests per second one source of this provider may send to the gateway's API, shared by every
    # processor instance and the sweeper's reconciliation (a source overrides it in sources.json). The gateway's
    # documented limit where it publishes one (docs/providers.md cites it), else the conservative default.
    refetch_rate_per_second: float = 0.0  # 0: DEFAULT_REFETCH_RATE_PER_SECOND
    # What its scheme authenticates (above); `signed_fields` names the fields of a `signed_fields` class's signing
    # string, as the provider documents them.
    trust: TrustClass = TRUST_BODY
    signed_fields: tuple[str, ...] = ()
    # Path segments the provider appends to the registered URL (Efí: `/pix`): `/webhooks/{source}/{suffix}`
    # reaches the same source, for the sources of this provider only (WEBHOOK_SUFFIX_ROUTES).
    path_suffixes: tuple[str, ...] = ()
    # A deprecated scheme the driver also verifies, only for a source that declares `legacy_signature: true` in
    # sources.json (its driver then provides `with_legacy_signature()`); None: the provider has none to enable.
    legacy_signature: str | None = None
    # "module:attribute" of the function of its gateway client's module (beside the refetch's status table) that reads
    # the canonical status a stored event of this provider states in its signed body (the driver keeps the object's
    # status as `provider_status`): (event_type, provider_status) -> status value, or None when that event states
    # none a payment can be confirmed with). Set only for a provider whose scheme binds the whole body and whose
    # body carries the object's state and a signed event time: its sources may confirm a payment from the payload
    # and verify it from the API later (`confirm_from_payload` in sources.json; docs/providers.md, "Confirming
    # from the payload"). None: not eligible, every event waits for the refetch.
    payload_status_from: str | None = None
    # How many days after an event the provider may still deliver it again: its documented retry window
    # (docs/providers.md cites it). The inbox keeps the provider's events at least that long plus a day, whatever the
    # deployment's `retention_days` (`definitions.retained_days`), so a late retry is still a duplicate, not an event
    # to apply again. 0: no window longer than the minimum retention is documented.
    redelivery_days: int = 0

    @property
    def confirms_from_payload(self) -> bool:
        """Whether its sources may confirm a payment from a signed payload before the refetch verifies it."""
        return self.payload_status_from is not None

    @property
    def binds_body(self) -> bool:
        """Whether its scheme binds the whole body: only then may a body state the payment's status."""
        return self.trust in BODY_BINDING_TRUST

    @property
    def ordering(self) -> str:
        """refetch, occurred_at or none: the kind of the provider's routes (a provider uses one kind)."""
        return self.routes[0].handler if self.routes else ORDERING_NONE
