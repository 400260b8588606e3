"""Receiving one webhook: verify on the raw bytes, parse, store once, answer.

The order matters: nothing is stored before the signature verifies; a verified body that cannot be parsed is
still stored (as failed, with the reason) because a signed event is never dropped; and the answer is 2xx only
once the item is durably written.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, NamedTuple, Protocol, cast

from shared.definitions import (
    BODY_BINDING_TRUST,
    DEFAULT_RETENTION_DAYS,
    DEFAULT_SIGNATURE_TOLERANCE_SECONDS,
    ENV_BODY_BUCKET,
    ENV_INBOX_TABLE,
    ENV_RETENTION_DAYS,
    ENV_SECRET_PREFIX,
    ENV_SIGNATURE_TOLERANCE,
    ENV_SIGNING_SECRETS,
    HANDLER_REFETCH,
    INLINE_BODY_LIMIT_BYTES,
    MAX_EVENTS_PER_DELIVERY,
    MINIMUM_RETENTION_DAYS,
    MULTI_EVENT_INLINE_BODY_BUDGET_BYTES,
    TRUST_BODY,
    TRUST_NONE,
    UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR,
    WEBHOOK_PATH_SUFFIXES,
    SourceSpec,
    TrustClass,
    provider_entry,
    retained_days,
)
from shared.inbox.model import (
    INLINE_BODY_BREAK_EVEN_BYTES,
    StoredBody,
    body_object_key,
    build_item,
    compress_body,
    event_key,
)
from shared.inbox.store import InboxStore, PutOutcome, StorageUnavailable
from shared.ingest_batch import put_all_new
from shared.observability import count_for_provider, logger
from shared.providers.base import (
    ClientCertificate,
    LegacySignatureDriver,
    NormalizedEvent,
    PayloadInvalid,
    ProviderDriver,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    accept_fields,
    parse_events,
)
from shared.providers.registry import get_driver
from shared.redaction import redact_secret_fields
from shared.rejections import Refusal, RejectionLog, RejectionLogSettings, reason_for_signature_refusal
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.secrets import SecretUnavailable, SigningSecretSource
from shared.settings import EnvironmentSettings, text, text_map_of, whole
from shared.sources import Sources, UnknownSource, declared_sources, sender_allowed


class BodyUndecodable(ValueError):
    """API Gateway said the body is base64 but it is not."""


class SecretsSource(Protocol):
    def signing_secrets(self, source: str) -> SigningSecrets: ...


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What the gateway is told, and what happened (for logs and metrics)."""

    status_code: int
    body: dict[str, Any]
    outcome: str
    event_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IngestSettings(EnvironmentSettings):
    inbox_table: str = text(ENV_INBOX_TABLE)
    body_bucket: str = text(ENV_BODY_BUCKET)
    secret_prefix: str = text(ENV_SECRET_PREFIX, "")
    # {source: secret ARN} of the deployed stack (shared/secrets.py explains; the prefix serves the local stack).
    signing_secret_ids: Mapping[str, str] = text_map_of(ENV_SIGNING_SECRETS)
    signature_tolerance_seconds: int = whole(ENV_SIGNATURE_TOLERANCE, DEFAULT_SIGNATURE_TOLERANCE_SECONDS, low=0)
    retention_days: int = whole(
        ENV_RETENTION_DAYS,
        DEFAULT_RETENTION_DAYS,
        low=MINIMUM_RETENTION_DAYS,
        why=f"at least {MINIMUM_RETENTION_DAYS} days are needed to replay a week-long gateway outage",
    )
    inline_body_limit_bytes: int = INLINE_BODY_LIMIT_BYTES  # not configurable: DynamoDB's item size decides it


class IngestService:
    def __init__(
        self,
        settings: IngestSettings,
        store: InboxStore,
        secrets: SecretsSource,
        *,
        sources: Sources | None = None,
        clock: Callable[[], float] = time.time,
        rejections: RejectionLog | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.secrets = secrets
        self.sources = sources if sources is not None else declared_sources()
        self.clock = clock
        self.rejections = rejections  # None: refusals are only logged and counted per provider

    def receive(
        self, driver: ProviderDriver, request: WebhookRequest, source: SourceSpec | None = None
    ) -> IngestResult:
        """Verify, parse and store one delivery to `source` (default: the driver's provider's default source).
        Raises SecretUnavailable / StorageUnavailable (-> 5xx)."""
        source = source or SourceSpec(name=driver.name, provider=driver.name)
        trust = trust_of(driver.name)
        hint_only = trust.trust == TRUST_NONE
        if source.legacy_signature:  # parse_sources allows it only for a provider whose driver has one
            driver = cast(LegacySignatureDriver, driver).with_legacy_signature()
        now = self.clock()
        tolerance = source.signature_tolerance_seconds
        if tolerance is None:
            tolerance = self.settings.signature_tolerance_seconds
        try:
            driver.verify(request, self.secrets.signing_secrets(source.name), now=now, tolerance_seconds=tolerance)
        except ValueError as misconfigured:  # an empty or malformed configured secret: retry once it is fixed
            raise SecretUnavailable(f"signing secret for {source.name!r} unusable: {misconfigured}") from None
        except SignatureInvalid as rejection:
            if hint_only:  # no signature to be wrong: the header secret is missing or not the source's
                return IngestResult(403, {"error": "forbidden"}, "signature_rejected", extra={"reason": str(rejection)})
            return IngestResult(
                401, {"error": "invalid signature"}, "signature_rejected", extra={"reason": str(rejection)}
            )

        failure: str | None = None
        received_at = datetime.fromtimestamp(now, tz=UTC)
        try:
            events = parse_events(driver, request)
        except PayloadInvalid as invalid:
            events, failure = (), str(invalid) or "unparseable body"
        if len(events) > MAX_EVENTS_PER_DELIVERY:
            reason = f"delivery holds {len(events)} events; at most {MAX_EVENTS_PER_DELIVERY} are stored per delivery"
            return IngestResult(413, {"error": reason}, "too_many_events", extra={"reason": reason})
        events = trusted_events(events, trust, received_at, tolerance)
        accepted = {"received": True, **accept_fields(driver)}
        if len(events) > 1:
            return self._receive_many(driver, request, source, events, received_at, accepted)

        event = events[0] if events else None
        event_id = event.event_id if event is not None else driver.fallback_event_id(request)
        if hint_only:  # no identity of its own: each notification is stored under a key of its delivery
            event_id = delivery_event_id(received_at, request.body)
            event = as_hint(event, event_id, received_at) if event is not None else None
        if event is None and not trust.binds_body:
            # An unparseable body its class does not bind proves nothing: kept as `ignored`, in one of a bounded
            # number of keys per source and hour, so that no sender of arbitrary bytes can fill the inbox.
            event_id = unbound_unparseable_event_id(received_at, request.body)
        pk = event_key(source.name, event_id)
        body = self._store_body(
            source.name, driver.name, pk, redact_secret_fields(request.body, driver.secret_body_fields), received_at
        )
        item = self._item(driver, request, source, event_id, event, body, received_at, failure)
        if self.store.put_new(item) is PutOutcome.DUPLICATE:
            return IngestResult(200, {**accepted, "duplicate": True}, "duplicate", event_id)
        # A refetch-verified delivery's key is its own, so the answer names it (`inbox send` prints it).
        answer: dict[str, Any] = {**accepted, "delivery": event_id} if hint_only else accepted
        if failure and not trust.binds_body:
            # Logged, not counted as unparseable: a body nobody signed raises no alarm (bounded by its hour slots)
            return IngestResult(200, answer, "stored_ignored", event_id, {"reason": failure})
        if failure:
            return IngestResult(200, answer, "stored_unparseable", event_id, {"reason": failure})
        return IngestResult(200, answer, "stored", event_id)

    def _receive_many(
        self,
        driver: ProviderDriver,
        request: WebhookRequest,
        source: SourceSpec,
        events: tuple[NormalizedEvent, ...],
        received_at: datetime,
        accepted: dict[str, Any],
    ) -> IngestResult:
        """Several events in one delivery: one item each, all stored or none (shared/ingest_batch.py). The body is
        kept once per item while the copies fit the transaction's budget, else once in S3 for all of them."""
        first_id = events[0].event_id
        raw = redact_secret_fields(request.body, driver.secret_body_fields)
        body = self._store_body(
            source.name, driver.name, event_key(source.name, first_id), raw, received_at, copies=len(events)
        )
        items = [
            self._item(driver, request, source, event.event_id, event, body, received_at, None) for event in events
        ]
        outcomes = put_all_new(self.store, items)
        stored = sum(outcome is PutOutcome.STORED for outcome in outcomes)
        extra = {"events": len(events), "stored": stored}
        if not stored:
            return IngestResult(200, {**accepted, "duplicate": True}, "duplicate", first_id, extra)
        return IngestResult(200, accepted, "stored", first_id, extra)

    def _item(
        self,
        driver: ProviderDriver,
        request: WebhookRequest,
        source: SourceSpec,
        event_id: str,
        event: NormalizedEvent | None,
        body: StoredBody,
        received_at: datetime,
        failure: str | None,
    ) -> dict[str, Any]:
        return build_item(
            source=source.name,
            provider=driver.name,
            event_id=event_id,
            event=event,
            request=request,
            replay_headers=driver.replay_headers,
            replay_query=driver.replay_query,
            body=body,
            received_at=received_at,
            retention_days=retained_days(self.settings.retention_days, provider_entry(driver.name).redelivery_days),
            failure=failure,
            failure_proves_nothing=not trust_of(driver.name).binds_body,
        )

    def _store_body(
        self, source: str, provider: str, pk: str, body: bytes, received_at: datetime, *, copies: int = 1
    ) -> StoredBody:
        """Inline (zlib-compressed when that is smaller, with `provider`'s preset dictionary when it has one) while
        the kept bytes are within the break-even of an S3 object (shared/inbox/model.py:
        INLINE_BODY_BREAK_EVEN_BYTES) and an item's room, and, for a delivery of several events, while its `copies`
        fit the transaction's budget; else in the body bucket, raw, once, under a key of `pk` and the body's own
        digest. Only bodies that could be inline are compressed: the work stays bounded whatever the body's size."""
        digest = hashlib.sha256(body).hexdigest()
        if len(body) <= self.settings.inline_body_limit_bytes:
            compressed = compress_body(body, provider)
            smaller = len(compressed) < len(body)
            kept = compressed if smaller else body
            fits = len(kept) <= min(self.settings.inline_body_limit_bytes, INLINE_BODY_BREAK_EVEN_BYTES)
            if copies > 1:
                fits = fits and len(kept) * copies <= MULTI_EVENT_INLINE_BODY_BUDGET_BYTES
            if fits:
                return StoredBody(sha256=digest, size=len(body), inline=kept, compressed=smaller)
        key = body_object_key(source, pk, body, received_at)
        self.store.put_body(key, body)
        return StoredBody(sha256=digest, size=len(body), s3_key=key)


class Trust(NamedTuple):
    """What a provider's scheme authenticates (its catalog entry's trust class), and how its payments are read."""

    trust: TrustClass
    refetches: bool  # its routes refetch the payment from the gateway's API

    @property
    def binds_body(self) -> bool:
        return self.trust in BODY_BINDING_TRUST


# A driver registered at run time (`register_driver`) is not in the catalog: it is held to what every built-in
# body-signing driver is (the generic HMAC driver signs the body: a template without `{body}` cannot be written).
_UNLISTED_TRUST = Trust(TRUST_BODY, refetches=False)


@cache
def trust_of(provider: str) -> Trust:
    try:
        entry = provider_entry(provider)
    except KeyError:
        return _UNLISTED_TRUST
    return Trust(entry.trust, refetches=entry.ordering == HANDLER_REFETCH)


def trusted_events(
    events: tuple[NormalizedEvent, ...], trust: Trust, received_at: datetime, tolerance_seconds: int
) -> tuple[NormalizedEvent, ...]:
    """What of a delivery's events its provider's trust class lets the inbox believe (docs/architecture.md,
    "Trust classes").

    - Time: a time later than receipt plus the source's signature tolerance is the receipt time (a gateway with a
      skewed clock still gets through; a forged 2099 cannot become a payment's watermark). That holds for a time
      nobody signed too (a `signed_fields` class's); and the processor ignores an event that is already the
      payment's last one (decide.decide), so a captured item posted again once its inbox item is gone moves no
      watermark.
    - State: a body its class does not bind states nothing when the payment is read back from the gateway (token
      providers with an API): status and amount are then the refetch's, and a changed body cannot fail an event
      on an amount mismatch. (`none` classes are reduced further, to a hint: `as_hint`.)
    Identity is the driver's: each one derives its event id from the parts its class authenticates."""
    latest = received_at + timedelta(seconds=tolerance_seconds)
    trusted = []
    for event in events:
        occurred_at = received_at if event.occurred_at > latest else event.occurred_at
        if not trust.binds_body and trust.refetches:
            trusted.append(event._replace(occurred_at=occurred_at, provider_status=None, amount=None, currency=None))
        else:
            trusted.append(event if occurred_at == event.occurred_at else event._replace(occurred_at=occurred_at))
    return tuple(trusted)


def unbound_unparseable_event_id(received_at: datetime, body: bytes) -> str:
    """The key of an unparseable body whose scheme does not bind it: one of UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR
    slots of its receive hour, `x_2024061219_3`, picked by the body's digest (the same body is the same slot: a
    retry is a duplicate). A further body in a taken slot is a duplicate: what arbitrary bytes can add to a source
    is bounded by construction, by the inbox's unique key, with no counter to keep."""
    slot = int.from_bytes(hashlib.sha256(body).digest()[:4], "big") % UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR
    return f"x_{received_at.astimezone(UTC).strftime('%Y%m%d%H')}_{slot}"


def delivery_event_id(received_at: datetime, body: bytes) -> str:
    """The key of one delivery of a refetch-verified provider (docs/providers.md, "Refetch-verified providers"):
    its receive time to the microsecond and a digest of its body, `n_20240612T194503123456Z_<16 hex>`.

    Not derived from the body alone: a body with no status and no time (Cielo's `{PaymentId, ChangeType}`) is the
    same for every change of a payment, and a derived key would swallow every later notification as a duplicate.
    Not random: the ingest computes it once per delivery from its clock, so a retried write of the same delivery
    (the put after a timeout) finds its own item; two identical bodies received in the same microsecond share one
    item, which changes nothing (each is only a hint to refetch). It sorts by receive time, and the digest lets an
    operator tell a repeated body from a new one."""
    stamp = received_at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"n_{stamp}_{hashlib.sha256(body).hexdigest()[:16]}"


def as_hint(event: NormalizedEvent, event_id: str, received_at: datetime) -> NormalizedEvent:
    """A refetch-verified event as stored: what it is about, and nothing it claims. The body is unsigned, so its
    status, amount and time are not evidence: the processor's refetch decides, at the receive time."""
    return event._replace(event_id=event_id, occurred_at=received_at, provider_status=None, amount=None, currency=None)


# ----------------------------------------------------------------------------------- HTTP API (payload v2)

_METRIC_BY_OUTCOME = {  # stored and duplicate deliveries are the log's `outcome` (shared/observability.METRICS)
    "stored_unparseable": "EventsUnparseable",
    "signature_rejected": "SignaturesRejected",
    "unavailable": "StorageFailures",
}
# The HTTP API's path parameter of WEBHOOK_ROUTE ("/webhooks/{provider}"): its value is the source's name. The
# route keeps its parameter's name so that deployed routes are not replaced; "source" is read first.
_ROUTE_PARAMETERS = ("source", "provider")


def _json_response(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body, separators=(",", ":")),
    }


def request_from_api_event(event: dict[str, Any]) -> WebhookRequest:
    """The raw delivery from an API Gateway HTTP API (v2) event. Raises ValueError on undecodable base64."""
    raw = event.get("body") or ""
    try:
        body = base64.b64decode(raw, validate=True) if event.get("isBase64Encoded") else raw.encode("utf-8")
    except (binascii.Error, ValueError) as error:  # ValueError: non-ASCII text flagged as base64
        raise BodyUndecodable(str(error)) from None
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    return WebhookRequest(
        body=body,
        headers=headers,
        query=dict(event.get("queryStringParameters") or {}),
        path=event.get("rawPath", ""),
        client_certificate=ClientCertificate.from_api_event(event),
    )


def source_ip_of(event: dict[str, Any]) -> str | None:
    """The sender's address as API Gateway saw the connection (requestContext.http.sourceIp). Never a header:
    X-Forwarded-For and the like are written by the sender and prove nothing."""
    ip = (event.get("requestContext") or {}).get("http", {}).get("sourceIp")
    return ip if isinstance(ip, str) else None


def handle_api_event(event: dict[str, Any], service_factory: Callable[[], IngestService]) -> dict[str, Any]:
    """Route an HTTP API event: POST /webhooks/{source} (and /webhooks/{source}/{suffix} for a provider that
    appends one, ProviderEntry.path_suffixes) and GET /health. Every error is mapped here, once."""

    http = event.get("requestContext", {}).get("http", {})
    method, path = http.get("method", "GET").upper(), event.get("rawPath", http.get("path", "/"))
    if path == "/health":
        if method != "GET":
            return _json_response(405, {"error": "method not allowed"})
        service_factory()  # ready means configured: a broken configuration answers 500 here, not at the first event
        return _json_response(200, {"status": "ok"})
    segments = path.strip("/").split("/")
    suffix = segments[2] if len(segments) == 3 else None  # a segment the provider appends (Efí's /pix)
    if (
        len(segments) not in (2, 3)
        or segments[0] != "webhooks"
        or not segments[1]
        or (suffix is not None and suffix not in WEBHOOK_PATH_SUFFIXES)
    ):
        return _json_response(404, {"error": "not found"})
    parameters = event.get("pathParameters") or {}
    name = next((parameters[key] for key in _ROUTE_PARAMETERS if parameters.get(key)), segments[1])
    if method != "POST":
        return _json_response(405, {"error": "method not allowed"})

    log: dict[str, Any] = {}
    provider: str | None = None
    spec: SourceSpec | None = None
    driver: ProviderDriver | None = None
    request: WebhookRequest | None = None
    try:
        service = service_factory()
        source = spec = service.sources.get(name)
        provider = source.provider
        log.update(source=source.name, provider=provider)
        if suffix is not None and suffix not in _path_suffixes(provider):
            result = IngestResult(404, {"error": "not found"}, "unknown_source")
        elif not sender_allowed(source, source_ip_of(event)):
            # Refused before any verification: a sender outside the ranges costs no secret read, no HMAC.
            result = IngestResult(403, {"error": "sender not allowed for this source"}, "sender_refused")
        elif source.mutual_tls and ClientCertificate.from_api_event(event) is None:
            # A mutual-TLS source takes only what the mutual-TLS front door verified (API Gateway writes clientCert
            # into the event after the handshake; no header can). Refused before any secret is read, so a delivery
            # to the plain endpoint cannot stand in for the custom domain.
            result = IngestResult(
                403, {"error": "a verified client certificate is required for this source"}, "certificate_refused"
            )
        else:
            driver = get_driver(provider)
            request = request_from_api_event(event)
            result = service.receive(driver, request, source)
    except UnknownSource as unknown:
        result = IngestResult(404, {"error": str(unknown)}, "unknown_source")
    except BodyUndecodable as error:
        result = IngestResult(400, {"error": "body could not be decoded"}, "bad_request", extra={"reason": str(error)})
    except (StorageUnavailable, SecretUnavailable) as error:
        # The gateway retries a 5xx: nothing is lost, and nothing was half-written (the put, or a delivery's
        # transaction of several events, is one call).
        result = IngestResult(
            503, {"error": "temporarily unavailable, retry"}, "unavailable", extra={"reason": str(error)}
        )
    # One line per delivery: what an operator follows an event by (its pk, the first of a delivery of several),
    # the outcome and why. The status code follows from the outcome and, with the latency, is in the API's access
    # log; the source is the pk's prefix (docs/operations.md, "Logs").
    if result.event_id is not None and spec is not None:
        log.pop("source", None)
        log["pk"] = event_key(spec.name, result.event_id)
    log.update(outcome=result.outcome, **result.extra)
    metric = _METRIC_BY_OUTCOME.get(result.outcome)
    if metric and provider:
        count_for_provider(metric, provider)
    if result.outcome in _REFUSAL_REASON:
        _note_refusal(event, name, spec, result, driver, request, service_factory)
    _log_delivery(result, log)
    return _json_response(result.status_code, result.body)


def _log_delivery(result: IngestResult, log: dict[str, Any]) -> None:
    """The delivery's line. At INFO, what the inbox item does not say by itself: a duplicate, a refusal, a failure,
    a delivery of several events. One event stored is its item (`inbox events show`): that line is DEBUG
    (docs/cost.md, "At INFO, only what the inbox item does not say")."""
    if result.status_code >= 400:
        logger.warning("webhook", extra=log)
    elif result.outcome == "stored" and not result.extra:
        logger.debug("webhook", extra=log)
    else:
        logger.info("webhook", extra=log)


def _path_suffixes(provider: str) -> tuple[str, ...]:
    """The segments `provider` appends to its registered URL (none for a provider outside the catalog)."""
    try:
        return provider_entry(provider).path_suffixes
    except KeyError:
        return ()


# Outcomes that are refused deliveries, and the reason code each is recorded under (None: from the message).
_REFUSAL_REASON: dict[str, str | None] = {
    "signature_rejected": None,
    "bad_request": "body_undecodable",
    "sender_refused": "ip_not_allowed",
    "certificate_refused": "client_certificate_missing",
    "unknown_source": "unknown_source",
    "too_many_events": "too_many_events",
}


def _note_refusal(
    event: dict[str, Any],
    source: str,
    spec: SourceSpec | None,
    result: IngestResult,
    driver: ProviderDriver | None,
    request: WebhookRequest | None,
    service_factory: Callable[[], IngestService],
) -> None:
    """Hand a refused delivery to the rejected-delivery log (shared/rejections.py). Never raises: the answer
    (401, 400, 404) is the same whether or not it was recorded."""
    detail = str(result.extra.get("reason", ""))
    reason = _REFUSAL_REASON[result.outcome] or reason_for_signature_refusal(detail)
    try:
        rejections = service_factory().rejections
        if rejections is None:
            return
        http = event.get("requestContext", {}).get("http", {})
        if request is None:  # the body could not be decoded: keep what API Gateway handed over
            request = WebhookRequest(
                body=str(event.get("body") or "").encode("utf-8", "surrogatepass"),
                headers={name.lower(): value for name, value in (event.get("headers") or {}).items()},
                query=dict(event.get("queryStringParameters") or {}),
            )
        refusal = Refusal(
            source=spec.name if spec is not None else source,
            provider=spec.provider if spec is not None else source,
            reason=reason,
            detail=detail,
            headers=request.headers,
            query=request.query,
            body=request.body,
            source_ip=str(http.get("sourceIp", "")),
            user_agent=str(http.get("userAgent", "")),
            redact_fields=spec.redact_fields if spec is not None else (),
        )
        if driver is None and spec is not None:  # refused before verification: its secrets are still the driver's
            driver = get_driver(spec.provider)
        rejections.note(refusal, driver)
    except Exception as error:  # a broken configuration already fails /health; the answer stands
        logger.warning("rejected delivery not noted", extra={"source": source, "error": type(error).__name__})


def build_ingest_service(
    settings: IngestSettings,
    *,
    rejection_log: RejectionLogSettings | None = None,
    clients: AwsClients = SHARED_CLIENTS,
    secrets: SecretsSource | None = None,
    sources: Sources | None = None,
    wrap: Wrap = unwrapped,
) -> IngestService:
    """The ingest's composition root: the inbox store on the table and bucket of `settings`, the sources' signing
    secrets (Secrets Manager, unless `secrets` is given), the declared sources (INBOX_SOURCES, unless `sources` is
    given) and, with `rejection_log`, the rejected-delivery log (without it refusals are only logged and counted).
    `wrap` is applied to the store, the secrets and the log before the service gets them."""
    store = InboxStore(settings.inbox_table, settings.body_bucket, dynamodb=clients.dynamodb, s3=clients.s3)
    if secrets is None:
        secrets = SigningSecretSource(settings.secret_prefix, ids=settings.signing_secret_ids)
    rejections = None
    if rejection_log is not None:
        rejections = wrap(RejectionLog(rejection_log, dynamodb=clients.dynamodb_best_effort))
    return IngestService(
        settings,
        wrap(store),
        wrap(secrets),
        sources=sources if sources is not None else declared_sources(),
        rejections=rejections,
    )


def ingest_service_from_environ(wrap: Wrap = unwrapped) -> IngestService:
    """The ingest's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_ingest_service(
        IngestSettings.from_environ(), rejection_log=RejectionLogSettings.from_environ(), wrap=wrap
    )


# The handler's: built once per Lambda instance, on the first request.
default_ingest_service: Root[IngestService] = Root(ingest_service_from_environ)
