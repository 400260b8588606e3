"""The EventBridge Pipe that dispatches: inbox table stream -> filter -> SQS FIFO.

Filter, message group id, deduplication id and input template are the values of shared/definitions/lifecycle.py, the
very values the local runtime's Pipe emulation (inbox_local/pipe.py) interprets: local and cloud dispatch the same.

Choices:
- The L1 ``CfnPipe`` (stable in aws-cdk-lib) with a role written here (``grant_stream_read``): the alpha ``Pipe``
  construct would add a dependency for what a few statements say.
- Starting position, retries, bisection: definitions.PIPE_STARTING_POSITION and PIPE_MAXIMUM_RETRY_ATTEMPTS
  explain. After its retries a record's batch metadata (shard, sequence numbers; not the record) goes to the
  Pipe's dead-letter queue, a standard queue: stream sources cannot dead-letter to FIFO. The event is not lost:
  the item is still pending in the table, and the sweeper re-dispatches it.
- The role may read this one table's stream and send to the dispatch queue and the Pipe's dead-letter queue,
  and write to the Pipe's log group; only the Pipes service of this account may assume it (aws:SourceAccount).
  The Pipe depends on the role's policy: Pipes validates the permissions when it is created.
- Logs: ERROR level, without execution data (the payload is the stream record: the raw webhook body and its
  headers stay out of the logs), to a log group with a retention period.
"""

from __future__ import annotations

import json

from aws_cdk import Aws, Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge
from shared import definitions

LOG_RETENTION = logs.RetentionDays.ONE_MONTH
LOG_LEVEL = "ERROR"
ON_PARTIAL_BATCH_ITEM_FAILURE = "AUTOMATIC_BISECT"

# What Pipes needs to poll a DynamoDB stream ("DynamoDB execution role permissions": DescribeStream, GetRecords,
# GetShardIterator, ListStreams, https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-permissions.html)
# and what a Lambda event source mapping needs for one (the same four, in AWSLambdaDynamoDBExecutionRole,
# https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSLambdaDynamoDBExecutionRole.html). Both
# documents list ListStreams although the Pipe and the mapping are given the stream's ARN, so it is granted.
# The three read actions are granted on the one stream ARN.
STREAM_READ_ACTIONS = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)
# ListStreams has no resource type in the Service Authorization Reference for DynamoDB
# (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html): a statement that
# scopes it to a stream ARN grants nothing. It is granted on "*", and only to the roles that read a stream.
STREAM_LIST_ACTION = "dynamodb:ListStreams"
LIST_STREAMS_REASON = (
    "dynamodb:ListStreams has no resource type (Service Authorization Reference), so '*' is the only resource it "
    "can be granted on. It lists stream ARNs and labels, no data; the EventBridge Pipes and Lambda stream "
    "documentation list it among the permissions a stream poller needs. Reading records stays limited to the "
    "one stream's ARN."
)


def grant_stream_read(role: iam.Role, stream_arn: str, *, acknowledge_wildcard: bool = True) -> None:
    """What reading one DynamoDB stream takes: the read actions on its ARN and ListStreams on "*", with the
    cdk-nag acknowledgement that says why (``acknowledge_wildcard=False`` for a role whose own acknowledgement of
    ``Resource::*`` must also cover other actions: one reason per rule and construct, the last one wins)."""
    role.add_to_policy(iam.PolicyStatement(actions=list(STREAM_READ_ACTIONS), resources=[stream_arn]))
    role.add_to_policy(iam.PolicyStatement(actions=[STREAM_LIST_ACTION], resources=["*"]))
    if acknowledge_wildcard:
        acknowledge(role, "AwsSolutions-IAM5[Resource::*]", LIST_STREAMS_REASON)


class DispatchPipe(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable, queue: sqs.IQueue) -> None:
        super().__init__(scope, construct_id)
        stream_arn = table.table_stream_arn
        if stream_arn is None:
            raise ValueError("the inbox table has no stream: the Pipe has nothing to read")

        essentials = StreamPipeEssentials(
            self,
            stream_arn=stream_arn,
            role_description="Execution role of the dispatch Pipe: read the inbox stream, send to the dispatch queue",
            dead_letters="the metadata of stream records it could not deliver",
        )
        self.dead_letter_queue, self.log_group, self.role = (
            essentials.dead_letter_queue,
            essentials.log_group,
            essentials.role,
        )
        # sqs:SendMessage alone (queue.grant_send_messages would add GetQueueAttributes and GetQueueUrl).
        self.role.add_to_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[queue.queue_arn]))

        self.pipe = pipes.CfnPipe(
            self,
            "Pipe",
            description="Webhook Inbox dispatch: inbox events to process -> SQS FIFO, one group per payment",
            role_arn=self.role.role_arn,
            source=stream_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position=definitions.PIPE_STARTING_POSITION,
                    batch_size=definitions.PIPE_BATCH_SIZE,
                    maximum_retry_attempts=definitions.PIPE_MAXIMUM_RETRY_ATTEMPTS,
                    on_partial_batch_item_failure=ON_PARTIAL_BATCH_ITEM_FAILURE,
                    dead_letter_config=essentials.dead_letter_config(),
                ),
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(definitions.PIPE_FILTER_PATTERN))]
                ),
            ),
            target=queue.queue_arn,
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                input_template=definitions.PIPE_INPUT_TEMPLATE,
                sqs_queue_parameters=pipes.CfnPipe.PipeTargetSqsQueueParametersProperty(
                    message_group_id=definitions.PIPE_MESSAGE_GROUP_ID_PATH,
                    message_deduplication_id=definitions.PIPE_DEDUPLICATION_ID_PATH,
                ),
            ),
            log_configuration=essentials.log_configuration(),
        )
        # The role and its policy exist before the Pipe: creating a Pipe checks that its role can read the source
        # and send to the target and the dead-letter queue.
        self.pipe.node.add_dependency(self.role)
        # Ref of an AWS::Pipes::Pipe is its name: the PipeName dimension of the Pipe's own metrics (monitoring).
        self.pipe_name: str = self.pipe.ref


class StreamPipeEssentials:
    """What every Pipe of the stack reading a DynamoDB stream has: a standard dead-letter queue (stream sources
    cannot dead-letter to FIFO), an ERROR-level log group without execution data, and a role only this account's
    Pipes service may assume, allowed to read the one stream, send to that queue and write those logs. Its
    children keep the ids "DeadLetterQueue", "LogGroup" and "Role" in the caller's scope."""

    def __init__(self, scope: Construct, *, stream_arn: str, role_description: str, dead_letters: str) -> None:
        self.dead_letter_queue = sqs.Queue(
            scope,
            "DeadLetterQueue",
            retention_period=Duration.days(definitions.QUEUE_RETENTION_DAYS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(
            self.dead_letter_queue,
            "AwsSolutions-SQS3",
            f"This queue is itself a dead-letter destination: the Pipe sends it {dead_letters}. Nothing consumes "
            "it automatically (an operator reads it, an alarm counts it), so a message never fails here and a "
            "further dead-letter queue would never receive anything.",
        )
        self.log_group = logs.LogGroup(scope, "LogGroup", retention=LOG_RETENTION)
        self.role = iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "pipes.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            description=role_description,
        )
        grant_stream_read(self.role, stream_arn)
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.dead_letter_queue.queue_arn])
        )
        self.log_group.grant_write(self.role)

    def dead_letter_config(self) -> pipes.CfnPipe.DeadLetterConfigProperty:
        return pipes.CfnPipe.DeadLetterConfigProperty(arn=self.dead_letter_queue.queue_arn)

    def log_configuration(self) -> pipes.CfnPipe.PipeLogConfigurationProperty:
        return pipes.CfnPipe.PipeLogConfigurationProperty(
            cloudwatch_logs_log_destination=pipes.CfnPipe.CloudwatchLogsLogDestinationProperty(
                log_group_arn=self.log_group.log_group_arn
            ),
            level=LOG_LEVEL,
        )
