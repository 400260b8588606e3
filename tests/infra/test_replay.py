"""The replay workflow as synthesized: the state machine holds exactly the builder's definition (the one the local
stack runs), its role can do what the definition calls and nothing else, and the synthesized definition itself,
executed by moto's Step Functions interpreter, plans and replays."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_dynamodb as dynamodb
from cdk_nag import AwsSolutionsChecks
from moto import mock_aws

from inbox_local.replay import REPLAY_PAGE_FUNCTION_ARN, register_page_function
from inbox_local.resources import inbox_table_spec
from inbox_local.step_functions import install as install_step_functions_limits
from infra.application import cdk_json_context
from infra.constructs.replay_workflow import ReplayWorkflow
from infra.replay_definition import (
    MAX_PAGES_PER_EXECUTION,
    MAX_WAIT_SECONDS,
    PAGE_FUNCTION_SUBSTITUTION,
    TABLE_SUBSTITUTION,
    TIMEOUT_SECONDS,
    WAIT_BUDGET_SECONDS,
    WORK_ALLOWANCE_SECONDS,
    execution_time_bound,
    page_function_placeholder,
    replay_definition,
    table_placeholder,
)
from shared import definitions
from shared.inbox.model import EventStatus, open_status_value

from .conftest import Synthesized

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def _state_machine(synthesized: Synthesized) -> dict[str, Any]:
    _id, resource = synthesized.resource(synthesized.stack.replay.state_machine)
    properties: dict[str, Any] = resource["Properties"]
    return properties


def _get_att(logical_id: str, attribute: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, attribute]}


def test_the_template_holds_the_builders_definition_with_the_table_substituted(synthesized: Synthesized) -> None:
    state_machine = _state_machine(synthesized)
    assert state_machine["DefinitionString"] == json.dumps(replay_definition(table_placeholder()))
    table_id = synthesized.logical_id(synthesized.stack.storage.table)
    page_function_id = synthesized.logical_id(synthesized.stack.replay.page_function.function)
    assert state_machine["DefinitionSubstitutions"] == {
        TABLE_SUBSTITUTION: {"Ref": table_id},
        PAGE_FUNCTION_SUBSTITUTION: _get_att(page_function_id, "Arn"),
    }


def test_standard_logging_errors_without_execution_data_and_traced_with_inbox_tracing(
    synthesized: Synthesized,
) -> None:
    # Given the stack deployed with -c inbox_tracing=true (the session fixture)
    state_machine = _state_machine(synthesized)
    assert state_machine["StateMachineType"] == "STANDARD"
    # Then the replay is traced like the functions
    assert state_machine["TracingConfiguration"] == {"Enabled": True}
    # And it logs its failures (ERROR, the default), never its inputs and outputs, to its vended log group
    log_group_id = synthesized.logical_id(synthesized.stack.replay.log_group)
    assert state_machine["LoggingConfiguration"] == {
        "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": _get_att(log_group_id, "Arn")}}],
        "IncludeExecutionData": False,
        "Level": "ERROR",
    }
    log_group = synthesized.template_json["Resources"][log_group_id]["Properties"]
    assert log_group["RetentionInDays"] == 30
    assert state_machine["RoleArn"] == _get_att(synthesized.logical_id(synthesized.stack.replay.role), "Arn")


def test_by_default_the_replay_is_not_traced_and_cdk_nag_knows_why(one_source: Synthesized) -> None:
    # Given the stack with the default settings
    state_machine = _state_machine(one_source)
    # Then no X-Ray tracing and no X-Ray grant (tracing is billed per trace recorded)
    assert state_machine.get("TracingConfiguration", {"Enabled": False}) == {"Enabled": False}
    assert state_machine["LoggingConfiguration"]["Level"] == "ERROR"
    assert not [
        action
        for statement in one_source.role_statements(one_source.stack.replay.role)
        for action in statement["Action"]
        if action.startswith("xray:")
    ]
    # And cdk-nag's two findings are acknowledged with the cost reason
    (report,) = [r for r in one_source.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    reasons = {
        suppressed["ruleName"]: suppressed["reason"]
        for suppressed in report["suppressedViolations"]
        if any("/ReplayWorkflow/StateMachine" in c["constructPath"] for c in suppressed["violatingConstructs"])
    }
    assert sorted(reasons) == ["AwsSolutions-SF1", "AwsSolutions-SF2"]
    assert "billed as CloudWatch Logs ingestion" in reasons["AwsSolutions-SF1"]
    assert "billed per trace recorded" in reasons["AwsSolutions-SF2"]


def _on_the_workflow(finding: dict[str, Any]) -> bool:
    return any("/ReplayWorkflow/" in c["constructPath"] for c in finding["violatingConstructs"])


@pytest.mark.parametrize(("level", "tracing"), [("ALL", True), ("FATAL", False)])
def test_the_log_level_is_a_context_value_and_all_needs_no_acknowledgement(level: str, tracing: bool) -> None:
    # Given the workflow alone in a stack checked by cdk-nag, at `level`
    app = App(context=cdk_json_context())
    stack = Stack(app, "Replay")
    table = dynamodb.Table(
        stack, "Inbox", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    ReplayWorkflow(stack, "ReplayWorkflow", table=table, tracing=tracing, log_level=level)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    template = json.loads((Path(assembly.directory) / stack.template_file).read_text())
    (properties,) = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    # Then the state machine logs at that level, traced as asked
    assert properties["LoggingConfiguration"]["Level"] == level
    assert properties.get("TracingConfiguration", {"Enabled": False}) == {"Enabled": tracing}
    # And an SF1 acknowledgement exists only below ALL, an SF2 one only untraced
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert [v for v in nag["violations"] if _on_the_workflow(v)] == []  # (the stand-in table has findings)
    acknowledged = {s["ruleName"] for s in nag["suppressedViolations"] if _on_the_workflow(s)}
    assert ("AwsSolutions-SF1" in acknowledged) == (level != "ALL")
    assert ("AwsSolutions-SF2" in acknowledged) == (not tracing)


def test_the_role_may_query_the_open_events_index_and_get_or_update_inbox_items_only(synthesized: Synthesized) -> None:
    table_id = synthesized.logical_id(synthesized.stack.storage.table)
    grants: dict[str, list[Any]] = {}
    for statement in synthesized.role_statements(synthesized.stack.replay.role):
        assert statement["Effect"] == "Allow"
        for action in statement["Action"]:
            grants.setdefault(action, []).extend(statement["Resource"])
    dynamodb = {action: resources for action, resources in grants.items() if action.startswith("dynamodb:")}
    states = {action: resources for action, resources in grants.items() if action.startswith("states:")}
    state_machine_id = synthesized.logical_id(synthesized.stack.replay.state_machine)
    assert states == {"states:StartExecution": [{"Ref": state_machine_id}]}  # continue as new: itself only
    # The page function, by its unqualified ARN (no version, alias or wildcard)
    page_function_id = synthesized.logical_id(synthesized.stack.replay.page_function.function)
    assert grants["lambda:InvokeFunction"] == [_get_att(page_function_id, "Arn")]
    index_arn = {"Fn::Join": ["", [_get_att(table_id, "Arn"), f"/index/{definitions.OPEN_EVENTS_INDEX}"]]}
    assert dynamodb == {
        "dynamodb:Query": [index_arn],
        "dynamodb:GetItem": [_get_att(table_id, "Arn")],
        "dynamodb:UpdateItem": [_get_att(table_id, "Arn")],
    }
    assert {action.partition(":")[0] for action in grants} <= {"dynamodb", "states", "lambda", "xray", "logs"}
    # Only X-Ray and the logs delivery, which have no resource-level permissions, are granted on "*".
    wildcard = {action for action, resources in grants.items() if "*" in resources}
    assert wildcard
    assert all(action.startswith(("xray:", "logs:")) for action in wildcard)
    assert "logs:PutLogEvents" not in grants  # vended logs: Step Functions writes them, not the role


def test_the_role_may_start_executions_of_this_state_machine_only(synthesized: Synthesized) -> None:
    # Continue as new: the request-response startExecution integration needs states:StartExecution alone.
    state_machine_id = synthesized.logical_id(synthesized.stack.replay.state_machine)
    policy_id, policy = synthesized.resource(synthesized.stack.replay.continue_policy)
    assert policy["Properties"]["Roles"] == [{"Ref": synthesized.logical_id(synthesized.stack.replay.role)}]
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": state_machine_id}}
    ]
    assert policy_id
    definition = json.loads(_state_machine(synthesized)["DefinitionString"])
    (start,) = [
        state
        for state in definition["States"].values()
        if state.get("Resource", "").startswith("arn:aws:states:::states:")
    ]
    assert start["Resource"] == "arn:aws:states:::states:startExecution"  # not .sync: no describe/stop/rule
    assert start["Parameters"]["StateMachineArn.$"] == "$$.StateMachine.Id"  # itself, the only one allowed


def test_the_page_function_may_update_inbox_items_only(synthesized: Synthesized) -> None:
    # Given the replay's page function (it writes the keys of the page it is handed, and reads nothing)
    page = synthesized.stack.replay.page_function
    table_id = synthesized.logical_id(synthesized.stack.storage.table)
    # When its role's grants are collected
    grants: dict[str, list[Any]] = {}
    for statement in synthesized.role_statements(page.role):
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            grants.setdefault(action, []).extend(resources)
    # Then it may UpdateItem the inbox table, and write its own logs (and X-Ray, traced with the functions)
    assert grants.pop("dynamodb:UpdateItem") == [_get_att(table_id, "Arn")]
    assert {action.partition(":")[0] for action in grants} <= {"logs", "xray"}
    # And its environment names the table, and the timeout is the definitions'
    _id, function = synthesized.resource(page.function)
    assert function["Properties"]["Environment"]["Variables"][definitions.ENV_INBOX_TABLE] == {"Ref": table_id}
    assert function["Properties"]["Timeout"] == definitions.REPLAY_PAGE_TIMEOUT_SECONDS


def test_only_step_functions_of_this_account_may_assume_the_role(synthesized: Synthesized) -> None:
    _id, role = synthesized.resource(synthesized.stack.replay.role)
    (statement,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "states.amazonaws.com"}
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


def test_output_names_the_state_machine(synthesized: Synthesized) -> None:
    output = synthesized.template_json["Outputs"][definitions.OUTPUT_REPLAY_STATE_MACHINE]
    assert output["Value"] == {"Ref": synthesized.logical_id(synthesized.stack.replay.state_machine)}


# ------------------------------------------------------------------------ the synthesized definition, executed
def _execute(sfn: Any, arn: str, execution_input: dict[str, Any]) -> dict[str, Any]:
    execution = sfn.start_execution(
        stateMachineArn=arn, name=f"run-{time.time_ns()}", input=json.dumps(execution_input)
    )["executionArn"]
    deadline = time.monotonic() + 60
    while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution did not finish in 60 s"
        time.sleep(0.05)
    assert described["status"] == "SUCCEEDED", described
    output: dict[str, Any] = json.loads(described["output"])
    return output


def test_the_synthesized_definition_plans_then_replays_in_moto(synthesized: Synthesized, monkeypatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    synthesized_definition = _state_machine(synthesized)["DefinitionString"]
    monkeypatch.setenv(definitions.ENV_INBOX_TABLE, "inbox")  # the page function's environment, as deployed
    # What CloudFormation does with DefinitionSubstitutions (the page function: the local stack's, run in process)
    deployed_definition = synthesized_definition.replace(table_placeholder(), "inbox").replace(
        page_function_placeholder(), REPLAY_PAGE_FUNCTION_ARN
    )
    install_step_functions_limits()
    register_page_function()
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(**inbox_table_spec("inbox"))
        for number, status in enumerate(["failed", "failed", "pending", "processed"]):
            pk = f"stripe#evt_{number}"
            item = {
                "pk": {"S": pk},
                "provider": {"S": "stripe"},
                "event_type": {"S": "payment_intent.succeeded"},
                "status": {"S": status},
                "received_at": {"S": f"2026-01-0{number + 1}T00:00:00.000000Z"},
                "dispatch_id": {"S": "original"},
            }
            if status in {"failed", "pending"}:
                item["open_status"] = {"S": open_status_value(EventStatus(status), pk)}
            dynamodb.put_item(TableName="inbox", Item=item)
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="replay", definition=deployed_definition, roleArn="arn:aws:iam::123456789012:role/replay"
        )["stateMachineArn"]

        plan = _execute(sfn, arn, {"provider": "stripe", "dry_run": True})
        assert plan["counts"]["planned"] == 2 and plan["counts"]["replayed"] == 0
        assert dynamodb.get_item(TableName="inbox", Key={"pk": {"S": "stripe#evt_0"}})["Item"]["status"]["S"] == (
            "failed"
        )

        done = _execute(sfn, arn, {"provider": "stripe", "wait_seconds": 0})
        assert done["counts"]["replayed"] == 2
        statuses = {
            item["pk"]["S"]: (item["status"]["S"], item.get("dispatch_reason", {}).get("S"))
            for item in dynamodb.scan(TableName="inbox")["Items"]
        }
        assert statuses == {
            "stripe#evt_0": ("pending", "replay"),
            "stripe#evt_1": ("pending", "replay"),
            "stripe#evt_2": ("pending", None),
            "stripe#evt_3": ("processed", None),
        }


def test_an_execution_continues_in_a_new_one_before_its_timeout_can_stop_it(synthesized: Synthesized) -> None:
    # Given the deployed definition
    definition = json.loads(_state_machine(synthesized)["DefinitionString"])
    states = definition["States"]
    # Then its pages' waits alone could outlast TimeoutSeconds (what would stop an execution mid-chain) ...
    assert definition["TimeoutSeconds"] == TIMEOUT_SECONDS
    assert MAX_PAGES_PER_EXECUTION * MAX_WAIT_SECONDS > TIMEOUT_SECONDS
    # ... so each page counts its wait, and once the count reaches the budget the execution continues in a new one
    for tally in ("TallyNextPage", "TallyNextShard"):
        assert states[tally]["Parameters"]["waited.$"] == "States.MathAdd($.waited, $.input.wait_seconds)"
    for choice, resume in (("NextPageWithinLimit", "ResumeAtPage"), ("ShardsLeft", "ResumeAtShard")):
        budget = {"Variable": "$.waited", "NumericGreaterThanEquals": WAIT_BUDGET_SECONDS, "Next": resume}
        assert budget in states[choice]["Choices"]
    for start in ("ScanStart", "ScanResume"):
        assert states[start]["Parameters"]["waited"] == 0
    # And the longest an execution can then wait, plus the allowance for its tasks, is within the timeout
    assert execution_time_bound() == WAIT_BUDGET_SECONDS - 1 + MAX_WAIT_SECONDS + WORK_ALLOWANCE_SECONDS
    assert execution_time_bound() < TIMEOUT_SECONDS
