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

from aws_cdk import aws_secretsmanager as secretsmanager

from infra.constructs.secrets import SourceSecretKind
from shared import definitions


def _description(stack_name: str, source: definitions.SourceSpec) -> str:
    return (
        f"API key the processor of stack {stack_name} uses to refetch payments of source "
        f"{source.name} from {source.provider} (the plain key, not JSON). Replace the generated "
        f"placeholder with the key after deploy (inbox secrets set {source.name} --kind api-key)."
    )


def _placeholder() -> secretsmanager.SecretStringGenerator:
    return secretsmanager.SecretStringGenerator(exclude_punctuation=True, password_length=48)


def _rotation(source: definitions.SourceSpec) -> str:
    return (
        f"The value is {source.provider}'s API key, issued by the payment gateway in its dashboard: a "
        "rotation Lambda cannot create one. Rotation is an operator step (roll the key at the gateway, "
        "then put-secret-value); the processor re-reads the secret every five minutes."
    )


# The processor's INBOX_API_KEY_SECRETS: a secret for each source whose provider has a refetch API.
GATEWAY_API_KEYS = SourceSecretKind(
    suffix="ApiKey",
    kind=definitions.SECRET_KIND_API_KEY,
    variable=definitions.ENV_API_KEY_SECRETS,
    description=_description,
    placeholder=_placeholder,
    rotation=_rotation,
    applies=lambda source: source.has_api,
)
