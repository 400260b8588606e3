"""The local outbox publisher: the outbox table's stream -> the published events (-> the forwarding URL).

In AWS, a Pipe reads the outbox stream (INSERT records only) into the stack's EventBridge bus. Locally this reads
the same stream with the same filter (`definitions.OUTBOX_PIPE_FILTER_PATTERN`) and:
- keeps every published event, in order, in `published` (the outbox table itself holds them for 7 days too:
  `inbox outbox list`);
- when `INBOX_FORWARD_URL` is set, POSTs each one there, signed with Standard Webhooks (shared/forwarding.py),
  retrying with exponential backoff.

What it forwards with is the forwarder Lambda's composition root (shared/forwarding.py `build_forwarder`, a
`ForwarderRoot`), built by the local stack from the same settings the deployed forwarder gets: the forwarder, its
signing pair read from the (embedded) Secrets Manager and cached as Powertools caches it, the Lambda's attempts and
timeout per delivery, every attempt recorded in the forwarding log; and the checkpoints. Without forwarding the
publisher keeps its checkpoints in the same control table, without a root.

Ordering and blocking: records are handed over in stream order, which keeps each payment's records in sequence
order. A delivery that keeps failing blocks EVERY later event (not only its payment's): the receiver is one
endpoint, so when it is down it is down for every payment, and a strict single line never reorders and needs no
per-payment parking. Nothing is dropped: the stream chunk is read again on the next poll.

Exactly once in effect, in order: shared/forwarding.py's `forward_in_order` with its control-table checkpoints,
the very code the forwarder Lambda runs in AWS. The root hands out a forwarder and checkpoints for every chunk, as
to the Lambda for every batch: the checkpoints read afresh (an `inbox outbox resend` may have moved them
meanwhile), the signing pair as Secrets Manager holds it (a rotation is picked up within the cache's five minutes).

Giving up, as the forwarding Pipe does: the events are handed over in batches of `FORWARD_PIPE_BATCH_SIZE`; a
batch the endpoint keeps refusing is retried `max_retry_attempts` times (INBOX_FORWARD_MAX_RETRY_ATTEMPTS,
default the Pipe's FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS), then given up (the Pipe sends it to its dead-letter
queue) and the next batch goes. What was given up stays in the outbox for `inbox outbox resend`.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from moto.events.models import EventPattern

from inbox_local.polling import IdleBackoff
from inbox_local.stream_reader import StreamReader
from shared import definitions
from shared.forwarding import DeliveryFailed, ForwardCheckpoints, Forwarder, ForwarderRoot, forward_in_order
from shared.payments.publishing import outbox_events
from shared.settings import integer


def local_forward_max_retry_attempts(environ: dict[str, str] | None = None) -> int:
    """INBOX_FORWARD_MAX_RETRY_ATTEMPTS (tests set it low), else the forwarding Pipe's own number."""
    return integer(
        os.environ if environ is None else environ,
        definitions.ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS,
        definitions.FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS,
        low=0,
    )


class OutboxPublisher:
    def __init__(
        self,
        session: Any,
        stream_arn: str,
        control_table: str,
        *,
        forwarding: ForwarderRoot | None = None,
        poll_seconds: float = 0.2,
        max_retry_attempts: int = definitions.FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS,
    ) -> None:
        """`forwarding`: the forwarder's root when events are forwarded (None: published only); its settings name
        the control table then, `control_table` otherwise."""
        self.reader = StreamReader(session.client("dynamodbstreams"), stream_arn)
        self.forwarding = forwarding
        self._dynamodb = session.client("dynamodb")
        self._control_table = control_table
        self.checkpoints = self._fresh_checkpoints()
        # The current chunk's, from the root (None until the first chunk, and without forwarding); its attempts and
        # backoff also space the rounds after a failed one.
        self.forwarder: Forwarder | None = None
        self.poll_seconds = poll_seconds
        self.pattern = EventPattern.load(json.dumps(definitions.OUTBOX_PIPE_FILTER_PATTERN))
        self.published: list[dict[str, Any]] = []  # the events, as published (without the partition key)
        self.failures = 0
        self.max_retry_attempts = max_retry_attempts
        self.given_up: list[dict[str, Any]] = []  # events of the batches given up (the Pipe's dead letters)
        self._failed_rounds: dict[str, int] = {}  # failed rounds per batch, by its first event's id
        self._lock = threading.Lock()
        # Idle, the pause grows to MAX_IDLE_PAUSE_SECONDS; the queue mapping nudges it after every batch processed
        # (the processor's transactions write the outbox), so a new transition does not wait for the pause.
        self.idle = IdleBackoff(poll_seconds)

    # ---------------------------------------------------------------------------------------------- checkpoints

    def checkpoint(self, pk: str) -> int:
        return self.checkpoints.delivered(pk)

    def save_checkpoint(self, pk: str, sequence: int) -> None:
        self.checkpoints.save(pk, sequence)

    def _fresh_checkpoints(self) -> ForwardCheckpoints:
        if self.forwarding is not None:
            return self.forwarding.checkpoints()
        return ForwardCheckpoints(self._dynamodb, self._control_table)

    # -------------------------------------------------------------------------------------------------- publish

    def publish(self, event: dict[str, Any]) -> None:
        """Hand one event over (POST it when forwarding). Raises DeliveryFailed to be tried again later."""
        if self.forwarder is not None:
            self.forwarder.deliver(event)

    def _consume(self, records: list[dict[str, Any]]) -> None:
        # The Pipe's filter, then what the Lambdas do with a batch (decode, check the contract).
        events = outbox_events(
            record
            for record in records
            if self.pattern.matches_event(record)  # type: ignore[arg-type]  # a stream record, not an event
        )
        if not events:
            return  # nothing to hand over: no secret read, no checkpoint read (as the Lambda)
        # What the root hands out per chunk, like the Lambda's per batch: checkpoints a resend may have moved, the
        # signing pair as Secrets Manager holds it now (SecretUnavailable: the chunk is read again).
        self.checkpoints = self._fresh_checkpoints()
        if self.forwarding is not None:
            self.forwarder = self.forwarding.forwarder()
        batch_size = definitions.FORWARD_PIPE_BATCH_SIZE
        for start in range(0, len(events), batch_size):
            batch = events[start : start + batch_size]
            try:
                # Raises DeliveryFailed: this chunk is read again, and from there on nothing later goes out first.
                forward_in_order(
                    batch,
                    deliver=self.publish,
                    # Looked up at call time (not bound now): tests replace save_checkpoint to crash between the two.
                    delivered=lambda pk: self.checkpoint(pk),  # noqa: PLW0108
                    save=lambda pk, sequence: self.save_checkpoint(pk, sequence),  # noqa: PLW0108
                    on_delivered=self._published,
                )
            except DeliveryFailed:
                if not self._give_up(batch):
                    raise
            else:
                self._failed_rounds.pop(str(batch[0]["id"]), None)

    def _give_up(self, batch: list[dict[str, Any]]) -> bool:
        """Count a failed round of `batch`; True once it has failed more than `max_retry_attempts` retries allow
        (the Pipe's dead-lettering): the caller then moves on to the next batch."""
        key = str(batch[0]["id"])
        rounds = self._failed_rounds.get(key, 0) + 1
        if rounds <= self.max_retry_attempts:
            self._failed_rounds[key] = rounds
            return False
        self._failed_rounds.pop(key, None)
        undelivered = [event for event in batch if int(event["sequence"]) > self.checkpoint(str(event["pk"]))]
        with self._lock:
            self.given_up += undelivered
        print(
            f"outbox: gave up {len(undelivered)} event(s) after {rounds} failed rounds, like the forwarding Pipe "
            "(`inbox outbox list --undelivered`, `inbox outbox resend`)",
            flush=True,
        )
        return True

    def _published(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.published.append(event)

    def poll_once(self) -> int:
        """Publish what the stream holds now. Returns how many stream records were read (published or not)."""
        return self.reader.poll(self._consume)

    def drain(self, *, max_polls: int = 50) -> None:
        """Poll until a poll reads nothing (tests). Delivery failures propagate."""
        for _ in range(max_polls):
            if not self.poll_once():
                return

    def nudge(self) -> None:
        """The outbox was just written (a batch was processed): look at its stream now."""
        self.idle.nudge()

    def run(self, stop: threading.Event) -> None:
        consecutive_failures = 0
        while not stop.is_set():
            wait = self.poll_seconds
            try:
                read = self.poll_once()
                consecutive_failures = 0
                if not read:
                    self.idle.idle()
                    continue
                self.idle.reset()
            except DeliveryFailed as error:
                self.failures += 1
                consecutive_failures += 1
                # The backoff carries across polls: a receiver that stays down is asked less and less often
                # (up to the forwarder's cap), not hammered with a fresh round of attempts every poll.
                wait = self._pause_after(consecutive_failures)
                print(
                    f"outbox: delivery failed, retrying in {wait:.0f} s (nothing after it goes first): {error}",
                    flush=True,
                )
            except Exception as error:
                self.failures += 1
                print(f"outbox: {type(error).__name__}: {error}", flush=True)
            stop.wait(wait)

    def _pause_after(self, consecutive_failures: int) -> float:
        if self.forwarder is None:
            return self.poll_seconds
        forwarder = self.forwarder
        # Each failed round already made max_attempts tries; continue the exponential series from there.
        attempt = consecutive_failures * forwarder.max_attempts
        return max(self.poll_seconds, forwarder.backoff.delay(attempt))
