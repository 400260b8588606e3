"""The inbox: the DynamoDB table that deduplicates and records every accepted event, and the S3 bucket for
bodies too large to sit in an item. Key names, indexes and TTL come from shared/definitions/resources.py, the values the
local runtime builds its moto table from.

Choices:
- The table is a kept one (tables.py: on-demand, the AWS managed key, point-in-time recovery, deletion protection,
  RETAIN); the body bucket a data bucket (buckets.py: SSE-S3, versioned, access-logged, RETAIN).
- Indexes project the few attributes their readers use, never the body (definitions.INBOX_INDEX_PROJECTIONS).
  `previous_resource_index` (context value ``inbox_previous_resource_index``) also keeps the events-by-resource
  index the events-by-group one replaced: the first of the two updates that move a deployed stack
  (docs/deploy.md, "Upgrading the inbox indexes").
- Retention: items expire by TTL after at most ``retention_days`` (the longest any declared provider's items are
  kept: definitions.longest_retention_days); large bodies live ``BODY_EXPIRY_MARGIN_DAYS`` longer,
  because TTL deletes lazily (typically within days of the expiry) and an item must never point at a body
  that is already gone.
- Nothing here is deleted with the stack: the table has deletion protection and RETAIN, both buckets RETAIN.
- Warm throughput (context ``inbox_warm_write_units``, opt-in): the table and each index pre-warmed for a known
  peak (docs/scale.md). Every ingest write also writes each index, so the indexes get the same value.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.constructs.access import Access, index_access, table_access
from infra.constructs.buckets import data_bucket, private_bucket
from infra.constructs.tables import table
from shared import definitions

BODY_EXPIRY_MARGIN_DAYS = 7
NONCURRENT_VERSION_DAYS = 7  # an overwritten or deleted body stays recoverable this long
ACCESS_LOG_RETENTION_DAYS = 90


def inbox_table_access(inbox_table: dynamodb.ITable, actions: Sequence[str]) -> Access:
    """The inbox table, named by INBOX_TABLE, with `actions` on it."""
    return table_access(inbox_table, definitions.ENV_INBOX_TABLE, actions)


class InboxStorage(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        retention_days: int,
        warm_write_units: int | None = None,
        previous_resource_index: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        warm = None if warm_write_units is None else dynamodb.WarmThroughput(write_units_per_second=warm_write_units)

        self.table = table(
            self,
            "InboxTable",
            partition_key=definitions.INBOX_PARTITION_KEY,
            kept=True,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            time_to_live_attribute=definitions.INBOX_TTL_ATTRIBUTE,
            warm_throughput=warm,
        )
        indexes = [
            (name, pk, sk, definitions.inbox_index_projection(name))
            for name, pk, sk in definitions.INBOX_GLOBAL_INDEXES
        ]
        if previous_resource_index:  # a stack's first update past the index change keeps the index it replaces
            name, pk, sk = definitions.PREVIOUS_RESOURCE_EVENTS_INDEX
            included = list(definitions.PREVIOUS_RESOURCE_EVENTS_INDEX_INCLUDED)
            indexes.append((name, pk, sk, {"ProjectionType": "INCLUDE", "NonKeyAttributes": included}))
        for index_name, partition_key, sort_key, projection in indexes:
            self.table.add_global_secondary_index(
                index_name=index_name,
                partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=sort_key, type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType(projection["ProjectionType"]),
                non_key_attributes=projection.get("NonKeyAttributes"),
                warm_throughput=warm,
            )

        # The destination of the body bucket's server access logs. It is not logged itself (that would only log
        # log deliveries); cdk-nag's S1 recognises a log destination bucket as compliant.
        self.access_logs_bucket = private_bucket(
            self,
            "AccessLogsBucket",
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_RETENTION_DAYS))],
        )

        self.body_bucket = data_bucket(
            self,
            "BodyBucket",
            access_logs=self.access_logs_bucket,
            access_log_prefix="body-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-bodies-after-retention",
                    expiration=Duration.days(retention_days + BODY_EXPIRY_MARGIN_DAYS),
                    noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
            ],
        )

    def table_access(self, *actions: str) -> Access:
        return inbox_table_access(self.table, actions)

    def index_access(self, index_name: str, *actions: str) -> Access:
        return index_access(self.table, index_name, actions)

    def body_bucket_named(self) -> Access:
        """The body bucket named by INBOX_BODY_BUCKET; its S3 grants are the declared ones (s3_access.py)."""
        return Access(definitions.ENV_BODY_BUCKET, self.body_bucket.bucket_name)
