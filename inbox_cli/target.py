"""Which stack a CLI command talks to: the local stack (default) or a deployed one (`--stack NAME`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from inbox_local.config import LocalEndpoints, LocalNames, aws_environment
from inbox_local.dev_secrets import dev_signing_secret, signing_secret_variable
from infra.sources_file import load_sources
from shared import definitions
from shared.definitions import SourceSpec
from shared.secrets import secret_arns


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
    forward_log_table: str | None = None  # every forwarding attempt's answer (output ForwardLogTableName)
    # The bus the published events go to (output EventBusName). None locally: the local stack has no bus, `inbox
    # listen` reads its outbox stream instead.
    event_bus_name: str | None = None
    # {source: secret ARN} of a deployed stack's signing secrets (output SigningSecretArns) and API keys (output
    # GatewayApiKeySecretArns): CloudFormation names them, so the outputs are how the CLI finds them.
    signing_secret_arns: dict[str, str] = field(default_factory=dict)
    api_key_secret_arns: dict[str, str] = field(default_factory=dict)
    # The sources the stack serves: locally the declaration (sources.json, as `make run` reads it); deployed, the
    # stack's (output SourceProviders, {source: provider}), whatever the local sources.json says now.
    sources: tuple[SourceSpec, ...] = ()
    # {what it holds: queue URL, or locally the queue's name} of the stack's dead-letter queues (the console's
    # depths). Locally the name: its URL is the embedded AWS's to give (GetQueueUrl), not a string to guess.
    dead_letter_queues: dict[str, str] = field(default_factory=dict)
    # The rejected-delivery log (output RejectedTableName; None: a stack older than the log) and the secret keying
    # its fingerprints (output FingerprintKeySecretArn; None locally: the development key).
    rejected_table: str | None = None
    fingerprint_key_secret: str | None = None
    # The mutual-TLS front door the `mutual_tls` sources take deliveries on: locally the TLS port of `make run`
    # (inbox_local/mtls.py), deployed the custom domain (output MutualTlsUrl). None: the stack has none.
    mtls_api_url: str | None = None

    def source(self, name: str) -> SourceSpec:
        """The source `name` of this stack; UnknownSource naming the ones it has."""
        try:
            return definitions.find_source(self.sources, name)
        except KeyError:
            where = "the local stack (sources.json)" if self.local else "this stack"
            known = ", ".join(source.name for source in self.sources) or "none"
            raise UnknownSource(f"no source {name!r} in {where}; its sources: {known}") from None

    def selected_sources(self, *, source: str | None = None, provider: str | None = None) -> tuple[str, ...] | None:
        """The one rule of every read: `--source NAME` selects that source; `--provider NAME` every source of that
        provider the stack declares, and its default source's name (named after it: what was received before a
        sources.json still carries it); neither: None, every source. Both: the source, if it is the provider's."""
        if source is not None:
            spec = next((s for s in self.sources if s.name == source), None)
            if provider is not None and (spec.provider if spec is not None else source) != provider:
                return ()
            return (source,)
        if provider is not None:
            return (*(s.name for s in self.sources if s.provider == provider and s.name != provider), provider)
        return None

    def not_found_hint(self, name: str) -> str:
        """For a read of one source that found nothing: when `name` is a provider's name (its default source) and
        the stack declares other sources of it, which ones to ask for instead."""
        if any(s.name == name for s in self.sources):
            return ""
        named = [s.name for s in self.sources if s.provider == name]
        if not named:
            return ""
        return f" ({name} names its provider's default source; this stack's {name} sources: {', '.join(named)})"

    def webhook_url(self, source: str) -> str:
        """Where the gateway of `source` posts: ``<api>/webhooks/<source>``, on the mutual-TLS front door for a
        `mutual_tls` source (the default endpoint refuses its deliveries)."""
        spec = next((s for s in self.sources if s.name == source), None)
        base = self.mtls_api_url if spec is not None and spec.mutual_tls and self.mtls_api_url else self.api_url
        return f"{base}/webhooks/{source}"

    def signing_secret(self, source: str) -> str:
        """The secret `inbox send` signs with: INBOX_SECRET_<SOURCE> when set; else locally the source's dev secret
        (inbox_local/dev_secrets.py), deployed the `current` value of its secret in the stack. A provider's
        name that is not a declared source stands for its default source (`inbox simulate` names providers)."""
        spec = self._source_or_default(source)
        variable = signing_secret_variable(spec.name)
        secret = os.environ.get(variable)
        if secret:
            return secret
        if self.local:
            return dev_signing_secret(spec)
        arn = self.signing_secret_arns.get(spec.name)
        if arn is None:
            raise SystemExit(f"the stack lists no signing secret for {spec.name}: set {variable} to sign with")
        return _current_signing_secret(arn, spec.name, variable)

    def _source_or_default(self, name: str) -> SourceSpec:
        try:
            return self.source(name)
        except UnknownSource:
            if name in definitions.PROVIDERS:
                return SourceSpec(name=name, provider=name)
            raise


class UnknownSource(LookupError):
    """A source the target stack does not have; the message lists the ones it has."""


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
            forward_log_table=names.forward_log_table,
            dead_letter_queues={"processor": names.dead_letter_queue},
            rejected_table=names.rejected_table,
            sources=load_sources(),
            mtls_api_url=endpoints.mtls_url,
        )

    import boto3  # noqa: PLC0415

    outputs = {
        output["OutputKey"]: output["OutputValue"]
        for output in boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0].get("Outputs", [])
    }
    signing = secret_arns(_arn_map(outputs.get(definitions.OUTPUT_SIGNING_SECRETS)))
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
        forward_log_table=outputs.get(definitions.OUTPUT_FORWARD_LOG_TABLE),
        event_bus_name=outputs.get(definitions.OUTPUT_EVENT_BUS),
        signing_secret_arns=signing,
        api_key_secret_arns=secret_arns(_arn_map(outputs.get(definitions.OUTPUT_API_KEY_SECRETS))),
        sources=_deployed_sources(
            outputs.get(definitions.OUTPUT_SOURCE_PROVIDERS),
            signing,
            outputs.get(definitions.OUTPUT_MUTUAL_TLS_SOURCES),
        ),
        mtls_api_url=(outputs.get(definitions.OUTPUT_MUTUAL_TLS_URL) or "").rstrip("/") or None,
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
    """An output holding a JSON {source: value} map (an older stack without it: empty)."""
    if not raw:
        return {}
    value = json.loads(raw)
    return {str(key): str(arn) for key, arn in value.items()} if isinstance(value, dict) else {}


def _deployed_sources(
    raw: str | None, signing_secret_arns: dict[str, str], mutual_tls: str | None = None
) -> tuple[SourceSpec, ...]:
    """The stack's sources from its SourceProviders output (and which require mutual TLS, output MutualTlsSources).
    A stack deployed before sources has none: its sources are its providers' default ones, which its
    signing-secret map lists."""
    providers = _arn_map(raw)
    if not providers:
        providers = {name: name for name in signing_secret_arns if name in definitions.PROVIDERS}
    listed = json.loads(mutual_tls) if mutual_tls else []
    required = {str(name) for name in listed} if isinstance(listed, list) else set()
    return tuple(
        SourceSpec(name=name, provider=provider, mutual_tls=name in required) for name, provider in providers.items()
    )


def _current_signing_secret(arn: str, source: str, variable: str) -> str:
    """The `current` value of a deployed signing secret, read with the caller's credentials."""
    import boto3  # noqa: PLC0415
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    try:
        value = json.loads(boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"])
    except (BotoCoreError, ClientError, ValueError, KeyError) as error:
        raise SystemExit(
            f"cannot read {source}'s signing secret from the stack ({type(error).__name__}): set {variable}"
        ) from None
    current = value.get("current") if isinstance(value, dict) else None
    if not current:
        raise SystemExit(f"{source}'s signing secret in the stack has no 'current' value: set {variable}")
    return str(current)
