"""Retention: what DynamoDB's TTL removes from the inbox is archived to S3 first (shared/retention.py).

The archive bucket:
- SSE-S3, public access blocked, TLS only (1.2+), bucket-owner-enforced ownership, versioned, server access logs
  into the inbox's access-log bucket (prefix ``archive-bucket/``), RETAIN: an audit archive outlives the stack.
- Lifecycle: STANDARD_IA after 30 days, GLACIER_IR after 90 (an archive is rarely read, and read at once when it
  is: Instant Retrieval, not Flexible); no expiration unless the ``archive_expiration_days`` context value asks
  for one. An overwritten or deleted archive object stays recoverable for ``NONCURRENT_VERSION_DAYS``.

The archiver Lambda reads the inbox table's stream through its own event source mapping, filtered to TTL
deletions (definitions.ARCHIVE_FILTER_PATTERN: REMOVE records by the DynamoDB service), starting at the oldest
record (TRIM_HORIZON, the stream keeps 24 h). A failing batch is bisected to isolate the record at fault and
retried until it succeeds or its records leave the stream (the default: no retry limit, no maximum age, because
the item is already deleted and the stream record is the last copy); what could not be archived is then reported
(its shard and sequence numbers) to an SQS on-failure queue, where an operator sees it (and an alarm counts it).

Permissions, resource by resource (``dispatch_pipe.grant_stream_read``, as the Pipes have them):
- the inbox stream: DescribeStream, GetRecords, GetShardIterator on the stream ARN; ListStreams on ``*``, the only
  resource that action takes (it has no resource type), acknowledged as such;
- S3, as shared/definitions/s3_grants.py declares it: the archive bucket, PutObject under
  ``definitions.ARCHIVE_KEY_PREFIX`` only (no read, no delete); the body bucket, GetObject (bodies too large for an
  item are inlined into the archive) and ListBucket on the bucket, so that a body already gone (its lifecycle rule
  expired it before TTL deleted the item) answers NoSuchKey and is archived as missing, not AccessDenied, which would
  fail the batch;
- the on-failure queue: send (granted by the mapping's destination).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import CfnElement, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import ARCHIVE_GLACIER_AFTER_DAYS, ARCHIVE_INFREQUENT_ACCESS_AFTER_DAYS, StackSettings
from infra.constructs.access import Access
from infra.constructs.buckets import data_bucket
from infra.constructs.dispatch_pipe import LIST_STREAMS_REASON, grant_stream_read
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.python_function import FunctionSpec, PythonFunction
from infra.constructs.s3_access import grant_declared_s3_access
from infra.nag import acknowledge
from shared import definitions
from shared.definitions.s3_grants import Bucket

NONCURRENT_VERSION_DAYS = 90


ARCHIVER = FunctionSpec(
    "Archiver",
    "archiver",
    definitions.ARCHIVER_MEMORY_MB,
    definitions.ARCHIVER_TIMEOUT_SECONDS,
    "Webhook Inbox archiver: inbox items removed by TTL -> gzip JSON lines in the archive bucket",
)


class Archive(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, inbox: InboxStorage, settings: StackSettings) -> None:
        super().__init__(scope, construct_id)
        stream_arn = inbox.table.table_stream_arn
        if stream_arn is None:
            raise ValueError("the inbox table has no stream: TTL deletions cannot be archived")

        self.bucket = data_bucket(
            self,
            "ArchiveBucket",
            access_logs=inbox.access_logs_bucket,
            access_log_prefix="archive-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="archive-storage-classes",
                    transitions=[
                        s3.Transition(
                            storage_class=s3.StorageClass.INFREQUENT_ACCESS,
                            transition_after=Duration.days(ARCHIVE_INFREQUENT_ACCESS_AFTER_DAYS),
                        ),
                        s3.Transition(
                            storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
                            transition_after=Duration.days(ARCHIVE_GLACIER_AFTER_DAYS),
                        ),
                    ],
                    expiration=(
                        Duration.days(settings.archive_expiration_days)
                        if settings.archive_expiration_days is not None
                        else None
                    ),
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
            ],
        )

        self.failure_queue = sqs.Queue(
            self,
            "FailureQueue",
            retention_period=Duration.days(definitions.QUEUE_RETENTION_DAYS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(
            self.failure_queue,
            "AwsSolutions-SQS3",
            "This queue is itself the on-failure destination of the archiver's stream mapping: it receives the "
            "shard and sequence numbers of records that could not be archived. An operator reads it; nothing "
            "consumes it automatically, so a further dead-letter queue would never receive anything.",
        )

        built = PythonFunction(
            self,
            "Archiver",
            spec=ARCHIVER,
            # Both buckets' grants are the declared S3 ones (below).
            uses=(Access(definitions.ENV_ARCHIVE_BUCKET, self.bucket.bucket_name), inbox.body_bucket_named()),
            environment={definitions.ENV_REDACT_FIELDS: settings.archive_redact_fields},
        )
        self.function = built.function
        self.role = built.role

        grant_stream_read(self.role, stream_arn, acknowledge_wildcard=False)
        # One acknowledgement of Resource::* per role: PythonFunction's (X-Ray) is replaced by one covering both.
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Two kinds of actions without resource-level permissions, so '*' is the only resource they take: "
            "xray:PutTraceSegments and xray:PutTelemetryRecords for active tracing when it is on (-c "
            f"inbox_tracing=true, infra/constructs/python_function.py), and the stream listing: {LIST_STREAMS_REASON}",
        )
        grant_declared_s3_access(
            self.function, "archiver", {Bucket.ARCHIVE: self.bucket, Bucket.BODIES: inbox.body_bucket}
        )

        self.mapping = lambda_.EventSourceMapping(
            self,
            "StreamMapping",
            target=self.function,
            event_source_arn=stream_arn,
            starting_position=lambda_.StartingPosition(definitions.ARCHIVER_STARTING_POSITION),
            batch_size=definitions.ARCHIVER_BATCH_SIZE,
            max_batching_window=Duration.seconds(definitions.ARCHIVER_MAX_BATCHING_WINDOW_SECONDS),
            bisect_batch_on_error=True,
            on_failure=event_sources.SqsDlq(self.failure_queue),
            filters=[lambda_.FilterCriteria.filter(definitions.ARCHIVE_FILTER_PATTERN)],
        )
        # Lambda checks, when the mapping is created, that the function's role can read the stream.
        self.mapping.node.add_dependency(self.role)

        stack = Stack.of(self)
        archive_id = stack.get_logical_id(cast(CfnElement, self.bucket.node.default_child))
        body_id = stack.get_logical_id(cast(CfnElement, inbox.body_bucket.node.default_child))
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::<{archive_id}.Arn>/{definitions.ARCHIVE_KEY_PREFIX}*]",
            "Archive objects are named after the provider, the day and the stream sequence numbers of each batch, "
            "so their keys cannot be listed in advance; the grant is s3:PutObject alone, under the archive prefix "
            "of this one bucket.",
        )
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::<{body_id}.Arn>/*]",
            "The archiver inlines a large body into the archive line of its item: any body the inbox stored may be "
            "read, and its key is only known from the removed item. The object grant is s3:GetObject alone, on the "
            "body bucket, which holds nothing but webhook bodies (with s3:ListBucket on that bucket, so that a body "
            "already gone is told from a permission fault).",
        )
