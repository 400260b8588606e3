"""Which stack a CLI command talks to: the local stack (default) or a deployed one (`--stack NAME`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from inbox_local.config import LocalEndpoints, LocalNames, aws_environment, signing_secret
from infra import definitions


@dataclass(frozen=True)
class Target:
    api_url: str
    inbox_table: str
    payments_table: str
    body_bucket: str
    local: bool
    # The replay workflow of a deployed stack (output ReplayStateMachineArn). None locally: the CLI creates the
    # same state machine in the embedded AWS on first use (inbox_local/replay.py).
    replay_state_machine_arn: str | None = None
    outbox_table: str | None = None  # the transactional outbox (output OutboxTableName)
    control_table: str | None = None  # the forwarding checkpoints among others (output ControlTableName)
    forward_secret_name: str | None = None  # the forwarding signing secret (output ForwardSigningSecretName)

    def signing_secret(self, provider: str) -> str:
        if self.local:
            return signing_secret(provider)
        secret = os.environ.get(f"INBOX_SECRET_{provider.upper()}")
        if not secret:
            raise SystemExit(
                f"set INBOX_SECRET_{provider.upper()} to the signing secret configured in the deployed stack"
            )
        return secret


def resolve(stack: str | None) -> Target:
    if stack is None:
        endpoints = LocalEndpoints.from_environ()
        for name, value in aws_environment(endpoints).items():
            os.environ.setdefault(name, value)
        names = LocalNames()
        return Target(
            endpoints.api_url,
            names.inbox_table,
            names.payments_table,
            names.body_bucket,
            local=True,
            outbox_table=names.outbox_table,
            control_table=names.control_table,
        )

    import boto3  # noqa: PLC0415

    outputs = {
        output["OutputKey"]: output["OutputValue"]
        for output in boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    return Target(
        api_url=outputs[definitions.OUTPUT_API_URL].rstrip("/"),
        inbox_table=outputs[definitions.OUTPUT_INBOX_TABLE],
        payments_table=outputs.get(definitions.OUTPUT_PAYMENTS_TABLE, ""),
        body_bucket=outputs[definitions.OUTPUT_BODY_BUCKET],
        local=False,
        replay_state_machine_arn=outputs.get(definitions.OUTPUT_REPLAY_STATE_MACHINE),
        outbox_table=outputs.get(definitions.OUTPUT_OUTBOX_TABLE),
        control_table=outputs.get(definitions.OUTPUT_CONTROL_TABLE),
        forward_secret_name=outputs.get(definitions.OUTPUT_FORWARD_SECRET),
    )
