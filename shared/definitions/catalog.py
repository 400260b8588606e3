"""The provider catalog: one declaration per provider (PROVIDER_CATALOG), the types it is written in, the trust
classes, the checks it must pass at import, and the lists derived from it."""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

# ------------------------------------------------------------------------------------------- provider catalog
# One declaration per provider: everything the code, the stack, the local stack and the docs need to know that a
# provider exists. Every list of providers is derived from PROVIDER_CATALOG (the drivers' and the gateway
# clients' registries, the processor's routing table, the stack's secrets, the test parameter lists);
# tests/unit/test_catalog.py fails when a provider is half-added (one with no development secret in
# inbox_local/dev_secrets.py, too: development material lives with the local stack, never in a Lambda), and
# docs/adding-a-provider.md is the checklist. Code is named, never imported, here ("module:attribute" strings):
# a Lambda imports only the driver and the gateway client it uses, when it first uses them. The entries are
# NamedTuples, immutable like frozen dataclasses but without the code a dataclass generates and compiles when its
# class is created (~0.75 ms a class against ~0.12 ms, measured here): this module is on the ingest's cold start.

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
# A body the class does not bind and that cannot be parsed proves nothing: it is answered 2xx (a 401 would make a
# token sender pause its queue: Asaas does after 15 failures), stored `ignored`, and at most this many such bodies
# per source and hour are kept (their keys are hour slots: a further one is a duplicate of its slot).
UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR: Final = 8


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


_REFETCH: Final[HandlerKind] = HANDLER_REFETCH
_BY_EVENT_TIME: Final[HandlerKind] = HANDLER_OCCURRED_AT

PROVIDER_CATALOG: Final[tuple[ProviderEntry, ...]] = (
    ProviderEntry(
        id="stripe",
        driver="shared.providers.stripe.driver:driver",
        refetch_client="shared.providers.stripe.client:StripeClient",
        # `v1.*`: the thin versions of the same events (event destinations with thin payloads)
        routes=(
            Route(
                _REFETCH,
                ("payment_intent.*", "charge.*", "refund.*", "v1.payment_intent.*", "v1.charge.*", "v1.refund.*"),
            ),
        ),
        facts=ProviderFacts(
            display_name="Stripe",
            signature="`Stripe-Signature` HMAC-SHA256 of `{t}.{body}`, ±300 s",
            signature_source="verified",
            dedup_key="event `id`",
            docs_url="https://stripe.com/docs/payments/handling-payment-events",
        ),
        # 25 requests/s: Stripe's default per-endpoint limit (live mode allows 100 operations/s in all, sandboxes
        # 25): docs/providers.md, "Refetch rate limits".
        refetch_rate_per_second=25.0,
        # Snapshot events sign the whole body (`{t}.{body}`), carry the PaymentIntent as it was and a signed
        # `created`: a payment_intent.* event may confirm a payment before the refetch (thin events state nothing).
        payload_status_from="shared.providers.stripe.client:payload_status",
    ),
    ProviderEntry(
        id="standard",
        driver="shared.providers.standard.driver:driver",
        refetch_client=None,  # a signing scheme, not a gateway: no API to ask
        routes=(Route(_BY_EVENT_TIME, ("payment.*",)),),
        facts=ProviderFacts(
            display_name="Standard Webhooks / Svix",
            signature="`webhook-*`/`svix-*` HMAC-SHA256 base64 of `{id}.{ts}.{body}`",
            signature_source="verified",
            dedup_key="`webhook-id`",
            docs_url="https://github.com/standard-webhooks/standard-webhooks",
        ),
    ),
    ProviderEntry(
        id="asaas",
        driver="shared.providers.asaas.driver:driver",
        refetch_client="shared.providers.asaas.client:AsaasClient",
        routes=(Route(_REFETCH, ("PAYMENT_*",)),),
        facts=ProviderFacts(
            display_name="Asaas",
            signature="static `asaas-access-token` (never stored)",
            signature_source="project-notes",
            dedup_key="body `id`",
            docs_url="https://docs.asaas.com/docs/about-webhooks",
        ),
        trust=TRUST_TOKEN,  # `asaas-access-token`: the token itself, nothing over the body
    ),
    ProviderEntry(
        id="pagarme",
        driver="shared.providers.pagarme.driver:driver",
        refetch_client="shared.providers.pagarme.client:PagarmeClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
        facts=ProviderFacts(
            display_name="Pagar.me",
            signature="v5 RS256 (JWKS) and legacy `X-Hub-Signature` sha1",
            signature_source="verified",
            dedup_key="hook id / derived",
            docs_url="https://github.com/pagarme/ecommerce-module-core",
        ),
        # GET /charges/* and /orders/* are limited to 200 requests a minute (3.3/s): docs/providers.md.
        refetch_rate_per_second=3.0,
    ),
    ProviderEntry(
        id="stone",
        driver="shared.providers.stone.driver:driver",  # the Pagar.me driver under Stone's id (Connect Stone)
        refetch_client="shared.providers.stone.client:StoneClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*", "transaction_status_changed")),),
        facts=ProviderFacts(
            display_name="Stone",
            signature="as `pagarme` (Pagar.me platform): v5 RS256, legacy sha1",
            signature_source="inferred",  # Stone documents Pagar.me's hooks and API; the signature header is inferred
            dedup_key="hook id / derived",
            docs_url="https://connect-stone.stone.com.br/reference/retorno-webhook",
        ),
        # Pagar.me's documented limit for GET /charges/* and /orders/*: 200 requests a minute (docs.pagar.me
        # "Rate Limit"), the API Connect Stone payments are read from.
        refetch_rate_per_second=3.0,  # as pagarme: the same API and its documented 200 requests a minute
    ),
    ProviderEntry(
        id="kiwify",
        driver="shared.providers.kiwify.driver:driver",
        refetch_client=None,  # no payment API: ordered by event time (provider_status is already canonical)
        routes=(
            Route(_BY_EVENT_TIME, event_types_from="shared.providers.kiwify.driver:SALE_EVENTS"),
            Route(_BY_EVENT_TIME, ("CASHIN.*", "CASHOUT.*")),  # Kiwify Banking
        ),
        facts=ProviderFacts(
            display_name="Kiwify",
            signature="sales `?signature=` HMAC-SHA1; Banking Ed25519",
            signature_source="verified",
            dedup_key="derived (no stable envelope id)",
            docs_url="https://docs.kiwify.com.br/en/api-reference/banking/webhook-headers",
        ),
    ),
    ProviderEntry(
        id="hotmart",
        driver="shared.providers.hotmart.driver:driver",
        refetch_client=None,
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.hotmart.driver:PURCHASE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Hotmart",
            signature="`X-HOTMART-HOTTOK`",
            signature_source="secondary",
            dedup_key="body `id`",
            docs_url="https://help.hotmart.com/en/article/360001491352",
        ),
        trust=TRUST_TOKEN,  # `X-HOTMART-HOTTOK`: the token itself, nothing over the body
    ),
    ProviderEntry(
        id="eduzz",
        driver="shared.providers.eduzz.driver:driver",
        refetch_client=None,  # no invoice API is refetched: ordered by event time (provider_status is canonical)
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.eduzz.driver:INVOICE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Eduzz",
            signature="`x-signature` HMAC-SHA256 hex of the body",
            signature_source="verified",  # the scheme is Eduzz's; the hex encoding is inferred (docs/providers.md)
            dedup_key="body `id`",
            docs_url="https://github.com/eduzz/eduzz-webhook-docs",
        ),
    ),
    # Efí (Gerencianet) Pix: mutual TLS, or skip-mTLS's `?hmac=`; several Pix per delivery (docs/providers.md).
    ProviderEntry(
        id="efi",
        driver="shared.providers.efi.driver:driver",
        refetch_client="shared.providers.efi.client:EfiClient",
        routes=(Route(_REFETCH, event_types_from="shared.providers.efi.driver:EVENT_TYPES"),),
        facts=ProviderFacts(
            display_name="Efí Pix",
            signature="mutual TLS (Efí's CA), else `?hmac=` + source IP",
            signature_source="verified",  # mTLS, the CA chain and /pix: Efí's docs and repos; hmac: Efí's forum
            dedup_key="Pix `endToEndId`; devolução id + status",
            docs_url="https://dev.efipay.com.br/docs/api-pix/webhooks/",
        ),
        path_suffixes=("pix",),
        trust=TRUST_TOKEN,  # mutual TLS authenticates the connection, `?hmac=` is the secret itself: no body MAC
    ),
    ProviderEntry(
        id="pagbank",
        driver="shared.providers.pagbank.driver:driver",
        refetch_client="shared.providers.pagbank.client:PagbankClient",
        routes=(Route(_REFETCH, ("charge.*", "order.*")),),
        facts=ProviderFacts(
            display_name="PagBank",
            signature="`x-authenticity-token` = sha256(`{token}-{body}`)",
            signature_source="verified",
            dedup_key="derived",
            docs_url="https://developer.pagbank.com.br/reference/confirmar-autenticidade-da-notificacao",
        ),
        trust=TRUST_SECRET_PREFIX,  # sha256(token + "-" + body): length-extendable
    ),
    ProviderEntry(
        id="iugu",
        driver="shared.providers.iugu.driver:driver",
        refetch_client="shared.providers.iugu.client:IuguClient",
        routes=(Route(_REFETCH, ("invoice.*",)),),
        facts=ProviderFacts(
            display_name="iugu",
            signature="token in `Authorization` or `?token=` (never stored)",
            signature_source="inferred",  # the token exists (iugu's OpenAPI); how it is put on the wire is inferred
            dedup_key="derived",
            docs_url="https://dev.iugu.com/docs/gatilhos",
        ),
        trust=TRUST_TOKEN,  # the token itself, in a header or the URL
    ),
    ProviderEntry(
        id="woovi",
        driver="shared.providers.woovi.driver:driver",
        refetch_client="shared.providers.woovi.client:WooviClient",
        routes=(Route(_REFETCH, event_types_from="shared.providers.woovi.driver:CHARGE_EVENTS"),),
        facts=ProviderFacts(
            display_name="Woovi / OpenPix",
            signature="`x-webhook-signature` RSA-SHA256 (Woovi's published keys)",
            signature_source="verified",
            dedup_key="derived (no envelope id)",
            docs_url="https://developers.woovi.com/docs/webhook/seguranca/webhook-signature-validation",
        ),
        legacy_signature="`X-OpenPix-Signature`: base64 HMAC-SHA1 of the body with the webhook's own secret key",
    ),
    ProviderEntry(
        id="github",
        driver="shared.providers.github.driver:driver",
        refetch_client=None,
        routes=(),  # GitHub events are not payments: stored, then ignored
        facts=ProviderFacts(
            display_name="GitHub",
            signature="`X-Hub-Signature-256`",
            signature_source="verified",
            dedup_key="derived: the signed body's digest",
            docs_url="https://docs.github.com/webhooks/securing",
        ),
    ),
    ProviderEntry(
        id="shopify",
        driver="shared.providers.shopify.driver:driver",
        refetch_client=None,
        # Order and dispute topics only: a transaction alone does not say what the order became.
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.shopify.driver:PAYMENT_TOPICS"),),
        facts=ProviderFacts(
            display_name="Shopify",
            signature="`X-Shopify-Hmac-Sha256` base64",
            signature_source="verified",
            dedup_key="derived from the signed body",
            docs_url="https://shopify.dev/docs/apps/build/webhooks/subscribe/https",
        ),
    ),
    ProviderEntry(
        id="paddle",
        driver="shared.providers.paddle.driver:driver",
        refetch_client="shared.providers.paddle.client:PaddleClient",
        routes=(Route(_REFETCH, ("transaction.*", "adjustment.*")),),
        facts=ProviderFacts(
            display_name="Paddle",
            signature="`Paddle-Signature: ts=;h1=`",
            signature_source="verified",
            dedup_key="`event_id`",
            docs_url="https://developer.paddle.com/webhooks/signature-verification",
        ),
        # 240 requests a minute per IP address for most operations: docs/providers.md.
        refetch_rate_per_second=4.0,
        # Paddle-Signature binds `{ts}:{body}`, and an event's `data` is the entity's snapshot at its `occurred_at`.
        payload_status_from="shared.providers.paddle.client:payload_status",
    ),
    ProviderEntry(
        id="mercadopago",
        driver="shared.providers.mercadopago.driver:driver",
        refetch_client="shared.providers.mercadopago.client:MercadoPagoClient",
        routes=(Route(_REFETCH, ("payment", "payment.*")),),
        facts=ProviderFacts(
            display_name="Mercado Pago",
            signature="`x-signature` manifest HMAC",
            signature_source="verified",
            dedup_key="the signed `data.id` + `x-request-id`",
            docs_url="https://mercadopago.com.br/developers/en/docs/checkout-pro/payment-notifications",
        ),
        trust=TRUST_SIGNED_FIELDS,
        # The manifest `id:{data.id};request-id:{x-request-id};ts:{ts};`: the body is not signed.
        signed_fields=("data.id", "x-request-id", "ts"),
    ),
    ProviderEntry(
        id="adyen",
        driver="shared.providers.adyen.driver:driver",
        refetch_client=None,
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.adyen.driver:PAYMENT_EVENT_CODES"),),
        facts=ProviderFacts(
            display_name="Adyen",
            signature="`hmacSignature` inside the notification item",
            signature_source="verified",
            dedup_key="pspReference + eventCode + success",
            docs_url="https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures",
        ),
        trust=TRUST_SIGNED_FIELDS,
        # The HMAC signing string of each NotificationRequestItem: `eventDate` and `additionalData` are not in it.
        signed_fields=(
            "pspReference",
            "originalReference",
            "merchantAccountCode",
            "merchantReference",
            "amount.value",
            "amount.currency",
            "eventCode",
            "success",
        ),
    ),
    ProviderEntry(
        id="generic",
        driver="shared.providers.generic.driver:driver",
        refetch_client=None,
        # The configured `payment_event_types` (INBOX_GENERIC_CONFIG), read when the router is built.
        routes=(Route(_BY_EVENT_TIME, event_types_from="shared.providers.generic.driver:payment_event_patterns"),),
        facts=ProviderFacts(
            display_name="any HMAC sender",
            signature="configured by data (`INBOX_GENERIC_CONFIG`)",
            signature_source="configured",
            dedup_key="configured",
            docs_url=None,
        ),
    ),
    # Refetch-verified providers: senders that sign nothing; a notification is a hint the processor refetches
    # (TRUST_NONE above).
    ProviderEntry(
        id="cielo",
        driver="shared.providers.cielo.driver:driver",
        refetch_client="shared.providers.cielo.client:CieloClient",
        # Every documented ChangeType names a PaymentId: read it back (an undocumented one is stored and ignored)
        routes=(Route(_REFETCH, event_types_from="shared.providers.cielo.driver:ROUTED_EVENT_TYPES"),),
        facts=ProviderFacts(
            display_name="Cielo",
            signature="none: refetch-verified (header secret, IP ranges)",
            signature_source="verified",
            dedup_key="none: each delivery stored",
            docs_url="https://docs.cielo.com.br/ecommerce-cielo-en/docs/notification-post",
        ),
        trust=TRUST_NONE,
    ),
    ProviderEntry(
        id="zoop",
        driver="shared.providers.zoop.driver:driver",
        refetch_client="shared.providers.zoop.client:ZoopClient",
        routes=(Route(_REFETCH, ("transaction.*",)),),
        facts=ProviderFacts(
            display_name="Zoop",
            signature="none found: refetch-verified (header secret)",
            signature_source="inferred",  # no signature is documented where Zoop documents its webhooks
            dedup_key="none: each delivery stored",
            docs_url="https://docs.zoop.co/docs/sobre-os-webhooks",
        ),
        trust=TRUST_NONE,
    ),
)


class CatalogInvalid(ValueError):
    """The provider catalog declares something the code cannot honour (raised when this module is imported)."""


def catalog_problems(catalog: tuple[ProviderEntry, ...]) -> list[str]:
    """What is wrong with `catalog`: a trust class that is not one, a `signed_fields` class that names no field (or
    another class that names some), a refetch-verified provider (`none`) without a refetch API, or with a route
    that does not refetch (its notifications prove nothing, so only a read from the gateway may move a payment)."""
    problems: list[str] = []
    for entry in catalog:
        if entry.trust not in TRUST_CLASSES:
            problems.append(f"{entry.id}: trust {entry.trust!r} is not one of {', '.join(TRUST_CLASSES)}")
        if (entry.trust == TRUST_SIGNED_FIELDS) != bool(entry.signed_fields):
            problems.append(f"{entry.id}: signed_fields are named by, and only by, a signed_fields trust class")
        if entry.confirms_from_payload and not (
            entry.binds_body and entry.refetch_client is not None and entry.ordering == HANDLER_REFETCH
        ):
            problems.append(
                f"{entry.id}: only a provider whose scheme binds the whole body "
                f"({', '.join(sorted(BODY_BINDING_TRUST))}) and whose routes refetch from an API may confirm from "
                "the payload"
            )
        if entry.trust != TRUST_NONE:
            continue
        if entry.refetch_client is None:
            problems.append(f"{entry.id}: refetch-verified but has no refetch_client (no API to refetch from)")
        if not entry.routes or any(route.handler != HANDLER_REFETCH for route in entry.routes):
            problems.append(f"{entry.id}: refetch-verified, so every route must refetch (and there must be one)")
    return problems


def check_catalog(catalog: tuple[ProviderEntry, ...]) -> None:
    problems = catalog_problems(catalog)
    if problems:
        raise CatalogInvalid("provider catalog: " + "; ".join(problems))


check_catalog(PROVIDER_CATALOG)

# Derived lists (never spelled by hand).
# Provider ids the stack creates a signing secret for (one Secrets Manager secret each).
PROVIDERS: Final[tuple[str, ...]] = tuple(entry.id for entry in PROVIDER_CATALOG)
# Providers with a payment API the processor refetches from (one gateway API-key secret each). The others order
# their events by `occurred_at` (or have no route at all).
REFETCH_PROVIDERS: Final[tuple[str, ...]] = tuple(
    entry.id for entry in PROVIDER_CATALOG if entry.refetch_client is not None
)
# The suffixes some providers append to the registered URL (`/webhooks/{source}/pix`): each one API route.
WEBHOOK_PATH_SUFFIXES: Final[tuple[str, ...]] = tuple(
    sorted({suffix for entry in PROVIDER_CATALOG for suffix in entry.path_suffixes})
)

# Providers whose notifications are only hints: stored once per delivery, with no state from the body.
REFETCH_VERIFIED_PROVIDERS: Final[frozenset[str]] = frozenset(
    entry.id for entry in PROVIDER_CATALOG if entry.trust == TRUST_NONE
)


def provider_entry(provider: str) -> ProviderEntry:
    """The catalog entry of `provider` (KeyError for a provider the catalog does not declare)."""
    for entry in PROVIDER_CATALOG:
        if entry.id == provider:
            return entry
    raise KeyError(provider)
