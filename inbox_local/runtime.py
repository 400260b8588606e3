"""The local stack: embedded AWS (moto server), the real functions, and the plumbing AWS would provide.

`make run` starts one of these. Every function is the real handler code; what AWS provides around them
(API Gateway, the stream-to-queue Pipe, the queue-to-Lambda mapping, schedules) is emulated here from the
same definitions the CDK stack uses.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from inbox_local.config import LocalEndpoints, LocalNames, aws_environment, function_environment, signing_secret
from inbox_local.resources import provision
from inbox_local.server import ApiServer


@dataclass
class LocalStack:
    endpoints: LocalEndpoints = field(default_factory=LocalEndpoints.from_environ)
    names: LocalNames = field(default_factory=LocalNames)
    access_log: bool = True
    resources: dict[str, str] = field(default_factory=dict)
    _moto: Any = None
    _api: ApiServer | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 - only the local stack needs moto

        os.environ.update(aws_environment(self.endpoints))
        os.environ.update(function_environment(self.names))
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF blobs on the console locally
        for provider in ("stripe", "standard", "asaas"):
            os.environ.setdefault(f"INBOX_SECRET_{provider.upper()}", signing_secret(provider))

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access lines drown ours
        self._moto = ThreadedMotoServer(ip_address=self.endpoints.host, port=self.endpoints.aws_port, verbose=False)
        self._moto.start()

        import boto3  # noqa: PLC0415

        self.resources = provision(boto3.session.Session(), self.names)

        from functions.ingest.handler import lambda_handler as ingest_handler  # noqa: PLC0415

        self._api = ApiServer((self.endpoints.host, self.endpoints.port), ingest_handler, access_log=self.access_log)
        self._spawn("api", self._api.serve_forever)

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=f"local-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        if self._api is not None:
            self._api.shutdown()
            self._api.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._moto is not None:
            self._moto.stop()

    def request_stop(self) -> None:
        self._stopping.set()

    def wait(self) -> None:
        self._stopping.wait()

    def banner(self) -> str:
        url = self.endpoints.api_url
        secrets = "\n".join(f"  INBOX_SECRET_{p.upper()}={signing_secret(p)}" for p in ("stripe", "standard", "asaas"))
        return f"""Webhook Inbox local stack is up.
  API:           {url}   (POST {url}/webhooks/{{provider}}, GET {url}/health)
  Embedded AWS:  {self.endpoints.aws_url}   (moto; the CLI reads from here)

Signing secrets in use (development values unless you set them):
{secrets}

Try it, from another terminal:
  .venv/bin/inbox send stripe
  .venv/bin/inbox events list
or by hand (Asaas signs with a static token):
  curl -s -X POST {url}/webhooks/asaas -H 'content-type: application/json' \\
       -H 'asaas-access-token: {signing_secret("asaas")}' \\
       -d '{{"id": "evt_1", "event": "PAYMENT_RECEIVED", "dateCreated": "2026-11-29 10:00:00",
            "payment": {{"id": "pay_1", "value": 10.5, "status": "RECEIVED"}}}}'

Ctrl-C stops it."""
