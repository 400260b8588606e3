"""Processing one dispatched event: load, prepare (refetch), apply (one transaction), settle.

Exactly once in effect: the inbox item only leaves `pending` inside the transaction that applies the payment
change, and that transaction is conditioned on the item still being pending and on the payment's version. A
redelivered message finds the item settled and does nothing; a crash anywhere before the commit leaves the
item pending and the message comes back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum

from shared import definitions
from shared.backoff import MAX_BACKOFF_SECONDS
from shared.definitions import VERIFY_EVENT_TYPE
from shared.gateway.base import GatewayRejected, GatewayUnavailable, ResourceNotFound
from shared.inbox.lifecycle import EventStatus, IgnoredReason, WaitingFor
from shared.inbox.model import VERIFY_ID_PREFIX, build_verify_item, iso_utc, resource_key
from shared.inbox.store import EventAlreadySettled, StorageUnavailable
from shared.observability import count_for_provider, count_ignored, count_outcome, logger
from shared.payments.model import Payment
from shared.payments.store import ProcessingStore, VersionConflict
from shared.process.coalesce import Refetches, SharesRefetches
from shared.process.confirm import PayloadConfirmation
from shared.process.decide import Apply, Decision, NeedsRefetch, Observation, Touch, Verification, decide
from shared.process.messages import (
    Delivery,
    DispatchMessage,
    ReconcileMessage,
    Reconciler,
    RetryQueue,
    backoff_seconds,
    wait_seconds,
)
from shared.process.router import EventHandler, InboxEvent, NothingToApply, Router, UnprocessableEvent

MAX_DECISION_ROUNDS = 5  # re-decide after a version conflict at most this often, then let the queue retry
# The reads of a payment an event is decided on (`_decide_and_settle`): eventually consistent first (half a read
# unit), then consistent ones, MAX_DECISION_ROUNDS of them at most, as many as version conflicts ask for. A stale
# first copy costs a round of its own, not one of the rounds kept for events of the payment committing meanwhile.
DECISION_READS: tuple[bool, ...] = (False,) + (True,) * MAX_DECISION_ROUNDS
# How many payments' last written versions an instance remembers (a few batches' worth of FIFO groups).
WRITTEN_VERSIONS_KEPT = 1024
# A settled event's logged reason (a decision's, or an error's) is cut here: bounded bytes per line.
MAX_LOGGED_REASON_CHARS = 160


class Outcome(StrEnum):
    PROCESSED = "processed"
    IGNORED = "ignored"
    FAILED = "failed"
    SKIPPED = "skipped"  # the item was not pending any more: a redelivery, nothing to do


class RetryLater(Exception):
    """The message must come back later (its visibility was already set to the backoff)."""


def _pending(item: dict[str, object] | None) -> bool:
    return item is not None and item.get("status") == EventStatus.PENDING.value


def is_verification(event: InboxEvent) -> bool:
    """Whether the item is the inbox's own verification of a payment (shared/inbox/model.py `build_verify_item`): its
    type, and a provider that may confirm from the payload (the only ones that get one). A sender's event that names
    itself so (a configured generic sender can name any type) is an ordinary event of an unrouted type."""
    if event.event_type != VERIFY_EVENT_TYPE or not event.event_id.startswith(VERIFY_ID_PREFIX):
        return False
    try:
        return definitions.provider_entry(event.provider).confirms_from_payload
    except KeyError:
        return False


class EventProcessor:
    def __init__(
        self,
        store: ProcessingStore,
        router: Router,
        queue: RetryQueue,
        *,
        max_attempts: int,
        retry_base_seconds: float,
        clock: Callable[[], float] = time.time,
        reconciler: Reconciler | None = None,
        confirmation: PayloadConfirmation | None = None,
    ) -> None:
        self.store = store
        self.router = router
        self.queue = queue
        self.max_attempts = max_attempts
        self.retry_base_seconds = retry_base_seconds
        self.clock = clock
        self.reconciler = reconciler
        # Which events are applied from their signed payload (shared/process/confirm.py); None: none, every event
        # waits for its refetch. Verification items are processed either way (they need the reconciler).
        self.confirmation = confirmation
        # The payment versions this instance committed last (key -> version, the most recent WRITTEN_VERSIONS_KEPT):
        # an eventually consistent read of a payment right after our own write (the next event of its FIFO group in
        # the same batch) may return the copy before it, and deciding on that would cost a refused transaction.
        self._written_versions: dict[str, int] = {}
        self._written_lock = threading.Lock()  # a batch's groups run on threads of their own

    def _now(self) -> str:
        return iso_utc(datetime.fromtimestamp(self.clock(), tz=UTC))

    def handle(self, message: DispatchMessage, delivery: Delivery, refetches: Refetches | None = None) -> Outcome:
        """Process one message. Returns how it ended; raises RetryLater when it must come back.

        An unexpected crash still counts as one of the event's attempts, so a poison event ends failed (and in
        the dead-letter queue) instead of blocking its payment's group forever.

        `refetches`: the gateway answers of the earlier messages of this message's FIFO group in this batch
        (shared/process/coalesce.py). A failure or a retry is a boundary: what was fetched before it is forgotten."""
        try:
            outcome = self._handle(message, delivery, refetches)
        except BaseException:
            if refetches is not None:
                refetches.forget()
            raise
        if outcome is Outcome.FAILED and refetches is not None:
            refetches.forget()
        return outcome

    def _handle(self, message: DispatchMessage, delivery: Delivery, refetches: Refetches | None) -> Outcome:
        try:
            return self.process(message, delivery, refetches)
        except RetryLater:
            raise
        except Exception as crash:
            logger.exception("processing crashed", extra={"pk": message.pk})
            item = self.store.load_event(message.pk)
            if item is None or item.get("status") != EventStatus.PENDING.value:
                raise
            return self._retry(InboxEvent.from_item(item), delivery, f"crash: {type(crash).__name__}: {crash}")

    def process(self, message: DispatchMessage, delivery: Delivery, refetches: Refetches | None = None) -> Outcome:
        """The processing steps, without the crash accounting of `handle`.

        The item is read eventually consistently (half a read unit): every write the processing makes to it is
        conditioned on its still being pending, so a stale "pending" copy of an item settled meanwhile ends in a
        refused write (SKIPPED, as a consistent read would have), and the event's own data never changes after the
        ingest's put. A copy that says absent or settled could predate the write that dispatched this message (the
        ingest's put, a replay), so that is read again consistently before the message is skipped."""
        item = self.store.load_event(message.pk, consistent=False)
        if not _pending(item):
            item = self.store.load_event(message.pk)
        if item is None or not _pending(item):
            return Outcome.SKIPPED
        event = InboxEvent.from_item(item)
        try:
            if is_verification(event):
                return self._verify(event, delivery, refetches)
            handler = self.router.resolve(event.provider, event.event_type)
            if handler is None:
                return self._ignore(event, f"no handler for {event.event_type!r}", IgnoredReason.UNROUTED_TYPE)
            return self._prepare_and_apply(event, handler, delivery, refetches, item.get("expires_at"))
        except EventAlreadySettled:
            return Outcome.SKIPPED
        except (StorageUnavailable, VersionConflict) as error:
            return self._retry(event, delivery, f"{type(error).__name__}: {error}")

    def _prepare_and_apply(
        self,
        event: InboxEvent,
        handler: EventHandler,
        delivery: Delivery,
        refetches: Refetches | None,
        expires_at: object = None,
    ) -> Outcome:
        # Behind (or `always`): the signed payload confirms the payment now, and a verification item follows.
        payload = self.confirmation.now(event, now=self.clock()) if self.confirmation is not None else None
        if payload is not None:
            confirmed = self._apply_payload(event, payload, expires_at)
            if confirmed is not None:
                return confirmed

        def prepare() -> Observation:
            # Outside any transaction: may call the gateway (or reuse this batch's answer for this payment).
            if refetches is not None and isinstance(handler, SharesRefetches):
                return handler.prepare_sharing(event, refetches)
            return handler.prepare(event)

        seen = self._observe(event, delivery, prepare, expires_at=expires_at)
        if isinstance(seen, Outcome):
            return seen
        return self._decide_and_settle(event, seen, handler.apply)

    def _observe(
        self,
        event: InboxEvent,
        delivery: Delivery,
        prepare: Callable[[], Observation],
        *,
        expires_at: object = None,
        payload_instead: bool = True,
    ) -> Observation | Outcome:
        """The handler's observation, or how the event ended (or RetryLater) when none could be had. A wait the
        source's rate limit asks for that is longer than the source's `confirm_behind_seconds` confirms the event
        from its payload instead (`payload_instead`, for a source that confirms from payloads)."""
        try:
            return prepare()
        except NothingToApply as nothing:
            return self._ignore(event, str(nothing), nothing.reason)
        except (UnprocessableEvent, GatewayRejected) as error:
            self.store.mark_failed(event.pk, f"{type(error).__name__}: {error}", now=self._now(), count_attempt=True)
            self._count(event, Outcome.FAILED, type(error).__name__)
            return Outcome.FAILED
        except GatewayUnavailable as error:
            if not error.counts_as_attempt:  # a wait (open circuit, rate limit): delay, spend no attempt
                if payload_instead and not error.circuit_open and self.confirmation is not None:
                    payload = self.confirmation.instead_of_waiting(event, error.retry_after)
                    confirmed = self._apply_payload(event, payload, expires_at) if payload is not None else None
                    if confirmed is not None:
                        return confirmed
                delay = wait_seconds(error.retry_after, self.retry_base_seconds)
                self.queue.delay(delivery, delay)
                self._note_wait(event, delay, error)
                logger.info("event waits", extra={"pk": event.pk, "delay_s": delay, "reason": str(error)})
                raise RetryLater(str(error)) from error
            return self._retry(event, delivery, f"GatewayUnavailable: {error}", error.retry_after)
        except ResourceNotFound as error:
            return self._retry(event, delivery, f"ResourceNotFound: {error}")

    def _decide_and_settle(
        self,
        event: InboxEvent,
        seen: Observation,
        apply: Callable[..., Decision],
        *,
        verify_expires_at: object = None,
        verifying: bool = False,
    ) -> Outcome:
        """Decide on the stored payment and commit the decision with the event's settlement (one transaction),
        deciding again when another event of the payment committed first. With `verify_expires_at`, `seen` is a
        payload observation: a decision that leaves the payment newly unverified also puts its verification item.
        `verifying`: the event is a verification item, whose corrections are counted (a webhook's refetch that finds
        a new status announces a change, not a correction). NeedsRefetch (a payload that cannot be ordered)
        propagates.

        The first read of the payment is eventually consistent (half a read unit; DECISION_READS). A decision to
        write the payment is conditioned on the version it read (absent: on there being none), so a stale copy
        ends in a refused write (VersionConflict) and a consistent read decides again, in a round of its own. A
        decision that writes no payment (Ignore: only the inbox item is settled, on no condition of the payment)
        or that cannot order a payload (NeedsRefetch) is taken from a consistent read only: a stale copy could
        ignore an event the current payment takes (a refund refused from a status the payment has left)."""
        key = resource_key(seen.source, seen.resource_id)
        for consistent in DECISION_READS:
            current = self.store.load_payment(key, consistent=consistent)
            if not consistent and self._older_than_written(key, current):
                continue  # certainly stale: older than what this instance wrote, so read it consistently
            now = self._now()
            try:
                decision = apply(current, seen, now=now)
            except NeedsRefetch:
                if consistent:
                    raise
                continue  # decided on what may be a stale copy: decide again on a consistent read
            if not consistent and not isinstance(decision, Apply | Touch):
                continue  # the same: an Ignore writes nothing that a stale copy would be refused by
            try:
                if isinstance(decision, Apply):
                    verify = self._verify_item(current, decision.payment, now, verify_expires_at)
                    self.store.settle(
                        event.pk,
                        EventStatus.PROCESSED,
                        now=now,
                        note=decision.reason,
                        payment=decision.payment,
                        expected_version=current.version if current else None,
                        verify_item=verify,
                    )
                    self._wrote(key, decision.payment)
                    self._count(event, Outcome.PROCESSED, decision.reason)
                    self._count_verification(decision, event.provider, corrections=verifying)
                    return Outcome.PROCESSED
                if isinstance(decision, Touch) and decision.verification is Verification.CONFIRMED:
                    # The API confirmed what a payload applied: the event did its work (processed, not ignored: it
                    # is no stale or repeated delivery), and payment.verified is published.
                    self.store.settle(
                        event.pk,
                        EventStatus.PROCESSED,
                        now=now,
                        note=decision.reason,
                        payment=decision.payment,
                        expected_version=decision.previous.version,
                        confirms=True,
                    )
                    self._wrote(key, decision.payment)
                    self._count(event, Outcome.PROCESSED, decision.reason)
                    return Outcome.PROCESSED
                if isinstance(decision, Touch):
                    self.store.settle(
                        event.pk,
                        EventStatus.IGNORED,
                        now=now,
                        note=decision.reason,
                        payment=decision.payment,
                        expected_version=decision.previous.version,
                        ignored_reason=decision.code,
                    )
                    self._wrote(key, decision.payment)
                    self._count(event, Outcome.IGNORED, decision.reason, decision.code)
                    self._count_verification(decision, event.provider, corrections=verifying)
                    return Outcome.IGNORED
                return self._ignore(event, decision.reason, decision.code)
            except VersionConflict:
                continue  # another event of this payment committed first: decide again on its result
        raise VersionConflict(f"{resource_key(seen.source, seen.resource_id)} kept changing")

    def _older_than_written(self, key: str, read: Payment | None) -> bool:
        with self._written_lock:
            written = self._written_versions.get(key)
        return written is not None and (read.version if read is not None else 0) < written

    def _wrote(self, key: str, payment: Payment) -> None:
        with self._written_lock:
            self._written_versions.pop(key, None)  # re-inserted last: the oldest entry is the first one
            self._written_versions[key] = payment.version
            while len(self._written_versions) > WRITTEN_VERSIONS_KEPT:
                self._written_versions.pop(next(iter(self._written_versions)))

    def _apply_payload(self, event: InboxEvent, payload: Observation, expires_at: object) -> Outcome | None:
        """Confirm the payment from the event's signed payload (event-time order, the state machine), unverified.
        None when the payload cannot be ordered against the payment's last event (the same second of event time
        and statuses that do not tell which came last): the event then waits for its refetch like any other. The
        event's note (and its one log line) says the payload decided."""

        def from_payload(current: Payment | None, seen: Observation, *, now: str) -> Decision:
            decision = decide(current, seen, now=now)
            return decision._replace(reason=f"from the signed payload: {decision.reason}")

        try:
            return self._decide_and_settle(
                event, payload, from_payload, verify_expires_at=expires_at if isinstance(expires_at, int) else 0
            )
        except NeedsRefetch as ambiguous:
            logger.info("payload not confirmed: refetch", extra={"pk": event.pk, "reason": str(ambiguous)})
            return None

    def _verify_item(
        self, current: Payment | None, payment: Payment, now: str, expires_at: object
    ) -> dict[str, object] | None:
        """The verification item of a payment that a payload just made unverified, when it starts a period of being
        unverified (an unverified payment already has one on its way). None for any other write."""
        if expires_at is None or payment.verified:
            return None
        if current is not None and not current.verified and current.verification_refused is None:
            return None  # still unverified since an earlier payload: its verification item is already queued
        return build_verify_item(
            source=payment.source,
            provider=payment.provider,
            resource_id=payment.resource_id,
            transitions=payment.transitions,
            account_attributes=payment.account.to_attributes() if payment.account is not None else {},
            received_at=now,
            expires_at=expires_at if isinstance(expires_at, int) and expires_at > 0 else self._verify_expiry(),
        )

    def _verify_expiry(self) -> int:
        """A verification item's TTL when its event carried none: the outbox's retention, ample for one refetch."""
        from shared.payments.outbox import OUTBOX_RETENTION_SECONDS  # noqa: PLC0415

        return int(self.clock()) + OUTBOX_RETENTION_SECONDS

    def _verify(self, event: InboxEvent, delivery: Delivery, refetches: Refetches | None) -> Outcome:
        """A verification item: refetch the payment a payload confirmed and apply what the gateway says through the
        state machine (shared/process/decide.py: confirmed, corrected, or refused and flagged). Waits for the
        source's rate limit as any event does; nothing to do when the payment was verified meanwhile (a later
        webhook's refetch did it)."""
        if not event.resource_id:
            return self._ignore(event, "verification names no payment", IgnoredReason.NO_PAYMENT)
        stored = self.store.load_payment(resource_key(event.source, event.resource_id))
        if stored is None or (stored.verified and stored.verification_refused is None):
            return self._ignore(event, "nothing to verify: the payment is verified", IgnoredReason.NO_CHANGE)
        reconciler = self.reconciler
        if reconciler is None:
            self.store.mark_failed(event.pk, "no reconciler to verify with", now=self._now(), count_attempt=True)
            self._count(event, Outcome.FAILED, "no reconciler")
            return Outcome.FAILED
        resource_id = event.resource_id

        def observe() -> Observation:
            return reconciler.observe(event.source, resource_id, account=stored.account, refetches=refetches)

        seen = self._observe(event, delivery, observe, payload_instead=False)
        if isinstance(seen, Outcome):
            return seen
        return self._decide_and_settle(event, seen, reconciler.apply, verifying=True)

    def _count_verification(self, decision: Apply | Touch, provider: str, *, corrections: bool = True) -> None:
        """A verification that corrected a payment (`corrections`: a verification proper, not a webhook's refetch,
        whose new status its webhook announces), or whose truth the state machine refused: counted (service-wide:
        each has a stack-level alarm) and logged with the payment's source."""
        if decision.verification is Verification.CORRECTED and corrections:
            count_for_provider(definitions.METRIC_PAYMENTS_CORRECTED, provider)
        elif decision.verification is Verification.REFUSED:
            count_for_provider(definitions.METRIC_VERIFICATIONS_REFUSED, provider)
        else:
            return
        logger.warning(
            "payment verification disagreed",
            extra={
                "payment": decision.payment.key,
                "source": decision.payment.source,
                "verification": decision.verification.value,
                "reason": decision.reason[:MAX_LOGGED_REASON_CHARS],
            },
        )

    def _note_wait(self, event: InboxEvent, delay: int, error: GatewayUnavailable) -> None:
        """Record on the item that it waits for its source until its message comes back, so that the sweeper does
        not take a long wait (an outage behind an open circuit, a slow rate limit) for a lost dispatch. Bookkeeping
        only: when it cannot be written, the wait goes on all the same (the sweeper may then re-dispatch the event
        once it is stale, a duplicate the processor skips)."""
        now = self.clock()
        waiting_for = WaitingFor.CIRCUIT if error.circuit_open else WaitingFor.RATE_LIMIT
        try:
            self.store.record_wait(
                event.pk,
                until=iso_utc(datetime.fromtimestamp(now + delay, tz=UTC)),
                waiting_for=waiting_for,
                now=iso_utc(datetime.fromtimestamp(now, tz=UTC)),
            )
        except EventAlreadySettled:
            pass  # settled meanwhile (a duplicate message's twin): nothing waits
        except StorageUnavailable as failure:
            logger.warning("wait not recorded", extra={"pk": event.pk, "error": type(failure).__name__})

    def _ignore(self, event: InboxEvent, note: str, reason: IgnoredReason) -> Outcome:
        """Settle an event that changes no payment: `ignored`, with its reason from the closed set."""
        self.store.settle(event.pk, EventStatus.IGNORED, now=self._now(), note=note, ignored_reason=reason)
        self._count(event, Outcome.IGNORED, note, reason)
        return Outcome.IGNORED

    def _retry(self, event: InboxEvent, delivery: Delivery, error: str, retry_after: float | None = None) -> Outcome:
        attempts = self.store.record_attempt(event.pk, error, now=self._now())
        if attempts >= self.max_attempts:
            self.store.mark_failed(event.pk, error, now=self._now(), count_attempt=False)
            self.queue.dead_letter(delivery)
            self._count(event, Outcome.FAILED, error)
            logger.warning("event failed", extra={"pk": event.pk, "attempts": attempts, "error": error})
            return Outcome.FAILED
        delay = backoff_seconds(attempts, self.retry_base_seconds)
        if retry_after:
            delay = max(delay, min(MAX_BACKOFF_SECONDS, round(retry_after)))
        self.queue.delay(delivery, delay)
        logger.info("event retry", extra={"pk": event.pk, "attempts": attempts, "delay_s": delay, "error": error})
        raise RetryLater(error)

    def reconcile(self, message: ReconcileMessage) -> Outcome:
        """Refetch a payment the sweeper found stuck (or still unverified), and apply what changed with the version
        check: the same state machine as for webhooks, so a reconciliation and a webhook never fight (whichever
        comes second finds nothing to change). Writes the payment only; nothing is written when nothing changed.

        Never retried through the queue: a delayed message would hold up this payment's webhooks in its FIFO
        group. When the gateway cannot answer, the sweeper asks again after its reconcile interval; so it does when
        the source's rate limit says "not now" (deferred: the webhooks' refetches go first)."""
        provider = message.provider
        if self.reconciler is None:
            logger.warning("reconciliation without a reconciler", extra={"payment": message.key})
            return Outcome.SKIPPED
        try:
            # Read first: only known payments are reconciled, and the stored payment names the sub-account (a
            # Stripe Connect account) the gateway must be asked within; the sweeper's index carries keys only.
            stored = self.store.load_payment(message.key)
            if stored is None:
                return Outcome.SKIPPED
            seen = self.reconciler.observe(message.source, message.resource_id, account=stored.account)
            for round_number in range(MAX_DECISION_ROUNDS):
                current = stored if round_number == 0 else self.store.load_payment(message.key)
                if current is None:
                    return Outcome.SKIPPED
                now = self._now()
                decision = self.reconciler.apply(current, seen, now=now)
                if not isinstance(decision, Apply | Touch):
                    count_for_provider("ReconciliationsUnchanged", provider)
                    logger.info("payment unchanged", extra={"payment": message.key, "reason": decision.reason})
                    return Outcome.IGNORED
                try:
                    self.store.put_payment(
                        decision.payment,
                        expected_version=current.version,
                        transition=isinstance(decision, Apply),
                        confirms=decision.verification is Verification.CONFIRMED,
                    )
                except VersionConflict:
                    continue
                self._count_verification(decision, provider)
                if isinstance(decision, Touch):  # an unverified payment confirmed (or flagged): no transition
                    logger.info("payment verified", extra={"payment": message.key, "change": decision.reason})
                    confirmed = decision.verification is Verification.CONFIRMED
                    return Outcome.PROCESSED if confirmed else Outcome.IGNORED
                count_for_provider("PaymentsReconciled", provider)
                logger.info("payment reconciled", extra={"payment": message.key, "change": decision.reason})
                return Outcome.PROCESSED
            raise VersionConflict(f"{message.key} kept changing")
        except GatewayUnavailable as error:
            if not error.counts_as_attempt:  # the source's rate limit (or its circuit) says not now: not a failure
                count_for_provider("ReconciliationsDeferred", provider)
                logger.info("reconciliation deferred", extra={"payment": message.key, "reason": str(error)})
                return Outcome.SKIPPED
            logger.warning(
                "reconciliation failed", extra={"payment": message.key, "error": f"GatewayUnavailable: {error}"}
            )
        except (
            GatewayRejected,
            ResourceNotFound,
            UnprocessableEvent,
            StorageUnavailable,
            VersionConflict,
        ) as error:
            logger.warning(
                "reconciliation failed", extra={"payment": message.key, "error": f"{type(error).__name__}: {error}"}
            )
        except Exception:
            logger.exception("reconciliation crashed", extra={"payment": message.key})
        count_for_provider("ReconciliationsFailed", provider)
        return Outcome.FAILED

    def _count(
        self, event: InboxEvent, outcome: Outcome, reason: str | None = None, ignored: IgnoredReason | None = None
    ) -> None:
        """The event's one line (docs/operations.md, "Logs"): its pk, provider, type, outcome and why; an ignored
        one is also counted by source and reason (EventsIgnored). DEBUG when processed or ignored: the settled item
        holds the same (status, note, ignored reason, time) and EventsSettled counts it (docs/cost.md, "Logs")."""
        count_outcome(outcome.value, event.provider)
        if ignored is not None:
            count_ignored(event.source, ignored.value)
        (logger.debug if outcome in (Outcome.PROCESSED, Outcome.IGNORED) else logger.info)(
            "event settled",
            extra={
                "pk": event.pk,
                "provider": event.provider,
                "type": event.event_type,
                "outcome": outcome.value,
                "reason": reason[:MAX_LOGGED_REASON_CHARS] if reason else None,
                **({"ignored_reason": ignored.value} if ignored is not None else {}),
            },
        )
