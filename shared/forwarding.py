"""Forwarding published events to the customer's HTTP endpoint, signed with Standard Webhooks.

Per https://www.standardwebhooks.com: headers `webhook-id` (the event's `id`: the same on every retry, so the
receiver's dedup key), `webhook-timestamp` (epoch seconds of this attempt), `webhook-signature` = space-separated
`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per secret: during a rotation both the current and
the previous secret sign, so a receiver holding either verifies. The signing function is the one the `standard`
provider driver verifies with (`shared.providers.standard.driver.compute_signature`), not a copy.

Delivery is at least once: a 2xx is success; anything else (or a network error) is retried with exponential
backoff. A redirect is never followed: a 3xx is a failed attempt like a 500 (its `Location` recorded without its
query, which may hold a token), so every attempt goes to the configured URL, https in AWS, and nothing signed ever
goes where the endpoint points it (urllib's default opener would re-send a 301/302/303 as a GET, to any scheme).
The caller decides what a delivery that keeps failing blocks (the local publisher and the forwarder Lambda:
everything after it on the stream).

Exactly once in effect, in order (`forward_in_order`): after each delivery the last sequence delivered per outbox
partition is checkpointed in the control table (`outbox-forward#{pk}`), and records at or below it are skipped.
A crash between a delivery and its checkpoint re-sends that one event, with the same `webhook-id`: the receiver
dedups by it (Standard Webhooks' contract). The same code runs locally (inbox_local/outbox_publisher.py) and in
AWS (functions/forwarder, fed by the outbox Pipe).

Every attempt's answer (status or connection error, latency, headers, the body's first 4 KB) goes to `record`
when one is given: the forwarding log (shared/forwarding_log.py), which never raises, so a log that cannot be
written changes no delivery. A resend (`inbox outbox resend`) moves a checkpoint with `advance`, only forward.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from shared.backoff import Backoff
from shared.definitions import (
    CONTROL_TTL_ATTRIBUTE,
    DEFAULT_FORWARD_LOG_RETENTION_DAYS,
    ENV_CONTROL_TABLE,
    ENV_FORWARD_LOG_RETENTION_DAYS,
    ENV_FORWARD_LOG_TABLE,
    ENV_FORWARD_SECRET_NAME,
    ENV_FORWARD_URL,
    FORWARD_CHECKPOINT_PREFIX,
    FORWARD_CHECKPOINT_RETENTION_SECONDS,
    FORWARD_LOG_BODY_BYTES,
    MAXIMUM_FORWARD_LOG_RETENTION_DAYS,
)
from shared.forwarding_log import SENDER_FORWARDER, Answer, ForwardLog, endpoint_label, is_accepted
from shared.providers.standard.driver import SCHEME, compute_signature, decode_secret
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, text, whole

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """No redirect is followed: returning None makes urllib raise the 3xx as an HTTPError, an answer like any other."""

    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


# The opener every forwarding attempt goes through: urllib's default handlers (proxies from the environment,
# https) with redirects refused.
_OPENER = urllib.request.build_opener(_RefuseRedirects)


def is_redirect(status: int) -> bool:
    return 300 <= status < 400


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


def signed_request(
    url: str, event: Mapping[str, Any], secrets: tuple[str, ...], *, timestamp: int | None = None
) -> urllib.request.Request:
    """The POST of one event: its body (`event_body`) signed with every secret, `webhook-id` = the event's `id`."""
    body = event_body(event)
    headers = signature_headers(str(event["id"]), body, secrets, timestamp=timestamp)
    return urllib.request.Request(  # noqa: S310 - the operator's configured URL
        url, data=body, method="POST", headers={"content-type": "application/json", **headers}
    )


Recorder = Callable[[Mapping[str, Any], str, Answer, float], None]  # (event, url, answer, started epoch)


@dataclass
class Forwarder:
    url: str
    secrets: tuple[str, ...]  # current first; the previous one too during a rotation
    timeout_seconds: float = 10.0
    max_attempts: int = 5  # per call of `deliver`; the caller calls again later
    base_delay_seconds: float = 0.5
    max_delay_seconds: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    # Called with every attempt's answer (the forwarding log's `ForwardLog.record`); it must never raise.
    record: Recorder | None = None
    attempts: int = field(default=0, init=False)  # HTTP attempts made, for tests and the console

    @classmethod
    def from_secret(cls, url: str, secret_name: str, **options: Any) -> Forwarder:
        """The Lambda's forwarder: the secrets from Secrets Manager (cached; a rotation reaches every instance
        within the cache's five minutes). SecretUnavailable when they cannot be read: retry later."""
        from shared.secrets import read_secret_pair  # noqa: PLC0415 - Powertools' parameters, only in AWS

        pair = read_secret_pair(secret_name, what="forwarding secret")
        for secret in pair.candidates():
            decode_secret(secret)
        return cls(url=url, secrets=pair.candidates(), **options)

    @property
    def backoff(self) -> Backoff:
        """The wait after each failed POST: base_delay_seconds, doubling, at most max_delay_seconds, no jitter."""
        return Backoff(base=self.base_delay_seconds, cap=self.max_delay_seconds)

    def post_once(self, event: Mapping[str, Any]) -> int:
        """One signed POST; returns the HTTP status (0 for a network error). Recorded when `record` is set."""
        return self.exchange(event).status

    def exchange(self, event: Mapping[str, Any]) -> Answer:
        """One signed POST and what came back: status, headers, the body's first bytes (never all of it: an
        endpoint may answer with anything), or the error. The answer goes to `record` before it is returned.
        A 3xx is not followed: its answer says where it pointed (`error`: the Location's scheme, host and path)."""
        request = signed_request(self.url, event, self.secrets)
        self.attempts += 1
        started, clock = time.time(), time.monotonic()
        try:
            with _OPENER.open(request, timeout=self.timeout_seconds) as response:
                answer = _answer(int(response.status), response, clock)
        except urllib.error.HTTPError as error:
            try:
                answer = _answer(int(error.code), error, clock)
                if is_redirect(answer.status):
                    answer = replace(answer, error=_redirect_note(self.url, error.headers))
            finally:
                error.close()  # its response is open: release the connection
        except (urllib.error.URLError, OSError) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            answer = Answer(status=0, latency_ms=_elapsed_ms(clock), error=f"{type(reason).__name__}: {reason}")
        if self.record is not None:
            self.record(event, self.url, answer, started)
        return answer

    def deliver(self, event: Mapping[str, Any]) -> None:
        """POST until a 2xx, backing off exponentially; DeliveryFailed after `max_attempts`."""
        status = 0
        for attempt in range(1, self.max_attempts + 1):
            status = self.post_once(event)
            if is_accepted(status):
                return
            if attempt < self.max_attempts:
                self.sleep(self.backoff.delay(attempt))
        raise DeliveryFailed(f"{event.get('id')}: no 2xx after {self.max_attempts} attempts (last status {status})")


def _redirect_note(url: str, headers: Any) -> str:
    """What a refused redirect pointed to, for the log: the Location resolved against the URL, as
    `endpoint_label` shows an endpoint (no credentials, no query, no fragment: a token may travel there)."""
    location = headers.get("Location") if headers is not None else None
    if not location:
        return "redirect not followed (no Location)"
    return f"redirect not followed (Location: {endpoint_label(urllib.parse.urljoin(url, str(location)))})"


def _elapsed_ms(clock: float) -> float:
    return (time.monotonic() - clock) * 1000


def _answer(status: int, response: Any, clock: float) -> Answer:
    """The answer of a response (a 2xx's or an HTTPError's): reads at most one byte more than the log keeps."""
    headers = tuple(response.headers.items()) if response.headers is not None else ()
    try:
        head = response.read(FORWARD_LOG_BODY_BYTES + 1)
        error = None
    except (OSError, ValueError) as failure:  # the body broke off (a timeout, a reset): the status still counts
        head, error = b"", f"reading the body: {type(failure).__name__}"
    return Answer(
        status=status,
        latency_ms=_elapsed_ms(clock),
        headers=headers,
        body_head=head[:FORWARD_LOG_BODY_BYTES],
        body_truncated=len(head) > FORWARD_LOG_BODY_BYTES,
        error=error,
    )


class ForwardCheckpoints:
    """The last sequence delivered per outbox partition, in the control table (consistent reads). Each write sets
    the checkpoint's expiry anew (definitions.FORWARD_CHECKPOINT_RETENTION_SECONDS from `clock()`): a payment
    forwarded once does not keep an item for ever."""

    def __init__(self, dynamodb: DynamoDBClient, control_table: str, *, clock: Callable[[], float] = time.time) -> None:
        self.dynamodb = dynamodb
        self.control_table = control_table
        self.clock = clock
        self._known: dict[str, int] = {}

    def delivered(self, pk: str) -> int:
        if pk not in self._known:
            response = self.dynamodb.get_item(TableName=self.control_table, Key=self._key(pk), ConsistentRead=True)
            self._known[pk] = int(response.get("Item", {}).get("sequence", {}).get("N", "0"))
        return self._known[pk]

    def save(self, pk: str, sequence: int) -> None:
        self.dynamodb.put_item(TableName=self.control_table, Item=self._item(pk, sequence))
        self._known[pk] = sequence

    def advance(self, pk: str, sequence: int) -> None:
        """Move the checkpoint to `sequence` only if that is past it (a resend of an older record, or one racing
        the forwarder, never moves it back: the forwarder would send the later records again)."""
        from botocore.exceptions import ClientError  # noqa: PLC0415 - botocore comes with boto3, the caller's

        try:
            self.dynamodb.put_item(
                TableName=self.control_table,
                Item=self._item(pk, sequence),
                ConditionExpression="attribute_not_exists(pk) OR #sequence < :sequence",
                ExpressionAttributeNames={"#sequence": "sequence"},
                ExpressionAttributeValues={":sequence": {"N": str(sequence)}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            self._known.pop(pk, None)  # someone else is further: read it again when asked
            return
        self._known[pk] = sequence

    @staticmethod
    def _key(pk: str) -> dict[str, Any]:
        return {"pk": {"S": FORWARD_CHECKPOINT_PREFIX + pk}}

    def _item(self, pk: str, sequence: int) -> dict[str, Any]:
        expires_at = int(self.clock()) + FORWARD_CHECKPOINT_RETENTION_SECONDS
        return {**self._key(pk), "sequence": {"N": str(sequence)}, CONTROL_TTL_ATTRIBUTE: {"N": str(expires_at)}}


def forward_in_order(
    events: Iterable[dict[str, Any]],
    *,
    deliver: Callable[[dict[str, Any]], None],
    delivered: Callable[[str], int],
    save: Callable[[str, int], None],
    may_start: Callable[[], bool] = lambda: True,
    on_delivered: Callable[[dict[str, Any]], None] = lambda _event: None,
) -> list[dict[str, Any]]:
    """Deliver each event (with its outbox `pk`) whose sequence is past its partition's checkpoint, in the
    order given, checkpointing after each. Returns the events delivered now (without `pk`).

    Stops at the first failure (DeliveryFailed propagates; nothing after it goes out first) and, raising
    DeliveryFailed too, when `may_start()` says there is no time left for another delivery: the caller's
    source hands the same records over again and the checkpoints skip what already went."""
    sent: list[dict[str, Any]] = []
    for full in events:
        event = dict(full)
        pk, sequence = str(event.pop("pk")), int(event["sequence"])
        if sequence <= delivered(pk):
            continue  # delivered before (a re-read batch, a restart)
        if not may_start():
            raise DeliveryFailed(f"{event.get('id')}: no time left to deliver it in this invocation")
        deliver(event)
        save(pk, sequence)
        sent.append(event)
        on_delivered(event)
    return sent


# ------------------------------------------------------------------------------------------- the forwarder Lambda
# Per delivery at most FORWARDER_ATTEMPTS POSTs of FORWARDER_POST_TIMEOUT_SECONDS each plus the backoffs between
# them; a delivery only starts with that much time left in the invocation (and a margin), so the Lambda never
# times out half-way through one (which would leave a POST made and its checkpoint unwritten for no reason).
FORWARDER_ATTEMPTS = 3
FORWARDER_POST_TIMEOUT_SECONDS = 5.0
FORWARDER_START_MARGIN_SECONDS = 5.0
# Each attempt's log write is bounded too (its own client: short timeouts, one retry), so a slow log table costs a
# delivery at most FORWARD_LOG_WRITE_ATTEMPTS x (connect + read timeout) per attempt, and never its outcome.
FORWARD_LOG_WRITE_TIMEOUT_SECONDS = 1.0
FORWARD_LOG_WRITE_ATTEMPTS = 2


def worst_log_write_seconds() -> float:
    return FORWARD_LOG_WRITE_ATTEMPTS * 2 * FORWARD_LOG_WRITE_TIMEOUT_SECONDS


def worst_delivery_seconds(forwarder: Forwarder) -> float:
    backoffs = forwarder.backoff.total(forwarder.max_attempts)
    per_attempt = forwarder.timeout_seconds + (worst_log_write_seconds() if forwarder.record is not None else 0.0)
    return forwarder.max_attempts * per_attempt + backoffs


def forward_stream_batch(
    records: list[dict[str, Any]],
    *,
    remaining_seconds: Callable[[], float],
    forwarder: Forwarder | None = None,
    checkpoints: ForwardCheckpoints | None = None,
) -> dict[str, int]:
    """The forwarder Lambda's work: one batch of outbox stream records (from the forwarding Pipe), each event
    POSTed signed to the customer's endpoint in order, checkpointed. Raises DeliveryFailed (or an AWS error) so
    that the Pipe retries the batch; the checkpoints make the retry resume where this one stopped."""
    from shared.payments.publishing import outbox_events  # noqa: PLC0415 - one definition of "an outbox event"

    events = outbox_events(records)
    if not events:
        return {"forwarded": 0}  # nothing to sign: no secret read, no checkpoint read
    if forwarder is None or checkpoints is None:
        root = default_forwarder_root()
        forwarder = forwarder or root.forwarder()
        checkpoints = checkpoints or root.checkpoints()
    needed = worst_delivery_seconds(forwarder) + FORWARDER_START_MARGIN_SECONDS
    sent = forward_in_order(
        events,
        deliver=forwarder.deliver,
        delivered=checkpoints.delivered,
        save=checkpoints.save,
        may_start=lambda: remaining_seconds() >= needed,
    )
    return {"forwarded": len(sent)}


@dataclass(frozen=True, slots=True)
class ForwarderSettings(EnvironmentSettings):
    """The forwarder Lambda's: where to POST, the Secrets Manager secret it signs with, its checkpoints' table."""

    forward_url: str = text(ENV_FORWARD_URL)
    forward_secret_name: str = text(ENV_FORWARD_SECRET_NAME)
    control_table: str = text(ENV_CONTROL_TABLE)


def forward_log(
    settings: LogSettings, dynamodb: DynamoDBClient, *, sender: str = SENDER_FORWARDER
) -> ForwardLog | None:
    """The forwarding log of `settings` on `dynamodb` (None when no table is configured)."""
    if not settings.forward_log_table:
        return None
    return ForwardLog(
        dynamodb, settings.forward_log_table, retention_days=settings.forward_log_retention_days, sender=sender
    )


@dataclass(frozen=True, slots=True)
class LogSettings(EnvironmentSettings):
    """The forwarding log's, apart from ForwarderSettings. An empty table (a stack deployed before the log
    existed): attempts are not recorded."""

    forward_log_table: str = text(ENV_FORWARD_LOG_TABLE, "")
    forward_log_retention_days: int = whole(
        ENV_FORWARD_LOG_RETENTION_DAYS,
        DEFAULT_FORWARD_LOG_RETENTION_DAYS,
        low=1,
        high=MAXIMUM_FORWARD_LOG_RETENTION_DAYS,
    )


@dataclass(frozen=True, slots=True)
class ForwarderRoot:
    """The forwarder Lambda's composition root, built once per instance (`build_forwarder`), and the local stack's
    outbox publisher's, built once at start (inbox_local/outbox_publisher.py). What it hands out is made for each
    batch (the local publisher: each stream chunk): the forwarder, because its secret pair is cached by Powertools
    for five minutes, so a rotation is picked up without a restart; the checkpoints, because another container may
    have delivered this partition's later records since, and a stale in-memory checkpoint would send them again."""

    settings: ForwarderSettings
    dynamodb: DynamoDBClient  # the checkpoints'
    log: ForwardLog | None  # every attempt recorded, when the stack has a forwarding log
    wrap: Wrap = unwrapped

    def forwarder(self) -> Forwarder:
        """SecretUnavailable when the forwarding secret cannot be read: the Pipe retries the batch."""
        forwarder = Forwarder.from_secret(
            self.settings.forward_url,
            self.settings.forward_secret_name,
            max_attempts=FORWARDER_ATTEMPTS,
            timeout_seconds=FORWARDER_POST_TIMEOUT_SECONDS,
            record=self.log.record if self.log else None,
        )
        return self.wrap(forwarder)

    def checkpoints(self) -> ForwardCheckpoints:
        return self.wrap(ForwardCheckpoints(self.dynamodb, self.settings.control_table))


def build_forwarder(
    settings: ForwarderSettings,
    log_settings: LogSettings,
    *,
    clients: AwsClients = SHARED_CLIENTS,
    wrap: Wrap = unwrapped,
) -> ForwarderRoot:
    """The forwarder's composition root: where to POST and the secret to sign with (`settings`), the checkpoints on
    `clients.dynamodb` and the forwarding log of `log_settings` on `clients.dynamodb_best_effort` (unless given:
    the forwarder's own clients, below). `wrap` is applied to each forwarder and checkpoints it hands out."""
    log = None
    if log_settings.forward_log_table:
        log_client = clients.dynamodb_best_effort if clients.dynamodb_best_effort is not None else _log_dynamodb()
        log = forward_log(log_settings, log_client)
    dynamodb = clients.dynamodb if clients.dynamodb is not None else _dynamodb()
    return ForwarderRoot(settings, dynamodb, log, wrap)


def forwarder_from_environ(wrap: Wrap = unwrapped) -> ForwarderRoot:
    """The forwarder's root as the Lambda builds it: its settings from the environment, its own AWS clients."""
    return build_forwarder(ForwarderSettings.from_environ(), LogSettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first batch with an event to send.
default_forwarder_root: Root[ForwarderRoot] = Root(forwarder_from_environ)


@cache
def _dynamodb() -> DynamoDBClient:
    import boto3  # noqa: PLC0415

    return boto3.client("dynamodb")


@cache
def _log_dynamodb() -> DynamoDBClient:
    # Its own client: the log's writes time out fast and retry once (worst_log_write_seconds), while the
    # checkpoints keep the SDK's patient defaults (a checkpoint not written means an event sent twice).
    import boto3  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    config = Config(
        connect_timeout=FORWARD_LOG_WRITE_TIMEOUT_SECONDS,
        read_timeout=FORWARD_LOG_WRITE_TIMEOUT_SECONDS,
        retries={"max_attempts": FORWARD_LOG_WRITE_ATTEMPTS, "mode": "standard"},
    )
    return boto3.client("dynamodb", config=config)
