"""`inbox receiver`: a small receiver for the forwarded events, checking what a customer's endpoint should check.

Each POST is verified with the official Standard Webhooks library (`standardwebhooks`), on the raw body: a bad,
missing or stale signature is answered 401 and stored nowhere. A verified event is deduplicated by `webhook-id`
(a repeat is answered 2xx again, as the sender must stop retrying, and counted, not stored twice), and its
`sequence` is checked against the last one seen for its stream: `provider#resource_id` for
`payment.status_changed`, `failed#provider#event_id` for `webhook.failed`. A gap (N+2 after N) and a regression
(N after N+1, under another id) are accepted and reported.

`ReceiverCore` is all of that without HTTP (tests use it in-process); `ReceiverServer` serves it on a port;
`inbox receiver` (inbox_cli/main.py) prints one line per request and a summary on Ctrl-C. Nothing printed carries
a secret or a signature.
"""

from __future__ import annotations

import binascii
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

ACCEPTED = "accepted"
DUPLICATE = "duplicate"
REJECTED = "rejected"
MAX_BODY_BYTES = 1024 * 1024
STATUS_CHANGED = "payment.status_changed"
WEBHOOK_FAILED = "webhook.failed"


@dataclass(frozen=True)
class Verdict:
    """What the receiver made of one request, and the HTTP status it answers."""

    status: int
    outcome: str  # accepted | duplicate | rejected
    webhook_id: str | None
    event: dict[str, Any] | None = None
    stream: str | None = None  # the ordering key: provider#resource_id, or failed#provider#event_id
    sequence: int | None = None
    problems: tuple[str, ...] = ()  # gaps, regressions, an id that disagrees with the header
    reason: str | None = None  # why it was rejected
    seen: int = 1  # deliveries of this webhook-id so far

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "outcome": self.outcome,
            "webhook_id": self.webhook_id,
            "type": None if self.event is None else self.event.get("type"),
            "stream": self.stream,
            "sequence": self.sequence,
            "problems": list(self.problems),
            "reason": self.reason,
            "seen": self.seen,
            "event": self.event,
        }

    def line(self) -> str:
        """One human line, no secrets: status, outcome, what changed, the id."""
        stamp = time.strftime("%H:%M:%S")
        if self.outcome == REJECTED:
            return f"{stamp} {self.status} {REJECTED:<9} {self.webhook_id or '-'}: {self.reason}"
        if self.outcome == DUPLICATE:
            return f"{stamp} {self.status} {DUPLICATE:<9} {self.webhook_id} (delivery {self.seen}, stored once)"
        event = self.event or {}
        if event.get("type") == STATUS_CHANGED:
            what = f"{event.get('previous_status') or '-'} -> {event.get('new_status')}"
        elif event.get("type") == WEBHOOK_FAILED:
            what = f"failed: {str(event.get('last_error', ''))[:60]}"
        else:
            what = str(event.get("type"))
        text = f"{stamp} {self.status} {ACCEPTED:<9} {self.stream or '-'} #{self.sequence} {what}  {self.webhook_id}"
        return text + "".join(f"  !! {problem}" for problem in self.problems)


def stream_of(event: Mapping[str, Any]) -> str | None:
    """The sequence the event belongs to (None: an event type without one)."""
    if event.get("type") == STATUS_CHANGED:
        return f"{event.get('provider')}#{event.get('resource_id')}"
    if event.get("type") == WEBHOOK_FAILED:
        return f"failed#{event.get('provider')}#{event.get('event_id')}"
    return None


@dataclass
class ReceiverCore:
    """Verify, deduplicate, check order. Thread-safe: the server calls it from one thread per request."""

    secrets: Sequence[str]  # whsec_<base64>; more than one during a rotation (any of them verifies)
    events: list[dict[str, Any]] = field(default_factory=list, init=False)  # stored, in arrival order
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    deliveries: dict[str, int] = field(default_factory=dict, init=False)  # webhook-id -> verified deliveries
    duplicates: int = field(default=0, init=False)
    rejected: int = field(default=0, init=False)
    gaps: list[dict[str, Any]] = field(default_factory=list, init=False)
    regressions: list[dict[str, Any]] = field(default_factory=list, init=False)
    mismatched_ids: list[str] = field(default_factory=list, init=False)
    last_sequence: dict[str, int] = field(default_factory=dict, init=False)  # stream -> highest sequence seen

    def __post_init__(self) -> None:
        if not self.secrets:
            raise ValueError("the receiver needs the forwarding secret (whsec_<base64>)")
        self._webhooks = [Webhook(secret) for secret in self.secrets]
        self._lock = threading.Lock()

    def _verify(self, body: bytes, headers: Mapping[str, str]) -> str | None:
        """None when one of the secrets verifies the body; otherwise why not."""
        reason = "no matching signature"
        for webhook in self._webhooks:
            try:
                webhook.verify(body, dict(headers), json_parse=False)
                return None
            except WebhookVerificationError as error:
                reason = str(error)
            except (ValueError, binascii.Error) as error:  # a malformed header, a body that is not UTF-8
                reason = f"malformed: {type(error).__name__}"
        return reason

    def receive(self, body: bytes, headers: Mapping[str, str]) -> Verdict:
        """One POST: its verdict, with the state updated."""
        lowered = {name.lower(): value for name, value in headers.items()}
        webhook_id = lowered.get("webhook-id")
        reason = self._verify(body, lowered)
        if reason is None:
            try:
                event = json.loads(body)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                reason = "signed, but the body is not a JSON object"
        with self._lock:
            if reason is not None:
                self.rejected += 1
                return Verdict(401, REJECTED, webhook_id, reason=reason)
            assert webhook_id is not None  # verification requires the header
            seen = self.deliveries[webhook_id] = self.deliveries.get(webhook_id, 0) + 1
            if seen > 1:
                self.duplicates += 1
                stored = self.by_id[webhook_id]
                return Verdict(200, DUPLICATE, webhook_id, stored, stream_of(stored), _sequence(stored), seen=seen)
            return self._store(webhook_id, event)

    def _store(self, webhook_id: str, event: dict[str, Any]) -> Verdict:
        problems = []
        if event.get("id") != webhook_id:
            self.mismatched_ids.append(webhook_id)
            problems.append(f"body id {event.get('id')!r} is not the webhook-id")
        stream, sequence = stream_of(event), _sequence(event)
        if stream is not None and sequence is not None:
            last = self.last_sequence.get(stream, 0)
            if sequence > last + 1:
                gap = {"stream": stream, "expected": last + 1, "got": sequence, "webhook_id": webhook_id}
                self.gaps.append(gap)
                problems.append(f"GAP: expected #{last + 1}, got #{sequence}")
            elif sequence <= last:
                self.regressions.append({"stream": stream, "after": last, "got": sequence, "webhook_id": webhook_id})
                problems.append(f"REGRESSION: #{sequence} after #{last}")
            self.last_sequence[stream] = max(last, sequence)
        elif stream is not None:
            problems.append("no sequence")
        self.events.append(event)
        self.by_id[webhook_id] = event
        return Verdict(200, ACCEPTED, webhook_id, event, stream, sequence, tuple(problems))

    @property
    def in_order(self) -> bool:
        return not self.gaps and not self.regressions

    def summary(self) -> dict[str, Any]:
        with self._lock:
            by_type: dict[str, int] = {}
            for event in self.events:
                by_type[str(event.get("type"))] = by_type.get(str(event.get("type")), 0) + 1
            return {
                "accepted": len(self.events),
                "duplicates": self.duplicates,
                "rejected": self.rejected,
                "by_type": by_type,
                "streams": len(self.last_sequence),
                "gaps": list(self.gaps),
                "regressions": list(self.regressions),
                "mismatched_ids": list(self.mismatched_ids),
                "in_order": self.in_order,
            }


def _sequence(event: Mapping[str, Any]) -> int | None:
    value = event.get("sequence")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def render_summary(summary: Mapping[str, Any], *, requests: int, failed_on_purpose: int) -> str:
    lines = [
        "Receiver summary",
        f"  requests                 {requests}",
        f"  events stored            {summary['accepted']}   "
        + ", ".join(f"{name} {count}" for name, count in sorted(summary["by_type"].items())),
        f"  duplicates (same id)     {summary['duplicates']}   (answered 2xx, not stored again)",
        f"  rejected signatures      {summary['rejected']}",
        f"  answered 500 on purpose  {failed_on_purpose}",
        f"  payments / streams       {summary['streams']}",
        f"  gaps                     {len(summary['gaps'])}",
        f"  regressions              {len(summary['regressions'])}",
        f"  order                    {'every stream in sequence' if summary['in_order'] else 'NOT IN ORDER'}",
    ]
    for problem in (summary["gaps"] + summary["regressions"])[:10]:
        lines.append(f"  !! {json.dumps(problem)}")
    return "\n".join(lines)


class ReceiverServer:
    """`ReceiverCore` over HTTP (a thread per request). `fail_first` answers 500 to the first N POSTs, before
    looking at them, so the sender's retries can be watched; `on_verdict` sees every request's outcome."""

    def __init__(
        self,
        core: ReceiverCore,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        fail_first: int = 0,
        on_verdict: Callable[[Verdict], None] | None = None,
        on_failure: Callable[[int], None] | None = None,
    ) -> None:
        self.core = core
        self.fail_remaining = fail_first
        self.failed_on_purpose = 0
        self.requests = 0
        self.on_verdict = on_verdict
        self.on_failure = on_failure
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.httpd.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    def _take_failure(self) -> int | None:
        """The remaining count after this request, when it is to be failed on purpose; None otherwise."""
        with self._lock:
            self.requests += 1
            if self.fail_remaining <= 0:
                return None
            self.fail_remaining -= 1
            self.failed_on_purpose += 1
            return self.fail_remaining

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                try:
                    length = int(self.headers.get("content-length") or "")
                except ValueError:
                    self._answer(411, {"error": "content-length required"})
                    return
                if not 0 <= length <= MAX_BODY_BYTES:
                    self._answer(413, {"error": "body too large"})
                    return
                body = self.rfile.read(length)
                remaining = server._take_failure()
                if remaining is not None:
                    self._answer(500, {"error": "failing on purpose", "remaining": remaining})
                    if server.on_failure is not None:
                        server.on_failure(remaining)
                    return
                verdict = server.core.receive(body, dict(self.headers.items()))
                self._answer(verdict.status, {"outcome": verdict.outcome, "reason": verdict.reason})
                if server.on_verdict is not None:
                    server.on_verdict(verdict)

            def do_GET(self) -> None:
                """The summary so far (no events, no secrets)."""
                self._answer(200, {**server.core.summary(), "requests": server.requests})

            def log_message(self, format: str, *args: Any) -> None:
                return  # one line per event comes from on_verdict instead

        return Handler

    def start(self) -> ReceiverServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
