"""One Secrets Manager secret per declared source whose gateway the processor refetches from, holding that
source's API key (a Brazilian and a US Stripe account have one key each).

The value is the key itself, a plain string (``sk_live_...`` for Stripe, ``$aact_...`` for Asaas), not JSON:
shared/gateway/registry.py finds the source's secret in ``INBOX_API_KEY_SECRETS`` (``{source: ARN}``) and
uses the whole secret string. A source of a provider without a refetch API gets none. The stack creates each
secret with a random placeholder; the gateway answers it 401, which fails the events that need a refetch (status
``failed``, replayable) until the operator stores the real key (``inbox secrets set SOURCE --kind api-key
--stack NAME``, or ``aws secretsmanager put-secret-value --secret-id <ARN from the GatewayApiKeySecretArns
output> --secret-string sk_live_...``). The processor caches a key for five minutes, so a new one reaches every
instance within that time.

Names, retention and tags: infra/constructs/secrets.py (CloudFormation names them; they outlive the stack).
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.constructs.secrets import retained_secret, secret_arn_map, unique_logical_ids
from infra.nag import acknowledge
from shared import definitions


class GatewayApiKeys(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stack_name: str,
        sources: tuple[definitions.SourceSpec, ...],
        alongside: Mapping[str, int],
    ) -> None:
        """`alongside`: the other variables of the processor's environment that grow with the declaration."""
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        refetched = [source for source in sources if source.has_api]
        stems = unique_logical_ids(source.name for source in refetched)
        for source in refetched:
            secret = retained_secret(
                self,
                f"{stems[source.name]}ApiKey",
                kind=definitions.SECRET_KIND_API_KEY,
                provider=source.provider,
                source=source.name,
                description=(
                    f"API key the processor of stack {stack_name} uses to refetch payments of source "
                    f"{source.name} from {source.provider} (the plain key, not JSON). Replace the generated "
                    f"placeholder with the key after deploy (inbox secrets set {source.name} --kind api-key)."
                ),
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    exclude_punctuation=True, password_length=48
                ),
            )
            acknowledge(
                secret,
                "AwsSolutions-SMG4",
                f"The value is {source.provider}'s API key, issued by the payment gateway in its dashboard: a "
                "rotation Lambda cannot create one. Rotation is an operator step (roll the key at the gateway, "
                "then put-secret-value); the processor re-reads the secret every five minutes.",
            )
            self.secrets[source.name] = secret
        # {source: ARN}, checked against Lambda's environment limit: the processor's INBOX_API_KEY_SECRETS.
        self.arn_map = secret_arn_map(definitions.ENV_API_KEY_SECRETS, self.secrets, alongside=alongside)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
