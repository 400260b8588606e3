"""The replay workflow in the local stack: the deployed state machine's definition, created in the embedded AWS.

moto runs Step Functions executions when asked to (inbox_local/embedded_aws.py enables it at start-up), calling
its own DynamoDB for the workflow's aws-sdk tasks: ``inbox replay`` runs the very states the cloud runs. The state
machine is created on first use (by the CLI, or by the runtime at start-up), and its definition is brought up to
date when the builder changed since.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from inbox_local.config import LOCAL_STACK_NAME
from infra.replay_definition import replay_definition

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

REPLAY_STATE_MACHINE_NAME = f"{LOCAL_STACK_NAME}-replay"
# moto's default account; the role is never assumed locally (moto calls DynamoDB as itself), only named.
REPLAY_ROLE_ARN = f"arn:aws:iam::123456789012:role/{LOCAL_STACK_NAME}-replay"


def _find(sfn: SFNClient) -> str | None:
    for page in sfn.get_paginator("list_state_machines").paginate():
        for machine in page["stateMachines"]:
            if machine["name"] == REPLAY_STATE_MACHINE_NAME:
                return machine["stateMachineArn"]
    return None


def ensure_replay_state_machine(sfn: SFNClient, table_name: str) -> str:
    """The ARN of the local replay state machine, created (or updated) with the stack's definition."""
    definition = json.dumps(replay_definition(table_name))
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
