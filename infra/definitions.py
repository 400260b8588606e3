"""Resource definitions shared by the CDK stack and the local runtime: one source of truth.

Pure Python on purpose (no CDK import): the local runtime builds its moto resources from these values and the
stack builds CloudFormation from the same values, so local and cloud cannot drift. Lambda code never imports
this module; the values a function needs reach it through environment variables.
"""

from __future__ import annotations

from typing import Any, Final

SERVICE_NAME: Final = "webhook-inbox"
METRICS_NAMESPACE: Final = "WebhookInbox"

# ---------------------------------------------------------------------------------------------- inbox table
INBOX_PARTITION_KEY: Final = "pk"  # "{provider}#{event_id}": the unique key is what deduplicates
INBOX_TTL_ATTRIBUTE: Final = "expires_at"

# Sparse index of events that still need attention (pending or failed), oldest first. The partition value is
# "{status}#{shard}" so that a burst of pending events spreads over several index partitions instead of
# throttling one (a throttled GSI back-pressures writes to the table itself).
OPEN_EVENTS_INDEX: Final = "open-events-by-age"
OPEN_EVENTS_INDEX_PK: Final = "open_status"
OPEN_EVENTS_INDEX_SK: Final = "received_at"
OPEN_EVENTS_SHARDS: Final = 8

# Every event of one payment, in business-time order.
RESOURCE_EVENTS_INDEX: Final = "events-by-resource"
RESOURCE_EVENTS_INDEX_PK: Final = "resource_key"  # "{provider}#{resource_id}", absent when unknown
RESOURCE_EVENTS_INDEX_SK: Final = "occurred_at"

INBOX_GLOBAL_INDEXES: Final[tuple[tuple[str, str, str], ...]] = (
    (OPEN_EVENTS_INDEX, OPEN_EVENTS_INDEX_PK, OPEN_EVENTS_INDEX_SK),
    (RESOURCE_EVENTS_INDEX, RESOURCE_EVENTS_INDEX_PK, RESOURCE_EVENTS_INDEX_SK),
)
# Both indexes project ALL attributes: the sweeper, replay and the CLI read whole items from one Query (no
# BatchGetItem round trip per page), and local (moto) and cloud return the same shape. The open-events index is
# sparse (only pending/failed items carry `open_status`), so its copies are short-lived; the resource index
# doubles item storage, which retention (TTL) bounds.
INBOX_INDEX_PROJECTION: Final = "ALL"

# ------------------------------------------------------------------------------------------- payments table
PAYMENTS_PARTITION_KEY: Final = "pk"  # "{provider}#{resource_id}"

# ----------------------------------------------------------------------------------------- dispatch (Pipe)
# Which stream records become queue messages. A write dispatches when it leaves the item pending AND says it
# wants a dispatch (`dispatch_reason`): the ingest's insert ("received"), the sweeper's re-dispatch
# ("redispatch") and a replay ("replay"). The processor's own bookkeeping writes while an event is still
# pending set `dispatch_reason` to "attempt", so they never re-enqueue the event they are working on.
DISPATCH_REASONS: Final = ("received", "redispatch", "replay")
NON_DISPATCH_REASON: Final = "attempt"

PIPE_FILTER_PATTERN: Final[dict[str, Any]] = {
    "eventName": ["INSERT", "MODIFY"],
    "dynamodb": {
        "NewImage": {
            "status": {"S": ["pending"]},
            "dispatch_reason": {"S": list(DISPATCH_REASONS)},
        }
    },
}

# JSON paths into the stream record, as EventBridge Pipes' SQS target parameters take them.
PIPE_MESSAGE_GROUP_ID_PATH: Final = "$.dynamodb.NewImage.group_id.S"
# A fresh uuid written with every dispatching write: SQS FIFO's 5-minute deduplication never swallows a
# re-dispatch, while a retried delivery of the same stream record still deduplicates.
PIPE_DEDUPLICATION_ID_PATH: Final = "$.dynamodb.NewImage.dispatch_id.S"
# The message body: just enough to load the item; the item itself stays the truth.
# Pipes substitutes values as they are: a string placeholder is written inside quotes (AWS: "put quotes around
# variables that reference JSON path parameters, not around JSON objects or arrays").
PIPE_INPUT_TEMPLATE: Final = (
    '{"pk": "<$.dynamodb.Keys.pk.S>", "dispatch_id": "<$.dynamodb.NewImage.dispatch_id.S>", '
    '"dispatch_reason": "<$.dynamodb.NewImage.dispatch_reason.S>"}'
)
PIPE_BATCH_SIZE: Final = 10
# Where a newly created Pipe starts reading the stream. TRIM_HORIZON: the oldest record still in the stream (24 h),
# so events accepted before the Pipe existed (first deploy) or while it was being replaced (StartingPosition and
# Source are create-only: a change replaces the Pipe) are dispatched, not stranded until the sweeper finds them.
# Re-reading records already dispatched is harmless: the processor skips items that are no longer pending.
PIPE_STARTING_POSITION: Final = "TRIM_HORIZON"
# A record the Pipe cannot deliver (say, an item written without a group id) is retried this often, bisecting the
# batch to isolate it, then handed to the Pipe's dead-letter queue so it stops blocking its shard. Nothing is lost:
# the item itself is still pending in the inbox, and the sweeper re-dispatches stale pending events.
PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 10

# -------------------------------------------------------------------------------------------------- queue
# AWS's guidance for a queue feeding a Lambda event source mapping: a visibility timeout of at least six times the
# function's timeout, so a batch the service retries (throttling, a crashed invocation) never becomes visible to a
# second poller while the first is still at work. 6 x PROCESSOR_TIMEOUT_SECONDS (30 s) = 180 s. (It was 60 s.)
# The processor's own retries do not wait for it: they set the failed message's visibility to the backoff. But
# the later messages of that payment in the same batch, returned unprocessed (skip_group_on_error), come back
# only after this timeout, and their FIFO group waits for them.
QUEUE_VISIBILITY_TIMEOUT_SECONDS: Final = 180
# A safety net only: the processor counts attempts on the item and dead-letters exhausted events itself, so
# that a delay while a gateway's circuit is open (many receives, no attempt spent) never dead-letters an event.
QUEUE_MAX_RECEIVE_COUNT: Final = 100
QUEUE_RETENTION_DAYS: Final = 14
PROCESSOR_BATCH_SIZE: Final = 10
PROCESSOR_MAX_CONCURRENCY: Final = 10
PROCESSOR_TIMEOUT_SECONDS: Final = 30
PROCESSOR_MEMORY_MB: Final = 512

# ---------------------------------------------------------------------------------------------- ingest API
WEBHOOK_ROUTE: Final = "/webhooks/{provider}"
HEALTH_ROUTE: Final = "/health"
API_THROTTLE_RATE_LIMIT: Final = 500  # requests/s, steady state
API_THROTTLE_BURST_LIMIT: Final = 1000
INGEST_TIMEOUT_SECONDS: Final = 10
INGEST_MEMORY_MB: Final = 512

# ------------------------------------------------------------------------------------------------ defaults
DEFAULT_SIGNATURE_TOLERANCE_SECONDS: Final = 300
DEFAULT_RETENTION_DAYS: Final = 30
MINIMUM_RETENTION_DAYS: Final = 7
# DynamoDB items are limited to 400 KB; bodies above this go to S3 and the item references them.
INLINE_BODY_LIMIT_BYTES: Final = 256 * 1024

# Provider ids the stack creates a signing secret for (one Secrets Manager secret each).
PROVIDERS: Final = ("stripe", "standard", "asaas")
# Providers with a payment API the processor refetches from (one gateway API-key secret each). `standard` is a
# signing scheme, not a gateway: it has no API, and its events are ordered by `occurred_at` instead.
REFETCH_PROVIDERS: Final = ("stripe", "asaas")


def secret_name(stack_name: str, provider: str) -> str:
    """Name of the Secrets Manager secret holding a provider's current and previous signing secrets."""
    return f"{secret_prefix(stack_name)}{provider}"


def secret_prefix(stack_name: str) -> str:
    return f"{stack_name}/webhook-signing/"


def api_key_secret_prefix(stack_name: str) -> str:
    """Secrets Manager name prefix of the gateways' API keys used by the processor's refetch."""
    return f"{stack_name}/gateway-api/"


def api_key_secret_name(stack_name: str, provider: str) -> str:
    """Name of the Secrets Manager secret holding a provider's API key (a plain string, not JSON)."""
    return f"{api_key_secret_prefix(stack_name)}{provider}"


# ------------------------------------------------------------------------------------------- control table
# Small operational state shared by every function instance: the refetch circuit breakers
# (pk = "breaker#{provider}"). Kept apart from the payments table so payment scans never see it.
CONTROL_PARTITION_KEY: Final = "pk"

# ---------------------------------------------------------------------------------------------- environment
# Environment variable names: the contract between the stack (and the local runtime) and the functions.
ENV_INBOX_TABLE: Final = "INBOX_TABLE"
ENV_PAYMENTS_TABLE: Final = "PAYMENTS_TABLE"
ENV_CONTROL_TABLE: Final = "CONTROL_TABLE"
ENV_BODY_BUCKET: Final = "INBOX_BODY_BUCKET"
ENV_SECRET_PREFIX: Final = "INBOX_SECRET_PREFIX"
ENV_API_KEY_SECRET_PREFIX: Final = "INBOX_API_KEY_SECRET_PREFIX"
ENV_SIGNATURE_TOLERANCE: Final = "INBOX_SIGNATURE_TOLERANCE_SECONDS"
ENV_RETENTION_DAYS: Final = "INBOX_RETENTION_DAYS"
ENV_QUEUE_URL: Final = "INBOX_QUEUE_URL"
ENV_MAX_ATTEMPTS: Final = "INBOX_MAX_ATTEMPTS"

# ---------------------------------------------------------------------------------------------- stack outputs
# CloudFormation output names the CLI reads to find a deployed stack's resources (`inbox ... --stack NAME`).
OUTPUT_API_URL: Final = "ApiUrl"
OUTPUT_INBOX_TABLE: Final = "InboxTableName"
OUTPUT_PAYMENTS_TABLE: Final = "PaymentsTableName"
OUTPUT_BODY_BUCKET: Final = "BodyBucketName"
OUTPUT_SECRET_PREFIX: Final = "SigningSecretPrefix"
OUTPUT_INGEST_FUNCTION: Final = "IngestFunctionName"
OUTPUT_CONTROL_TABLE: Final = "ControlTableName"
OUTPUT_QUEUE_URL: Final = "DispatchQueueUrl"
OUTPUT_DEAD_LETTER_QUEUE_URL: Final = "DeadLetterQueueUrl"
OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL: Final = "PipeDeadLetterQueueUrl"
OUTPUT_PROCESSOR_FUNCTION: Final = "ProcessorFunctionName"
OUTPUT_API_KEY_SECRET_PREFIX: Final = "GatewayApiKeySecretPrefix"
ENV_DLQ_URL: Final = "INBOX_DLQ_URL"
ENV_RETRY_BASE_SECONDS: Final = "INBOX_RETRY_BASE_SECONDS"
MAX_PROCESSING_ATTEMPTS: Final = 8  # attempts the processor counts on the item before failing the event
RETRY_BASE_SECONDS: Final = 5
