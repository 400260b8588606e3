"""One Secrets Manager secret per declared source (sources.json), holding ``{"current": ..., "previous": ...}``.

The stack creates each secret with a random placeholder so that the ingest never starts without one (a random
value verifies nothing: every delivery is refused with 401 until the operator stores the gateway's real secret,
with ``inbox secrets set SOURCE --kind signing --stack NAME``, or ``aws secretsmanager put-secret-value
--secret-id <ARN from the SigningSecretArns output>``). During a rotation at the gateway the operator moves the
old value to ``previous`` (``inbox secrets set ... --previous``); either verifies, so there is no downtime.

Names, retention and tags: infra/constructs/secrets.py (CloudFormation names them; they outlive the stack). The
ingest finds them through ``arn_map`` (environment ``INBOX_SIGNING_SECRETS``, ``{source: ARN}``).
"""

from __future__ import annotations

import json

from aws_cdk import aws_secretsmanager as secretsmanager

from infra.constructs.secrets import SourceSecretKind
from shared import definitions


def _description(stack_name: str, source: definitions.SourceSpec) -> str:
    return (
        f"Webhook signing secret of source {source.name} ({source.provider}) for stack {stack_name}: "
        '{"current": "...", "previous": "..."}. Replace the generated placeholder with the '
        f"gateway's secret after deploy (inbox secrets set {source.name} --kind signing)."
    )


def _placeholder() -> secretsmanager.SecretStringGenerator:
    return secretsmanager.SecretStringGenerator(
        secret_string_template=json.dumps({"previous": ""}),
        generate_string_key="current",
        exclude_punctuation=True,
        password_length=48,
    )


def _rotation(source: definitions.SourceSpec) -> str:
    return (
        f"The value is {source.provider}'s webhook signing secret, issued by the payment gateway: a "
        "rotation Lambda cannot create a new one. Rotation is an operator step at the gateway, made "
        "without downtime by the current/previous pair that the ingest verifies against."
    )


# The ingest's INBOX_SIGNING_SECRETS: a secret for every declared source.
SIGNING_SECRETS = SourceSecretKind(
    suffix="SigningSecret",
    kind=definitions.SECRET_KIND_SIGNING,
    variable=definitions.ENV_SIGNING_SECRETS,
    description=_description,
    placeholder=_placeholder,
    rotation=_rotation,
)
