"""Downstream: the transactional outbox table, the stack's EventBridge bus, and the optional signed forwarding.

The processor writes one outbox record per payment transition (and per failed event) in the transaction that
causes it (shared/payments/store.py). From there:

    outbox table stream --(outbox Pipe, INSERT only)--> publisher Lambda --PutEvents--> event bus (+ archive)
                        --(forwarding Pipe, INSERT only)--> forwarder Lambda --signed POST--> customer endpoint

Choices:
- Outbox table: keys ``pk`` (payment) + ``sequence`` (number), so one payment's records share a partition, hence a
  stream shard, and the stream hands them over in commit order. NEW_IMAGE stream, TTL (a 7-day hand-over
  buffer), point-in-time recovery, the AWS managed key, deletion protection and RETAIN like the payments table:
  an event committed but not yet published must survive a mistaken stack deletion.
- Bus: a custom bus owned by the stack, with an archive (``EVENT_BUS_ARCHIVE_RETENTION_DAYS``) so published events
  can be replayed into a rule added later. The Pipe targets the publisher Lambda rather than the bus itself: a
  Pipe's input template cannot turn the table's typed image (``{"N": "3"}``, absent nulls) into the documented
  event, and the Lambda runs the one function that does (``event_from_stream_record``, shared with the local
  stack), then PutEvents with ``detail-type`` = the event type.
- Forwarding is through a signer Lambda, not EventBridge API destinations: Standard Webhooks signs each attempt's
  ``webhook-timestamp`` with an HMAC of the body, which a connection's static API-key/basic/OAuth headers cannot
  carry, and API destinations' own retries would resend a stale timestamp that receivers refuse after five
  minutes. The issue's three properties map to: retry policy = the Pipe's retries with exponential backoff
  (``FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS``, ``FORWARD_PIPE_MAXIMUM_RECORD_AGE_SECONDS``) plus three POSTs per
  event inside an invocation; dead-letter queue = the Pipe's; rate limit = the Pipe's shape, not reserved
  concurrency (below).
- Order and rate without reserved concurrency. A Pipe keeps the order of a stream's records ("EventBridge Pipes
  maintains the order of records from the data stream when sending that data to the destination",
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-dynamodb.html) and works each shard one
  batch at a time: ``ParallelizationFactor``, "the number of batches to process concurrently from each shard",
  defaults to 1 and is pinned to 1 here (``FORWARD_PIPE_PARALLELIZATION_FACTOR``). The invocation is synchronous
  (``REQUEST_RESPONSE``), so the next batch of a shard waits for the previous one, and the forwarder POSTs a
  batch's events one after the other, checkpointing each in the control table. One payment's records share a
  partition, hence a shard, hence this order. The rate is thus at most one POST in flight per open shard of the
  outbox stream (a handful for a table of this size), at most ``FORWARD_PIPE_BATCH_SIZE`` events per
  invocation. Reserved concurrency would cap that further, but it is opt-in (context
  ``forwarder_reserved_concurrency``): Lambda keeps at least 100 of the account's concurrency unreserved
  (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html), and a new account's quota can
  be as low as 10, so reserving any of it there fails the deploy. A throttled invocation is retried by the Pipe
  like a failed one either way.
- The forwarding secret: Secrets Manager, ``{"current": ..., "previous": ...}`` like the gateways' signing
  secrets, generated at deploy (48 base64-alphabet characters: a valid Standard Webhooks key, with or without the
  ``whsec_`` prefix). Rotation: put the new value in ``current`` and the old in ``previous``; both sign until
  ``previous`` is emptied, so receivers holding either verify.
- The forwarding log (shared/forwarding_log.py): its own table, one item per attempt keyed by the event's
  ``webhook-id`` and the attempt's time, TTL ``forward_log_retention_days``. The forwarder may only PutItem there
  (it never reads the log: the operator's CLI does). Disposable like the control table (no deletion protection,
  deleted with the stack): it explains deliveries, it decides none. Point-in-time recovery on anyway (cdk-nag
  DDB3), the AWS managed key like every table. Only with forwarding: without it nothing would write there.
- Both Pipes: the pattern of the dispatch Pipe (infra/constructs/dispatch_pipe.py): an explicit role that may
  read this stream and invoke this one function and send to its dead-letter queue, ERROR-level logs without
  execution data (events carry amounts and ids).
"""

from __future__ import annotations

import json

from aws_cdk import Aws, Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import StackSettings
from infra.constructs.access import Access, table_access
from infra.constructs.dispatch_pipe import ON_PARTIAL_BATCH_ITEM_FAILURE, StreamPipeEssentials
from infra.constructs.payments_storage import PaymentsStorage
from infra.constructs.python_function import FunctionSpec, PythonFunction
from infra.constructs.secrets import retained_secret
from infra.constructs.tables import table
from infra.nag import acknowledge
from shared import definitions

INVOCATION_TYPE = "REQUEST_RESPONSE"  # synchronous: the Pipe learns of a failure and retries the batch


class StreamToFunctionPipe(Construct):
    """A Pipe from a DynamoDB stream (INSERT records) to a Lambda function, with its role, logs and DLQ."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stream_arn: str,
        function: lambda_.IFunction,
        description: str,
        batch_size: int,
        maximum_retry_attempts: int,
        maximum_record_age_seconds: int | None = None,
        parallelization_factor: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        essentials = StreamPipeEssentials(
            self,
            stream_arn=stream_arn,
            role_description=f"Execution role of a Pipe: {description}",
            dead_letters="the metadata (shard, sequence numbers) of outbox records it gave up on",
        )
        self.dead_letter_queue, self.log_group, self.role = (
            essentials.dead_letter_queue,
            essentials.log_group,
            essentials.role,
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[function.function_arn])
        )

        self.pipe = pipes.CfnPipe(
            self,
            "Pipe",
            description=description,
            role_arn=self.role.role_arn,
            source=stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position=definitions.OUTBOX_PIPE_STARTING_POSITION,
                    batch_size=batch_size,
                    maximum_retry_attempts=maximum_retry_attempts,
                    maximum_record_age_in_seconds=maximum_record_age_seconds,
                    parallelization_factor=parallelization_factor,
                    on_partial_batch_item_failure=ON_PARTIAL_BATCH_ITEM_FAILURE,
                    dead_letter_config=essentials.dead_letter_config(),
                ),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(definitions.OUTBOX_PIPE_FILTER_PATTERN))]
                ),
            ),
            target=function.function_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                lambda_function_parameters=pipes.CfnPipe.PipeTargetLambdaFunctionParametersProperty(
                    invocation_type=INVOCATION_TYPE
                ),
            ),
            log_configuration=essentials.log_configuration(),
        )
        # Creating a Pipe checks that its role can read the source and invoke the target.
        self.pipe.node.add_dependency(self.role)
        # Ref of an AWS::Pipes::Pipe is its name: the PipeName dimension of the Pipe's own metrics (monitoring).
        self.pipe_name: str = self.pipe.ref


PUBLISHER = FunctionSpec(
    "Publisher",
    "publisher",
    definitions.PUBLISHER_MEMORY_MB,
    definitions.PUBLISHER_TIMEOUT_SECONDS,
    "Webhook Inbox publisher: outbox records -> events on the stack's EventBridge bus",
)
FORWARDER = FunctionSpec(
    "Forwarder",
    "forwarder",
    definitions.FORWARDER_MEMORY_MB,
    definitions.FORWARDER_TIMEOUT_SECONDS,
    "Webhook Inbox forwarder: outbox records -> signed POSTs to the customer's endpoint",
)


class Outbox(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, payments: PaymentsStorage, settings: StackSettings
    ) -> None:
        super().__init__(scope, construct_id)

        self.table = table(
            self,
            "OutboxTable",
            partition_key=definitions.OUTBOX_PARTITION_KEY,
            sort_key=(definitions.OUTBOX_SORT_KEY, dynamodb.AttributeType.NUMBER),
            kept=True,
            stream=dynamodb.StreamViewType(definitions.OUTBOX_STREAM_VIEW_TYPE),
            time_to_live_attribute=definitions.OUTBOX_TTL_ATTRIBUTE,
        )
        stream_arn = self.table.table_stream_arn
        if stream_arn is None:  # pragma: no cover - the table above has a stream
            raise ValueError("the outbox table has no stream")

        self.bus = events.EventBus(self, "EventBus", event_bus_name=f"{Aws.STACK_NAME}-events")
        self.bus_archive = self.bus.archive(
            "Archive",
            description="Every event the Webhook Inbox published, replayable into new rules",
            event_pattern=events.EventPattern(source=[definitions.OUTBOX_EVENT_SOURCE]),
            retention=Duration.days(definitions.EVENT_BUS_ARCHIVE_RETENTION_DAYS),
        )

        publisher = PythonFunction(
            self, "Publisher", spec=PUBLISHER, environment={definitions.ENV_EVENT_BUS_NAME: self.bus.event_bus_name}
        )
        self.publisher = publisher.function
        self.bus.grant_put_events_to(self.publisher)
        self.publish_pipe = StreamToFunctionPipe(
            self,
            "PublishPipe",
            stream_arn=stream_arn,
            function=self.publisher,
            description="Webhook Inbox outbox: new outbox records -> the publisher -> the event bus",
            batch_size=definitions.OUTBOX_PIPE_BATCH_SIZE,
            maximum_retry_attempts=definitions.OUTBOX_PIPE_MAXIMUM_RETRY_ATTEMPTS,
        )

        self.forwarder: lambda_.IFunction | None = None
        self.forward_log: dynamodb.Table | None = None
        self.forward_pipe: StreamToFunctionPipe | None = None
        self.forward_secret: secretsmanager.Secret | None = None
        if settings.forward_url:
            self._forwarding(stream_arn, payments, settings, settings.forward_url)

    def table_access(self, *actions: str) -> Access:
        """The outbox table, named by INBOX_OUTBOX_TABLE, with `actions` on it."""
        return table_access(self.table, definitions.ENV_OUTBOX_TABLE, actions)

    def _forwarding(self, stream_arn: str, payments: PaymentsStorage, settings: StackSettings, url: str) -> None:
        # Named by CloudFormation and retained, like every secret (infra/constructs/secrets.py): the receiver holds
        # this value, so a stack deleted and deployed again must find it, and must not collide with it.
        self.forward_secret = retained_secret(
            self,
            "ForwardSigningSecret",
            kind=definitions.SECRET_KIND_FORWARD_SIGNING,
            provider=None,
            description=(
                'Standard Webhooks signing secret of the forwarded events: {"current": ..., "previous": ...}. '
                "Give `current` (prefixed whsec_ or not) to the receiving application."
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({"previous": ""}),
                generate_string_key="current",
                exclude_punctuation=True,
                password_length=48,
            ),
        )
        acknowledge(
            self.forward_secret,
            "AwsSolutions-SMG4",
            "The value is shared with the customer's receiving application, which must be updated in step: an "
            "automatic rotation would break verification. Rotation is an operator step without downtime: the old "
            "value moves to 'previous' and both sign until the receiver has the new one.",
        )
        self.forward_log = table(
            self,
            "ForwardLogTable",
            partition_key=definitions.FORWARD_LOG_PARTITION_KEY,
            sort_key=(definitions.FORWARD_LOG_SORT_KEY, dynamodb.AttributeType.STRING),
            kept=False,
            time_to_live_attribute=definitions.FORWARD_LOG_TTL_ATTRIBUTE,
        )
        forwarder = PythonFunction(
            self,
            "Forwarder",
            spec=FORWARDER,
            uses=(
                # The checkpoints' grant carries a condition on their keys: it is below, not one of these actions.
                payments.control_access(),
                # The forwarding log: one new item per attempt; the forwarder never reads, updates or deletes one.
                table_access(self.forward_log, definitions.ENV_FORWARD_LOG_TABLE, ["dynamodb:PutItem"]),
            ),
            environment={
                definitions.ENV_FORWARD_URL: url,
                definitions.ENV_FORWARD_SECRET_NAME: self.forward_secret.secret_arn,
                definitions.ENV_FORWARD_LOG_RETENTION_DAYS: str(settings.forward_log_retention_days),
            },
        )
        if settings.forwarder_reserved_concurrency is not None:
            # Only when asked for: a cap on the forwarding rate below what the Pipe's shape already bounds it to.
            cfn_function = forwarder.function.node.default_child
            assert isinstance(cfn_function, lambda_.CfnFunction)
            cfn_function.reserved_concurrent_executions = settings.forwarder_reserved_concurrency
        self.forwarder = forwarder.function
        self.forward_secret.grant_read(self.forwarder)
        # The checkpoints: one item per payment in the control table, read and written by key, and only theirs
        # (their partition keys' prefix): the breakers and rate limits of the same table stay out of its reach.
        self.forwarder.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:GetItem", "dynamodb:PutItem"],
                resources=[payments.control_table.table_arn],
                conditions={
                    "ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{definitions.FORWARD_CHECKPOINT_PREFIX}*"]}
                },
            )
        )
        self.forward_pipe = StreamToFunctionPipe(
            self,
            "ForwardPipe",
            stream_arn=stream_arn,
            function=self.forwarder,
            description="Webhook Inbox forwarding: new outbox records -> the forwarder -> the customer's endpoint",
            batch_size=definitions.FORWARD_PIPE_BATCH_SIZE,
            maximum_retry_attempts=definitions.FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS,
            maximum_record_age_seconds=definitions.FORWARD_PIPE_MAXIMUM_RECORD_AGE_SECONDS,
            parallelization_factor=definitions.FORWARD_PIPE_PARALLELIZATION_FACTOR,
        )
