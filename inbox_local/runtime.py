"""The local stack: embedded AWS (moto server), the real functions, and the plumbing AWS would provide.

`make run` starts one of these. Every function is the real handler code; what AWS provides around them
(API Gateway, the stream-to-queue Pipe, the queue-to-Lambda mapping, schedules) is emulated here from the
same definitions the CDK stack uses.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inbox_local.api_keys import local_api_keys, store_api_keys
from inbox_local.archive_mapping import ArchiveMapping
from inbox_local.aws_process import EmbeddedAws
from inbox_local.config import LocalEndpoints, LocalNames, aws_environment, function_environment, signing_secret
from inbox_local.dev_secrets import signing_secret_variable, store_signing_secrets
from inbox_local.forward_secret import LocalForwarding, local_forwarding, store_forwarding_secret
from inbox_local.gateway_simulator import PROVIDERS as SIMULATED_PROVIDERS
from inbox_local.gateway_simulator import GatewaySimulator
from inbox_local.outbox_publisher import OutboxPublisher, local_forward_max_retry_attempts
from inbox_local.pipe import StreamPipe
from inbox_local.queue_mapping import QueueMapping
from inbox_local.resources import provision
from inbox_local.schedule import Schedule
from inbox_local.server import ApiServer
from infra.sources_file import load_sources
from shared import definitions

if TYPE_CHECKING:
    from inbox_local.faults import FaultInjector
    from shared.forwarding import ForwarderRoot

# Locally, retries back off from 1 s instead of 5 s so that a demo recovers while you watch.
LOCAL_RETRY_BASE_SECONDS = "1"
LOCAL_PROCESSOR_CONCURRENCY = 4


def _local_forwarding() -> LocalForwarding | None:
    """INBOX_FORWARD_URL and its secret pair, checked before the stack starts (SystemExit with the reason)."""
    try:
        return local_forwarding()
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None


def _try_it(url: str, sources: tuple[definitions.SourceSpec, ...]) -> str:
    """The banner's first commands, for sources this stack declares: `inbox send` to a Stripe source when there is
    one (the README's walkthrough), else to the first declared; a curl by hand to an Asaas source (a static token)
    when one is declared."""
    first = next((s for s in sources if s.provider == "stripe"), sources[0])
    lines = [
        f"  .venv/bin/inbox send {first.name}",
        "  .venv/bin/inbox events list",
    ]
    asaas = next((s for s in sources if s.provider == "asaas" and not s.mutual_tls), None)
    if asaas is not None:
        lines += [
            "or by hand (Asaas signs with a static token):",
            f"  curl -s -X POST {url}/webhooks/{asaas.name} -H 'content-type: application/json' \\",
            f"       -H 'asaas-access-token: {signing_secret(asaas.name)}' \\",
            """       -d '{"id": "evt_1", "event": "PAYMENT_RECEIVED", "dateCreated": "2026-11-29 10:00:00",""",
            """            "payment": {"id": "pay_1", "value": 10.5, "status": "RECEIVED"}}'""",
        ]
    return "\n".join(lines) + "\n"


@dataclass
class LocalStack:
    endpoints: LocalEndpoints = field(default_factory=LocalEndpoints.from_environ)
    names: LocalNames = field(default_factory=LocalNames)
    access_log: bool = True
    resources: dict[str, str] = field(default_factory=dict)
    _moto: EmbeddedAws | None = None
    _api: ApiServer | None = None
    _mtls_api: ApiServer | None = None  # the mutual-TLS front door, when a declared source has `mutual_tls`
    simulator: GatewaySimulator | None = None
    pipe: StreamPipe | None = None
    queue_mapping: QueueMapping | None = None
    archive_mapping: ArchiveMapping | None = None
    outbox_publisher: OutboxPublisher | None = None
    sweep_schedule: Schedule | None = None
    faults: FaultInjector | None = None  # every fault off until `POST /_local/faults` (inbox chaos)
    # The declared sources (sources.json, or the file INBOX_SOURCES_FILE names; without one, a source per
    # provider), read at start(): the functions get them as INBOX_SOURCES, as the deployed stack hands them over.
    sources: tuple[definitions.SourceSpec, ...] = ()
    _threads: list[threading.Thread] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    def _check_ports_free(self, *, mutual_tls: bool) -> None:
        for name, port in (
            ("INBOX_PORT", self.endpoints.port),
            ("INBOX_AWS_PORT", self.endpoints.aws_port),
            ("INBOX_GATEWAY_PORT", self.endpoints.gateway_port),
            *((("INBOX_MTLS_PORT", self.endpoints.mtls_port),) if mutual_tls else ()),
        ):
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind((self.endpoints.host, port))
                except OSError:
                    raise SystemExit(
                        f"error: port {port} ({name}) is already in use: another `make run`? "
                        f"Stop it, or choose other ports, e.g. INBOX_PORT={self.endpoints.port + 10}"
                    ) from None

    def start(self) -> None:
        # Read before anything starts: a bad sources.json stops the stack with the file's own error message, a
        # forwarding URL without a valid secret with the variable to set.
        self.sources = load_sources()
        forwarding = _local_forwarding()
        self._check_ports_free(mutual_tls=bool(definitions.mutual_tls_sources(self.sources)))
        os.environ[definitions.ENV_SOURCES] = definitions.sources_json(self.sources)
        os.environ.update(aws_environment(self.endpoints))
        os.environ.update(function_environment(self.names))
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF blobs on the console locally

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access lines drown ours
        self._hold_functions_to_aws()
        self._moto = EmbeddedAws(self.endpoints.host, self.endpoints.aws_port)
        self._moto.start()

        import boto3  # noqa: PLC0415

        session = boto3.session.Session()
        self.resources = provision(session, self.names)
        # The functions read their signing secrets from Secrets Manager, as in AWS: the development ones, or
        # INBOX_SECRET_<SOURCE> (and _PREVIOUS) where set.
        store_signing_secrets(session.client("secretsmanager"), self.names.secret_prefix, self.sources)
        if forwarding is not None:
            # And the forwarding pair, where the forwarder's root reads it (INBOX_FORWARD_SECRET_NAME, as deployed).
            store_forwarding_secret(session.client("secretsmanager"), self.names.forward_secret_name, forwarding)
            os.environ[definitions.ENV_FORWARD_SECRET_NAME] = self.names.forward_secret_name
        os.environ[definitions.ENV_QUEUE_URL] = self.resources["queue_url"]
        os.environ[definitions.ENV_DLQ_URL] = self.resources["dead_letter_url"]
        os.environ.setdefault(definitions.ENV_RETRY_BASE_SECONDS, LOCAL_RETRY_BASE_SECONDS)
        os.environ.setdefault(definitions.ENV_MAX_ATTEMPTS, str(definitions.MAX_PROCESSING_ATTEMPTS))

        self.simulator = self._start_gateway_simulator(session.client("secretsmanager"))

        from functions.archiver.handler import lambda_handler as archiver_handler  # noqa: PLC0415
        from functions.ingest.handler import lambda_handler as ingest_handler  # noqa: PLC0415
        from functions.process.handler import lambda_handler as process_handler  # noqa: PLC0415
        from functions.sweeper.handler import lambda_handler as sweeper_handler  # noqa: PLC0415

        self.pipe = StreamPipe(session, self.resources["stream_arn"], self.resources["queue_url"])
        self.queue_mapping = QueueMapping(
            session,
            self.resources["queue_url"],
            process_handler,
            batch_size=definitions.PROCESSOR_BATCH_SIZE,
            concurrency=LOCAL_PROCESSOR_CONCURRENCY,
        )
        # In-process producers nudge the poller that reads what they wrote (inbox_local/polling.py).
        self.pipe.on_sent = self.queue_mapping.nudge
        self._spawn("pipe", lambda: self.pipe.run(self._stopping) if self.pipe else None)
        for worker in range(LOCAL_PROCESSOR_CONCURRENCY):
            self._spawn(
                f"processor-{worker}", lambda: self.queue_mapping.run(self._stopping) if self.queue_mapping else None
            )

        # The archiver's event source mapping (TTL deletions -> archive) and the sweeper's schedule.
        self.archive_mapping = ArchiveMapping(session, self.resources["stream_arn"], archiver_handler)
        self._spawn("archiver", lambda: self.archive_mapping.run(self._stopping) if self.archive_mapping else None)
        # The outbox's publisher (in AWS: the outbox Pipe to the event bus), forwarding when INBOX_FORWARD_URL is set
        # with the forwarder Lambda's root.
        self.outbox_publisher = OutboxPublisher(
            session,
            self.resources["outbox_stream_arn"],
            self.names.control_table,
            forwarding=self._forwarder_root(session, forwarding),
            max_retry_attempts=local_forward_max_retry_attempts(),
        )
        self.queue_mapping.on_batch = self.outbox_publisher.nudge
        self._spawn("outbox", lambda: self.outbox_publisher.run(self._stopping) if self.outbox_publisher else None)
        sweep_interval = float(
            os.environ.get(definitions.ENV_SWEEP_INTERVAL) or definitions.LOCAL_SWEEP_INTERVAL_SECONDS
        )
        self.sweep_schedule = Schedule("sweeper", sweeper_handler, sweep_interval)
        self._spawn("sweeper", lambda: self.sweep_schedule.run(self._stopping) if self.sweep_schedule else None)

        api = ApiServer((self.endpoints.host, self.endpoints.port), ingest_handler, access_log=self.access_log)
        api.on_invoked = self.pipe.nudge
        from inbox_local.faults import install as install_faults  # noqa: PLC0415 - once the environment is set

        self.faults = install_faults(
            simulator=self.simulator,
            pipe=self.pipe,
            queue_mapping=self.queue_mapping,
            queue_url=self.resources.get("queue_url"),
        )
        api.local_route = self.faults.admin_route
        if definitions.mutual_tls_sources(self.sources):
            self._start_mutual_tls(ingest_handler, api)
        self._spawn("api", api.serve_forever)
        self._api = api  # only once it serves: stop() calls shutdown(), which waits for serve_forever to return

    def _forwarder_root(self, session: Any, forwarding: LocalForwarding | None) -> ForwarderRoot | None:
        """The forwarder Lambda's root, from the settings the deployed forwarder gets (INBOX_FORWARD_URL,
        INBOX_FORWARD_SECRET_NAME, CONTROL_TABLE, the forwarding log's) and this session's clients; None without
        forwarding. The log writes on the session's client too, not on the Lambda's fast-failing one: the embedded
        AWS serializes DynamoDB, and under load a write timed out would leave an attempt out of the log."""
        if forwarding is None:
            return None
        from shared.forwarding import ForwarderSettings, LogSettings, build_forwarder  # noqa: PLC0415
        from shared.roots import AwsClients  # noqa: PLC0415

        dynamodb = session.client("dynamodb")
        return build_forwarder(
            ForwarderSettings.from_environ(),
            LogSettings.from_environ(),
            clients=AwsClients(dynamodb=dynamodb, dynamodb_best_effort=dynamodb),
        )

    def _hold_functions_to_aws(self) -> None:
        """Every function held to its timeout, and answered by S3 as its declared grants allow, as in AWS."""
        from inbox_local import invocation, s3_access  # noqa: PLC0415
        from shared.definitions.s3_grants import Bucket  # noqa: PLC0415

        invocation.install()
        s3_access.install({self.names.body_bucket: Bucket.BODIES, self.names.archive_bucket: Bucket.ARCHIVE})

    def _start_mutual_tls(self, ingest_handler: Any, api: ApiServer) -> None:
        """The mutual-TLS front door (inbox_local/mtls.py): the same function and the same stage throttle, as API
        Gateway's custom domain maps onto the same stage; no local admin routes."""
        from inbox_local.mtls import (  # noqa: PLC0415 - only a declaration with a mutual_tls source needs TLS
            ENV_MTLS_CA_FILE,
            MutualTlsApiServer,
            dev_certificates,
            ensure_dev_certificates,
            server_context,
        )

        certificates = ensure_dev_certificates(dev_certificates())
        ca_file = os.environ.get(ENV_MTLS_CA_FILE, "").strip()
        mtls_api = MutualTlsApiServer(
            (self.endpoints.host, self.endpoints.mtls_port),
            ingest_handler,
            context=server_context(certificates, Path(ca_file) if ca_file else None),
            access_log=self.access_log,
            throttle=api.throttle,
        )
        mtls_api.on_invoked = api.on_invoked
        self._spawn("mtls-api", mtls_api.serve_forever)
        self._mtls_api = mtls_api

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=f"local-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        for server in (self._api, self._mtls_api):
            if server is not None:
                server.shutdown()
                server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.simulator is not None:
            self.simulator.stop()
        if self._moto is not None:
            self._moto.stop()

    def _start_gateway_simulator(self, secretsmanager: Any) -> GatewaySimulator:
        """The built-in gateway simulator is the refetch API unless INBOX_API_BASE_<SOURCE> points elsewhere: one
        account per declared source of a provider it speaks, each with its own API key and payments. The functions
        read the API keys from Secrets Manager, as in AWS: INBOX_API_KEY_<SOURCE> where set, else the simulator's
        key of the source's account."""
        simulator = GatewaySimulator(
            self.endpoints.gateway_port,
            host=self.endpoints.host,
            accounts={s.name: s.provider for s in self.sources if s.provider in SIMULATED_PROVIDERS},
        ).start()
        for name, value in simulator.environment().items():
            os.environ.setdefault(name, value)
        api_keys = local_api_keys(self.sources, simulator.api_keys)
        store_api_keys(secretsmanager, self.names.api_key_secret_prefix, api_keys)
        return simulator

    def request_stop(self) -> None:
        self._stopping.set()

    def wait(self) -> None:
        # In slices, not one blocking wait: a signal the kernel hands to another thread only sets CPython's flag,
        # and a main thread blocked for good in a lock never returns to run its handler (a SIGINT went unanswered
        # for 60 s in a test run); waking twice a second runs it.
        while not self._stopping.wait(timeout=0.5):
            pass

    def banner(self) -> str:
        url = self.endpoints.api_url
        sources = self.sources or load_sources()
        secrets = "\n".join(f"  {signing_secret_variable(s.name)}={signing_secret(s.name)}" for s in sources)
        simulated = ", ".join(SIMULATED_PROVIDERS)
        return f"""Webhook Inbox local stack is up.
  API:           {url}   (POST {url}/webhooks/{{source}}, GET {url}/health)
{self._mutual_tls_banner()}  Embedded AWS:  {self.endpoints.aws_url}   (moto; the CLI reads from here)
  Gateway sim:   {self.endpoints.gateway_url}   (the processor refetches here; REST shapes of {simulated})

Signing secrets in use (development values unless you set them):
{secrets}

Try it, from another terminal:
{_try_it(url, sources)}
Ctrl-C stops it."""

    def _mutual_tls_banner(self) -> str:
        mutual = definitions.mutual_tls_sources(self.sources)
        if not mutual or self._mtls_api is None:
            return ""
        from inbox_local.mtls import dev_certificates  # noqa: PLC0415

        files = dev_certificates()
        url = self.endpoints.mtls_url
        names = ", ".join(source.name for source in mutual)
        return (
            f"  Mutual TLS:    {url}   (POST {url}/webhooks/{{source}} with a client certificate; required by "
            f"{names})\n"
            f"                 client certificate {files.client_cert}, key {files.client_key}, CA {files.ca}\n"
        )
