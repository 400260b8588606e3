"""Deploy-time settings read from CDK context, validated before any resource is described.

Context values (``cdk deploy -c name=value`` or the ``context`` block of cdk.json):

- ``stack_name``: CloudFormation stack name (default ``WebhookInbox``). Several stacks can live in one account;
  the secrets carry it as a tag (CloudFormation names them: infra/constructs/secrets.py).
- ``retention_days``: how long an inbox item lives before DynamoDB TTL removes it (default
  ``definitions.DEFAULT_RETENTION_DAYS``; refused below ``definitions.MINIMUM_RETENTION_DAYS``: a week-long
  gateway outage must stay replayable).
- ``signature_tolerance_seconds``: accepted clock skew of a signed timestamp (default
  ``definitions.DEFAULT_SIGNATURE_TOLERANCE_SECONDS``).
- ``sweep_interval_minutes``: how often the sweeper runs (default ``definitions.SWEEP_SCHEDULE_MINUTES``; 1 to
  60).
- ``archive_expiration_days``: delete archived items after this many days (default: never; when set, more than
  ``ARCHIVE_GLACIER_AFTER_DAYS``, the archive's last storage-class transition).
- ``archive_redact_fields``: comma-separated JSON key names whose values the archiver redacts (LGPD), e.g.
  ``email,cpf,name`` (default: none).
- ``alarm_email``: an address subscribed to the alarms' SNS topic (default: none; subscribe anything later).
- ``inbox_dashboard``: ``true`` deploys the CloudWatch dashboard of the flow (default ``false``: a dashboard is
  billed $3 a month, more than the alarms of a one-source deployment; every failure it graphs has its alarm, and
  `inbox cost` prices both settings). ``true``/``false`` (or ``1``/``0``, ``yes``/``no``).
- ``inbox_tracing``: ``true`` turns on X-Ray active tracing of every function and of the replay state machine
  (default ``false``). Lambda then samples 1 request per second and 5 % of the rest, a rate that cannot be
  configured; at a million webhooks a month that is most invocations, billed per trace recorded (`inbox cost
  --tracing` prices it; docs/cost.md). The traces hold the Lambda segments only (no Tracer in the code): what the
  logs and Lambda's own metrics already say.
- ``inbox_replay_log_level``: what the replay state machine logs, ``ERROR`` (default: failed executions and states,
  with their error and cause), ``FATAL`` (failed executions only) or ``ALL`` (every history event: several lines
  per replayed event, billed as log ingestion, for what the execution history already holds).
- ``inbox_log_level``: the functions' application log level, ``INFO`` (default) or ``DEBUG`` (Lambda's log-level
  filtering, which Powertools follows: every line of every invocation, for an incident; docs/operations.md, "Logs").
  Nothing above INFO: the EMF metric lines carry no level, Lambda files them as INFO and a WARN filter would drop
  them, and the alarms with them.
- ``forward_url``: the customer's HTTPS endpoint that every published event is POSTed to, signed with Standard
  Webhooks (default: none, no forwarding; the events are on the stack's EventBridge bus either way). Must be
  ``https://``.
- ``forward_log_retention_days``: how long each forwarding attempt's record (status, answer) is kept before
  DynamoDB TTL removes it (default ``definitions.DEFAULT_FORWARD_LOG_RETENTION_DAYS``; 1 to
  ``definitions.MAXIMUM_FORWARD_LOG_RETENTION_DAYS``). Only with ``forward_url``.
- ``inbox_warm_write_units``: pre-warm the inbox table and its indexes to this many write units per second
  (DynamoDB warm throughput; default: none, a new on-demand table sustains ON_DEMAND_INITIAL_WRITE_UNITS). For a
  known peak: docs/scale.md works out the figure (admitting a 5,000 webhooks/s burst takes 30,000). The stage
  throttle follows it (``definitions.api_throttle``). Raising it is charged, and a raised value can never be
  lowered again.
- ``inbox_previous_resource_index``: ``true`` keeps the inbox's events-by-resource index next to the
  events-by-group index that replaced it (default ``false``): only for the first update of a stack deployed
  before that change, because one update may add or delete one index only (docs/deploy.md, "Upgrading the inbox
  indexes").

Only when a declared source has ``mutual_tls`` (its deliveries come through a custom domain with mutual TLS,
e.g. Efí Pix; docs/deploy.md, "Mutual TLS"), all four are required, and refused otherwise:

- ``inbox_mtls_domain``: the custom domain name the gateway posts to (e.g. ``pix.webhooks.example.com``).
- ``inbox_mtls_certificate_arn``: the ACM certificate for that name, in the stack's own region (API Gateway's
  mutual TLS needs a regional domain; a CloudFront-region certificate does not do). The stack is
  environment-agnostic, so the region is checked where it is known: by a template rule
  (infra/constructs/mutual_tls_domain.py) that refuses the change set before anything is created, and at synth
  when the stack is given a region.
- ``inbox_mtls_truststore_uri``: ``s3://bucket/key`` of the PEM bundle of the CAs whose client certificates are
  trusted (e.g. Efí's chain), uploaded by the operator to a versioned bucket of the stack's region.
- ``inbox_mtls_truststore_version``: that object's S3 version id. API Gateway reads the truststore when the domain
  is created or updated, never afterwards: a new bundle takes effect when the deploy changes this value.

There is no layer setting: the functions' third-party code (Powertools, pydantic, cryptography, tzdata) is a layer
the stack builds from uv.lock (infra/dependency_layer.py), so the versions tested are the versions deployed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from constructs import Node

from shared import definitions

DEFAULT_STACK_NAME = "WebhookInbox"
MAX_SWEEP_INTERVAL_MINUTES = 60
# The archive bucket's storage classes: STANDARD_IA after 30 days, GLACIER_IR after 90 (infra/constructs/archive.py).
ARCHIVE_INFREQUENT_ACCESS_AFTER_DAYS = 30
ARCHIVE_GLACIER_AFTER_DAYS = 90
# The public Powertools layer's version number, a context value until the stack built its own layer.
REMOVED_LAYER_SETTING = "powertools_layer_version"
# What a new on-demand table sustains without pre-warming (definitions; docs/aws-limits.md). Warm throughput below
# it would change nothing.
ON_DEMAND_INITIAL_WRITE_UNITS = definitions.ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND


# Step Functions' log levels (https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html), OFF left out: the
# failures of a replay are what its log is for.
REPLAY_LOG_LEVELS: tuple[str, ...] = ("ERROR", "FATAL", "ALL")
DEFAULT_REPLAY_LOG_LEVEL = "ERROR"


class SettingsError(ValueError):
    """A context value is missing its mark: synth stops with this message."""


def _integer(node: Node, key: str, default: int) -> int:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):  # bool is an int subclass: `-c retention_days=true` is a mistake, not 1
        raise SettingsError(f"context value {key!r} must be an integer, got {raw!r}")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"context value {key!r} must be an integer, got {raw!r}") from None


def _text(node: Node, key: str) -> str | None:
    raw: Any = node.try_get_context(key)
    return None if raw is None or str(raw).strip() == "" else str(raw).strip()


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _boolean(node: Node, key: str, default: bool) -> bool:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise SettingsError(f"context value {key!r} must be true or false, got {raw!r}")


def _optional_integer(node: Node, key: str) -> int | None:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return None
    return _integer(node, key, 0)


@dataclass(frozen=True, slots=True)
class StackSettings:
    retention_days: int = definitions.DEFAULT_RETENTION_DAYS
    signature_tolerance_seconds: int = definitions.DEFAULT_SIGNATURE_TOLERANCE_SECONDS
    sweep_interval_minutes: int = definitions.SWEEP_SCHEDULE_MINUTES
    archive_expiration_days: int | None = None  # None: archived items are kept
    archive_redact_fields: str = ""
    alarm_email: str | None = None
    dashboard: bool = False  # context value inbox_dashboard
    forward_url: str | None = None
    forwarder_reserved_concurrency: int | None = None  # None: no reserved concurrency anywhere in the template
    forward_log_retention_days: int = definitions.DEFAULT_FORWARD_LOG_RETENTION_DAYS
    inbox_warm_write_units: int | None = None  # None: no warm throughput set (DynamoDB's own)
    previous_resource_index: bool = False  # context value inbox_previous_resource_index
    replay_log_level: str = DEFAULT_REPLAY_LOG_LEVEL  # context value inbox_replay_log_level

    def __post_init__(self) -> None:
        if self.replay_log_level not in REPLAY_LOG_LEVELS:
            raise SettingsError(
                f"context value 'inbox_replay_log_level' must be one of {', '.join(REPLAY_LOG_LEVELS)}, "
                f"got {self.replay_log_level!r}"
            )
        if self.inbox_warm_write_units is not None and self.inbox_warm_write_units <= ON_DEMAND_INITIAL_WRITE_UNITS:
            raise SettingsError(
                f"context value 'inbox_warm_write_units' must be above {ON_DEMAND_INITIAL_WRITE_UNITS} (what a new "
                "on-demand table sustains already; it cannot be lowered once raised), "
                f"got {self.inbox_warm_write_units}"
            )
        if self.forwarder_reserved_concurrency is not None and self.forwarder_reserved_concurrency < 1:
            raise SettingsError(
                "context value 'forwarder_reserved_concurrency' must be 1 or more (0 would stop the forwarding; "
                f"leave it unset for none), got {self.forwarder_reserved_concurrency}"
            )
        if not 1 <= self.forward_log_retention_days <= definitions.MAXIMUM_FORWARD_LOG_RETENTION_DAYS:
            raise SettingsError(
                "context value 'forward_log_retention_days' must be between 1 and "
                f"{definitions.MAXIMUM_FORWARD_LOG_RETENTION_DAYS}, got {self.forward_log_retention_days}"
            )
        if self.forward_url is not None and not (
            self.forward_url.startswith("https://")
            and len(self.forward_url) > len("https://")
            and " " not in self.forward_url
        ):
            raise SettingsError(
                f"context value 'forward_url' must be an https:// URL (events are signed, not encrypted), "
                f"got {self.forward_url!r}"
            )
        if not all(
            field.strip() and all(c.isalnum() or c in "_-" for c in field.strip())
            for field in self.archive_redact_fields.split(",")
            if self.archive_redact_fields
        ):
            raise SettingsError(
                "context value 'archive_redact_fields' must be comma-separated JSON key names (letters, digits, "
                f"'_' and '-'), got {self.archive_redact_fields!r}"
            )
        if self.alarm_email is not None and (self.alarm_email.count("@") != 1 or " " in self.alarm_email):
            raise SettingsError(f"context value 'alarm_email' is not an e-mail address: {self.alarm_email!r}")
        if not 1 <= self.sweep_interval_minutes <= MAX_SWEEP_INTERVAL_MINUTES:
            raise SettingsError(
                f"context value 'sweep_interval_minutes' must be between 1 and {MAX_SWEEP_INTERVAL_MINUTES}, "
                f"got {self.sweep_interval_minutes}"
            )
        if self.archive_expiration_days is not None and self.archive_expiration_days <= ARCHIVE_GLACIER_AFTER_DAYS:
            raise SettingsError(
                f"context value 'archive_expiration_days' is {self.archive_expiration_days}, but archived items move "
                f"to Glacier Instant Retrieval after {ARCHIVE_GLACIER_AFTER_DAYS} days: expire them later than that "
                "(or leave it unset to keep them)"
            )
        if self.retention_days < definitions.MINIMUM_RETENTION_DAYS:
            raise SettingsError(
                f"context value 'retention_days' is {self.retention_days}, but inbox items must be kept at least "
                f"{definitions.MINIMUM_RETENTION_DAYS} days (definitions.MINIMUM_RETENTION_DAYS) so that a "
                "week-long gateway outage can still be replayed"
            )
        if self.signature_tolerance_seconds <= 0:
            raise SettingsError(
                "context value 'signature_tolerance_seconds' must be a positive number of seconds, "
                f"got {self.signature_tolerance_seconds}"
            )

    @classmethod
    def from_context(cls, node: Node) -> StackSettings:
        if node.try_get_context(REMOVED_LAYER_SETTING) is not None:
            # Said out loud rather than ignored: a deployer passing it expects it to choose what the functions run.
            raise SettingsError(
                f"context value {REMOVED_LAYER_SETTING!r} is gone: the functions' dependencies are a layer built "
                "from uv.lock (infra/dependency_layer.py); drop the -c option"
            )
        return cls(
            retention_days=_integer(node, "retention_days", definitions.DEFAULT_RETENTION_DAYS),
            signature_tolerance_seconds=_integer(
                node, "signature_tolerance_seconds", definitions.DEFAULT_SIGNATURE_TOLERANCE_SECONDS
            ),
            sweep_interval_minutes=_integer(node, "sweep_interval_minutes", definitions.SWEEP_SCHEDULE_MINUTES),
            archive_expiration_days=_optional_integer(node, "archive_expiration_days"),
            archive_redact_fields=_text(node, "archive_redact_fields") or "",
            alarm_email=_text(node, "alarm_email"),
            dashboard=_boolean(node, "inbox_dashboard", False),
            forward_url=_text(node, "forward_url"),
            forwarder_reserved_concurrency=_optional_integer(node, "forwarder_reserved_concurrency"),
            forward_log_retention_days=_integer(
                node, "forward_log_retention_days", definitions.DEFAULT_FORWARD_LOG_RETENTION_DAYS
            ),
            inbox_warm_write_units=_optional_integer(node, "inbox_warm_write_units"),
            previous_resource_index=_boolean(node, definitions.PREVIOUS_RESOURCE_INDEX_CONTEXT, False),
            replay_log_level=(_text(node, "inbox_replay_log_level") or DEFAULT_REPLAY_LOG_LEVEL).upper(),
        )


LOG_LEVELS: tuple[str, ...] = ("INFO", "DEBUG")


@dataclass(frozen=True, slots=True)
class FunctionObservability:
    """What every function's logging and tracing take from the context (infra/constructs/python_function.py)."""

    tracing: bool = False  # context value inbox_tracing
    log_level: str = "INFO"  # context value inbox_log_level

    def __post_init__(self) -> None:
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(
                f"context value 'inbox_log_level' must be one of {', '.join(LOG_LEVELS)} (above INFO, Lambda would "
                f"drop the metric lines, which carry no level), got {self.log_level!r}"
            )

    @classmethod
    def from_context(cls, node: Node) -> FunctionObservability:
        return cls(
            tracing=_boolean(node, "inbox_tracing", False),
            log_level=(_text(node, "inbox_log_level") or "INFO").upper(),
        )


MUTUAL_TLS_CONTEXT: tuple[str, ...] = (
    "inbox_mtls_domain",
    "inbox_mtls_certificate_arn",
    "inbox_mtls_truststore_uri",
    "inbox_mtls_truststore_version",
)
_DOMAIN_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_CERTIFICATE_ARN = re.compile(r"arn:aws[a-z-]*:acm:([a-z0-9-]+):\d{12}:certificate/[A-Za-z0-9-]+")
_TRUSTSTORE_URI = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(\S+)")
MAX_TRUSTSTORE_URI_LENGTH = 2048  # the API's MutualTlsAuthenticationInput: truststoreUri 1..2048
MAX_TRUSTSTORE_VERSION_LENGTH = 64  # truststoreVersion 1..64


@dataclass(frozen=True, slots=True)
class MutualTlsSettings:
    """The mutual-TLS custom domain of the sources that declare ``mutual_tls`` (module docstring)."""

    domain: str
    certificate_arn: str
    truststore_bucket: str
    truststore_key: str
    truststore_version: str

    @property
    def truststore_uri(self) -> str:
        return f"s3://{self.truststore_bucket}/{self.truststore_key}"

    @property
    def certificate_region(self) -> str:
        """The Region of the ACM certificate (its ARN's fourth field): the stack must deploy there."""
        matched = _CERTIFICATE_ARN.fullmatch(self.certificate_arn)
        assert matched is not None, "validated by mutual_tls_settings"
        return matched.group(1)


def mutual_tls_settings(
    node: Node, sources: tuple[definitions.SourceSpec, ...], *, region: str | None = None
) -> MutualTlsSettings | None:
    """The mutual-TLS domain's settings when a declared source needs it (None when none does); a SettingsError
    naming every missing or malformed value otherwise. `region`: the stack's, when it is known at synth time
    (the certificate must be in it)."""
    needing = [source.name for source in definitions.mutual_tls_sources(sources)]
    values = {key: _text(node, key) for key in MUTUAL_TLS_CONTEXT}
    if not needing:
        given = [key for key, value in values.items() if value is not None]
        if given:
            raise SettingsError(
                f"context value(s) {', '.join(given)} configure the mutual-TLS domain, but no source in sources.json "
                'declares "mutual_tls": true; declare one, or drop the values'
            )
        return None
    problems = [f"context value {key!r} is required" for key, value in values.items() if value is None]
    domain = values["inbox_mtls_domain"] or ""
    if domain and not _is_domain_name(domain):
        problems.append(f"context value 'inbox_mtls_domain' is not a domain name: {domain!r}")
    arn = values["inbox_mtls_certificate_arn"] or ""
    matched_arn = _CERTIFICATE_ARN.fullmatch(arn)
    if arn and not matched_arn:
        problems.append(
            f"context value 'inbox_mtls_certificate_arn' is not an ACM certificate ARN "
            f"(arn:aws:acm:<region>:<account>:certificate/<id>): {arn!r}"
        )
    elif matched_arn and region and matched_arn.group(1) != region:
        problems.append(
            f"context value 'inbox_mtls_certificate_arn' is a certificate of {matched_arn.group(1)}, but mutual TLS "
            f"needs a regional custom domain: the certificate must be in the stack's region, {region}"
        )
    uri = values["inbox_mtls_truststore_uri"] or ""
    matched_uri = _TRUSTSTORE_URI.fullmatch(uri)
    if uri and (not matched_uri or len(uri) > MAX_TRUSTSTORE_URI_LENGTH):
        problems.append(f"context value 'inbox_mtls_truststore_uri' must be s3://bucket/key of a PEM bundle: {uri!r}")
    version = values["inbox_mtls_truststore_version"] or ""
    if version and len(version) > MAX_TRUSTSTORE_VERSION_LENGTH:
        problems.append(
            f"context value 'inbox_mtls_truststore_version' must be an S3 version id (at most "
            f"{MAX_TRUSTSTORE_VERSION_LENGTH} characters), got {version!r}"
        )
    if problems:
        raise SettingsError(
            f"the source(s) {', '.join(needing)} declare mutual_tls, so the stack needs the mutual-TLS domain "
            f'(docs/deploy.md, "Mutual TLS"): ' + "; ".join(problems)
        )
    assert matched_uri is not None
    return MutualTlsSettings(
        domain=domain,
        certificate_arn=arn,
        truststore_bucket=matched_uri.group(1),
        truststore_key=matched_uri.group(2),
        truststore_version=version,
    )


def _is_domain_name(name: str) -> bool:
    labels = name.split(".")
    return len(name) <= 253 and len(labels) >= 2 and all(_DOMAIN_LABEL.fullmatch(label) for label in labels)


def stack_name_from_context(node: Node) -> str:
    raw: Any = node.try_get_context("stack_name")
    name = DEFAULT_STACK_NAME if raw is None or raw == "" else str(raw)
    # CloudFormation's rule for stack names; the name also prefixes the secrets' names.
    if not (name[:1].isalpha() and len(name) <= 128 and all(c.isalnum() or c == "-" for c in name)):
        raise SettingsError(
            f"context value 'stack_name' {name!r} is not a valid CloudFormation stack name "
            "(a letter, then letters, digits and hyphens, at most 128 characters)"
        )
    return name
