"""The processor's own state: the payments table (the domain projection) and the small control table (the
gateways' shared circuit breakers). Keys come from shared/definitions/resources.py, as the local runtime's moto
tables do.

Choices:
- Payments: a kept table (tables.py: on-demand, point-in-time recovery for 35 days, the maximum, the AWS managed
  key, deletion protection and RETAIN). It is the money-state everyone reads: it is never deleted with the stack.
  No stream: nothing consumes payment changes yet (adding one later is an in-place update).
  One sparse index, ``definitions.RECONCILE_INDEX``: payments in an intermediate status, for the sweeper.
- Control: on-demand and the AWS managed key too, but disposable: a breaker and a rate limit per source, rebuilt
  within seconds of being lost, and (with forwarding) a checkpoint per payment forwarded, so it has neither deletion
  protection nor RETAIN (deleting the stack deletes it). TTL on ``definitions.CONTROL_TTL_ATTRIBUTE``, which only
  the checkpoints carry: they expire ``definitions.FORWARD_CHECKPOINT_RETENTION_SECONDS`` after their last write.
  Point-in-time recovery is on anyway, not because breaker state needs restoring but because at a few hundred
  bytes it costs nothing, and "every table has PITR" then holds with no exception to explain (cdk-nag DDB3).
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.constructs.access import Access, index_access, table_access
from infra.constructs.tables import table
from shared import definitions


class PaymentsStorage(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        self.payments_table = table(self, "PaymentsTable", partition_key=definitions.PAYMENTS_PARTITION_KEY, kept=True)
        # The sparse index the sweeper reconciles from (definitions.RECONCILE_INDEX explains); keys only.
        for index_name, partition_key, sort_key in definitions.PAYMENTS_GLOBAL_INDEXES:
            self.payments_table.add_global_secondary_index(
                index_name=index_name,
                partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=sort_key, type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType(definitions.RECONCILE_INDEX_PROJECTION),
            )

        self.control_table = table(
            self,
            "ControlTable",
            partition_key=definitions.CONTROL_PARTITION_KEY,
            kept=False,
            time_to_live_attribute=definitions.CONTROL_TTL_ATTRIBUTE,
        )

    def payments_access(self, *actions: str) -> Access:
        """The payments table, named by INBOX_PAYMENTS_TABLE, with `actions` on it."""
        return table_access(self.payments_table, definitions.ENV_PAYMENTS_TABLE, actions)

    def reconcile_index_access(self, *actions: str) -> Access:
        return index_access(self.payments_table, definitions.RECONCILE_INDEX, actions)

    def control_access(self, *actions: str) -> Access:
        """The control table (breakers, rate limits, forwarding checkpoints), named by INBOX_CONTROL_TABLE, with
        `actions` on it."""
        return table_access(self.control_table, definitions.ENV_CONTROL_TABLE, actions)
