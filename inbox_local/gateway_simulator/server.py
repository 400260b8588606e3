"""The simulator's HTTP glue: a threading server whose handler hands every request to one callable."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from inbox_local.gateway_simulator.shape import Answer

Handle = Callable[[str, str, dict[str, str], bytes], Answer]
"""(method, target, lower-cased headers, body) -> answer: `GatewaySimulator.handle_api`."""

MAX_ADMIN_BODY = 64 * 1024


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out (the slow fault) and hung up is expected; anything else is still reported.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def make_handler(handle: Handle) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs: the client's pool reuses connections
        server_version = "GatewaySimulator/1.0"
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_ADMIN_BODY:
                self._send(413, {}, {"error": "body too large or length invalid"})
                return
            self._serve(self.rfile.read(length))

        def _serve(self, body: bytes) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                status, extra, document = handle(self.command, self.path, headers, body)
            except Exception as error:  # never kill the server thread: answer like a broken gateway would
                status, extra, document = 500, {}, {"error": f"simulator failure: {type(error).__name__}"}
            self._send(status, extra, document)

        def _send(self, status: int, extra: dict[str, str], document: Any) -> None:
            payload = json.dumps(document, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet: chaos runs make thousands of requests

    return Handler
