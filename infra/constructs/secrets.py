"""What every Secrets Manager secret of the stack has in common, and how the functions find them.

A deploy must succeed again after ``cdk destroy`` and after a source (sources.json) is removed and added back.
Both remove a secret from the stack, and CloudFormation's DeletionPolicy applies to both ("this capability also
applies to stack update operations that lead to resources being deleted from stacks",
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-deletionpolicy.html). So:

- Every secret is retained like the tables, because the operator put the gateway's real secret in it and a
  mistaken deletion must not lose it: DeletionPolicy ``RetainExceptOnCreate`` with UpdateReplacePolicy
  ``Retain`` (CDK's ``RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE``). "Except on create": a secret created by a
  stack operation that then rolls back holds nothing but its generated placeholder, so it is deleted rather
  than left behind by every failed first deploy.
- No secret has a fixed name. A fixed name collides on the next deploy with the secret retained under it, or
  with one an operator deleted and that is still inside Secrets Manager's recovery window (7 to 30 days,
  default 30: https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_DeleteSecret.html), and
  the deploy fails. Without ``Name``, CloudFormation generates a fresh name for each new secret.
- Logical ids derive from the source's name alone (``source_logical_id``): removing a source deletes (retains)
  its secret, declaring it again creates a new one under the same logical id with a newly generated name.
- Since the names are CloudFormation's, each secret is tagged (stack, provider, source, kind) so an operator can
  find it, also a retained one, and the functions get a JSON map ``{source: secret ARN}`` in one environment
  variable instead of a name prefix (shared/secrets.py reads it). The map is also a stack output, for the CLI.

Alternatives weighed: unique names derived from the stack plus a deploy counter or a random suffix either
change on every synth (a new secret per deploy) or need state outside the template; looking secrets up by tag
at run time needs ``secretsmanager:ListSecrets`` on ``*`` and a call on every cold start. The ARN map has
neither cost; its one limit is Lambda's 4 KB environment, checked at synth (``secret_arn_map``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from aws_cdk import Fn, RemovalPolicy, Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import SettingsError
from infra.nag import acknowledge
from shared import definitions

SECRET_REMOVAL_POLICY = RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE

# The longest ARN a secret of this stack can have, for the environment size check. An ARN is
# "arn:<partition>:secretsmanager:<region>:<account>:secret:<name>-<6 random characters>" (Secrets Manager adds
# the hyphen and six characters: https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html).
# The name is CloudFormation's, built from the stack name and/or the logical id and a random part; the bound below
# allows all three in full, so it holds whichever CloudFormation uses.
ARN_PREFIX_MAX_LENGTH = len("arn:aws-us-gov:secretsmanager:ap-southeast-5:123456789012:secret:")
GENERATED_NAME_SUFFIX_MAX_LENGTH = 1 + 13  # a separator and CloudFormation's random part (12 or 13 characters)
ARN_SUFFIX_LENGTH = 1 + 6


class EnvironmentTooLarge(SettingsError):
    """The variables that grow with the declared sources could outgrow what Lambda's 4 KB environment leaves
    them: synth stops."""


class SecretMapTooLarge(EnvironmentTooLarge):
    """A secret ARN map (with the declaration beside it) could outgrow what Lambda's 4 KB environment leaves it."""


class DuplicateLogicalId(SettingsError):
    """Two declared sources would give their secrets the same CloudFormation logical id: synth stops."""


def source_logical_id(name: str) -> str:
    """The logical-id stem of a source's secrets: ``stripe`` -> ``Stripe``, ``stripe-br`` -> ``StripeBr``.

    Derived from the name alone, so a source keeps its secrets across deploys whatever else is declared, and one
    removed and declared again gets the same logical id (a new secret with a fresh generated name: its retained
    predecessor, or one in Secrets Manager's recovery window, cannot collide with it). A default source (the
    provider's id, no hyphen) keeps the id it had before sources existed, so an existing deployment's secrets are
    not replaced. Two names that differ only where a hyphen meets a digit (``a-1``, ``a1``) would meet:
    ``unique_logical_ids`` refuses that declaration."""
    return "".join(part.capitalize() for part in name.split("-"))


def unique_logical_ids(names: Iterable[str]) -> dict[str, str]:
    """{source name: logical-id stem}; DuplicateLogicalId naming the sources whose stems collide."""
    stems: dict[str, str] = {}
    for name in names:
        stem = source_logical_id(name)
        clash = next((other for other, taken in stems.items() if taken == stem), None)
        if clash is not None:
            raise DuplicateLogicalId(
                f"sources {clash!r} and {name!r} would name their secrets alike ({stem}) in the template: rename "
                "one (CloudFormation logical ids keep letters and digits only)"
            )
        stems[name] = stem
    return stems


def environment_share(variables: Mapping[str, str]) -> dict[str, int]:
    """{variable: bytes it takes (name and value)} of plain variables that grow with the declaration."""
    return {name: len(name) + len(value.encode()) for name, value in variables.items()}


def check_environment_share(function: str, lengths: Mapping[str, int]) -> None:
    """Refuse at synth variables that, together and at their longest, leave less than
    definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES of Lambda's 4 KB environment to the function's other variables."""
    budget = definitions.LAMBDA_ENVIRONMENT_LIMIT_BYTES - definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES
    total = sum(lengths.values())
    if total > budget:
        detail = ", ".join(f"{name} {length}" for name, length in lengths.items())
        raise EnvironmentTooLarge(
            f"the {function} function's {detail} bytes could take {total} bytes of its environment, more than the "
            f"{budget} that Lambda's {definitions.LAMBDA_ENVIRONMENT_LIMIT_BYTES}-byte limit leaves them: declare "
            "fewer sources (or shorter options) in sources.json, or deploy them as more than one stack"
        )


def retained_secret(
    scope: Construct,
    construct_id: str,
    *,
    kind: str,
    provider: str | None,
    description: str,
    source: str | None = None,
    generate_secret_string: secretsmanager.SecretStringGenerator,
) -> secretsmanager.Secret:
    """A secret named by CloudFormation, retained on stack deletion and on removal from the template, tagged with
    the stack, its provider and source (if any) and its kind (definitions.SECRET_KIND_*)."""
    secret = secretsmanager.Secret(
        scope,
        construct_id,
        description=description,
        generate_secret_string=generate_secret_string,
        removal_policy=SECRET_REMOVAL_POLICY,
    )
    tags = Tags.of(secret)
    tags.add(definitions.SECRET_TAG_STACK, Stack.of(scope).stack_name)
    tags.add(definitions.SECRET_TAG_KIND, kind)
    if provider is not None:
        tags.add(definitions.SECRET_TAG_PROVIDER, provider)
    if source is not None:
        tags.add(definitions.SECRET_TAG_SOURCE, source)
    return secret


def longest_arn_length(secret: secretsmanager.Secret) -> int:
    """An upper bound of the ARN CloudFormation will give `secret` (its name is generated at deploy)."""
    stack = Stack.of(secret)
    logical_id = str(stack.resolve(stack.get_logical_id(secret.node.default_child)))  # type: ignore[arg-type]
    name_length = len(stack.stack_name) + 1 + len(logical_id) + GENERATED_NAME_SUFFIX_MAX_LENGTH
    return ARN_PREFIX_MAX_LENGTH + name_length + ARN_SUFFIX_LENGTH


def longest_map_length(variable: str, arn_lengths: Mapping[str, int]) -> int:
    """Bytes the variable takes in a function's environment (name and value) when every ARN is at its longest:
    the compact JSON object ``{"*":"<common part>","key":"<name>",...}`` that ``Stack.to_json_string`` writes."""
    entries = [len(key) + length - ARN_PREFIX_MAX_LENGTH + len('"":""') for key, length in arn_lengths.items()]
    # The ARNs' common part, once (definitions.SECRET_MAP_ARN_PREFIX_KEY).
    entries.append(len(definitions.SECRET_MAP_ARN_PREFIX_KEY) + ARN_PREFIX_MAX_LENGTH + len('"":""'))
    separators = len(",") * max(len(entries) - 1, 0)
    return len(variable) + len("{}") + sum(entries) + separators


def secret_arn_map(
    variable: str, secrets: Mapping[str, secretsmanager.Secret], *, alongside: Mapping[str, int] | None = None
) -> str:
    """The value of `variable`, the JSON object ``{source: secret ARN}`` (resolved at deploy). Refused at synth
    when, at its longest and with the variables `alongside` it that also grow with the declaration ({name: bytes},
    e.g. INBOX_SOURCES), it would leave less than definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES of Lambda's 4 KB
    environment to the function's other variables."""
    budget = definitions.LAMBDA_ENVIRONMENT_LIMIT_BYTES - definitions.LAMBDA_ENVIRONMENT_RESERVE_BYTES
    longest = longest_map_length(variable, {key: longest_arn_length(secret) for key, secret in secrets.items()})
    beside = sum((alongside or {}).values())
    if longest + beside > budget:
        besides = f" beside {', '.join(alongside or {})} ({beside} bytes)" if beside else ""
        raise SecretMapTooLarge(
            f"{variable} lists {len(secrets)} secrets and could take {longest} bytes of a function's environment"
            f"{besides}, more than the {budget} that Lambda's {definitions.LAMBDA_ENVIRONMENT_LIMIT_BYTES}-byte "
            "limit leaves it: declare fewer sources per stack in sources.json (or a lookup that does not go "
            "through the environment is needed)"
        )
    if not secrets:
        return "{}"
    # "arn:<partition>:secretsmanager:<region>:<account>:secret:<name>": the sixth ':'-separated field is the name
    # (with Secrets Manager's suffix; a generated name holds no ':'), the rest is the same for every secret.
    common = Fn.sub("arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:")
    names = {key: Fn.select(6, Fn.split(":", secret.secret_arn)) for key, secret in secrets.items()}
    return Stack.of(next(iter(secrets.values()))).to_json_string(
        {definitions.SECRET_MAP_ARN_PREFIX_KEY: common, **names}
    )


@dataclass(frozen=True)
class SourceSecretKind:
    """What one kind of per-source secret is: which sources get one, the logical id's `suffix` after the source's,
    the `kind` tag, the function variable that maps sources to them, and the words the secret and cdk-nag carry."""

    suffix: str
    kind: str
    variable: str  # the {source: ARN} map's environment variable
    description: Callable[[str, definitions.SourceSpec], str]  # (stack name, source) -> the secret's description
    placeholder: Callable[[], secretsmanager.SecretStringGenerator]  # the random value it is created with
    rotation: Callable[[definitions.SourceSpec], str]  # why no rotation Lambda (AwsSolutions-SMG4)
    applies: Callable[[definitions.SourceSpec], bool] = lambda source: True


class SourceSecrets(Construct):
    """One retained secret of `of`'s kind per source it applies to, named `{source's logical id}{suffix}` inside
    this construct and created with a random placeholder the operator replaces. `arn_map` is the `{source: ARN}`
    map a function finds them by in `of.variable`, checked against Lambda's environment limit with `alongside`
    (the other variables of that function's environment that grow with the declaration)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        of: SourceSecretKind,
        stack_name: str,
        sources: Iterable[definitions.SourceSpec],
        alongside: Mapping[str, int],
    ) -> None:
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        chosen = [source for source in sources if of.applies(source)]
        stems = unique_logical_ids(source.name for source in chosen)
        for source in chosen:
            secret = retained_secret(
                self,
                f"{stems[source.name]}{of.suffix}",
                kind=of.kind,
                provider=source.provider,
                source=source.name,
                description=of.description(stack_name, source),
                generate_secret_string=of.placeholder(),
            )
            acknowledge(secret, "AwsSolutions-SMG4", of.rotation(source))
            self.secrets[source.name] = secret
        self.arn_map = secret_arn_map(of.variable, self.secrets, alongside=alongside)

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
