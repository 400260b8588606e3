"""How payment changes go downstream: the transactional outbox table, the event bus it publishes to, forwarding to
the merchant's endpoint and the forwarding log."""

from __future__ import annotations

from typing import Any, Final

# ------------------------------------------------------------------------------------------------- outbox
# The transactional outbox (shared/payments/outbox.py): every payment transition and every failed event writes
# one record in the transaction that causes it; the table's stream publishes them (AWS: a Pipe to the stack's
# EventBridge bus; locally: inbox_local/outbox_publisher.py). Keys: one partition per payment, ordered by the
# payment's transition number, so the stream hands one payment's records over in order.
OUTBOX_PARTITION_KEY: Final = "pk"  # "{source}#{resource_id}" (or "failed#{inbox pk}")
OUTBOX_SORT_KEY: Final = "sequence"  # number: the payment's `transitions` after the change
OUTBOX_TTL_ATTRIBUTE: Final = "expires_at"
OUTBOX_RETENTION_DAYS: Final = 7  # the TTL the outbox writes (shared/payments/outbox.py) and docs/events.md
OUTBOX_STREAM_VIEW_TYPE: Final = "NEW_IMAGE"
ENV_OUTBOX_TABLE: Final = "OUTBOX_TABLE"
OUTPUT_OUTBOX_TABLE: Final = "OutboxTableName"
OUTPUT_EVENT_BUS: Final = "EventBusName"
OUTBOX_EVENT_SOURCE: Final = "webhook-inbox"  # the EventBridge `source` of published events
# Only new records are published (the TTL's REMOVE records are not events).
OUTBOX_PIPE_FILTER_PATTERN: Final[dict[str, Any]] = {"eventName": ["INSERT"]}
OUTBOX_PIPE_BATCH_SIZE: Final = 10
OUTBOX_PIPE_STARTING_POSITION: Final = "TRIM_HORIZON"
OUTBOX_PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 185  # the stream keeps a record 24 h; never give up early
# Forwarding: where every published event is POSTed, Standard Webhooks signed with the pair the Secrets Manager
# secret holds, named by its ARN (CloudFormation names it; any secret id works; the local stack's is
# `LocalNames.forward_secret_name`, loaded from INBOX_FORWARD_SECRET: inbox_local/forward_secret.py).
ENV_FORWARD_URL: Final = "INBOX_FORWARD_URL"
ENV_FORWARD_SECRET_NAME: Final = "INBOX_FORWARD_SECRET_NAME"
ENV_EVENT_BUS_NAME: Final = "INBOX_EVENT_BUS_NAME"
# The publisher Lambda (outbox Pipe -> bus) and the forwarder Lambda (forwarding Pipe -> the customer's endpoint).
# Both Pipes read the outbox stream: DynamoDB Streams serves at most two readers per shard without throttling.
PUBLISHER_MEMORY_MB: Final = 256
PUBLISHER_TIMEOUT_SECONDS: Final = 30
FORWARDER_MEMORY_MB: Final = 256
# Ten deliveries of at most 3 x 5 s POSTs + backoffs each would take 165 s; the forwarder starts a delivery only
# with its worst case left (shared/forwarding.py) and leaves the rest of the batch to the Pipe's retry.
FORWARDER_TIMEOUT_SECONDS: Final = 120
# The forwarding rate needs no reserved concurrency: the forwarding Pipe reads each outbox stream shard with one
# batch in flight (ParallelizationFactor 1, the default) and the forwarder POSTs a batch's events one at a time, so
# at most one POST per open shard is in flight (infra/constructs/outbox.py and docs/deploy.md explain). Reserved
# concurrency is opt-in (context `forwarder_reserved_concurrency`): on a new account whose concurrency quota is
# small, reserving any of it fails the deploy (Lambda keeps at least 100 unreserved).
FORWARD_PIPE_PARALLELIZATION_FACTOR: Final = 1
FORWARD_PIPE_BATCH_SIZE: Final = 10
# Retries of a batch the endpoint keeps refusing: the Pipe backs off exponentially between attempts; after them
# (or when the record is older than the maximum age) the batch's metadata goes to the forwarding dead-letter queue
# and the shard moves on. The events stay on the bus and in the outbox table (7 days) for a manual re-send.
FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS: Final = 185
FORWARD_PIPE_MAXIMUM_RECORD_AGE_SECONDS: Final = 86_400
# DynamoDB Streams keeps a table's changes "in a log for up to 24 hours"
# (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html).
DYNAMODB_STREAM_RETENTION_SECONDS: Final = 86_400
# TTL: "DynamoDB typically deletes expired items within two days of expiration"; until then they "still show up in
# reads, queries, and scans" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html).
DYNAMODB_TTL_DELETION_LAG_SECONDS: Final = 2 * 86_400
# A forwarding checkpoint lives as long as a record of its partition can still be handed over again: by the stream
# (its 24 hours) or by `inbox outbox resend`, which reads the outbox table (its records' TTL, and the TTL's lag, since
# an expired record is read until it is deleted). Each save writes it anew: it expires this long after the last
# delivery of its payment. Once it is gone, a record older than it can no longer come back; a new one has a higher
# sequence than any the checkpoint held, so nothing is sent twice and nothing is skipped.
FORWARD_CHECKPOINT_RETENTION_SECONDS: Final = (
    DYNAMODB_STREAM_RETENTION_SECONDS + OUTBOX_RETENTION_DAYS * 86_400 + DYNAMODB_TTL_DELETION_LAG_SECONDS
)
OUTPUT_FORWARD_SECRET: Final = "ForwardSigningSecretArn"
OUTPUT_OUTBOX_DEAD_LETTER_QUEUE_URL: Final = "OutboxDeadLetterQueueUrl"
OUTPUT_FORWARD_DEAD_LETTER_QUEUE_URL: Final = "ForwardDeadLetterQueueUrl"
EVENT_BUS_ARCHIVE_RETENTION_DAYS: Final = 30  # the bus's archive: published events can be replayed to new rules

# The forwarding log (shared/forwarding_log.py): one item per forwarding attempt (the forwarder's, the local
# publisher's, `inbox outbox resend`'s), keyed by the event's `webhook-id` and the attempt's time, so one Query
# lists an event's attempts oldest first. Written only by whoever forwards (PutItem), never updated; gone by TTL.
# Its own table, not the control table: a log that grows with traffic must not share a table with the
# checkpoints and breakers every forwarder reads, and its TTL and size rules are its own.
FORWARD_LOG_PARTITION_KEY: Final = "webhook_id"
FORWARD_LOG_SORT_KEY: Final = "attempted_at"  # ISO-8601 UTC with microseconds: string order is time order
FORWARD_LOG_TTL_ATTRIBUTE: Final = "expires_at"
DEFAULT_FORWARD_LOG_RETENTION_DAYS: Final = 30  # outlives the outbox's 7 days: an event's answers stay readable
MAXIMUM_FORWARD_LOG_RETENTION_DAYS: Final = 365
# Bounds of one item (DynamoDB's item limit is 400 KB; these keep an attempt under ~12 KB whatever the endpoint
# answers): the first bytes of the body, a number of headers, each header's name and value, the error text.
FORWARD_LOG_BODY_BYTES: Final = 4096
FORWARD_LOG_MAX_HEADERS: Final = 32
FORWARD_LOG_HEADER_NAME_CHARS: Final = 64
FORWARD_LOG_HEADER_VALUE_CHARS: Final = 256
FORWARD_LOG_ERROR_CHARS: Final = 300
ENV_FORWARD_LOG_TABLE: Final = "INBOX_FORWARD_LOG_TABLE"
ENV_FORWARD_LOG_RETENTION_DAYS: Final = "INBOX_FORWARD_LOG_RETENTION_DAYS"
OUTPUT_FORWARD_LOG_TABLE: Final = "ForwardLogTableName"
# Local stack only: how many times the local publisher retries a chunk the endpoint refuses before it gives the
# chunk up, as the forwarding Pipe does after FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS (its records then wait for
# `inbox outbox resend`). Default: the Pipe's own number.
ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS: Final = "INBOX_FORWARD_MAX_RETRY_ATTEMPTS"
