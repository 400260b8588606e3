"""The local HTTP front door: turns HTTP requests into API Gateway HTTP API (payload v2) events.

It calls the real ingest handler, as API Gateway would, including API Gateway's own answers for what never
reaches the function (docs/aws-limits.md has the figures and their sources):
- a body over the HTTP API's payload quota (10 MB) is refused before it is read: 413;
- an event whose JSON exceeds Lambda's synchronous invoke payload (6 MB, base64 of a binary body included) never
  reaches the function: API Gateway answers 413 `{"message": "Request Too Long"}`. So the real ceiling for a
  text body is just under 6 MB, and for a binary (base64-encoded) body about 4.5 MB.
Its request log (one line per request on stderr) prints no secret of a URL: a query value is shown only when the
source's driver keeps that parameter with the event (`replay_query`), every other one as "[redacted]"
(shared/redaction.py: iugu's `?token=` and Efí's `?hmac=` are the secret itself).
It holds a burst: the listen backlog is far above `socketserver`'s default of 5 (a gateway's retry storm of a few
hundred concurrent connections is normal traffic, and a full backlog resets connections).
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from inbox_local.invocation import invoke
from shared import definitions
from shared.providers.registry import get_driver
from shared.redaction import redact_query
from shared.sources import declared_sources

# HTTP API quota "Payload size: 10 MB" (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html);
# above it API Gateway answers 413 with this plain-text message.
API_GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024
API_GATEWAY_BODY_TOO_LARGE = f"HTTP content length exceeded {API_GATEWAY_MAX_BODY_BYTES} bytes."
# Lambda's synchronous Invoke: "the maximum payload size is 6 MB" (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html);
# Ingest invocations the local front door runs at once (invoke_function): enough to keep two cores busy while
# some wait on the embedded AWS, few enough that each one's time is its own.
LOCAL_INGEST_CONCURRENCY = 8

# Lambda's own refusal names the byte figure: "Request must be smaller than 6291456 bytes". The payload is the
# event's JSON, so a base64-encoded binary body counts at 4/3 of its size. API Gateway then answers 413
# {"message": "Request Too Long"} and the function is never invoked.
LAMBDA_MAX_SYNC_REQUEST_BYTES = 6 * 1024 * 1024
LAMBDA_PAYLOAD_TOO_LARGE = {"message": "Request Too Long"}
# The stage's throttle, as the stack configures it: API Gateway's token bucket (a token per request, refilled at the
# rate, holding at most the burst); past it, 429 `Too Many Requests`, and the gateway retries
# (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html).
API_GATEWAY_THROTTLED = {"message": "Too Many Requests"}
# The listen(2) backlog: connections the kernel holds while every handler thread is busy accepting. Linux caps it
# at net.core.somaxconn (4096 by default since 5.4).
LISTEN_BACKLOG = 1024
_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# Local-only routes (`/_local/...`, e.g. fault injection: inbox_local/faults.py), answered by the server itself:
# (method, path, body) -> (status, JSON document). They never reach the function.
LocalRoute = Callable[[str, str, bytes], tuple[int, Any]]
LOCAL_ROUTE_PREFIX = "/_local/"


class TokenBucket:
    """API Gateway's throttling algorithm: `burst` requests at once, `rate` per second sustained."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._updated = clock()
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.rate)
            self._updated = now
            if self._tokens < 1:
                return False
            self._tokens -= 1
            return True


def invoke_payload_bytes(event: dict[str, Any]) -> int:
    """The size of the Invoke request API Gateway would make for this event (compact JSON, as the SDKs send it)."""
    return len(json.dumps(event, separators=(",", ":")).encode())


def invoke_like_api_gateway(handler: Handler, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Call the function the way API Gateway's Lambda integration does: an event over Lambda's synchronous payload
    limit is answered 413 by API Gateway itself, and the function never sees it."""
    if invoke_payload_bytes(event) > LAMBDA_MAX_SYNC_REQUEST_BYTES:
        return {
            "statusCode": 413,
            "headers": {"content-type": "application/json"},
            "body": json.dumps(LAMBDA_PAYLOAD_TOO_LARGE),
        }
    return handler(event, context)


def api_gateway_event(
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    source_ip: str,
    *,
    client_cert: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An HTTP API v2 event, shaped as API Gateway builds it (lower-case headers, base64 for non-text bodies).
    `client_cert`: what the mutual-TLS front door verified (`requestContext.authentication.clientCert`,
    inbox_local/mtls.py); the plain front door never passes one, whatever the request's headers say."""
    parts = urlsplit(target)
    path = parts.path or "/"
    segments = path.strip("/").split("/")
    is_webhook = len(segments) == 2 and segments[0] == "webhooks"
    route_key = f"{method} /webhooks/{{provider}}" if is_webhook else f"{method} {path}"
    if len(segments) == 3 and segments[0] == "webhooks" and segments[2] in definitions.WEBHOOK_PATH_SUFFIXES:
        is_webhook = True  # a provider's appended segment (Efí's /pix): a route of its own, as the stack has
        route_key = f"{method} {definitions.WEBHOOK_SUFFIX_ROUTE % segments[2]}"
    content_type = headers.get("content-type", "")
    as_text = content_type.startswith(_TEXT_TYPES)
    if as_text:
        try:
            text_body = body.decode("utf-8")
        except UnicodeDecodeError:
            as_text = False
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": parts.query,
        "headers": headers,
        "requestContext": {
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": route_key,
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": not as_text,
        "body": text_body if as_text else base64.b64encode(body).decode("ascii"),
    }
    if client_cert is not None:
        event["requestContext"]["authentication"] = {"clientCert": client_cert}
    if parts.query:
        event["queryStringParameters"] = dict(parse_qsl(parts.query, keep_blank_values=True))
    if is_webhook:
        event["pathParameters"] = {"provider": segments[1]}
    return event


def loggable_path(raw: str) -> str:
    """The request target as the request log prints it: the path, and the query with every value redacted that
    the route's source does not keep (`query_kept`)."""
    parts = urlsplit(raw)
    if not parts.query:
        return raw
    return urlunsplit(("", "", parts.path, redact_query(parts.query, query_kept(parts.path)), ""))


def query_kept(path: str) -> tuple[str, ...]:
    """The query parameters a delivery to `path` keeps with its event: its source's driver's `replay_query`
    (Mercado Pago's `data.id` and `type`); none for any other route, an unknown source, or a declaration that
    cannot be read (a log line must not fail a request)."""
    segments = path.strip("/").split("/")
    if len(segments) not in (2, 3) or segments[0] != "webhooks":
        return ()
    try:
        provider = declared_sources().provider_of(segments[1])
        return tuple(get_driver(provider).replay_query) if provider else ()
    except Exception:  # SourcesInvalid, an unknown provider: the ingest answers it; the log shows no value
        return ()


class _ApiRequestHandler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the status line and headers go out in one write, the body in a second; with Nagle's algorithm
    # on, that second write waited for the client's delayed ACK, ~40 ms per request on a kept-alive connection.
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        if length > API_GATEWAY_MAX_BODY_BYTES:
            self._send(413, API_GATEWAY_BODY_TOO_LARGE, started, {"content-type": "text/plain; charset=utf-8"})
            self.close_connection = True  # the unread body must not be taken for the next request
            return
        body = self.rfile.read(length) if length else b""
        route = urlsplit(self.path).path
        if self.server.local_route is not None and route.startswith(LOCAL_ROUTE_PREFIX):
            status, document = self.server.local_route(self.command, route, body)
            self._send(status, document, started)
            return
        if not self.server.throttle.take():
            self._send(429, API_GATEWAY_THROTTLED, started)
            return
        headers: dict[str, str] = {}
        for name, value in self.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
        event = api_gateway_event(
            self.command,
            self.path,
            headers,
            body,
            self.client_address[0],
            client_cert=self.server.client_certificate(self.connection),
        )
        try:
            response = invoke_like_api_gateway(self.server.invoke_function, event, None)
        except Exception as error:  # a crash or a timeout of the function: API Gateway answers 500
            print(f"ingest crashed: {type(error).__name__}: {error}", file=sys.stderr)
            self._send(500, {"message": "Internal Server Error"}, started)
            return
        finally:
            if self.server.on_invoked is not None:
                self.server.on_invoked()
        self._send(int(response["statusCode"]), response.get("body", ""), started, response.get("headers"))

    def _send(self, status: int, body: Any, started: float, headers: dict[str, str] | None = None) -> None:
        payload = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        for name, value in (headers or {"content-type": "application/json"}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if self.server.access_log:
            elapsed = (time.perf_counter() - started) * 1000
            line = f"{self.command} {loggable_path(self.path)} -> {status} ({elapsed:.1f} ms)"
            print(line, file=sys.stderr, flush=True)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    def log_message(self, format: str, *args: Any) -> None:
        return


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: Handler,
        *,
        access_log: bool = True,
        throttle: TokenBucket | None = None,
    ) -> None:
        super().__init__(address, _ApiRequestHandler)
        self.handler = handler
        self.access_log = access_log
        self.local_route: LocalRoute | None = None
        # Called after each invocation of the function (the runtime nudges the Pipe: the inbox may hold a new item).
        self.on_invoked: Callable[[], None] | None = None
        self._ingest_slots = threading.BoundedSemaphore(LOCAL_INGEST_CONCURRENCY)
        self.throttle = throttle or TokenBucket(
            definitions.API_THROTTLE_RATE_LIMIT, definitions.API_THROTTLE_BURST_LIMIT
        )

    def invoke_function(self, event: dict[str, Any], _context: Any) -> Any:
        """The ingest function, invoked as Lambda invokes it: with its own context, held to its timeout.

        At most LOCAL_INGEST_CONCURRENCY invocations run at once, each timed from when it starts. In AWS each
        invocation has an execution environment of its own; here they share one process, one GIL and the machine's
        cores, so 200 concurrent deliveries all running at once would each take 200 times its own time and time out
        together on time that is not theirs. A delivery waits for a slot as a request waits for an environment:
        outside the function's timeout."""
        with self._ingest_slots:
            return invoke("ingest", self.handler, event)

    def client_certificate(self, connection: Any) -> dict[str, Any] | None:
        """The client certificate the connection's TLS handshake verified, as API Gateway puts it in the event.
        The plain front door has none (API Gateway's default endpoint never does mutual TLS)."""
        return None
