"""The one way the stack makes a DynamoDB table: on-demand, the AWS managed key, and one of two keeping rules.

- On-demand: the load is bursts from the gateways, with no steady rate to provision for.
- The AWS managed key (``aws/dynamodb``): every use of the key is visible in CloudTrail and nothing has to be
  granted to each reader. A customer managed key would add a key policy to maintain and kms:Decrypt grants
  everywhere for no control we need (no cross-account access, no crypto-shredding).
- Kept (`kept=True`: the inbox, the outbox, the payments): what the business cannot lose. Point-in-time recovery
  for ``POINT_IN_TIME_RECOVERY_DAYS``, deletion protection, RETAIN: never deleted with the stack.
- Disposable (`kept=False`: the control table, the forward log, the rejected log): rebuilt or outlived within
  days. No deletion protection, DESTROY; point-in-time recovery at DynamoDB's default period unless the table
  turns it off (`point_in_time_recovery=False`, acknowledged where it is made).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

POINT_IN_TIME_RECOVERY_DAYS = 35  # the maximum DynamoDB offers


def table(
    scope: Construct,
    construct_id: str,
    *,
    partition_key: str,
    sort_key: tuple[str, dynamodb.AttributeType] | None = None,
    kept: bool,
    point_in_time_recovery: bool = True,
    stream: dynamodb.StreamViewType | None = None,
    time_to_live_attribute: str | None = None,
    table_name: str | None = None,
    warm_throughput: dynamodb.WarmThroughput | None = None,
) -> dynamodb.Table:
    """A table with a string `partition_key` (and a `sort_key` of the given type), kept or disposable (module
    notes), with its stream, TTL attribute, fixed name and warm throughput where given."""
    if kept and not point_in_time_recovery:
        raise ValueError(f"{construct_id}: a kept table has point-in-time recovery")
    return dynamodb.Table(
        scope,
        construct_id,
        table_name=table_name,
        partition_key=dynamodb.Attribute(name=partition_key, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name=sort_key[0], type=sort_key[1]) if sort_key else None,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        stream=stream,
        time_to_live_attribute=time_to_live_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=point_in_time_recovery,
            recovery_period_in_days=POINT_IN_TIME_RECOVERY_DAYS if kept else None,
        ),
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        deletion_protection=kept,
        removal_policy=RemovalPolicy.RETAIN if kept else RemovalPolicy.DESTROY,
        warm_throughput=warm_throughput,
    )
