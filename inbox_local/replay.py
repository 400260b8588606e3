"""The replay workflow in the local stack: the deployed state machine's definition, created in the embedded AWS.

moto runs Step Functions executions when asked to (inbox_local/embedded_aws.py enables it at start-up), calling
its own DynamoDB for the workflow's aws-sdk tasks and, for its page task, the replay's page function in this
process (inbox_local/step_functions.py `register_function`: the same handler as functions/replay deploys, held
to its timeout): ``inbox replay`` runs the very states the cloud runs. The state machine is created on first use
(by the CLI, or by the runtime at start-up), and its definition is brought up to date when the builder changed
since.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from inbox_local.config import LOCAL_STACK_NAME
from infra.replay_definition import replay_definition

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

REPLAY_STATE_MACHINE_NAME = f"{LOCAL_STACK_NAME}-replay"
# moto's default account; the role is never assumed locally (moto calls DynamoDB as itself), only named.
REPLAY_ROLE_ARN = f"arn:aws:iam::123456789012:role/{LOCAL_STACK_NAME}-replay"
# The page function's ARN in the definition; no such function exists in moto: its tasks run in this process.
REPLAY_PAGE_FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{LOCAL_STACK_NAME}-replay-page"


def page_function(event: Any, context: Any) -> Any:
    """functions/replay's handler, imported on the first page (Powertools and the SDK stay out of the embedded
    AWS's start-up)."""
    from functions.replay.handler import lambda_handler  # noqa: PLC0415

    return lambda_handler(event, context)


def register_page_function() -> None:
    """The page task runs functions/replay's handler in the process that runs the executions (the embedded AWS's,
    or a test's with moto in process). It reads the inbox table's name from the environment, INBOX_TABLE, as the
    deployed function does."""
    from inbox_local.step_functions import register_function  # noqa: PLC0415 (moto's interpreter: not in the CLI)

    register_function(REPLAY_PAGE_FUNCTION_ARN, "replay", page_function)


def local_replay_definition(table_name: str) -> dict[str, object]:
    return replay_definition(table_name, page_function=REPLAY_PAGE_FUNCTION_ARN)


def _find(sfn: SFNClient) -> str | None:
    for page in sfn.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["name"] == REPLAY_STATE_MACHINE_NAME:
                return machine["stateMachineArn"]
    return None


def ensure_replay_state_machine(sfn: SFNClient, table_name: str) -> str:
    """The ARN of the local replay state machine, created (or updated) with the stack's definition."""
    definition = json.dumps(local_replay_definition(table_name))
    for _attempt in range(2):
        arn = _find(sfn)
        if arn is not None:
            if sfn.describe_state_machine(stateMachineArn=arn)["definition"] != definition:
                sfn.update_state_machine(stateMachineArn=arn, definition=definition)
            return arn
        try:
            created = sfn.create_state_machine(
                name=REPLAY_STATE_MACHINE_NAME, definition=definition, roleArn=REPLAY_ROLE_ARN, type="STANDARD"
            )
        except sfn.exceptions.StateMachineAlreadyExists:  # another CLI created it meanwhile: use that one
            continue
        return created["stateMachineArn"]
    raise RuntimeError(f"could not create or find the state machine {REPLAY_STATE_MACHINE_NAME}")
