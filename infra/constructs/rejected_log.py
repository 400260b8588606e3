"""The rejected-delivery log: a table of what the ingest refused, and the key of its fingerprints.

Key names, the per-day index and the TTL attribute come from shared/definitions/resources.py, the values the local
runtime builds its moto table from (inbox_local/resources.py). shared/rejections.py writes it; `inbox rejected` reads
it.

Choices:
- A table of its own, apart from the inbox: a refused delivery can never be mistaken for an accepted event, and
  the ingest's grant on it is PutItem alone.
- On-demand: a flood writes at most ``INBOX_REJECTED_PER_SOURCE_PER_MINUTE`` items per source and minute, and
  nothing otherwise; there is no steady rate to provision for.
- No point-in-time recovery (cdk-nag DDB3, acknowledged): the records are disposable diagnostics that expire
  after ``INBOX_REJECTED_RETENTION_DAYS`` (3 by default); PITR would keep every refused delivery (bodies of
  senders, redacted or not) restorable for up to 35 days after its TTL removed it, the opposite of the short
  retention the log promises. Nothing is lost that matters: a genuine event is never in this table.
- The AWS managed key, as every table (tables.py explains). No stream: nothing consumes it. Deleted with the
  stack (no deletion protection, DESTROY): it holds nothing worth keeping.
- Named ``<stack>-rejected`` rather than by CloudFormation, so that the ingest's environment carries the name as
  text (see above). The price of a fixed name: a change CloudFormation can only make by replacing the table (its
  key schema) needs a new name too.
- The fingerprint key: a generated Secrets Manager secret ``{"current": <48 random characters>}`` per deployment,
  so a fingerprint means nothing outside it; named, tagged and retained like the stack's other secrets. Not
  rotated (SMG4, acknowledged): a new key would make every record
  still in the log incomparable with the candidates the doctor fingerprints; the key never leaves the account
  and protects no data by itself (it only makes fingerprints unguessable).
"""

from __future__ import annotations

import json

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.secrets import retained_secret
from infra.constructs.tables import table
from infra.nag import acknowledge
from shared import definitions


class RejectedLog(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stack_name: str) -> None:
        super().__init__(scope, construct_id)
        # A name of our choosing, handed to the ingest as text: a CloudFormation reference would count as 255
        # characters of the 4 KB the ingest's environment shares with the secret maps (tests/infra/
        # test_deploy_again.py), and a deleted table's name is free again at once (unlike a secret's).
        self.table_name = f"{stack_name}{definitions.REJECTED_TABLE_SUFFIX}"
        self.table = table(
            self,
            "RejectedTable",
            table_name=self.table_name,
            partition_key=definitions.REJECTED_PARTITION_KEY,
            kept=False,
            point_in_time_recovery=False,
            time_to_live_attribute=definitions.REJECTED_TTL_ATTRIBUTE,
        )
        self.table.add_global_secondary_index(
            index_name=definitions.REJECTED_BY_DAY_INDEX,
            partition_key=dynamodb.Attribute(
                name=definitions.REJECTED_BY_DAY_INDEX_PK, type=dynamodb.AttributeType.STRING
            ),
            sort_key=dynamodb.Attribute(name=definitions.REJECTED_BY_DAY_INDEX_SK, type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=list(definitions.REJECTED_INDEX_INCLUDED_ATTRIBUTES),
        )
        acknowledge(
            self.table,
            "AwsSolutions-DDB3",
            "Refused deliveries are disposable diagnostics kept 3 days by TTL; point-in-time recovery would keep "
            "them (senders' bodies) restorable for up to 35 days after their expiry, defeating the short retention.",
        )

        # Named by CloudFormation, tagged and retained like every secret of the stack (secrets.py explains).
        self.fingerprint_key = retained_secret(
            self,
            "FingerprintKey",
            kind=definitions.SECRET_KIND_FINGERPRINT_KEY,
            provider=None,
            description=(
                f"Key of the rejected-delivery log's fingerprints for stack {stack_name}: "
                '{"current": "..."}, generated; the ingest and `inbox doctor` read it. Do not change it.'
            ),
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=json.dumps({}),
                generate_string_key="current",
                exclude_punctuation=True,
                password_length=48,
            ),
        )
        acknowledge(
            self.fingerprint_key,
            "AwsSolutions-SMG4",
            "An HMAC key that only makes the log's fingerprints unguessable: rotating it would make the records "
            "still in the log incomparable with the candidates the doctor fingerprints; it never leaves the account.",
        )

    def grant_record(self, grantee: iam.IGrantable) -> None:
        """What the ingest needs to record a refusal: PutItem on the table alone (not its index, never a read), and
        reading the fingerprint key."""
        iam.Grant.add_to_principal(grantee=grantee, actions=["dynamodb:PutItem"], resource_arns=[self.table.table_arn])
        self.fingerprint_key.grant_read(grantee)
