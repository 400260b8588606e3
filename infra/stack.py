"""The Webhook Inbox stack: one construct per concern, wired together with explicit grants."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import CfnOutput, Stack, Token
from constructs import Construct

from infra.config import FunctionObservability, StackSettings, mutual_tls_settings
from infra.constructs.archive import Archive
from infra.constructs.dispatch_pipe import DispatchPipe
from infra.constructs.dispatch_queue import DispatchQueue
from infra.constructs.gateway_api_keys import GATEWAY_API_KEYS
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.ingest_api import IngestApi
from infra.constructs.ingest_function import IngestFunction
from infra.constructs.monitoring import Monitoring
from infra.constructs.mutual_tls_domain import MutualTlsDomain
from infra.constructs.outbox import Outbox
from infra.constructs.payments_storage import PaymentsStorage
from infra.constructs.processor_function import ProcessorFunction
from infra.constructs.rejected_log import RejectedLog
from infra.constructs.replay_workflow import ReplayWorkflow
from infra.constructs.secrets import SourceSecrets, environment_share
from infra.constructs.signing_secrets import SIGNING_SECRETS
from infra.constructs.sweeper_function import SweeperFunction
from infra.regions import require_supported_region
from shared import definitions


class WebhookInboxStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        sources: tuple[definitions.SourceSpec, ...] = definitions.default_sources(),
        **kwargs: Any,
    ) -> None:
        """`sources`: the declared sources (sources.json, read by infra/application.py); secrets exist for these
        only, and the functions that need the declaration get it in INBOX_SOURCES."""
        super().__init__(scope, construct_id, **kwargs)
        # Validated first: a bad context value stops the synth before any resource is described.
        settings = StackSettings.from_context(self.node)
        self.settings = settings
        require_supported_region(self)
        self.sources = sources
        sources_environment = {definitions.ENV_SOURCES: definitions.sources_json(sources)}
        # What the declaration takes of each function's 4 KB environment, besides the secret maps.
        sources_share = environment_share(sources_environment)

        # Ingest: gateway -> API -> verified, deduplicated inbox item.
        self.storage = InboxStorage(
            self,
            "InboxStorage",
            # Large bodies in S3 outlive the longest-kept inbox item (a provider that retries longer keeps its events
            # longer).
            retention_days=definitions.longest_retention_days(
                settings.retention_days, definitions.declared_providers(sources)
            ),
            warm_write_units=settings.inbox_warm_write_units,
            previous_resource_index=settings.previous_resource_index,
        )
        self.signing_secrets = SourceSecrets(
            self,
            "SigningSecrets",
            of=SIGNING_SECRETS,
            stack_name=self.stack_name,
            sources=sources,
            alongside=sources_share,
        )
        # What the ingest refused: its own table, kept days, PutItem only (rejected_log.py).
        self.rejected = RejectedLog(self, "RejectedLog", stack_name=self.stack_name)
        self.ingest = IngestFunction(
            self,
            "IngestFunction",
            storage=self.storage,
            secrets=self.signing_secrets,
            rejected=self.rejected,
            settings=settings,
            sources_environment=sources_environment,
        )
        # The front door admits what the inbox table absorbs: pre-warmed, its warm throughput.
        self.api = IngestApi(
            self,
            "IngestApi",
            handler=self.ingest.function,
            throttle=definitions.api_throttle(
                settings.inbox_warm_write_units or definitions.ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND
            ),
        )
        # The mutual-TLS custom domain, for the sources that declare mutual_tls (and only then).
        mutual_tls = mutual_tls_settings(
            self.node, sources, region=None if Token.is_unresolved(self.region) else self.region
        )
        self.mutual_tls = MutualTlsDomain(self, "MutualTls", settings=mutual_tls, api=self.api) if mutual_tls else None

        # Dispatch and processing: inbox stream -> Pipe -> SQS FIFO (one group per payment) -> processor.
        self.payments = PaymentsStorage(self, "PaymentsStorage")
        self.queues = DispatchQueue(self, "DispatchQueue")
        self.pipe = DispatchPipe(self, "DispatchPipe", table=self.storage.table, queue=self.queues.queue)
        self.api_keys = SourceSecrets(
            self,
            "GatewayApiKeys",
            of=GATEWAY_API_KEYS,
            stack_name=self.stack_name,
            sources=sources,
            alongside=sources_share,
        )
        # Downstream: the processor's transactional outbox -> the stack's event bus (and the signed forwarding).
        self.outbox = Outbox(self, "Outbox", payments=self.payments, settings=settings)
        self.processor = ProcessorFunction(
            self,
            "ProcessorFunction",
            inbox=self.storage,
            payments=self.payments,
            outbox=self.outbox,
            queues=self.queues,
            api_keys=self.api_keys,
            settings=settings,
            sources_environment=sources_environment,
        )

        # Operations: replay (Step Functions) sets selected events back to pending; the Pipe dispatches them.
        self.replay = ReplayWorkflow(
            self,
            "ReplayWorkflow",
            table=self.storage.table,
            tracing=FunctionObservability.from_context(self.node).tracing,
            log_level=settings.replay_log_level,
        )
        # The sweeper (schedule): re-dispatch lost dispatches, measure, reconcile stuck payments.
        self.sweeper = SweeperFunction(
            self,
            "SweeperFunction",
            inbox=self.storage,
            payments=self.payments,
            queues=self.queues,
            settings=settings,
            sources_environment=sources_environment,
        )
        # Retention: TTL deletions of the inbox are archived to S3 from the stream.
        self.archive = Archive(self, "Archive", inbox=self.storage, settings=settings)
        # Alarms (to an SNS topic) and the flow's dashboard.
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            settings=settings,
            functions={
                "ingest": self.ingest.function,
                "processor": self.processor.function,
                "sweeper": self.sweeper.function,
                "archiver": self.archive.function,
                "publisher": self.outbox.publisher,
                **({"forwarder": self.outbox.forwarder} if self.outbox.forwarder else {}),
            },
            api_stage=self.api.stage,
            pipe_names={
                "dispatch": self.pipe.pipe_name,
                "publish": self.outbox.publish_pipe.pipe_name,
                **({"forward": self.outbox.forward_pipe.pipe_name} if self.outbox.forward_pipe else {}),
            },
            queue=self.queues.queue,
            dead_letter_queue=self.queues.dead_letter_queue,
            pipe_dead_letter_queue=self.pipe.dead_letter_queue,
            archive_failure_queue=self.archive.failure_queue,
            replay_state_machine=self.replay.state_machine,
            # The providers of the declared sources, in catalog order (alarm names derive from them).
            providers=definitions.declared_providers(sources),
            sources=tuple(source.name for source in sources),
            downstream_dead_letter_queues=[
                (
                    "outbox-dead-letter-queue",
                    self.outbox.publish_pipe.dead_letter_queue,
                    "outbox records the publisher could not put on the event bus",
                ),
                *(
                    [
                        (
                            "forward-dead-letter-queue",
                            self.outbox.forward_pipe.dead_letter_queue,
                            "events the customer's endpoint did not accept within the retries (they are still on "
                            "the bus and in the outbox table)",
                        )
                    ]
                    if self.outbox.forward_pipe
                    else []
                ),
            ],
        )

        outputs = {
            definitions.OUTPUT_API_URL: (self.api.url, "Base URL; gateways POST to <url>webhooks/<source>"),
            definitions.OUTPUT_INBOX_TABLE: (self.storage.table.table_name, "Inbox DynamoDB table"),
            definitions.OUTPUT_BODY_BUCKET: (self.storage.body_bucket.bucket_name, "Bucket of large bodies"),
            definitions.OUTPUT_SIGNING_SECRETS: (
                self.signing_secrets.arn_map,
                "The signing secrets, JSON {source: Secrets Manager ARN} (inbox secrets set SOURCE --kind signing)",
            ),
            definitions.OUTPUT_INGEST_FUNCTION: (self.ingest.function.function_name, "Ingest Lambda"),
            definitions.OUTPUT_PAYMENTS_TABLE: (self.payments.payments_table.table_name, "Payments DynamoDB table"),
            definitions.OUTPUT_CONTROL_TABLE: (
                self.payments.control_table.table_name,
                "Control DynamoDB table (the gateways' circuit breakers)",
            ),
            definitions.OUTPUT_QUEUE_URL: (self.queues.queue.queue_url, "Dispatch queue (SQS FIFO)"),
            definitions.OUTPUT_DEAD_LETTER_QUEUE_URL: (
                self.queues.dead_letter_queue.queue_url,
                "Dead-letter queue of events the processor gave up on",
            ),
            definitions.OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL: (
                self.pipe.dead_letter_queue.queue_url,
                "Dead-letter queue of stream records the Pipe could not deliver",
            ),
            definitions.OUTPUT_PROCESSOR_FUNCTION: (self.processor.function.function_name, "Processor Lambda"),
            definitions.OUTPUT_API_KEY_SECRETS: (
                self.api_keys.arn_map,
                "The gateways' API keys, JSON {source: Secrets Manager ARN} (inbox secrets set SOURCE --kind api-key)",
            ),
        }
        # No larger than the signing-secret map above (a provider id is shorter than an ARN).
        outputs[definitions.OUTPUT_SOURCE_PROVIDERS] = (
            json.dumps({source.name: source.provider for source in sources}, separators=(",", ":")),
            "The deployed sources, JSON {source: provider}; gateways POST to <ApiUrl>webhooks/<source>",
        )
        if self.mutual_tls is not None:
            outputs[definitions.OUTPUT_MUTUAL_TLS_URL] = (
                self.mutual_tls.url,
                "Mutual-TLS base URL: gateways of the mutual_tls sources POST to <url>webhooks/<source>",
            )
            outputs[definitions.OUTPUT_MUTUAL_TLS_DNS_TARGET] = (
                self.mutual_tls.dns_target,
                "Point the mutual-TLS domain name here (CNAME, or a Route 53 alias with the zone below)",
            )
            outputs[definitions.OUTPUT_MUTUAL_TLS_DNS_ZONE] = (
                self.mutual_tls.dns_hosted_zone_id,
                "Hosted zone id of the mutual-TLS DNS target (for a Route 53 alias record)",
            )
            outputs[definitions.OUTPUT_MUTUAL_TLS_SOURCES] = (
                json.dumps([s.name for s in definitions.mutual_tls_sources(sources)], separators=(",", ":")),
                "The sources that accept deliveries only through the mutual-TLS domain, JSON [source, ...]",
            )
        outputs[definitions.OUTPUT_REPLAY_STATE_MACHINE] = (
            self.replay.state_machine.state_machine_arn,
            "Replay workflow (Step Functions): `inbox replay --stack NAME` starts it",
        )
        outputs[definitions.OUTPUT_SWEEPER_FUNCTION] = (self.sweeper.function.function_name, "Sweeper Lambda")
        outputs[definitions.OUTPUT_ARCHIVER_FUNCTION] = (self.archive.function.function_name, "Archiver Lambda")
        outputs[definitions.OUTPUT_ARCHIVE_BUCKET] = (
            self.archive.bucket.bucket_name,
            "Archive of inbox items removed by TTL (gzip JSON lines)",
        )
        outputs[definitions.OUTPUT_ALARM_TOPIC] = (
            self.monitoring.topic.topic_arn,
            "SNS topic of the alarms: subscribe your on-call (or deploy with -c alarm_email=...)",
        )
        outputs[definitions.OUTPUT_OUTBOX_TABLE] = (self.outbox.table.table_name, "Transactional outbox table")
        outputs[definitions.OUTPUT_EVENT_BUS] = (
            self.outbox.bus.event_bus_name,
            "EventBridge bus of the published events (source webhook-inbox): add your rules here",
        )
        outputs[definitions.OUTPUT_OUTBOX_DEAD_LETTER_QUEUE_URL] = (
            self.outbox.publish_pipe.dead_letter_queue.queue_url,
            "Dead-letter queue of outbox records not put on the bus",
        )
        if self.outbox.forward_secret and self.outbox.forward_pipe:
            outputs[definitions.OUTPUT_FORWARD_SECRET] = (
                self.outbox.forward_secret.secret_arn,
                "Secrets Manager secret (ARN) signing the forwarded events (give 'current' to your receiver)",
            )
            outputs[definitions.OUTPUT_FORWARD_DEAD_LETTER_QUEUE_URL] = (
                self.outbox.forward_pipe.dead_letter_queue.queue_url,
                "Dead-letter queue of forwarded batches the endpoint kept refusing",
            )
        outputs[definitions.OUTPUT_REJECTED_TABLE] = (
            self.rejected.table.table_name,
            "Rejected-delivery log (`inbox rejected list --stack NAME`)",
        )
        outputs[definitions.OUTPUT_FINGERPRINT_KEY_SECRET] = (
            self.rejected.fingerprint_key.secret_arn,
            "Key of the rejected-delivery log's fingerprints (read by `inbox doctor --rejected`)",
        )
        if self.outbox.forward_log is not None:
            outputs[definitions.OUTPUT_FORWARD_LOG_TABLE] = (
                self.outbox.forward_log.table_name,
                "Forwarding log: every forwarding attempt and the endpoint's answer (inbox outbox attempts)",
            )
        for key, (value, description) in outputs.items():
            CfnOutput(self, key, value=value, description=description)
