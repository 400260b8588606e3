"""The replay workflow: a Step Functions state machine that sets selected events back to pending.

Its definition is infra/replay_definition.py's, the one the local stack creates in its embedded AWS: the table name
reaches it through a DefinitionSubstitution, so the template holds exactly the builder's JSON. It calls DynamoDB
through aws-sdk service integrations, no Lambda: nothing to package, and the same states run in moto's
interpreter (tests, local stack).

Choices:
- The execution timeout is the definition's own ``TimeoutSeconds`` (replay_definition.TIMEOUT_SECONDS).
- STANDARD: an execution waits between pages and may run for minutes; every execution is kept with its history,
  which is the audit trail of who replayed what (each replayed item carries ``replayed_by`` = the execution ARN).
- The role may Query the open-events index and GetItem/UpdateItem the inbox table: nothing else, no Scan, no
  PutItem or DeleteItem, no other index or table. Only Step Functions of this account may assume it.
- It may also start executions of this state machine, and of no other: an execution that reached its history
  budget continues in a new one (``arn:aws:states:::states:startExecution``, request-response, which needs only
  ``states:StartExecution`` on the state machine; the .sync variants would add DescribeExecution/StopExecution and
  an EventBridge rule: https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html). That grant is
  a policy of its own, attached to the role: inside the role's default policy it would make the state machine
  depend on a policy that names the state machine (a cycle).
- Logs: ALL events without execution data (inputs and outputs stay out of the logs; they hold event ids only, but
  there is no reason to copy them), to a log group with a retention period. X-Ray tracing on.
"""

from __future__ import annotations

import json

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.nag import acknowledge
from infra.replay_definition import TABLE_SUBSTITUTION, replay_definition, table_placeholder
from shared import definitions

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


class ReplayWorkflow(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable) -> None:
        super().__init__(scope, construct_id)

        self.log_group = logs.LogGroup(self, "LogGroup", retention=LOG_RETENTION)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal(
                "states.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
            description="Execution role of the replay workflow: select open inbox events, set them back to pending",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query"],
                resources=[f"{table.table_arn}/index/{definitions.OPEN_EVENTS_INDEX}"],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["dynamodb:GetItem", "dynamodb:UpdateItem"], resources=[table.table_arn])
        )

        self.definition = replay_definition(table_placeholder())
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment="Webhook Inbox replay: failed (or pending) events back to pending, dispatched again",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(self.definition)),
            definition_substitutions={TABLE_SUBSTITUTION: table.table_name},
            role=self.role,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
        )

        self.continue_policy = iam.Policy(
            self,
            "ContinueAsNewPolicy",
            statements=[
                iam.PolicyStatement(actions=["states:StartExecution"], resources=[self.state_machine.state_machine_arn])
            ],
            roles=[self.role],
        )

        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Two groups of actions that have no resource-level permissions, both added by the StateMachine "
            "construct: X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, "
            "GetSamplingTargets) and CloudWatch Logs vended delivery for the state machine's logging "
            "(logs:CreateLogDelivery and related), which the IAM reference only allows on '*'.",
        )
