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
from collections.abc import Mapping

from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.secrets import retained_secret, secret_arn_map, unique_logical_ids
from infra.nag import acknowledge
from shared import definitions


class SigningSecrets(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stack_name: str,
        sources: tuple[definitions.SourceSpec, ...],
        alongside: Mapping[str, int],
    ) -> None:
        """`alongside`: the other variables of the ingest's environment that grow with the declaration."""
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        stems = unique_logical_ids(source.name for source in sources)
        for source in sources:
            secret = retained_secret(
                self,
                f"{stems[source.name]}SigningSecret",
                kind=definitions.SECRET_KIND_SIGNING,
                provider=source.provider,
                source=source.name,
                description=(
                    f"Webhook signing secret of source {source.name} ({source.provider}) for stack {stack_name}: "
                    '{"current": "...", "previous": "..."}. Replace the generated placeholder with the '
                    f"gateway's secret after deploy (inbox secrets set {source.name} --kind signing)."
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
                f"The value is {source.provider}'s webhook signing secret, issued by the payment gateway: a "
                "rotation Lambda cannot create a new one. Rotation is an operator step at the gateway, made "
                "without downtime by the current/previous pair that the ingest verifies against.",
            )
            self.secrets[source.name] = secret
        # {source: ARN}, checked against Lambda's environment limit: the ingest's INBOX_SIGNING_SECRETS.
        self.arn_map = secret_arn_map(definitions.ENV_SIGNING_SECRETS, self.secrets, alongside=alongside)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
