"""The local stack's AWS: moto's server, with DynamoDB made atomic per request.

moto's backends are not thread-safe: two concurrent requests can interleave inside one operation (seen here:
`dictionary changed size during iteration` in TransactWriteItems, and a conditional put racing another). Real
DynamoDB applies each request atomically, and the product's correctness rests on that, so DynamoDB and its
stream requests are serialized here. Everything else stays concurrent (an SQS long poll must not block the
table).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

_SERIALIZED_TARGETS = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.")


class SerializeDynamoDB:
    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith(_SERIALIZED_TARGETS):
            with self.lock:
                return list(self.app(environ, start_response))  # consume the body inside the lock
        return self.app(environ, start_response)


class EmbeddedAws:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        app = SerializeDynamoDB(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(self.host, self.port, app, threaded=True, request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="embedded-aws", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
