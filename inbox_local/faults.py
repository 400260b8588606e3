"""Fault injection for the local stack: what `inbox chaos` turns on while payments flow.

Every fault is injected around the functions, in the emulation of what AWS provides, never in the Lambda code:
the handlers run unchanged and must cope. Controlled at run time through a local-only route of the API server
(`inbox_local/server.py` answers `/_local/...` itself; it never reaches the ingest function):

- `GET /_local/faults`: the knobs, the counters of injected faults by kind, the processor's max attempts.
- `POST /_local/faults` (JSON, any subset, validated as a whole before anything changes):
  `{"seed": 7, "ingest_throttle_rate": 0.2, "crash_before_commit_rate": 0.05, "crash_after_commit_rate": 0.05,
  "crash_redelivery_seconds": 1, "pipe_pause_seconds": 3, "gateway": {"error_rate": 0.1, ...}}`.
- `DELETE /_local/faults`: every fault off, the Pipe resumed (counters are kept).

The kinds, and what each one really exercises:

- `ingest_throttle` (a): the ingest's DynamoDB client answers PutItem with a `ProvisionedThroughputExceededException`
  ClientError (as after the SDK's own retries). The real `InboxStore.put_new` maps it to StorageUnavailable and
  the real handler answers 503; nothing is stored, and the delivering client retries like a gateway does.
- `crash_before_commit` / `crash_after_commit` (b): the processor's invocation dies (as when Lambda kills it: a
  timeout, out of memory) right before the settle transaction (after the refetch), or right after the transaction
  committed but before the batch is acknowledged. Raised as `InjectedCrash`, a BaseException, so that no
  `except Exception` inside the function (its crash accounting, the batch utility) turns the death into a handled
  error: nothing after that point runs, no message of the batch is acknowledged, and the whole batch is received
  again, including messages whose events already committed (the processor must skip them). The queue's
  visibility timeout (180 s) is what brings them back in AWS; here the crashed batch's messages are made visible
  again after `crash_redelivery_seconds` instead, because waiting three minutes tests nothing more.
- `gateway_error` / `gateway_throttle` / `gateway_slow` / `gateway_unknown` (c): the gateway simulator's own
  faults (`inbox_local/gateway_simulator.py`): 500s, 429s with Retry-After, answers slower than the refetch
  client's read timeout, and 404s for a payment the API does not know yet (`unknown_fetches`). Set through
  `"gateway"`; counted by the simulator.
- `pipe_pause` (d): the Pipe stops forwarding stream records for `pipe_pause_seconds` (`StreamPipe.pause`), then
  resumes from where it was: events pile up in the stream and arrive in a burst.

Concurrent duplicate deliveries (e) are the delivering side's business (`inbox simulate` / `inbox chaos`).

Reproducibility: a decision of the keyed kinds (ingest throttles, processor crashes) is a function of the seed,
the kind, the key (the event's `pk`) and how many times that key was drawn for, so the same seed takes the same
decisions whatever order threads reach them in. The simulator's draws are one seeded sequence (reseeded with the
seed), whose assignment to concurrent requests follows their timing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar, cast

from botocore.exceptions import ClientError

from shared import definitions
from shared.gateway.http import READ_TIMEOUT_SECONDS
from shared.inbox.lifecycle import IgnoredReason
from shared.inbox.model import EventStatus
from shared.inbox.store import InboxStore
from shared.payments.model import Payment
from shared.payments.store import ProcessingStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from inbox_local.gateway_simulator import GatewaySimulator
    from inbox_local.pipe import StreamPipe
    from inbox_local.queue_mapping import QueueMapping

ADMIN_PATH = "/_local/faults"
T = TypeVar("T")
Handler = Callable[[dict[str, Any], Any], Any]


class FaultKind(StrEnum):
    INGEST_THROTTLE = "ingest_throttle"
    CRASH_BEFORE_COMMIT = "crash_before_commit"
    CRASH_AFTER_COMMIT = "crash_after_commit"
    PIPE_PAUSE = "pipe_pause"
    GATEWAY_ERROR = "gateway_error"
    GATEWAY_THROTTLE = "gateway_throttle"
    GATEWAY_SLOW = "gateway_slow"
    GATEWAY_UNKNOWN = "gateway_unknown"


# The simulator's own counter names (GatewaySimulator.stats()) for the gateway kinds.
_GATEWAY_COUNTERS = {
    FaultKind.GATEWAY_ERROR: "error",
    FaultKind.GATEWAY_THROTTLE: "throttle",
    FaultKind.GATEWAY_SLOW: "slow",
    FaultKind.GATEWAY_UNKNOWN: "unknown",
}


class InjectedCrash(BaseException):
    """The processor's invocation dies here. A BaseException, so that no `except Exception` in the function
    handles it: nothing after this point runs, as when Lambda kills an invocation."""


@dataclass(frozen=True)
class FaultRates:
    """Probabilities of the keyed faults, drawn per call (0 = off)."""

    ingest_throttle_rate: float = 0.0
    crash_before_commit_rate: float = 0.0
    crash_after_commit_rate: float = 0.0

    def updated(self, changes: dict[str, Any]) -> FaultRates:
        values = asdict(self)
        for name, value in changes.items():
            if name not in values:
                raise ValueError(f"unknown fault rate {name!r}")
            values[name] = _probability(name, value)
        return FaultRates(**values)


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _non_negative(name: str, value: Any, *, limit: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= limit:
        raise ValueError(f"{name} must be a number of seconds in [0, {limit:g}], got {value!r}")
    return float(value)


def keyed_draw(seed: int, kind: str, key: str, occurrence: int) -> float:
    """A uniform number in [0, 1) that depends only on its arguments (not on which thread asks first)."""
    digest = hashlib.sha256(f"{seed}|{kind}|{key}|{occurrence}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


_RATE_FIELDS = frozenset(f.name for f in fields(FaultRates))
_SETTINGS = frozenset({"seed", "crash_redelivery_seconds", "pipe_pause_seconds", "gateway"})
MAX_PIPE_PAUSE_SECONDS = 600.0
MAX_CRASH_REDELIVERY_SECONDS = float(definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS)


class FaultInjector:
    """The knobs, the draws and the counters; `install` wires it into a running LocalStack."""

    def __init__(
        self,
        *,
        simulator: GatewaySimulator | None = None,
        pipe: StreamPipe | None = None,
        sqs: Any = None,
        queue_url: str | None = None,
        max_attempts: int | None = None,
        seed: int = 0,
    ) -> None:
        self.simulator = simulator
        self.pipe = pipe
        self.sqs = sqs
        self.queue_url = queue_url
        self.max_attempts = max_attempts
        self.seed = seed
        self.rates = FaultRates()
        self.crash_redelivery_seconds = 1.0
        self._counters: dict[str, int] = dict.fromkeys(
            (FaultKind.INGEST_THROTTLE, FaultKind.CRASH_BEFORE_COMMIT, FaultKind.CRASH_AFTER_COMMIT), 0
        )
        self._counters[FaultKind.PIPE_PAUSE] = 0
        self._occurrences: dict[tuple[str, str], int] = {}
        self._paused_seconds = 0.0
        self._paused_since: float | None = None
        self._resume_timer: threading.Timer | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------------------------------ draws

    def should_inject(self, kind: FaultKind, key: str) -> bool:
        """Draw for one call of a keyed kind; counts the fault when it is injected."""
        rate = {
            FaultKind.INGEST_THROTTLE: self.rates.ingest_throttle_rate,
            FaultKind.CRASH_BEFORE_COMMIT: self.rates.crash_before_commit_rate,
            FaultKind.CRASH_AFTER_COMMIT: self.rates.crash_after_commit_rate,
        }[kind]
        if rate <= 0.0:
            return False
        with self._lock:
            occurrence = self._occurrences.get((kind, key), 0) + 1
            self._occurrences[(kind, key)] = occurrence
            inject = keyed_draw(self.seed, kind, key, occurrence) < rate
            if inject:
                self._counters[kind] += 1
            return inject

    # ---------------------------------------------------------------------------------- (a) ingest storage

    def wrap_ingest(self, part: T) -> T:
        """The ingest root's Wrap (shared/roots.py): its inbox store, through a DynamoDB client whose writes may be
        throttled; everything else as it is."""
        if isinstance(part, InboxStore):
            return cast(T, self.throttled_inbox_store(part))
        return part

    def throttled_inbox_store(self, store: InboxStore) -> InboxStore:
        """The same table, bucket and S3 client, through the store's own DynamoDB client, whose PutItem and
        TransactWriteItems may be throttled."""
        proxy: DynamoDBClient = _ThrottlingDynamoDB(lambda: store.dynamodb, self)  # type: ignore[assignment]
        return store.through(proxy)

    # ---------------------------------------------------------------------------------- (b) the processor

    def wrap_processor(self, part: T) -> T:
        """The processor root's Wrap: its store, whose settle transaction may be preceded or followed by the
        invocation's death; everything else as it is."""
        if isinstance(part, ProcessingStore):
            return cast(T, self.crashing_store(part))
        return part

    def crashing_store(self, store: ProcessingStore) -> ProcessingStore:
        return _CrashingProcessingStore(store, self)

    def wrap_processor_handler(self, handler: Handler) -> Handler:
        """What the Lambda service sees of an invocation that died: an error, nothing acknowledged. The batch's
        messages come back after `crash_redelivery_seconds` (the queue's visibility timeout in AWS)."""

        def invoke(event: dict[str, Any], context: Any) -> Any:
            try:
                return handler(event, context)
            except InjectedCrash as crash:
                self._expedite_redelivery(event)
                raise RuntimeError(f"injected crash ({crash}); the batch will be received again") from None

        return invoke

    def _expedite_redelivery(self, event: dict[str, Any]) -> None:
        if self.sqs is None or self.queue_url is None:
            return
        seconds = math.ceil(self.crash_redelivery_seconds)
        for record in event.get("Records", []):
            try:
                self.sqs.change_message_visibility(
                    QueueUrl=self.queue_url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=seconds
                )
            except Exception as error:  # it comes back after the queue's visibility timeout anyway
                print(f"faults: could not expedite a crashed message: {type(error).__name__}", flush=True)

    # ------------------------------------------------------------------------------------------ (d) the Pipe

    def pause_pipe(self, seconds: float) -> None:
        """Stop the Pipe now for `seconds` (0: resume now). A new pause replaces the one in progress."""
        if self.pipe is None:
            raise ValueError("this stack has no Pipe to pause")
        with self._lock:
            if self._resume_timer is not None:
                self._resume_timer.cancel()
                self._resume_timer = None
            if seconds <= 0:
                self._resume_pipe()
                return
            self._counters[FaultKind.PIPE_PAUSE] += 1  # one per pause asked for, even one extending another
            if self._paused_since is None:
                self._paused_since = time.monotonic()
                self.pipe.pause()
            timer = threading.Timer(seconds, self._resume_from_timer)
            timer.daemon = True
            self._resume_timer = timer
            timer.start()

    def _resume_from_timer(self) -> None:
        with self._lock:
            self._resume_timer = None
            self._resume_pipe()

    def _resume_pipe(self) -> None:
        if self._paused_since is not None:
            self._paused_seconds += time.monotonic() - self._paused_since
            self._paused_since = None
        if self.pipe is not None:
            self.pipe.resume()

    # ------------------------------------------------------------------------------------------ the knobs

    def configure(self, changes: dict[str, Any]) -> None:
        """Apply a `POST /_local/faults` document. ValueError (nothing changed) when any part is invalid."""
        unknown = sorted(set(changes) - _RATE_FIELDS - _SETTINGS)
        if unknown:
            raise ValueError(f"unknown fault setting(s): {', '.join(unknown)}")
        rates = self.rates.updated({name: value for name, value in changes.items() if name in _RATE_FIELDS})
        seed = changes.get("seed", self.seed)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError("seed must be an integer")
        redelivery = _non_negative(
            "crash_redelivery_seconds",
            changes.get("crash_redelivery_seconds", self.crash_redelivery_seconds),
            limit=MAX_CRASH_REDELIVERY_SECONDS,
        )
        pause = changes.get("pipe_pause_seconds")
        if pause is not None:
            pause = _non_negative("pipe_pause_seconds", pause, limit=MAX_PIPE_PAUSE_SECONDS)
            if self.pipe is None:
                raise ValueError("this stack has no Pipe to pause")
        gateway_changes = changes.get("gateway")
        gateway = None
        if gateway_changes is not None:
            if not isinstance(gateway_changes, dict):
                raise ValueError("gateway must be an object of the simulator's fault knobs")
            if self.simulator is None:
                raise ValueError("this stack has no gateway simulator")
            gateway = self.simulator.faults.updated(gateway_changes)  # validates; raises ValueError
        with self._lock:
            if "seed" in changes:
                self.seed = seed
                self._occurrences.clear()
                self._reseed_simulator(seed)
            self.rates = rates
            self.crash_redelivery_seconds = redelivery
        if gateway is not None and self.simulator is not None:
            self.simulator.set_faults(gateway)
        if pause is not None:
            self.pause_pipe(pause)

    def _reseed_simulator(self, seed: int) -> None:
        # The simulator draws its faults from its own Random (seeded once, at start-up); a chaos run reseeds it so
        # that its sequence of draws follows the run's seed too.
        draws = getattr(self.simulator, "_chaos", None)
        if isinstance(draws, random.Random):
            draws.seed(seed + 1)

    def all_off(self) -> None:
        with self._lock:
            self.rates = FaultRates()
            if self._resume_timer is not None:
                self._resume_timer.cancel()
                self._resume_timer = None
            self._resume_pipe()
        if self.simulator is not None:
            self.simulator.set_faults(error_rate=0, throttle_rate=0, slow_rate=0, slow_seconds=0, unknown_fetches=0)

    def counters(self) -> dict[str, int]:
        with self._lock:
            counts = dict(self._counters)
        stats = self.simulator.stats() if self.simulator is not None else {}
        for kind, name in _GATEWAY_COUNTERS.items():
            counts[kind] = int(stats.get(name, 0))
        return {str(kind): value for kind, value in counts.items()}

    def describe(self) -> dict[str, Any]:
        with self._lock:
            paused_seconds = self._paused_seconds
            if self._paused_since is not None:
                paused_seconds += time.monotonic() - self._paused_since
            document: dict[str, Any] = {
                "seed": self.seed,
                **asdict(self.rates),
                "crash_redelivery_seconds": self.crash_redelivery_seconds,
                "pipe_paused": self.pipe.paused if self.pipe is not None else False,
                "pipe_paused_seconds": round(paused_seconds, 3),
            }
        document["gateway"] = asdict(self.simulator.faults) if self.simulator is not None else None
        document["counters"] = self.counters()
        document["processor"] = {
            "max_attempts": self.max_attempts,
            "gateway_read_timeout_seconds": READ_TIMEOUT_SECONDS,
        }
        return document

    def admin_route(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The `/_local/faults` route of the local API server: (status, JSON document)."""
        if path.rstrip("/") != ADMIN_PATH:
            return 404, {"error": "no such local route"}
        if method == "GET":
            return 200, self.describe()
        if method == "DELETE":
            self.all_off()
            return 200, self.describe()
        if method != "POST":
            return 405, {"error": "method not allowed"}
        try:
            changes = json.loads(body.decode("utf-8") or "{}")
        except (UnicodeDecodeError, ValueError):
            return 400, {"error": "the body must be JSON"}
        if not isinstance(changes, dict):
            return 400, {"error": "the body must be a JSON object"}
        try:
            self.configure(changes)
        except ValueError as error:
            return 400, {"error": str(error)}
        return 200, self.describe()


class _ThrottlingDynamoDB:
    """A DynamoDB client whose PutItem and TransactWriteItems may answer as throttled DynamoDB does; everything else
    passes through."""

    def __init__(self, client: Callable[[], DynamoDBClient], injector: FaultInjector) -> None:
        self._client = client
        self._injector = injector

    def put_item(self, **kwargs: Any) -> Any:
        pk = str(kwargs.get("Item", {}).get("pk", {}).get("S", ""))
        if self._injector.should_inject(FaultKind.INGEST_THROTTLE, pk):
            response: Any = {
                "Error": {
                    "Code": "ProvisionedThroughputExceededException",
                    "Message": "The level of configured provisioned throughput for the table was exceeded "
                    "(injected by the local stack)",
                },
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
            raise ClientError(response, "PutItem")
        return self._client().put_item(**kwargs)

    def transact_write_items(self, **kwargs: Any) -> Any:
        """A delivery of several events is one TransactWriteItems (shared/ingest_batch.py): throttled, DynamoDB
        cancels the whole transaction and names the throttled action's reason (`ThrottlingError`, the other
        actions `None`; TransactWriteItems API reference, CancellationReasons). Nothing is written."""
        actions = kwargs.get("TransactItems", [])
        first = actions[0].get("Put", {}).get("Item", {}) if actions else {}
        pk = str(first.get("pk", {}).get("S", ""))
        if actions and self._injector.should_inject(FaultKind.INGEST_THROTTLE, pk):
            reasons = [{"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity for the table"}]
            reasons += [{"Code": "None"}] * (len(actions) - 1)
            response: Any = {
                "Error": {
                    "Code": "TransactionCanceledException",
                    "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                    "(injected by the local stack)",
                },
                "CancellationReasons": reasons,
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
            raise ClientError(response, "TransactWriteItems")
        return self._client().transact_write_items(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client(), name)


class _CrashingProcessingStore(ProcessingStore):
    """The processor's store, whose settle transaction may be preceded or followed by the invocation's death."""

    def __init__(self, inner: ProcessingStore, injector: FaultInjector) -> None:  # not super().__init__: a copy
        # Exactly the inner store's configuration (tables, client, outbox, whatever it holds): every method but
        # `settle` runs as the inner store would.
        self.__dict__.update(vars(inner))
        self._inner = inner
        self._injector = injector

    def settle(
        self,
        event_pk: str,
        outcome: EventStatus,
        *,
        now: str,
        note: str,
        payment: Payment | None = None,
        expected_version: int | None = None,
        ignored_reason: IgnoredReason | None = None,
        verify_item: dict[str, Any] | None = None,
        confirms: bool = False,
    ) -> None:
        if self._injector.should_inject(FaultKind.CRASH_BEFORE_COMMIT, event_pk):
            raise InjectedCrash(f"before the transaction of {event_pk}")
        self._inner.settle(
            event_pk,
            outcome,
            now=now,
            note=note,
            payment=payment,
            expected_version=expected_version,
            ignored_reason=ignored_reason,
            verify_item=verify_item,
            confirms=confirms,
        )
        if self._injector.should_inject(FaultKind.CRASH_AFTER_COMMIT, event_pk):
            raise InjectedCrash(f"after the transaction of {event_pk}, before the acknowledgement")


def install(
    *,
    simulator: GatewaySimulator | None,
    pipe: StreamPipe | None,
    queue_mapping: QueueMapping | None,
    queue_url: str | None,
) -> FaultInjector:
    """Wire an injector (every fault off) into a started local stack's parts: the ingest and the processor run with
    the roots built here with its Wrap (installed as their handlers' roots: shared/roots.py `Root.install`), the
    processor's invocations (`queue_mapping`) through `wrap_processor_handler`, the Pipe and the gateway simulator
    under its knobs. Call before the API server starts serving."""
    import boto3  # noqa: PLC0415

    from shared.ingest import default_ingest_service, ingest_service_from_environ  # noqa: PLC0415
    from shared.process.app import default_processor, processor_from_environ  # noqa: PLC0415

    injector = FaultInjector(
        simulator=simulator,
        pipe=pipe,
        sqs=boto3.session.Session().client("sqs"),
        queue_url=queue_url,
        max_attempts=int(os.environ.get(definitions.ENV_MAX_ATTEMPTS) or definitions.MAX_PROCESSING_ATTEMPTS),
    )
    default_ingest_service.install(ingest_service_from_environ(wrap=injector.wrap_ingest))
    default_processor.install(processor_from_environ(wrap=injector.wrap_processor))
    if queue_mapping is not None:
        queue_mapping.handler = injector.wrap_processor_handler(queue_mapping.handler)
    return injector
