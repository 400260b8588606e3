"""A customer's endpoint in an outage, for the forwarding log's tests of every tier: a loopback HTTP server that
answers 500 with a header and a JSON body while it is down (or for its first N requests), then 204."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

OUTAGE_STATUS = 500
OUTAGE_HEADER = ("X-Outage", "planned")
OUTAGE_BODY = b'{"error":"down for maintenance"}'


class OutageEndpoint:
    def __init__(self, *, fail_first: int = 0, down: bool = False) -> None:
        self.fail_first = fail_first
        self.down = down
        self.requests = 0
        self.accepted: list[str] = []  # the webhook-id of every request answered 2xx, in order (repeats too)
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with endpoint._lock:
                    endpoint.requests += 1
                    failing = endpoint.down or endpoint.fail_first > 0
                    if endpoint.fail_first > 0:
                        endpoint.fail_first -= 1
                    if not failing:
                        endpoint.accepted.append(str(self.headers.get("webhook-id")))
                body = OUTAGE_BODY if failing else b""
                self.send_response(OUTAGE_STATUS if failing else 204)
                if failing:
                    self.send_header(*OUTAGE_HEADER)
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A query token, as some endpoints take one: the log must never store it.
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks?token=s3cret-token"
        self.logged_url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def start(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
