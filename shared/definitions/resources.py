"""The deployed resources' names and settings: the tables and their indexes, the queue, the ingest API, the
functions' sizing, the secrets' tags, the environment variables the functions read, the stack's outputs, the
sweeper, the archive, the rejected-delivery log and the metric names.

The stack builds CloudFormation from these values, the local stack builds its emulated resources from the same
values, and the functions read the same names and defaults, so local, cloud and function code cannot drift.
"""

from __future__ import annotations

from typing import Any, Final

SERVICE_NAME: Final = "webhook-inbox"
METRICS_NAMESPACE: Final = "WebhookInbox"

# ---------------------------------------------------------------------------------------------- inbox table
INBOX_PARTITION_KEY: Final = "pk"  # "{source}#{event_id}": the unique key is what deduplicates
INBOX_TTL_ATTRIBUTE: Final = "expires_at"

# Sparse index of events that still need attention (pending or failed), oldest first. The partition value is
# "{status}#{shard}" so that a burst of pending events spreads over several index partitions instead of
# throttling one (a throttled GSI back-pressures writes to the table itself).
OPEN_EVENTS_INDEX: Final = "open-events-by-age"
OPEN_EVENTS_INDEX_PK: Final = "open_status"
OPEN_EVENTS_INDEX_SK: Final = "received_at"
OPEN_EVENTS_SHARDS: Final = 8

# Every event of one payment, in business-time order: keyed by the FIFO group id, which is the payment's key
# `{source}#{resource_id}` (or, for a key SQS refuses, `fifo_group_id` of it; an event about no payment is a group
# of its own). Keys only: its one reader (the payment timeline) reads each event from the table, and a projected
# attribute that a write changes is an index write (the settle's `status` was one per event).
RESOURCE_EVENTS_INDEX: Final = "events-by-group"
RESOURCE_EVENTS_INDEX_PK: Final = "group_id"
RESOURCE_EVENTS_INDEX_SK: Final = "occurred_at"
# The index it replaces (keyed by `resource_key`, projecting `status`). An index's name, keys and projection cannot
# change in place, and one stack update may add or delete one index only, so a stack deployed with it moves in two
# updates (docs/deploy.md, "Upgrading the inbox indexes"): the first, with the context value
# PREVIOUS_RESOURCE_INDEX_CONTEXT=true, adds the new index next to it; the next one, without, deletes it. Items
# still carry `resource_key` until they expire; new items do not (the group id holds it).
PREVIOUS_RESOURCE_EVENTS_INDEX: Final = ("events-by-resource", "resource_key", "occurred_at")
PREVIOUS_RESOURCE_EVENTS_INDEX_INCLUDED: Final = (
    "provider",
    "event_id",
    "event_type",
    "resource_id",
    "status",
    "received_at",
)
PREVIOUS_RESOURCE_INDEX_CONTEXT: Final = "inbox_previous_resource_index"

INBOX_GLOBAL_INDEXES: Final[tuple[tuple[str, str, str], ...]] = (
    (OPEN_EVENTS_INDEX, OPEN_EVENTS_INDEX_PK, OPEN_EVENTS_INDEX_SK),
    (RESOURCE_EVENTS_INDEX, RESOURCE_EVENTS_INDEX_PK, RESOURCE_EVENTS_INDEX_SK),
)
# Each index projects only what its readers use, never the body or the headers: an index copy is then under 1 KB,
# one write unit, where projecting ALL copied the whole item (body included) into each index and tripled the write
# units of every inbox write. Keys (the table's and the index's) are always projected.
# Readers of the open-events index: the sweeper (re-dispatch: group_id, dispatch marks; gauges: provider), replay
# (provider, event_type, status), `inbox stats` (provider), the simulator and chaos harness (provider,
# resource_id). A test runs each of them against the projected index, so an attribute missing here fails there,
# not in production.
INBOX_INDEX_PROJECTIONS: Final[dict[str, str]] = {OPEN_EVENTS_INDEX: "INCLUDE", RESOURCE_EVENTS_INDEX: "KEYS_ONLY"}
INBOX_INDEX_INCLUDED_ATTRIBUTES: Final[dict[str, tuple[str, ...]]] = {
    OPEN_EVENTS_INDEX: (
        "provider",
        "event_id",
        "event_type",
        "resource_id",
        "status",
        "attempts",
        "group_id",
        "dispatch_id",
        "dispatched_at",
        "last_attempt_at",
        "last_error",
        "failed_at",
    ),
    RESOURCE_EVENTS_INDEX: (),
}


def inbox_index_projection(index: str) -> dict[str, Any]:
    """An inbox index's `Projection` as DynamoDB's API and CloudFormation spell it."""
    projection: dict[str, Any] = {"ProjectionType": INBOX_INDEX_PROJECTIONS[index]}
    if INBOX_INDEX_PROJECTIONS[index] == "INCLUDE":
        projection["NonKeyAttributes"] = list(INBOX_INDEX_INCLUDED_ATTRIBUTES[index])
    return projection


# ------------------------------------------------------------------------------------------- payments table
PAYMENTS_PARTITION_KEY: Final = "pk"  # "{source}#{resource_id}"

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
# Its time is mostly waiting (the gateway's and DynamoDB's round trips); its CPU (mostly the AWS SDK's) runs at
# memory / 1,769 MB of a vCPU: docs/cost.md compares 256, 384 and 512 MB from `make bench` (time per event, price,
# the peak memory of the processor's bench).
PROCESSOR_MEMORY_MB: Final = 384

# ---------------------------------------------------------------------------------------------- ingest API
# The parameter's value is a source's name (docs/sources.md); the route keeps its parameter's name so that a
# deployed route is not replaced.
WEBHOOK_ROUTE: Final = "/webhooks/{provider}"
# A provider's appended segment (ProviderEntry.path_suffixes): "/webhooks/{provider}/pix" for Efí.
WEBHOOK_SUFFIX_ROUTE: Final = "/webhooks/{provider}/%s"
HEALTH_ROUTE: Final = "/health"
# The stage throttle admits what the inbox table absorbs, so that a burst meets the front door (429: the gateway
# resends) before DynamoDB (a throttled put: the ingest answers 500, a retry) (docs/scale.md, "The front door").
# A new on-demand table sustains 4,000 write units/s without pre-warming (docs/aws-limits.md). A delivery the ingest
# stores writes the item and its two index entries, 3 units (measured: `make bench`, section item_sizes; a
# duplicate's refused put is 1); its event's settle writes the same table again: the item, twice in a transaction,
# and the open-events entry's removal, 3 units at most (2.625 measured). The rate counts both per admitted delivery,
# however fast the processor keeps up; the burst is what one second admits on top of the rate with the ingest's
# writes alone (the settles follow, after the Pipe and the queue).
ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND: Final = 4_000
INBOX_WRITE_UNITS_PER_STORED_DELIVERY: Final = 3
INBOX_WRITE_UNITS_PER_SETTLED_EVENT: Final = 3


def api_throttle(table_write_units_per_second: int = ON_DEMAND_INITIAL_WRITE_UNITS_PER_SECOND) -> tuple[int, int]:
    """The stage's (rate, burst) for an inbox table that absorbs this many write units a second (its warm
    throughput when pre-warmed)."""
    rate = table_write_units_per_second // (INBOX_WRITE_UNITS_PER_STORED_DELIVERY + INBOX_WRITE_UNITS_PER_SETTLED_EVENT)
    burst = table_write_units_per_second // INBOX_WRITE_UNITS_PER_STORED_DELIVERY - rate
    return rate, burst


API_THROTTLE_RATE_LIMIT: Final = api_throttle()[0]  # requests/s, steady state: 666
API_THROTTLE_BURST_LIMIT: Final = api_throttle()[1]  # 667
INGEST_TIMEOUT_SECONDS: Final = 10
INGEST_MEMORY_MB: Final = 512

# ------------------------------------------------------------------------------------------------ defaults
DEFAULT_SIGNATURE_TOLERANCE_SECONDS: Final = 300
# How long an inbox item lives in DynamoDB before TTL removes it and the archiver writes it to S3 (docs/operations.md,
# "Retention"): the window of deduplication, replay and the payment timeline. Two weeks cover every documented retry
# window but Adyen's, and a provider whose window is longer keeps its events longer (`retained_days`).
DEFAULT_RETENTION_DAYS: Final = 14
MINIMUM_RETENTION_DAYS: Final = 7
# Kept beyond a provider's documented retry window: its last retry may come late in its last day.
REDELIVERY_MARGIN_DAYS: Final = 1


def retained_days(retention_days: int, redelivery_days: int) -> int:
    """How many days an event of a provider whose retries may come `redelivery_days` after it (its catalog entry's
    `redelivery_days`) stays in the inbox: the deployment's retention, or longer where the provider retries longer."""
    return max(retention_days, redelivery_days + REDELIVERY_MARGIN_DAYS if redelivery_days else 0)


# DynamoDB items are limited to 400 KB; bodies above this go to S3 and the item references them.
INLINE_BODY_LIMIT_BYTES: Final = 256 * 1024
# DynamoDB TransactWriteItems: at most 100 actions, the items 4 MB in all, no two actions on one item
# (TransactWriteItems API reference; docs/aws-limits.md). A delivery's events are stored in one transaction
# (shared/ingest_batch.py), so a delivery holds at most MAX_EVENTS_PER_DELIVERY events; the local stack enforces both.
TRANSACT_WRITE_MAX_ACTIONS: Final = 100
TRANSACT_WRITE_MAX_BYTES: Final = 4 * 1024 * 1024
MAX_EVENTS_PER_DELIVERY: Final = TRANSACT_WRITE_MAX_ACTIONS
# The inline copies of one delivery's body, summed over its events, stay under this; above it the body goes to S3
# once and every event's item points at it. With each item's other attributes bounded by the request's 10 KB of
# headers plus ~1 KB, 100 items stay under 2 MiB + 1.1 MB: well inside the transaction's 4 MB.
MULTI_EVENT_INLINE_BODY_BUDGET_BYTES: Final = 2 * 1024 * 1024


def secret_prefix(stack_name: str) -> str:
    """Name prefix of the local stack's signing secrets (``{prefix}{source}``, inbox_local/config.py). The
    deployed stack names none of its secrets: CloudFormation generates the names (infra/constructs/secrets.py)."""
    return f"{stack_name}/webhook-signing/"


# Tags on every secret of the deployed stack: which stack, which provider (or source), which kind. The names are
# CloudFormation's, so these tags and the stack's outputs are how an operator finds a secret (console filter,
# `aws secretsmanager list-secrets --filters Key=tag-key,...`), also one retained by a deleted stack.
SECRET_TAG_STACK: Final = "webhook-inbox:stack"
SECRET_TAG_PROVIDER: Final = "webhook-inbox:provider"
SECRET_TAG_SOURCE: Final = "webhook-inbox:source"  # the source a signing or API-key secret belongs to
SECRET_TAG_KIND: Final = "webhook-inbox:kind"
SECRET_KIND_SIGNING: Final = "signing"  # a gateway's webhook signing secrets {"current", "previous"}
SECRET_KIND_API_KEY: Final = "api-key"  # a gateway's API key for the refetch (plain string)
SECRET_KIND_FORWARD_SIGNING: Final = "forward-signing"  # the forwarded events' Standard Webhooks secret pair
SECRET_KIND_FINGERPRINT_KEY: Final = "fingerprint-key"  # keys the rejected-delivery log's fingerprints {"current"}

# Lambda: "the total size of all environment variables doesn't exceed 4 KB"
# (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). The secret ARN maps are the only
# variables that grow with the number of declared sources, with INBOX_SOURCES (the declaration itself);
# infra/constructs/secrets.py checks at synth that they, the maps at their longest possible ARNs, leave this much
# of the 4 KB to every other variable.
LAMBDA_ENVIRONMENT_LIMIT_BYTES: Final = 4096
LAMBDA_ENVIRONMENT_RESERVE_BYTES: Final = 1024


# ------------------------------------------------------------------------------------------- control table
# Small operational state shared by every function instance: the refetch circuit breakers
# (pk = "breaker#{source}"), the refetch rate limits (pk = "ratelimit#{source}", shared/gateway/ratelimit.py) and,
# with forwarding, one checkpoint per outbox partition (pk = "outbox-forward#{outbox pk}", shared/forwarding.py).
# Kept apart from the payments table so payment scans never see it.
CONTROL_PARTITION_KEY: Final = "pk"
# The table's TTL attribute: only the checkpoints carry it (a breaker and a rate limit are one item per source,
# rewritten in place; a checkpoint is one per payment ever forwarded, and would otherwise accumulate for ever).
CONTROL_TTL_ATTRIBUTE: Final = "expires_at"
FORWARD_CHECKPOINT_PREFIX: Final = "outbox-forward#"

# ---------------------------------------------------------------------------------------------- environment
# Environment variable names: the contract between the stack (and the local runtime) and the functions.
ENV_INBOX_TABLE: Final = "INBOX_TABLE"
ENV_PAYMENTS_TABLE: Final = "PAYMENTS_TABLE"
ENV_CONTROL_TABLE: Final = "CONTROL_TABLE"
ENV_BODY_BUCKET: Final = "INBOX_BODY_BUCKET"
ENV_SECRET_PREFIX: Final = "INBOX_SECRET_PREFIX"  # the local stack's secret names ({prefix}{source})
ENV_API_KEY_SECRET_PREFIX: Final = "INBOX_API_KEY_SECRET_PREFIX"  # likewise, for the API keys
# The deployed stack's secrets, as JSON objects {source: secret ARN} (shared/secrets.py reads them): a signing
# secret per declared source, an API-key secret per declared source whose provider has a refetch API.
ENV_SIGNING_SECRETS: Final = "INBOX_SIGNING_SECRETS"
ENV_API_KEY_SECRETS: Final = "INBOX_API_KEY_SECRETS"
# In those maps (and the stack outputs that repeat them) the ARNs' common part,
# "arn:<partition>:secretsmanager:<region>:<account>:secret:", is written once under this key (no source name can
# be "*") and each source's entry holds the rest, the secret's name with its suffix: 16 ARNs in full outgrew what
# Lambda's 4 KB environment leaves the map (infra/constructs/secrets.py checks it at synth). shared.secrets.secret_arns
# expands a map back to full ARNs.
SECRET_MAP_ARN_PREFIX_KEY: Final = "*"
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
OUTPUT_SIGNING_SECRETS: Final = "SigningSecretArns"  # JSON {source: secret ARN}: the deployed sources
OUTPUT_INGEST_FUNCTION: Final = "IngestFunctionName"
OUTPUT_CONTROL_TABLE: Final = "ControlTableName"
OUTPUT_QUEUE_URL: Final = "DispatchQueueUrl"
OUTPUT_DEAD_LETTER_QUEUE_URL: Final = "DeadLetterQueueUrl"
OUTPUT_PIPE_DEAD_LETTER_QUEUE_URL: Final = "PipeDeadLetterQueueUrl"
OUTPUT_PROCESSOR_FUNCTION: Final = "ProcessorFunctionName"
OUTPUT_API_KEY_SECRETS: Final = "GatewayApiKeySecretArns"  # JSON {source: secret ARN}
OUTPUT_SOURCE_PROVIDERS: Final = "SourceProviders"  # JSON {source: provider}: what the stack was deployed with
# The mutual-TLS custom domain (only when a source declares mutual_tls; infra/constructs/mutual_tls_domain.py): its
# base URL, the API Gateway domain name DNS must point the custom name at, and that target's hosted zone (alias).
OUTPUT_MUTUAL_TLS_URL: Final = "MutualTlsUrl"
OUTPUT_MUTUAL_TLS_DNS_TARGET: Final = "MutualTlsDnsTarget"
OUTPUT_MUTUAL_TLS_DNS_ZONE: Final = "MutualTlsDnsHostedZoneId"
OUTPUT_MUTUAL_TLS_SOURCES: Final = "MutualTlsSources"  # JSON [source, ...]: the sources that require it
ENV_DLQ_URL: Final = "INBOX_DLQ_URL"
ENV_RETRY_BASE_SECONDS: Final = "INBOX_RETRY_BASE_SECONDS"
MAX_PROCESSING_ATTEMPTS: Final = 8  # attempts the processor counts on the item before failing the event
RETRY_BASE_SECONDS: Final = 5

# ------------------------------------------------------------------------------------------------ operations
# The sweeper (functions/sweeper): an EventBridge schedule runs it every SWEEP_SCHEDULE_MINUTES in AWS; the local
# stack runs it every INBOX_SWEEP_INTERVAL_SECONDS (default LOCAL_SWEEP_INTERVAL_SECONDS).
SWEEP_SCHEDULE_MINUTES: Final = 5
LOCAL_SWEEP_INTERVAL_SECONDS: Final = 10
SWEEPER_TIMEOUT_SECONDS: Final = 120  # the sweeper stops paging when fewer than 10 s of its invocation remain
SWEEPER_MEMORY_MB: Final = 256
# A pending event is stale (its dispatch was lost) when nothing happened to it for this long: no dispatch
# (`dispatched_at`) and no processing attempt (`last_attempt_at`). It must exceed the processor's longest backoff
# (shared.backoff.MAX_BACKOFF_SECONDS = 600), or the sweeper would re-dispatch events that are only waiting.
DEFAULT_STALE_AFTER_SECONDS: Final = 900
# Payments left in an intermediate status (pending, authorized) are refetched from the gateway after this long.
DEFAULT_RECONCILE_AFTER_SECONDS: Final = 3600
DEFAULT_SWEEP_MAX_ITEMS: Final = 500  # per phase (re-dispatch, reconcile) and per run
# The replay's page function (functions/replay), invoked by the replay workflow with one page of at most 100
# events, each one conditional UpdateItem (milliseconds in AWS): the timeout is for a throttled table, whose writes
# the SDK retries, not for the work.
REPLAY_PAGE_TIMEOUT_SECONDS: Final = 60
REPLAY_PAGE_MEMORY_MB: Final = 256

# Sparse index of payments the sweeper reconciles: only payments in an intermediate status carry
# `reconcile_key` = "{source}#{status}" (one partition per source and status, so the sweeper queries only the
# sources whose provider has an API to refetch from), sorted by `checked_at` = when the payment was last confirmed
# against its source (the processor's write, or the sweeper's claim when it sends a reconciliation). Keys only:
# the sweeper needs nothing else.
RECONCILE_INDEX: Final = "payments-to-reconcile"
RECONCILE_INDEX_PK: Final = "reconcile_key"
RECONCILE_INDEX_SK: Final = "checked_at"
RECONCILE_INDEX_PROJECTION: Final = "KEYS_ONLY"
PAYMENTS_GLOBAL_INDEXES: Final[tuple[tuple[str, str, str], ...]] = (
    (RECONCILE_INDEX, RECONCILE_INDEX_PK, RECONCILE_INDEX_SK),
)

# ------------------------------------------------------------------------------------------------- retention
# The archiver (functions/archiver) consumes the inbox stream through an event source mapping with this filter:
# only REMOVE records made by the DynamoDB service itself, i.e. TTL deletions (AWS: "Records deleted by TTL carry
# userIdentity {type: Service, principalId: dynamodb.amazonaws.com}"). An operator's own DeleteItem is not archived.
ARCHIVE_FILTER_PATTERN: Final[dict[str, Any]] = {
    "eventName": ["REMOVE"],
    "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
}
ARCHIVE_KEY_PREFIX: Final = "archive/"
ARCHIVER_BATCH_SIZE: Final = 100
ARCHIVER_MAX_BATCHING_WINDOW_SECONDS: Final = 60  # fewer, larger archive objects
# The stream keeps records 24 h: the mapping retries a failing batch (bisecting it) until it succeeds or the record
# ages out, then reports it to its on-failure destination. The archive is at-least-once (a bisected retry can
# write a record into a second object); every line carries its `pk`.
ARCHIVER_STARTING_POSITION: Final = "TRIM_HORIZON"
ARCHIVER_TIMEOUT_SECONDS: Final = 120
ARCHIVER_MEMORY_MB: Final = 512
OUTPUT_ARCHIVE_BUCKET: Final = "ArchiveBucketName"

ENV_STALE_AFTER: Final = "INBOX_STALE_AFTER_SECONDS"
ENV_RECONCILE_AFTER: Final = "INBOX_RECONCILE_AFTER_SECONDS"
ENV_SWEEP_MAX_ITEMS: Final = "INBOX_SWEEP_MAX_ITEMS"
ENV_SWEEP_INTERVAL: Final = "INBOX_SWEEP_INTERVAL_SECONDS"  # local stack only (AWS: the schedule's rate)
ENV_ARCHIVE_BUCKET: Final = "INBOX_ARCHIVE_BUCKET"
ENV_REDACT_FIELDS: Final = "INBOX_REDACT_FIELDS"  # comma-separated JSON key names; empty: no redaction

# -------------------------------------------------------------------------------------- rejected deliveries
# What the ingest refused (bad or missing signature, stale timestamp, undecodable body), kept a few days in a table
# of its own so it can never be mistaken for an accepted event (shared/rejections.py writes it, `inbox rejected`
# reads it). Bounded: at most REJECTED_PER_SOURCE_PER_MINUTE items per source and minute can exist, because the
# key is one of that many slots of the minute (shared/rejections.py explains), written with attribute_not_exists.
REJECTED_TABLE_SUFFIX: Final = "-rejected"  # the deployed table's name: "{stack name}-rejected"
REJECTED_PARTITION_KEY: Final = "pk"  # the rejection id: "rej_" + 26 Crockford base32 characters (ULID layout)
REJECTED_TTL_ATTRIBUTE: Final = "expires_at"
# Newest first without a scan: one index partition per UTC day, sorted by the time received. It projects what a
# listing shows, never the body or the headers.
REJECTED_BY_DAY_INDEX: Final = "rejected-by-day"
REJECTED_BY_DAY_INDEX_PK: Final = "received_day"  # YYYY-MM-DD
REJECTED_BY_DAY_INDEX_SK: Final = "received_at"
REJECTED_INDEX_INCLUDED_ATTRIBUTES: Final[tuple[str, ...]] = (
    "source",
    "provider",
    "reason",
    "detail",
    "source_ip",
    "user_agent",
    "body_size",
    "expires_at",
)
DEFAULT_REJECTED_RETENTION_DAYS: Final = 3
MAX_REJECTED_RETENTION_DAYS: Final = 14  # disposable diagnostics, not an archive
DEFAULT_REJECTED_PER_SOURCE_PER_MINUTE: Final = 60
MAX_REJECTED_PER_SOURCE_PER_MINUTE: Final = 600
REJECTED_BODY_LIMIT_BYTES: Final = 64 * 1024  # what is kept of a refused body (size and sha256 are of the whole)
ENV_REJECTED_TABLE: Final = "INBOX_REJECTED_TABLE"  # unset: refusals are only counted
ENV_REJECTED_RETENTION_DAYS: Final = "INBOX_REJECTED_RETENTION_DAYS"
ENV_REJECTED_PER_SOURCE_PER_MINUTE: Final = "INBOX_REJECTED_PER_SOURCE_PER_MINUTE"
# The key of the fingerprints that stand in for secret-bearing headers: the deployed stack's generated secret
# ({"current": ...}, by ARN), or locally the value itself.
ENV_FINGERPRINT_KEY_SECRET: Final = "INBOX_FINGERPRINT_KEY_SECRET"
ENV_FINGERPRINT_KEY: Final = "INBOX_FINGERPRINT_KEY"
OUTPUT_REJECTED_TABLE: Final = "RejectedTableName"
OUTPUT_FINGERPRINT_KEY_SECRET: Final = "FingerprintKeySecretArn"
# The reason codes a refusal is recorded (and counted) under. `unknown_source` is only counted: anyone can scan
# URLs, and recording them under no source would let a scanner fill the log.
REJECTION_REASONS: Final[tuple[str, ...]] = (
    "signature_invalid",
    "signature_missing",
    "signature_malformed",
    "timestamp_out_of_tolerance",
    "body_undecodable",
    "ip_not_allowed",  # a sender outside the source's allowed_ip_ranges (403)
    # a delivery to a `mutual_tls` source that did not come through the mutual-TLS front door with a verified
    # client certificate (403, before any secret is read)
    "client_certificate_missing",
    "unknown_source",
    "too_many_events",  # an authentic delivery with more events than one transaction stores (413)
)
# Why a refusal was counted but not recorded: the per-source budget of the minute was spent (this instance's
# bucket), the minute's slot was taken (another record, or another instance), the log could not be written.
REJECTION_NOT_RECORDED_CAUSES: Final[tuple[str, ...]] = ("rate_limited", "slot_taken", "log_unavailable")
METRIC_DELIVERIES_REJECTED: Final = "DeliveriesRejected"  # dimension `reason` (REJECTION_REASONS)
METRIC_REJECTIONS_RECORDED: Final = "RejectionsRecorded"
METRIC_REJECTIONS_NOT_RECORDED: Final = "RejectionsNotRecorded"  # dimension `cause`

# ------------------------------------------------------------------------------------------ replay, monitoring
# The replay workflow (Step Functions; its definition: infra/replay_definition.py) and the alarms' SNS topic.
OUTPUT_REPLAY_STATE_MACHINE: Final = "ReplayStateMachineArn"
OUTPUT_ALARM_TOPIC: Final = "AlarmTopicArn"
OUTPUT_SWEEPER_FUNCTION: Final = "SweeperFunctionName"
OUTPUT_ARCHIVER_FUNCTION: Final = "ArchiverFunctionName"
# Metric names the functions emit (namespace METRICS_NAMESPACE) and the alarms and the dashboard read; each is
# declared, with its dimensions and when it is sent, in shared/observability.METRICS.
# Ingest (shared/ingest.py):
METRIC_EVENTS_UNPARSEABLE: Final = "EventsUnparseable"  # verified but unparseable: stored as failed
METRIC_SIGNATURES_REJECTED: Final = "SignaturesRejected"
METRIC_STORAGE_FAILURES: Final = "StorageFailures"
# Processor (shared/process/service.py): one EventsSettled sample per processed (0) or ignored (1) event, per
# provider (Sum = ignored, SampleCount = settled, Average = the ignored share); failed ones service-wide.
METRIC_EVENTS_SETTLED: Final = "EventsSettled"
METRIC_EVENTS_FAILED: Final = "EventsFailed"
# One count per ignored event of a counted reason (COUNTED_IGNORED_REASONS), by `source` and `reason`.
METRIC_EVENTS_IGNORED: Final = "EventsIgnored"
# Confirmation from the signed payload (shared/process/confirm.py), service-wide (the source is in the log line),
# sent only when one happens: a
# verification that found the gateway's API disagreeing with the payload-applied status and applied the API's
# (a transition published like any other), and one whose API status the state machine refuses (the payment is
# flagged `verification_refused` and keeps its status). Each has one stack-level alarm (infra/constructs/monitoring.py).
METRIC_PAYMENTS_CORRECTED: Final = "PaymentsCorrected"
METRIC_VERIFICATIONS_REFUSED: Final = "VerificationsRefused"
# Sweeper (service dimension only):
METRIC_OLDEST_PENDING_AGE: Final = "OldestPendingAgeSeconds"
# Archiver (shared/retention.py): items archived incomplete: without their body (gone from the body bucket, or
# unreadable) or without their attributes (a stream image that could not be decoded).
METRIC_ARCHIVED_INCOMPLETE: Final = "ArchivedIncomplete"
