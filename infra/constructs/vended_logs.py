"""Log groups that AWS services deliver to on the stack's behalf (vended logs), named under ``/aws/vendedlogs/``.

Step Functions (the replay state machine's logging) and API Gateway (the ingest API's access log) deliver through
CloudWatch Logs' vended-log mechanism: each log group they are given is added to the account's CloudWatch Logs
resource policy, which is capped at 5,120 characters, so on an account with many such groups the deploy fails.
"CloudWatch Logs resource policies are limited to 5120 characters. When CloudWatch Logs detects that a policy
approaches this size limit, it automatically enables log groups that start with /aws/vendedlogs/" and "to avoid
reaching the CloudWatch Logs resource policy size limit, prefix your CloudWatch Logs log group names with
/aws/vendedlogs/" (https://docs.aws.amazon.com/step-functions/latest/dg/bp-cwl.html; CloudWatch Logs' own page
on logs sent by AWS services: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/AWS-logs-infrastructure-CWL.html).

A named log group needs a name unique in the account and Region, for the life of the group. These groups are kept
when the stack is deleted (the default removal policy: their lines are the audit of who called and who replayed),
so a name made of the stack name alone would make a stack created again under the same name fail on the group its
predecessor left. The name ends with the stack id's UUID instead, which CloudFormation draws when it creates the
stack and keeps across every update: ``/aws/vendedlogs/<service>/<stack name>-<purpose>-<uuid>``.
"""

from __future__ import annotations

from aws_cdk import Aws, Fn
from aws_cdk import aws_logs as logs
from constructs import Construct

VENDED_LOGS_PREFIX = "/aws/vendedlogs/"
# arn:<partition>:cloudformation:<region>:<account>:stack/<stack name>/<uuid>: the UUID is the third "/" segment.
STACK_ID_UUID_SEGMENT = 2
# CloudWatch Logs: a log group name is 1 to 512 characters
# (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html).
MAX_LOG_GROUP_NAME_LENGTH = 512
STACK_ID_UUID_LENGTH = 36


def vended_log_group_name(service: str, purpose: str) -> str:
    """``/aws/vendedlogs/<service>/<stack name>-<purpose>-<stack id's UUID>``, resolved by CloudFormation."""
    return Fn.join(
        "",
        [
            f"{VENDED_LOGS_PREFIX}{service}/",
            Aws.STACK_NAME,
            f"-{purpose}-",
            Fn.select(STACK_ID_UUID_SEGMENT, Fn.split("/", Aws.STACK_ID)),
        ],
    )


def vended_log_group(
    scope: Construct, construct_id: str, *, service: str, purpose: str, retention: logs.RetentionDays
) -> logs.LogGroup:
    return logs.LogGroup(
        scope, construct_id, log_group_name=vended_log_group_name(service, purpose), retention=retention
    )
