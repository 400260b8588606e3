"""Each function's composition root (shared/roots.py and the `build_*` beside each service): built from its
settings with the clients it is given, the Wrap applied to what it hands out, and the handler's `Root` that builds
it once or takes the one installed. The local stack's fault injection goes through the same roots."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from functions.ingest import handler as ingest_handler
from functions.replay import handler as replay_handler
from inbox_local import faults
from inbox_local.faults import FaultInjector, InjectedCrash
from inbox_local.lambda_context import LocalLambdaContext
from shared import ingest, replay
from shared.definitions import ENV_SOURCES, SourceSpec, sources_json
from shared.forwarding import ForwardCheckpoints, ForwarderSettings, LogSettings, build_forwarder
from shared.inbox.model import EventStatus
from shared.inbox.store import PutOutcome, StorageUnavailable
from shared.ingest import IngestService, IngestSettings, build_ingest_service
from shared.payments.publishing import BusPublisher, PublisherSettings, build_publisher
from shared.payments.store import ProcessingStore
from shared.process.app import ProcessorSettings, SqsRetryQueue, build_processor, default_processor
from shared.process.confirm import PayloadConfirmation
from shared.process.messages import Delivery
from shared.providers.base import SigningSecrets
from shared.rejections import RejectionLog, RejectionLogSettings
from shared.replay import ReplaySettings, build_replay_store
from shared.retention import ArchiverSettings, build_archiver
from shared.roots import AwsClients, Root
from shared.sources import Sources, reset_declared_sources
from shared.sweeper import SweeperSettings, SweepStore, build_sweeper

ROOT = Path(__file__).resolve().parents[2]


class Recording:
    """A fake AWS client: every call is recorded as (operation, arguments) and answers `answers[operation]`."""

    def __init__(self, **answers: Any) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.answers = answers

    def __getattr__(self, operation: str) -> Any:
        if operation.startswith("_"):
            raise AttributeError(operation)

        def call(**arguments: Any) -> Any:
            self.calls.append((operation, arguments))
            return self.answers.get(operation, {})

        return call

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.calls]


def recording(**answers: Any) -> Any:
    """A fake client, typed as whatever it stands in for."""
    return Recording(**answers)


class Wraps:
    """A Wrap that records what it was handed, and hands it out as it is."""

    def __init__(self) -> None:
        self.parts: list[Any] = []

    def __call__(self, part: Any, /) -> Any:
        self.parts.append(part)
        return part


def fakes(**clients: Any) -> AwsClients:
    """The clients a root is given, as fakes."""
    return AwsClients(**clients)


class FixedSecrets:
    def signing_secrets(self, source: str) -> SigningSecrets:
        return SigningSecrets("whsec_current", None)


INGEST = IngestSettings(inbox_table="inbox", body_bucket="bodies", secret_prefix="")
PROCESSOR = ProcessorSettings.from_environ(
    {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "payments", "INBOX_QUEUE_URL": "q", "INBOX_DLQ_URL": "dlq"}
)
SOURCES = Sources.of((SourceSpec("shop", "stripe", redact_fields=("email",)), SourceSpec("other", "adyen")))


def no_gateway(source: str) -> None:
    return None


# ---------------------------------------------------------------------------------------------------- Root


def test_a_root_is_built_once_and_shared_by_concurrent_first_calls():
    # Given a root whose build is slow enough for threads to overlap
    built: list[object] = []
    started = threading.Barrier(4)

    def build() -> object:
        time.sleep(0.05)
        built.append(object())
        return built[-1]

    root: Root[object] = Root(build)

    def first_call(results: list[object]) -> None:
        started.wait()
        results.append(root())

    results: list[object] = []
    threads = [threading.Thread(target=first_call, args=(results,)) for _ in range(4)]
    # When four threads ask for it at once, and once more afterwards
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then it was built once, and every caller got that one
    assert len(built) == 1 and results == [built[0]] * 4 and root() is built[0]


def test_an_installed_root_is_what_the_handler_gets_until_reset():
    # Given a root built from the environment, and another one built elsewhere
    root: Root[list[str]] = Root(lambda: ["from the environment"])
    installed = ["built by the local stack"]
    # When the other one is installed, Then the handler gets it
    root.install(installed)
    assert root() is installed
    # And once reset, the root is built again from the environment
    root.reset()
    assert root() == ["from the environment"]


# ---------------------------------------------------------------------------------------------------- ingest


def test_the_ingest_root_builds_its_store_secrets_sources_and_log_from_its_settings_and_clients():
    # Given fake clients, the sources' secrets, a declaration and a rejected-delivery log's settings
    dynamodb, s3, best_effort, wrap = recording(), recording(), recording(), Wraps()
    clients = fakes(dynamodb=dynamodb, s3=s3, dynamodb_best_effort=best_effort)
    secrets = FixedSecrets()
    # When the root is built
    service = build_ingest_service(
        INGEST,
        rejection_log=RejectionLogSettings(table="rejected", fingerprint_key="k"),
        clients=clients,
        secrets=secrets,
        sources=SOURCES,
        wrap=wrap,
    )
    # Then the service has its settings, the given secrets and declaration, and a log on the best-effort client
    assert isinstance(service, IngestService) and service.settings is INGEST
    assert service.secrets is secrets and service.sources is SOURCES
    assert isinstance(service.rejections, RejectionLog) and service.rejections.dynamodb is best_effort
    # And its store writes to the table and bucket of the settings, through the given clients
    assert (service.store.table_name, service.store.bucket_name) == ("inbox", "bodies")
    assert service.store.put_new({"pk": "shop#evt_1", "status": "pending"}) is PutOutcome.STORED
    service.store.put_body("shop/evt_1", b"{}")
    assert dynamodb.operations() == ["put_item"] and dynamodb.calls[0][1]["TableName"] == "inbox"
    assert s3.operations() == ["put_object"] and s3.calls[0][1]["Bucket"] == "bodies"
    # And the Wrap was handed each of them before the service got them
    assert wrap.parts == [service.rejections, service.store, secrets]


def test_the_ingest_root_without_a_log_only_counts_refusals_and_reads_secrets_from_secrets_manager():
    # Given the settings alone
    service = build_ingest_service(INGEST, sources=SOURCES)
    # Then refusals are not recorded, and the secrets are the sources' Secrets Manager secrets (read on first use)
    assert service.rejections is None
    assert type(service.secrets).__name__ == "SigningSecretSource"


# ---------------------------------------------------------------------------------------------------- processor


def test_the_processor_root_builds_its_store_queue_routes_and_reconciler_from_its_settings_and_clients():
    # Given fake clients, a gateway lookup and the sources' confirmation settings
    dynamodb, sqs, wrap = recording(), recording(), Wraps()
    asked: list[str] = []

    def lookup(source: str) -> None:
        asked.append(source)

    confirmation = PayloadConfirmation(lambda source: None)
    # When the root is built
    processor = build_processor(
        PROCESSOR,
        clients=fakes(dynamodb=dynamodb, sqs=sqs),
        gateway_client=lookup,
        confirmation=confirmation,
        wrap=wrap,
    )
    # Then it holds the settings' limits, the given confirmation, and a store on the settings' tables and client
    assert (processor.max_attempts, processor.retry_base_seconds) == (
        PROCESSOR.max_attempts,
        PROCESSOR.retry_base_seconds,
    )
    assert processor.confirmation is confirmation
    assert isinstance(processor.store, ProcessingStore) and processor.store.dynamodb is dynamodb
    assert (processor.store.inbox_table, processor.store.payments_table) == ("inbox", "payments")
    # And its queue retries through the given SQS client, on the settings' queues
    assert isinstance(processor.queue, SqsRetryQueue)
    processor.queue.delay(Delivery(receipt_handle="r1", message_group_id="g", receive_count=1, body="{}"), 30)
    assert sqs.calls == [
        ("change_message_visibility", {"QueueUrl": "q", "ReceiptHandle": "r1", "VisibilityTimeout": 30})
    ]
    assert processor.queue.dead_letter_queue_url == "dlq"
    # And the Wrap was handed the store and the queue
    assert wrap.parts == [processor.store, processor.queue]
    assert processor.reconciler is not None and asked == []  # a gateway client is looked up per event, not here


# ---------------------------------------------------------------------------------------------------- sweeper


def test_the_sweeper_root_builds_its_store_and_queue_from_its_settings_and_clients():
    # Given fake clients and the sources to reconcile
    dynamodb, sqs, wrap = recording(), recording(), Wraps()
    settings = SweeperSettings.from_environ(
        {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "payments", "INBOX_QUEUE_URL": "q"}
    )
    shop = SOURCES.get("shop")
    # When the root is built
    sweeper = build_sweeper(
        settings,
        clients=fakes(dynamodb=dynamodb, sqs=sqs),
        reconcile_sources=[shop],
        wrap=wrap,
    )
    # Then it reads and writes through the given clients, on the settings' tables, and reconciles the given sources
    assert sweeper.settings is settings and sweeper.reconcile_sources == (shop,)
    assert isinstance(sweeper.store, SweepStore) and sweeper.store.dynamodb is dynamodb and sweeper.sqs is sqs
    assert (sweeper.store.inbox_table, sweeper.store.payments_table) == ("inbox", "payments")
    assert wrap.parts == [sweeper.store]


def test_the_sweeper_root_reconciles_the_declared_sources_whose_provider_has_an_api(monkeypatch):
    # Given a declaration of a provider with a refetch API and one without (the generic HMAC driver)
    declared = (SourceSpec("shop", "stripe"), SourceSpec("hooks", "generic"))
    monkeypatch.setenv(ENV_SOURCES, sources_json(declared))
    reset_declared_sources()
    settings = SweeperSettings.from_environ(
        {"INBOX_TABLE": "inbox", "PAYMENTS_TABLE": "payments", "INBOX_QUEUE_URL": "q"}
    )
    try:
        # When the root is built without sources, Then it reconciles only the source it can refetch from
        assert [source.name for source in build_sweeper(settings).reconcile_sources] == ["shop"]
    finally:
        monkeypatch.undo()
        reset_declared_sources()


# ---------------------------------------------------------------------------------------------------- archiver


def test_the_archiver_root_builds_from_its_settings_the_sources_redactions_and_its_s3_client():
    # Given a fake S3 client and a declaration where one source redacts a field of its own
    s3, wrap = recording(), Wraps()
    settings = ArchiverSettings(archive_bucket="archive", body_bucket="bodies", redact_fields="card,cpf")
    # When the root is built
    archiver = build_archiver(settings, clients=fakes(s3=s3), sources=SOURCES, wrap=wrap)
    # Then it writes to the settings' buckets through the given client, redacting the deployment's and the source's
    assert (archiver.archive_bucket, archiver.body_bucket, archiver.s3) == ("archive", "bodies", s3)
    assert archiver.fields_for({"pk": "shop#evt_1"}) == {"card", "cpf", "email"}
    assert archiver.fields_for({"pk": "other#evt_1"}) == {"card", "cpf"}
    assert wrap.parts == [archiver]


# ---------------------------------------------------------------------------------------------------- publisher


def test_the_publisher_root_puts_on_the_settings_bus_through_its_events_client():
    # Given a fake EventBridge client
    events = recording()
    # When the root is built, Then it publishes to the settings' bus through that client
    publisher = build_publisher(PublisherSettings(event_bus_name="payments"), clients=fakes(events=events))
    assert isinstance(publisher, BusPublisher) and publisher.events is events and publisher.bus_name == "payments"
    assert publisher.publish([]) == 0 and events.calls == []


# ---------------------------------------------------------------------------------------------------- forwarder


def test_the_forwarder_root_hands_out_fresh_checkpoints_on_its_client_and_logs_on_the_best_effort_one():
    # Given fake clients, the forwarder's settings and a forwarding log's
    dynamodb = recording(get_item={"Item": {"sequence": {"N": "4"}}})
    best_effort, wrap = recording(), Wraps()
    settings = ForwarderSettings(
        forward_url="https://example.com/hooks", forward_secret_name="fwd", control_table="control"
    )
    # When the root is built
    root = build_forwarder(
        settings,
        LogSettings(forward_log_table="forward-log"),
        clients=fakes(dynamodb=dynamodb, dynamodb_best_effort=best_effort),
        wrap=wrap,
    )
    # Then each batch's checkpoints are a fresh view of the control table, read through the given client
    first, second = root.checkpoints(), root.checkpoints()
    assert isinstance(first, ForwardCheckpoints) and first is not second
    assert first.delivered("stripe#pi_1") == 4 and dynamodb.calls[0][1]["TableName"] == "control"
    assert wrap.parts == [first, second]
    # And the forwarding log writes through the best-effort client
    assert root.log is not None and root.log.dynamodb is best_effort


def test_the_forwarder_root_without_a_log_table_records_nothing():
    settings = ForwarderSettings(
        forward_url="https://example.com/hooks", forward_secret_name="fwd", control_table="control"
    )
    root = build_forwarder(settings, LogSettings(forward_log_table=""), clients=fakes(dynamodb=recording()))
    assert root.log is None


# ---------------------------------------------------------------------------------------------------- replay


def test_the_replay_root_is_the_inbox_store_of_its_settings_on_its_client():
    # Given a fake DynamoDB client, When the root is built
    dynamodb, wrap = recording(), Wraps()
    store = build_replay_store(ReplaySettings(inbox_table="inbox"), clients=fakes(dynamodb=dynamodb), wrap=wrap)
    # Then a page's replay write goes to the settings' table through that client
    assert store.replay("shop#evt_1", selected=EventStatus.FAILED, now="2026-01-01T00:00:00Z", replayed_by="arn:x")
    assert dynamodb.operations() == ["update_item"] and dynamodb.calls[0][1]["TableName"] == "inbox"
    assert wrap.parts == [store]


# ---------------------------------------------------------------------------------------------------- the handlers


def test_the_ingest_handler_runs_with_the_root_installed_for_it():
    # Given an ingest root built with a declaration of its own ("shop", unknown to the default one) and fakes
    dynamodb = recording()
    service = build_ingest_service(
        INGEST,
        clients=fakes(dynamodb=dynamodb),
        secrets=FixedSecrets(),
        sources=SOURCES,
    )
    ingest.default_ingest_service.install(service)
    # When the Lambda handler gets an unsigned delivery to that source
    event = {
        "rawPath": "/webhooks/shop",
        "requestContext": {"http": {"method": "POST", "path": "/webhooks/shop", "sourceIp": "203.0.113.9"}},
        "pathParameters": {"source": "shop"},
        "headers": {"content-type": "application/json"},
        "body": '{"id": "evt_1"}',
        "isBase64Encoded": False,
    }
    response = ingest_handler.lambda_handler(event, LocalLambdaContext("ingest"))
    # Then the installed root answered it: the source is known, the signature refused, nothing stored
    assert response["statusCode"] == 401 and dynamodb.calls == []


def test_the_replay_handler_runs_with_the_root_installed_for_it():
    # Given a replay root on a fake client, installed as the handler's
    dynamodb = recording()
    replay.default_replay_store.install(
        build_replay_store(ReplaySettings(inbox_table="inbox"), clients=fakes(dynamodb=dynamodb))
    )
    page = {"status": "failed", "execution": "arn:x", "items": [{"pk": {"S": "shop#evt_1"}, "event_type": {"S": "t"}}]}
    # When the Lambda handler gets a page, Then its write went through the installed root's client
    assert replay_handler.lambda_handler(page, LocalLambdaContext("replay"))[0]["outcome"] == "replayed"
    assert dynamodb.operations() == ["update_item"]


# ---------------------------------------------------------------------------------------------------- faults


def test_the_fault_injector_wraps_the_ingests_store_through_the_root():
    # Given the ingest's root built with the injector's Wrap, on a fake DynamoDB client, every write throttled
    dynamodb = recording()
    injector = FaultInjector()
    service = build_ingest_service(
        INGEST,
        clients=fakes(dynamodb=dynamodb),
        secrets=FixedSecrets(),
        sources=SOURCES,
        wrap=injector.wrap_ingest,
    )
    injector.configure({"ingest_throttle_rate": 1.0})
    # When an item is stored, Then DynamoDB's throttling reaches the service's store (the handler's 503)
    with pytest.raises(StorageUnavailable, match="ProvisionedThroughputExceededException"):
        service.store.put_new({"pk": "shop#evt_1", "status": "pending"})
    assert dynamodb.calls == [] and injector.counters()["ingest_throttle"] == 1
    # And with the fault off, the write goes through the client the root was given
    injector.configure({"ingest_throttle_rate": 0})
    assert service.store.put_new({"pk": "shop#evt_1", "status": "pending"}) is PutOutcome.STORED
    assert dynamodb.operations() == ["put_item"]
    # And only the store is wrapped: the secrets are the ones given
    assert isinstance(service.secrets, FixedSecrets)


def test_the_fault_injector_wraps_the_processors_store_through_the_root():
    # Given the processor's root built with the injector's Wrap, every settle crashing first
    dynamodb = recording()
    injector = FaultInjector()
    processor = build_processor(
        PROCESSOR,
        clients=fakes(dynamodb=dynamodb),
        gateway_client=no_gateway,
        confirmation=PayloadConfirmation(lambda source: None),
        wrap=injector.wrap_processor,
    )
    injector.configure({"crash_before_commit_rate": 1.0})
    # When an event is settled, Then the invocation dies before the transaction, which never reaches DynamoDB
    with pytest.raises(InjectedCrash):
        processor.store.settle("shop#evt_1", EventStatus.PROCESSED, now="2026-01-01T00:00:00Z", note="test")
    assert dynamodb.calls == []
    # And the queue is the root's own
    assert isinstance(processor.queue, SqsRetryQueue)


def test_the_local_stack_installs_the_roots_it_built_with_the_injector(monkeypatch: pytest.MonkeyPatch):
    # Given a function environment as the local stack sets it
    for name, value in {
        "INBOX_TABLE": "inbox",
        "INBOX_BODY_BUCKET": "bodies",
        "PAYMENTS_TABLE": "payments",
        "INBOX_QUEUE_URL": "q",
        "INBOX_DLQ_URL": "dlq",
    }.items():
        monkeypatch.setenv(name, value)
    # When the fault injection is installed, every processor settle set to crash
    injector = faults.install(simulator=None, pipe=None, queue_mapping=None, queue_url=None)
    injector.configure({"crash_before_commit_rate": 1.0, "ingest_throttle_rate": 1.0})
    # Then the handlers' roots are the ones built with its Wrap: the processor's settle dies, the ingest's put throttles
    with pytest.raises(InjectedCrash):
        default_processor().store.settle("shop#evt_1", EventStatus.PROCESSED, now="2026-01-01T00:00:00Z", note="t")
    with pytest.raises(StorageUnavailable):
        ingest.default_ingest_service().store.put_new({"pk": "shop#evt_1", "status": "pending"})


def test_the_fault_injector_assigns_no_attribute_of_a_built_service():
    # Given the fault injection's source, Then it assigns no `.store` (or any attribute) of a service or processor:
    # what it wraps, it wraps through the roots' Wrap
    tree = ast.parse((ROOT / "inbox_local" / "faults.py").read_text(encoding="utf-8"))
    assigned = {
        target.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute) and not (isinstance(target.value, ast.Name) and target.value.id == "self")
    }
    # Its pause timer's daemon flag and the queue mapping's invocation (the Lambda service's side): nothing of a
    # function's
    assert assigned <= {"daemon", "handler"}
