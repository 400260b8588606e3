"""Each function's S3 permissions, declared once.

The CDK constructs grant exactly these (infra/constructs/s3_access.py turns them into IAM statements), and the local
stack answers a function's S3 requests as S3 answers a role that holds exactly these (inbox_local/s3_access.py): an
action outside them is refused with AccessDenied, and a missing object is AccessDenied, not NoSuchKey, for a
function without ``s3:ListBucket`` on its bucket. S3's GetObject and HeadObject reference: "If the object you request
doesn't exist, the error that Amazon S3 returns depends on whether you also have the s3:ListBucket permission. If you
have the s3:ListBucket permission on the bucket, Amazon S3 returns an HTTP status code 404 Not Found error. If you
don't have the s3:ListBucket permission, Amazon S3 returns an HTTP status code 403 Access Denied error."

A pure module (no AWS SDK, no CDK): infra/ and inbox_local/ both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from shared.definitions.resources import ARCHIVE_KEY_PREFIX


class Bucket(StrEnum):
    """The stack's buckets, by what they hold (their names are the deployment's)."""

    BODIES = "bodies"  # webhook bodies too large for an inbox item
    ARCHIVE = "archive"  # what TTL removed from the inbox


GET_OBJECT: Final = "s3:GetObject"
PUT_OBJECT: Final = "s3:PutObject"
DELETE_OBJECT: Final = "s3:DeleteObject"
LIST_BUCKET: Final = "s3:ListBucket"
# Actions whose resource is the bucket itself (arn:aws:s3:::bucket); every other one is on objects (bucket/key).
BUCKET_ACTIONS: Final = frozenset({LIST_BUCKET})

# The IAM action each S3 API operation the functions could call needs (S3's "Actions, resources and condition keys").
OPERATION_ACTIONS: Final[dict[str, str]] = {
    "GetObject": GET_OBJECT,
    "HeadObject": GET_OBJECT,
    "PutObject": PUT_OBJECT,
    "DeleteObject": DELETE_OBJECT,
    "ListObjects": LIST_BUCKET,
    "ListObjectsV2": LIST_BUCKET,
}


@dataclass(frozen=True, slots=True)
class S3Grant:
    """Some actions on one bucket; object actions on the keys under ``key_prefix`` only (empty: every key)."""

    bucket: Bucket
    actions: tuple[str, ...]
    why: str
    key_prefix: str = ""

    @property
    def object_actions(self) -> tuple[str, ...]:
        return tuple(action for action in self.actions if action not in BUCKET_ACTIONS)

    @property
    def bucket_actions(self) -> tuple[str, ...]:
        return tuple(action for action in self.actions if action in BUCKET_ACTIONS)

    def allows(self, bucket: Bucket, action: str, key: str | None) -> bool:
        if bucket is not self.bucket or action not in self.actions:
            return False
        return action in BUCKET_ACTIONS or key is None or key.startswith(self.key_prefix)


# By function, as the local stack names them (the CDK asset names): a function absent here has no S3 permission.
FUNCTION_S3_GRANTS: Final[dict[str, tuple[S3Grant, ...]]] = {
    "ingest": (
        S3Grant(
            Bucket.BODIES,
            (PUT_OBJECT,),
            why="stores a body too large for its inbox item; never reads, lists or deletes one",
        ),
    ),
    "archiver": (
        S3Grant(
            Bucket.ARCHIVE,
            (PUT_OBJECT,),
            key_prefix=ARCHIVE_KEY_PREFIX,
            why="writes the archive objects, under the archive prefix only",
        ),
        S3Grant(
            Bucket.BODIES,
            (GET_OBJECT, LIST_BUCKET),
            why=(
                "inlines a large body into its archive line; ListBucket so that a body already gone answers "
                "NoSuchKey (404) and is archived as missing, where without it S3 answers AccessDenied (403), which "
                "cannot be told from a real permission fault"
            ),
        ),
    ),
}


def s3_grants(function: str) -> tuple[S3Grant, ...]:
    return FUNCTION_S3_GRANTS.get(function, ())


def allows(function: str, bucket: Bucket, action: str, key: str | None = None) -> bool:
    """Whether the function's declared grants allow ``action`` on the bucket (and on ``key``, for object actions)."""
    return any(grant.allows(bucket, action, key) for grant in s3_grants(function))
