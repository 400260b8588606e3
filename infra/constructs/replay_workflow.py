"""The replay workflow: a Step Functions state machine that sets selected events back to pending.

Its definition is infra/replay_definition.py's, the one the local stack creates in its embedded AWS: the table name
and the page function's ARN reach it through DefinitionSubstitutions, so the template holds exactly the builder's
JSON. It selects events with aws-sdk DynamoDB integrations (Query; GetItem and UpdateItem by id), and sets each
page selected by age back to pending with one Lambda task, the page function (functions/replay -> shared/replay.py,
the lifecycle's replay write per event): Step Functions bills one state for the page instead of one per event. The
local stack runs the same states, the page task in process (inbox_local/step_functions.py).

Choices:
- The execution timeout is the definition's own ``TimeoutSeconds`` (replay_definition.TIMEOUT_SECONDS).
- STANDARD: an execution waits between pages and may run for minutes; every execution is kept with its history,
  which is the audit trail of who replayed what (each replayed item carries ``replayed_by`` = the execution ARN).
- The role may Query the open-events index, GetItem/UpdateItem the inbox table (the replay by id) and invoke the
  page function (its unqualified ARN: no version or alias): nothing else, no Scan, no PutItem or DeleteItem, no
  other index or table. Only Step Functions of this account may assume it.
- The page function's role may UpdateItem the inbox table, nothing else: the page it gets holds the keys it
  writes. It has no alarm of its own (monitoring.REPORTED_TO_CALLER): the replay execution that invokes it retries
  its failures and fails when they persist, and `inbox replay` (or the console) that started it reports that, as
  it reported the failures of the UpdateItem tasks that did this work before.
- It may also start executions of this state machine, and of no other: an execution that reached its history
  budget continues in a new one (``arn:aws:states:::states:startExecution``, request-response, which needs only
  ``states:StartExecution`` on the state machine; the .sync variants would add DescribeExecution/StopExecution and
  an EventBridge rule: https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html). That grant is
  a policy of its own, attached to the role: inside the role's default policy it would make the state machine
  depend on a policy that names the state machine (a cycle).
- Logs: at ``-c inbox_replay_log_level`` (ERROR by default: failed executions and states, with their error and
  cause), without execution data (inputs and outputs stay out of the logs; they hold event ids only, but there is
  no reason to copy them), to a log group under /aws/vendedlogs/ (infra/constructs/vended_logs.py) with a retention
  period. ALL would log every history event: several lines per replayed event (its Map iteration, its task
  entered, scheduled, started, succeeded, exited), billed as log ingestion, for what the execution history already
  holds (a Standard execution's history is kept 90 days,
  https://docs.aws.amazon.com/step-functions/latest/dg/express-at-least-once-execution.html; `inbox replay` reads
  it).
- X-Ray tracing follows ``-c inbox_tracing``, like the functions' (off by default: billed per trace recorded).
"""

from __future__ import annotations

import json

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import DEFAULT_REPLAY_LOG_LEVEL
from infra.constructs.inbox_storage import inbox_table_access
from infra.constructs.python_function import FunctionConstruct, FunctionSpec
from infra.constructs.vended_logs import vended_log_group
from infra.nag import acknowledge
from infra.replay_definition import PAGE_FUNCTION_SUBSTITUTION, TABLE_SUBSTITUTION, replay_definition, table_placeholder
from shared import definitions

REPLAY_PAGE = FunctionSpec(
    "ReplayPage",
    "replay",
    definitions.REPLAY_PAGE_MEMORY_MB,
    definitions.REPLAY_PAGE_TIMEOUT_SECONDS,
    "Webhook Inbox replay: set one page of selected events back to pending (invoked by the replay workflow)",
)

LOG_RETENTION = logs.RetentionDays.ONE_MONTH


class ReplayWorkflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        tracing: bool = False,
        log_level: str = DEFAULT_REPLAY_LOG_LEVEL,
    ) -> None:
        """`tracing`: X-Ray on (context value inbox_tracing); `log_level`: one of REPLAY_LOG_LEVELS (context value
        inbox_replay_log_level)."""
        super().__init__(scope, construct_id)

        self.page_function = FunctionConstruct(
            self, "PageFunction", spec=REPLAY_PAGE, uses=(inbox_table_access(table, ["dynamodb:UpdateItem"]),)
        )

        self.log_group = vended_log_group(self, "LogGroup", service="states", purpose="replay", retention=LOG_RETENTION)
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
        self.role.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.page_function.function.function_arn])
        )

        self.definition = replay_definition(table_placeholder())
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment="Webhook Inbox replay: failed (or pending) events back to pending, dispatched again",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(self.definition)),
            definition_substitutions={
                TABLE_SUBSTITUTION: table.table_name,
                PAGE_FUNCTION_SUBSTITUTION: self.page_function.function.function_arn,
            },
            role=self.role,
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel(log_level), include_execution_data=False
            ),
            tracing_enabled=tracing,
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
            "Actions that have no resource-level permissions, added by the StateMachine construct: CloudWatch Logs "
            "vended delivery for the state machine's logging (logs:CreateLogDelivery and related) and, with "
            "-c inbox_tracing=true, X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords, GetSamplingRules, "
            "GetSamplingTargets), which the IAM reference only allows on '*'.",
        )
        if log_level != "ALL":
            acknowledge(
                self.state_machine,
                "AwsSolutions-SF1",
                f"The replay logs at {log_level} (-c inbox_replay_log_level, ALL on request): failed executions "
                "and states with their error and cause. ALL would add several log lines per replayed event, billed "
                "as CloudWatch Logs ingestion, for what the execution history already records step by step (kept "
                "90 days by Step Functions; `inbox replay` reads it).",
            )
        if not tracing:
            acknowledge(
                self.state_machine,
                "AwsSolutions-SF2",
                "X-Ray tracing follows -c inbox_tracing, off by default like the functions': traces are billed per "
                "trace recorded, and a replay's steps are DynamoDB calls whose every result is in the execution "
                "history and whose latency is in DynamoDB's own metrics.",
            )
