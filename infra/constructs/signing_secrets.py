"""One Secrets Manager secret per provider, holding ``{"current": ..., "previous": ...}``.

The stack creates each secret with a random placeholder so that the ingest never starts without one (a random
value verifies nothing: every delivery is refused with 401 until the operator stores the gateway's real secret,
e.g. ``aws secretsmanager put-secret-value --secret-id <ARN from the SigningSecretArns output>``). During a
rotation at the gateway the operator moves the old value to ``previous``; either verifies, so there is no
downtime.

Names, retention and tags: infra/constructs/secrets.py (CloudFormation names them; they outlive the stack). The
ingest finds them through ``arn_map`` (environment ``INBOX_SIGNING_SECRETS``).
"""

from __future__ import annotations

import json

from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.secrets import retained_secret, secret_arn_map
from infra.nag import acknowledge
from shared import definitions


class SigningSecrets(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stack_name: str) -> None:
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        for provider in definitions.PROVIDERS:
            secret = retained_secret(
                self,
                f"{provider.capitalize()}SigningSecret",
                kind=definitions.SECRET_KIND_SIGNING,
                provider=provider,
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
        # {provider: ARN}, checked against Lambda's environment limit: the ingest's INBOX_SIGNING_SECRETS.
        self.arn_map = secret_arn_map(definitions.ENV_SIGNING_SECRETS, self.secrets)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
