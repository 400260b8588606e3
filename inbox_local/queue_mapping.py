"""Emulation of the SQS -> Lambda event source mapping: batches, partial batch responses, concurrency.

Visibility, backoff and redrive are SQS's own (moto's), exactly as the processor drives them in AWS. Each
invocation is held to the function's timeout as Lambda holds it (inbox_local/invocation.py): one that overruns is
a failed invocation, so nothing of its batch is deleted and every message comes back after its visibility timeout.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from inbox_local.aws_limits import LAMBDA_FIFO_MAX_BATCH_SIZE
from inbox_local.config import REGION
from inbox_local.invocation import FunctionTimedOut, invoke
from inbox_local.polling import MAX_IDLE_PAUSE_SECONDS, IdleBackoff

Handler = Callable[[dict[str, Any], Any], Any]
# The idle pause of the pollers after the first (seconds).
LATE_POLLER_IDLE_CAP = 2.0


def lambda_sqs_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A received message as Lambda hands it to the function."""
    attributes = dict(message.get("Attributes", {}))
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(message["Body"].encode()).hexdigest(),  # noqa: S324 - SQS's own checksum
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": REGION,
    }


class QueueMapping:
    def __init__(
        self,
        session: Any,
        queue_url: str,
        handler: Handler,
        *,
        batch_size: int,
        concurrency: int,
        idle_seconds: float = 0.05,
        function: str = "process",
        timeout_seconds: float | None = None,
    ) -> None:
        self._sqs = session.client("sqs")
        self.queue_url = queue_url
        self.queue_arn = self._sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        if queue_url.endswith(".fifo") and not 1 <= batch_size <= LAMBDA_FIFO_MAX_BATCH_SIZE:
            # What CreateEventSourceMapping answers for a FIFO queue: the stack could not deploy this mapping.
            raise ValueError(
                f"BatchSize {batch_size} refused: an SQS FIFO event source takes 1 to {LAMBDA_FIFO_MAX_BATCH_SIZE}"
            )
        self.handler = handler
        self.function = function
        self.timeout_seconds = timeout_seconds  # None: the function's own (inbox_local/invocation.py)
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.idle_seconds = idle_seconds
        self.invocations = 0
        self.crashes = 0
        self.timeouts = 0
        self._lock = threading.Lock()
        self._pollers: list[IdleBackoff] = []
        # Called after every batch the function handled (the runtime nudges the outbox publisher with it: the
        # processor's transactions write the outbox).
        self.on_batch: Callable[[], None] | None = None

    def poll_once(self) -> int:
        """One receive + invoke + delete cycle. Returns how many messages were received."""
        response = self._sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=self.batch_size,
            # Short polls, with our own pause when idle: moto's long poll spins over the whole queue while every
            # visible message belongs to a FIFO group already in flight, starving everything else.
            WaitTimeSeconds=0,
            MessageSystemAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return 0
        event = {"Records": [lambda_sqs_record(message, self.queue_arn) for message in messages]}
        with self._lock:
            self.invocations += 1
        try:
            result = invoke(self.function, self.handler, event, timeout_seconds=self.timeout_seconds)
        except FunctionTimedOut as error:  # a failed invocation: its whole batch comes back after its visibility
            with self._lock:
                self.timeouts += 1
            print(f"processor: {error}", flush=True)
            return len(messages)
        except Exception as error:  # the whole batch fails: every message comes back after its visibility
            with self._lock:
                self.crashes += 1
            print(f"processor crashed: {type(error).__name__}: {error}", flush=True)
            return len(messages)
        failed = {failure["itemIdentifier"] for failure in (result or {}).get("batchItemFailures", [])}
        done = [
            {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
            for index, message in enumerate(messages)
            if message["MessageId"] not in failed
        ]
        if done:
            self._sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=done)
        return len(messages)

    def nudge(self, messages: int = 1) -> None:
        """`messages` were just sent to the queue: wake as many pollers as their batches need (at least one)."""
        with self._lock:
            pollers = list(self._pollers)
        for idle in pollers[: max(1, -(-messages // self.batch_size))]:
            idle.nudge()

    def run(self, stop: threading.Event) -> None:
        # The first poller idles at the usual cap; the others, LATE_POLLER_IDLE_CAP_SECONDS: four pollers of an idle
        # queue cost four requests per pause. A nudge (the Pipe sent messages) or a message found wakes them.
        with self._lock:
            first = not self._pollers
            idle = IdleBackoff(self.idle_seconds, cap_seconds=MAX_IDLE_PAUSE_SECONDS if first else LATE_POLLER_IDLE_CAP)
            self._pollers.append(idle)
        while not stop.is_set():
            try:
                if self.poll_once() == 0:
                    idle.idle()
                else:
                    idle.reset()
                    if self.on_batch is not None:
                        self.on_batch()
                    if first:  # a busy queue: every poller at the base pace
                        self.nudge(self.batch_size * self.concurrency)
            except Exception as error:
                print(f"queue mapping: {type(error).__name__}: {error}", flush=True)
                stop.wait(1)
