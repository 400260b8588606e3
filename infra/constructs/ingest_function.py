"""The ingest Lambda and exactly the permissions it needs.

It verifies a delivery, then writes it once: ``dynamodb:PutItem`` (conditional, on the table only, not its
indexes), ``s3:PutObject`` for bodies too large for an item, and reading the providers' signing secrets.
It never reads, updates or deletes an inbox item: a duplicate is detected by the failed condition of the put.
A refused delivery is recorded in the rejected-delivery log: ``dynamodb:PutItem`` on that table alone, and reading
the log's fingerprint key (rejected_log.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from aws_cdk import CfnElement, Stack
from constructs import Construct

from infra.config import StackSettings
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.python_function import FunctionConstruct, FunctionSpec
from infra.constructs.rejected_log import RejectedLog
from infra.constructs.s3_access import grant_declared_s3_access
from infra.constructs.secrets import SourceSecrets
from infra.nag import acknowledge
from shared import definitions
from shared.definitions.s3_grants import Bucket

INGEST = FunctionSpec(
    "Ingest",
    "ingest",
    definitions.INGEST_MEMORY_MB,
    definitions.INGEST_TIMEOUT_SECONDS,
    "Webhook Inbox ingest: verify the signature, store the event once, answer the gateway",
)


class IngestFunction(FunctionConstruct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: InboxStorage,
        secrets: SourceSecrets,
        rejected: RejectedLog,
        settings: StackSettings,
        sources_environment: Mapping[str, str],
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            spec=INGEST,
            uses=(
                # PutItem on the table ARN alone: it has no meaning on an index.
                storage.table_access("dynamodb:PutItem"),
                storage.body_bucket_named(),
            ),
            environment={
                definitions.ENV_SIGNING_SECRETS: secrets.arn_map,
                definitions.ENV_SIGNATURE_TOLERANCE: str(settings.signature_tolerance_seconds),
                definitions.ENV_RETENTION_DAYS: str(settings.retention_days),
                definitions.ENV_REJECTED_TABLE: rejected.table_name,
                definitions.ENV_FINGERPRINT_KEY_SECRET: rejected.fingerprint_key.secret_arn,
                # The deployment's personal-data fields: redacted from refused bodies as from the archive (unset
                # when there are none: Lambda's 4 KB of environment is shared with the secret maps).
                **(
                    {definitions.ENV_REDACT_FIELDS: settings.archive_redact_fields}
                    if settings.archive_redact_fields
                    else {}
                ),
                **sources_environment,  # INBOX_SOURCES: the declared sources
            },
        )

        # PutObject only (shared/definitions/s3_grants.py): no reads, no deletes, no ACL or tagging changes.
        grant_declared_s3_access(self.function, "ingest", {Bucket.BODIES: storage.body_bucket})
        secrets.grant_read(self.function)
        rejected.grant_record(self.function)

        # cdk-nag names a resource in a finding by its logical id: resolve it instead of hard-coding the hash.
        body_bucket_id = Stack.of(self).get_logical_id(cast(CfnElement, storage.body_bucket.node.default_child))
        acknowledge(
            self.role,
            f"AwsSolutions-IAM5[Resource::<{body_bucket_id}.Arn>/*]",
            "Each delivery's body gets its own object key (provider, day and content hashes), so the keys cannot "
            "be listed in advance; the grant is s3:PutObject alone, on this one bucket that holds only "
            "webhook bodies.",
        )
