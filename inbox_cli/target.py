"""Which stack a CLI command talks to: the local stack (default) or a deployed one (`--stack NAME`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from inbox_local.config import LocalEndpoints, LocalNames, aws_environment, signing_secret
from shared import definitions


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
    forward_secret_name: str | None = None  # the forwarding signing secret's ARN (output ForwardSigningSecretArn)
    # The bus the published events go to (output EventBusName). None locally: the local stack has no bus, `inbox
    # listen` reads its outbox stream instead.
    event_bus_name: str | None = None
    # {provider: secret ARN} of a deployed stack's signing secrets (output SigningSecretArns): CloudFormation names
    # them, so the outputs are how the CLI finds them.
    signing_secret_arns: dict[str, str] = field(default_factory=dict)
    # {what it holds: queue URL, or locally the queue's name} of the stack's dead-letter queues (the console's
    # depths). Locally the name: its URL is the embedded AWS's to give (GetQueueUrl), not a string to guess.
    dead_letter_queues: dict[str, str] = field(default_factory=dict)
    # The rejected-delivery log (output RejectedTableName; None: a stack older than the log) and the secret keying
    # its fingerprints (output FingerprintKeySecretArn; None locally: the development key).
    rejected_table: str | None = None
    fingerprint_key_secret: str | None = None

    def signing_secret(self, provider: str) -> str:
        if self.local:
            return signing_secret(provider)
        variable = f"INBOX_SECRET_{provider.upper()}"
        secret = os.environ.get(variable)
        if secret:
            return secret
        arn = self.signing_secret_arns.get(provider)
        if arn is None:
            raise SystemExit(f"the stack lists no signing secret for {provider}: set {variable} to sign with")
        return _current_signing_secret(arn, provider, variable)


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
            dead_letter_queues={"processor": names.dead_letter_queue},
            rejected_table=names.rejected_table,
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
        event_bus_name=outputs.get(definitions.OUTPUT_EVENT_BUS),
        signing_secret_arns=_arn_map(outputs.get(definitions.OUTPUT_SIGNING_SECRETS)),
        dead_letter_queues={
            label: outputs[output] for label, output in _DEAD_LETTER_QUEUE_OUTPUTS.items() if outputs.get(output)
        },
        rejected_table=outputs.get(definitions.OUTPUT_REJECTED_TABLE),
        fingerprint_key_secret=outputs.get(definitions.OUTPUT_FINGERPRINT_KEY_SECRET),
    )


# The deployed stack's dead-letter queues, by what ends in each.
_DEAD_LETTER_QUEUE_OUTPUTS = {
    "processor": definitions.OUTPUT_DEAD_LETTER_QUEUE_URL,
    "pipe": definitions.OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL,
    "outbox": definitions.OUTPUT_OUTBOX_DEAD_LETTER_QUEUE_URL,
    "forwarding": definitions.OUTPUT_FORWARD_DEAD_LETTER_QUEUE_URL,
}


def _arn_map(raw: str | None) -> dict[str, str]:
    """An output holding a JSON {provider: ARN} map (an older stack without it: empty)."""
    if not raw:
        return {}
    value = json.loads(raw)
    return {str(key): str(arn) for key, arn in value.items()} if isinstance(value, dict) else {}


def _current_signing_secret(arn: str, provider: str, variable: str) -> str:
    """The `current` value of a deployed signing secret, read with the caller's credentials."""
    import boto3  # noqa: PLC0415
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    try:
        value = json.loads(boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])
    except (BotoCoreError, ClientError, ValueError, KeyError) as error:
        raise SystemExit(
            f"cannot read {provider}'s signing secret from the stack ({type(error).__name__}): set {variable}"
        ) from None
    current = value.get("current") if isinstance(value, dict) else None
    if not current:
        raise SystemExit(f"{provider}'s signing secret in the stack has no 'current' value: set {variable}")
    return str(current)
