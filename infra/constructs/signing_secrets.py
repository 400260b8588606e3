"""One Secrets Manager secret per provider, holding ``{"current": ..., "previous": ...}``.

The stack creates each secret with a random placeholder so that the ingest never starts without one (a random
value verifies nothing: every delivery is refused with 401 until the operator stores the gateway's real secret,
e.g. ``aws secretsmanager put-secret-value``). During a rotation at the gateway the operator moves the old value
to ``previous``; either verifies, so there is no downtime.
"""

from __future__ import annotations

import json

from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra import definitions
from infra.nag import acknowledge


class SigningSecrets(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stack_name: str) -> None:
        super().__init__(scope, construct_id)
        self.prefix = definitions.secret_prefix(stack_name)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        for provider in definitions.PROVIDERS:
            secret = secretsmanager.Secret(
                self,
                f"{provider.capitalize()}SigningSecret",
                secret_name=definitions.secret_name(stack_name, provider),
                description=(
                    f"Webhook signing secret of {provider} for stack {stack_name}: "
                    '{"current": "...", "previous": "..."}. Replace the generated placeholder with the '
                    "gateway's secret after deploy."
                ),
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    secret_string_template=json.dumps({"previous": ""}),
                    generate_string_key="current",
                    exclude_punctuation=True,
                    password_length=48,
                ),
            )
            acknowledge(
                secret,
                "AwsSolutions-SMG4",
                f"The value is {provider}'s webhook signing secret, issued by the payment gateway: a rotation "
                "Lambda cannot create a new one. Rotation is an operator step at the gateway, made without "
                "downtime by the current/previous pair that the ingest verifies against.",
            )
            self.secrets[provider] = secret

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
