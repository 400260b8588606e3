"""A function's S3 permissions, from their one declaration (shared/definitions/s3_grants.py), as IAM statements.

Object actions go on the bucket's keys under the grant's prefix (``bucket/prefix*``), bucket actions
(``s3:ListBucket``) on the bucket alone, without a condition: a GetObject request carries no ``s3:prefix``, so a
ListBucket conditioned on one would not turn S3's answer for a missing key from 403 into 404.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from shared.definitions.s3_grants import Bucket, s3_grants


def grant_declared_s3_access(grantee: iam.IGrantable, function: str, buckets: Mapping[Bucket, s3.IBucket]) -> None:
    """Grant ``grantee`` what shared/definitions/s3_grants.py declares for ``function``, on the stack's ``buckets``."""
    grants = s3_grants(function)
    if not grants:
        raise ValueError(f"no S3 grants are declared for the function {function!r} (shared/definitions/s3_grants.py)")
    for grant in grants:
        bucket = buckets.get(grant.bucket)
        if bucket is None:
            raise ValueError(f"the {function} function's S3 grant names the {grant.bucket} bucket, not given here")
        if grant.object_actions:
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=list(grant.object_actions),
                resource_arns=[bucket.arn_for_objects(f"{grant.key_prefix}*")],
            )
        if grant.bucket_actions:
            iam.Grant.add_to_principal(
                grantee=grantee, actions=list(grant.bucket_actions), resource_arns=[bucket.bucket_arn]
            )
