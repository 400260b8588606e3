"""Emulation of the EventBridge Pipe: inbox stream -> filter -> SQS FIFO, from the stack's own definitions.

The filter, the message group id, the deduplication id and the input template are the very values the CDK
stack gives the real Pipe (`shared.definitions`), interpreted here the way Pipes interprets them.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.events.models import EventPattern

from inbox_local.aws_limits import SQS_MAX_BATCH_ENTRIES
from inbox_local.polling import IdleBackoff
from inbox_local.stream_reader import StreamReader
from shared import definitions

_TEMPLATE_PATH = re.compile(r'("?)<(\$[^>]*)>("?)')


def json_path(document: Any, path: str) -> Any:
    """Resolve a simple `$.a.b.c` path, as the Pipe's target parameters use them."""
    value = document
    for part in path.removeprefix("$.").split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def render_input_template(template: str, record: dict[str, Any]) -> str:
    """Pipes' input transformer: `"<$.path>"` (quoted) becomes the string found there, JSON-escaped; a bare
    `<$.path>` becomes the JSON value found there (an object, an array, a number)."""

    def substitute(match: re.Match[str]) -> str:
        opening, path, closing = match.groups()
        value = json_path(record, path)
        if opening and closing:
            return json.dumps(str(value))
        return opening + json.dumps(value) + closing

    return _TEMPLATE_PATH.sub(substitute, template)  # one pass: substituted text is never re-read


class StreamPipe:
    """Polls the inbox table's stream and forwards matching records to the FIFO queue, in stream order."""

    def __init__(self, session: Any, stream_arn: str, queue_url: str, *, poll_seconds: float = 0.05) -> None:
        self.reader = StreamReader(session.client("dynamodbstreams"), stream_arn)
        self._sqs = session.client("sqs")
        self.stream_arn = stream_arn
        self.queue_url = queue_url
        self.poll_seconds = poll_seconds
        self.pattern = EventPattern.load(json.dumps(definitions.PIPE_FILTER_PATTERN))
        self._running = threading.Event()
        self._running.set()
        self.forwarded = 0
        self.filtered_out = 0
        self.idle = IdleBackoff(poll_seconds)
        # Called with how many messages a poll sent to the queue (the runtime nudges the queue mapping with it).
        self.on_sent: Callable[[int], None] | None = None

    def pause(self) -> None:
        """Stop forwarding (records stay in the stream, as when a Pipe is stopped or failing)."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def matches(self, record: dict[str, Any]) -> bool:
        return bool(self.pattern.matches_event(record))  # type: ignore[arg-type]  # a stream record, not an event

    def message_for(self, record: dict[str, Any]) -> dict[str, Any]:
        return {
            "QueueUrl": self.queue_url,
            "MessageBody": render_input_template(definitions.PIPE_INPUT_TEMPLATE, record),
            "MessageGroupId": json_path(record, definitions.PIPE_MESSAGE_GROUP_ID_PATH),
            "MessageDeduplicationId": json_path(record, definitions.PIPE_DEDUPLICATION_ID_PATH),
        }

    def _send(self, messages: list[dict[str, Any]]) -> None:
        entries = [
            {key: value for key, value in message.items() if key != "QueueUrl"} | {"Id": str(index)}
            for index, message in enumerate(messages)
        ]
        response = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        if response.get("Failed"):
            raise RuntimeError(f"SendMessageBatch failed for {len(response['Failed'])} message(s)")

    def poll_once(self) -> int:
        """Forward what the stream holds now. Returns how many messages were sent."""
        if self.paused:
            return 0
        sent = 0

        def forward(records: list[dict[str, Any]]) -> None:
            nonlocal sent
            batch: list[dict[str, Any]] = []
            for record in records:
                if not self.matches(record):
                    self.filtered_out += 1
                    continue
                batch.append(self.message_for(record))
            step = SQS_MAX_BATCH_ENTRIES  # in stream order, as many per SendMessageBatch as SQS takes
            for start in range(0, len(batch), step):
                self._send(batch[start : start + step])
                sent += len(batch[start : start + step])

        # The reader moves on only once `forward` returned: a failed send re-reads these records (at least once;
        # the processor skips events that are no longer pending, and SQS drops repeats of the same dispatch id).
        self.reader.poll(forward)
        self.forwarded += sent
        if sent and self.on_sent is not None:
            self.on_sent(sent)
        return sent

    def nudge(self) -> None:
        """Something was just written to the table (an ingest): look at the stream now."""
        self.idle.nudge()

    def run(self, stop: threading.Event) -> None:
        idle = self.idle
        while not stop.is_set():
            try:
                if self.poll_once() == 0:
                    idle.idle()
                else:
                    idle.reset()
            except Exception as error:  # keep pumping: a real Pipe retries too
                print(f"pipe: {type(error).__name__}: {error}", flush=True)
                stop.wait(1)
            if self.paused:
                time.sleep(self.poll_seconds)
