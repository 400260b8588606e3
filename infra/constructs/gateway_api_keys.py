"""One Secrets Manager secret per gateway the processor refetches from, holding that gateway's API key.

The value is the key itself, a plain string (``sk_live_...`` for Stripe, ``$aact_...`` for Asaas), not JSON:
shared/gateway/registry.py finds the provider's secret in ``INBOX_API_KEY_SECRETS`` (``{provider: ARN}``) and
uses the whole secret string. The stack creates each secret with a random placeholder; the gateway answers it
401, which fails the events that need a refetch (status ``failed``, replayable) until the operator stores the
real key, e.g. ``aws secretsmanager put-secret-value --secret-id <ARN from the GatewayApiKeySecretArns output>
--secret-string sk_live_...``. The processor caches a key for five minutes, so a new one reaches every instance
within that time.

Names, retention and tags: infra/constructs/secrets.py (CloudFormation names them; they outlive the stack).
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.secrets import retained_secret, secret_arn_map
from infra.nag import acknowledge
from shared import definitions


class GatewayApiKeys(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stack_name: str) -> None:
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        for provider in definitions.REFETCH_PROVIDERS:
            secret = retained_secret(
                self,
                f"{provider.capitalize()}ApiKey",
                kind=definitions.SECRET_KIND_API_KEY,
                provider=provider,
                description=(
                    f"API key the processor of stack {stack_name} uses to refetch payments from {provider} "
                    "(the plain key, not JSON). Replace the generated placeholder with the key after deploy."
                ),
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    exclude_punctuation=True, password_length=48
                ),
            )
            acknowledge(
                secret,
                "AwsSolutions-SMG4",
                f"The value is {provider}'s API key, issued by the payment gateway in its dashboard: a rotation "
                "Lambda cannot create one. Rotation is an operator step (roll the key at the gateway, then "
                "put-secret-value); the processor re-reads the secret every five minutes.",
            )
            self.secrets[provider] = secret
        # {provider: ARN}, checked against Lambda's environment limit: the processor's INBOX_API_KEY_SECRETS.
        self.arn_map = secret_arn_map(definitions.ENV_API_KEY_SECRETS, self.secrets)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
