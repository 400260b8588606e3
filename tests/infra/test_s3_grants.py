"""Each function's S3 permissions in the template are exactly its declaration (shared/definitions/s3_grants.py),
the same declaration the local stack answers S3 requests from (inbox_local/s3_access.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.definitions.s3_grants import FUNCTION_S3_GRANTS, LIST_BUCKET, Bucket, s3_grants

from .conftest import Synthesized


def _s3_statements(synthesized: Synthesized, role: Any) -> list[dict[str, Any]]:
    return [
        statement
        for statement in synthesized.role_statements(role)
        if any(str(action).startswith("s3:") for action in statement["Action"])
    ]


def _declared(synthesized: Synthesized, function: str) -> set[tuple[str, str]]:
    """(action, resource rendered as JSON) of the function's declared grants, on the template's buckets."""
    stack = synthesized.stack
    buckets = {
        Bucket.BODIES: synthesized.logical_id(stack.storage.body_bucket),
        Bucket.ARCHIVE: synthesized.logical_id(stack.archive.bucket),
    }
    expected = set()
    for grant in s3_grants(function):
        arn = {"Fn::GetAtt": [buckets[grant.bucket], "Arn"]}
        for action in grant.object_actions:
            objects = {"Fn::Join": ["", [arn, f"/{grant.key_prefix}*"]]}
            expected.add((action, json.dumps(objects, sort_keys=True)))
        for action in grant.bucket_actions:
            expected.add((action, json.dumps(arn, sort_keys=True)))
    return expected


@pytest.mark.parametrize("function", sorted(FUNCTION_S3_GRANTS))
def test_a_functions_s3_permissions_are_its_declaration_and_nothing_more(
    synthesized: Synthesized, function: str
) -> None:
    # Given the function's role in the default template
    role = {"ingest": synthesized.stack.ingest.role, "archiver": synthesized.stack.archive.role}[function]
    # When its S3 statements are read
    statements = _s3_statements(synthesized, role)
    granted = {
        (action, json.dumps(resource, sort_keys=True))
        for statement in statements
        for action in statement["Action"]
        for resource in statement["Resource"]
    }
    # Then they are exactly what shared/definitions/s3_grants.py declares, unconditioned (a ListBucket conditioned on
    # s3:prefix would not apply to a GetObject request, which carries no prefix)
    assert granted == _declared(synthesized, function)
    assert all("Condition" not in statement for statement in statements)


def test_the_archiver_may_list_the_body_bucket_and_nothing_else_may(synthesized: Synthesized) -> None:
    # Given every role of the stack
    listing: set[str] = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            if LIST_BUCKET in actions:
                listing.update(json.dumps(resource, sort_keys=True) for resource in resources)
    # Then ListBucket is granted on one resource, the body bucket itself (not its objects, not another bucket)
    body_bucket = synthesized.logical_id(synthesized.stack.storage.body_bucket)
    assert listing == {json.dumps({"Fn::GetAtt": [body_bucket, "Arn"]}, sort_keys=True)}
