"""S3 as it answers a function's role: from the function's declared grants (shared/definitions/s3_grants.py),
nothing else.

The stack grants each function exactly what shared/definitions/s3_grants.py declares (infra/constructs/s3_access.py).
moto answers anyone anything, so here, for a call made by a local function (inbox_local/invocation.py names it) on one
of the stack's buckets:
- an operation whose IAM action the function's grants do not allow (on that bucket, and on that key for an object
  action) is refused with 403 AccessDenied, before it is sent;
- GetObject or HeadObject of a key that does not exist answers 403 AccessDenied (HeadObject: 403 Forbidden, no
  body) when the function's grants lack ``s3:ListBucket`` on the bucket, as S3 does ("If you don't have the
  s3:ListBucket permission, Amazon S3 returns an HTTP status code 403 Access Denied error",
  https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html), and 404 NoSuchKey with it.

Calls made outside an invocation (the CLI, a test's own setup) and calls on other buckets are left alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from botocore.exceptions import ClientError

from inbox_local.invocation import add_call_hook, current_invocation
from shared.definitions.s3_grants import LIST_BUCKET, OPERATION_ACTIONS, Bucket, allows

ACCESS_DENIED: Final = "AccessDenied"
_MISSING_KEY_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})

_buckets: dict[str, Bucket] = {}
_lock = threading.Lock()


def access_denied(operation: str, *, head: bool = False) -> ClientError:
    """The error S3 answers a refused request with (a HEAD has no body: its code is the status, 403)."""
    code, message = ("403", "Forbidden") if head else (ACCESS_DENIED, "Access Denied")
    response: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 403}}
    return ClientError(response, operation)


def answer_as_granted(client: Any, operation: str, params: dict[str, Any], call: Callable[[], Any]) -> Any:
    invocation = current_invocation()
    if invocation is None or client.meta.service_model.service_name != "s3":
        return call()
    bucket = _buckets.get(str(params.get("Bucket")))
    action = OPERATION_ACTIONS.get(operation)
    if bucket is None or action is None:
        return call()
    key = params.get("Key")
    head = operation == "HeadObject"
    if not allows(invocation.function, bucket, action, None if key is None else str(key)):
        raise access_denied(operation, head=head)
    try:
        return call()
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        missing = code in _MISSING_KEY_CODES and operation in ("GetObject", "HeadObject")
        if missing and not allows(invocation.function, bucket, LIST_BUCKET):
            raise access_denied(operation, head=head) from None
        raise


def install(buckets: Mapping[str, Bucket]) -> None:
    """Answer the local functions' S3 calls on these buckets (name -> what it holds) as their grants allow
    (idempotent; a later call adds or renames buckets)."""
    with _lock:
        _buckets.update(buckets)
    add_call_hook(answer_as_granted)


def uninstall_buckets(*names: str) -> None:
    """Forget buckets (a test's own, at its end)."""
    with _lock:
        for name in names:
            _buckets.pop(name, None)
