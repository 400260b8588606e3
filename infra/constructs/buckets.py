"""The one way the stack makes a bucket: every bucket it creates keeps the same guard rails.

- SSE-S3 (the AWS managed key: nothing to grant to each reader, every use in CloudTrail; also the only encryption
  S3 server access logging delivers to), public access blocked, TLS 1.2+ only, bucket-owner-enforced ownership,
  RETAIN (what the inbox holds outlives the stack).
- A bucket of data (`data_bucket`: the large bodies, the archive) is also versioned, logs its server access into
  the access-log bucket under its own prefix, and removes the delete markers left once every version expired.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct


def private_bucket(
    scope: Construct,
    construct_id: str,
    *,
    lifecycle_rules: Sequence[s3.LifecycleRule],
    versioned: bool = False,
    access_logs: s3.IBucket | None = None,
    access_log_prefix: str | None = None,
) -> s3.Bucket:
    """A bucket with the stack's guard rails (module notes) and its `lifecycle_rules`; `versioned`, and its server
    access logged into `access_logs` under `access_log_prefix`, when asked."""
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        versioned=versioned,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=access_log_prefix,
        lifecycle_rules=list(lifecycle_rules),
        removal_policy=RemovalPolicy.RETAIN,
    )


def data_bucket(
    scope: Construct,
    construct_id: str,
    *,
    access_logs: s3.IBucket,
    access_log_prefix: str,
    lifecycle_rules: Sequence[s3.LifecycleRule],
) -> s3.Bucket:
    """A private bucket of the inbox's data: versioned, its server access logged into `access_logs` under
    `access_log_prefix`, with its `lifecycle_rules` and then the rule that removes expired delete markers."""
    return private_bucket(
        scope,
        construct_id,
        lifecycle_rules=[
            *lifecycle_rules,
            s3.LifecycleRule(id="remove-expired-delete-markers", expired_object_delete_marker=True),
        ],
        versioned=True,
        access_logs=access_logs,
        access_log_prefix=access_log_prefix,
    )
