"""Where the local stack lives and what it is called. Read by the local runtime and by the CLI."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from inbox_local.dev_secrets import local_signing_secrets
from infra.sources_file import load_sources
from shared import definitions

LOCAL_STACK_NAME = "webhook-inbox-local"
# INBOX_MTLS_PORT's default, INBOX_PORT + 5 (8792): +1 and +2 are the embedded AWS and the simulator, 8790 and 8791
# the CLI's receiver and console.
MTLS_PORT_OFFSET = 5
REGION = "us-east-1"

# The local stack's key of the rejected-delivery log's fingerprints (the deployed stack generates one in Secrets
# Manager). A development value: locally nothing it fingerprints is a real secret.
DEV_FINGERPRINT_KEY = "local-rejected-fingerprint-key"


def fingerprint_key() -> str:
    return os.environ.get(definitions.ENV_FINGERPRINT_KEY) or DEV_FINGERPRINT_KEY


def local_source(name: str) -> definitions.SourceSpec:
    """The declared source `name` (sources.json, INBOX_SOURCES_FILE), or, for a name not declared, the default
    source it would be (a provider's id names its default source)."""
    declared = _declared(os.environ.get(definitions.ENV_SOURCES, ""), os.environ.get(definitions.ENV_SOURCES_FILE, ""))
    try:
        return definitions.find_source(declared, name)
    except KeyError:
        return definitions.SourceSpec(name=name, provider=name)


@functools.lru_cache(maxsize=8)
def _declared(handed: str, path: str) -> tuple[definitions.SourceSpec, ...]:
    # Keyed by the two variables that say where the declaration is: senders ask for a secret per delivery.
    return load_sources({definitions.ENV_SOURCES: handed, definitions.ENV_SOURCES_FILE: path})


def signing_secret(source: str) -> str:
    """The signing secret the local stack verifies `source`'s deliveries with: INBOX_SECRET_<SOURCE>, else its
    development secret (inbox_local/dev_secrets.py)."""
    return local_signing_secrets(local_source(source))[0]


@dataclass(frozen=True)
class LocalEndpoints:
    host: str
    port: int
    aws_port: int
    gateway_port: int
    # The mutual-TLS front door (inbox_local/mtls.py), open only when a declared source has `mutual_tls`.
    mtls_port: int = 0

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def mtls_url(self) -> str:
        return f"https://{self.host}:{self.mtls_port}"

    @property
    def aws_url(self) -> str:
        return f"http://{self.host}:{self.aws_port}"

    @property
    def gateway_url(self) -> str:
        return f"http://{self.host}:{self.gateway_port}"

    @classmethod
    def from_environ(cls) -> LocalEndpoints:
        port = int(os.environ.get("INBOX_PORT", "8787"))
        return cls(
            host=os.environ.get("INBOX_HOST", "127.0.0.1"),
            port=port,
            aws_port=int(os.environ.get("INBOX_AWS_PORT", str(port + 1))),
            gateway_port=int(os.environ.get("INBOX_GATEWAY_PORT", str(port + 2))),
            mtls_port=int(os.environ.get("INBOX_MTLS_PORT", str(port + MTLS_PORT_OFFSET))),
        )


@dataclass(frozen=True)
class LocalNames:
    """Resource names of the local stack, derived like the deployed stack's."""

    inbox_table: str = f"{LOCAL_STACK_NAME}-inbox"
    payments_table: str = f"{LOCAL_STACK_NAME}-payments"
    control_table: str = f"{LOCAL_STACK_NAME}-control"
    body_bucket: str = f"{LOCAL_STACK_NAME}-bodies"
    archive_bucket: str = f"{LOCAL_STACK_NAME}-archive"
    queue: str = f"{LOCAL_STACK_NAME}-events.fifo"
    dead_letter_queue: str = f"{LOCAL_STACK_NAME}-events-dlq.fifo"
    outbox_table: str = f"{LOCAL_STACK_NAME}-outbox"
    rejected_table: str = f"{LOCAL_STACK_NAME}-rejected"
    forward_log_table: str = f"{LOCAL_STACK_NAME}-forward-log"
    secret_prefix: str = definitions.secret_prefix(LOCAL_STACK_NAME)
    api_key_secret_prefix: str = f"{LOCAL_STACK_NAME}/gateway-api-key/"  # {prefix}{source} (inbox_local/api_keys.py)
    # The forwarding pair, when INBOX_FORWARD_URL is set (inbox_local/forward_secret.py); the deployed stack's is
    # named by CloudFormation.
    forward_secret_name: str = f"{LOCAL_STACK_NAME}/{definitions.SECRET_KIND_FORWARD_SIGNING}"


def aws_environment(endpoints: LocalEndpoints) -> dict[str, str]:
    """Environment that points boto3 (in this process and in the CLI) at the local stack's embedded AWS."""
    return {
        "AWS_ENDPOINT_URL": endpoints.aws_url,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    }


def function_environment(names: LocalNames) -> dict[str, str]:
    """The functions' environment, with the same variable names the CDK stack sets."""
    return {
        definitions.ENV_INBOX_TABLE: names.inbox_table,
        definitions.ENV_PAYMENTS_TABLE: names.payments_table,
        definitions.ENV_OUTBOX_TABLE: names.outbox_table,
        definitions.ENV_FORWARD_LOG_TABLE: names.forward_log_table,
        definitions.ENV_CONTROL_TABLE: names.control_table,
        definitions.ENV_BODY_BUCKET: names.body_bucket,
        definitions.ENV_ARCHIVE_BUCKET: names.archive_bucket,
        definitions.ENV_SECRET_PREFIX: names.secret_prefix,
        definitions.ENV_API_KEY_SECRET_PREFIX: names.api_key_secret_prefix,
        definitions.ENV_REJECTED_TABLE: names.rejected_table,
        definitions.ENV_FINGERPRINT_KEY: fingerprint_key(),
        "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
        "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
    }
