"""The processor Lambda, fed by the dispatch queue, and exactly the permissions its code uses.

What the code calls (shared/payments/store.py, shared/gateway/breaker.py, shared/process/app.py):
- inbox table: GetItem (load the event), UpdateItem (count an attempt, mark failed, and the inbox half of the
  settling transaction), PutItem (a payment confirmed from its signed payload: its verification item, conditioned
  on not existing, inside the applying transaction; shared/inbox/model.py `build_verify_item`);
- payments table: GetItem (load the payment), PutItem (the payment half of the transaction). TransactWriteItems
  is not an IAM action: DynamoDB authorizes each item of a transaction with its own action (Put -> PutItem,
  Update -> UpdateItem, ConditionCheck -> ConditionCheckItem, unused here);
- control table: GetItem and UpdateItem (the breakers and the refetch rate limits create their items with
  UpdateItem; no PutItem);
- outbox table: PutItem (the outbox record, conditioned on not existing, inside the applying transaction);
- dispatch queue: what the event source mapping needs (receive, delete, visibility, attributes), which includes
  ChangeMessageVisibility, the processor's retry backoff;
- dead-letter queue: SendMessage (the processor parks exhausted events itself);
- the gateways' API-key secrets: read.
Everything on the table ARNs alone, never their indexes; no Scan, Query, DeleteItem or batch operation.

The event source mapping: batches of definitions.PROCESSOR_BATCH_SIZE, partial batch responses (a failed
message comes back alone, and with the FIFO processor's skip-group the rest of its payment's group with it), and
at most definitions.PROCESSOR_MAX_CONCURRENCY concurrent invocations, so a burst cannot exhaust the account's
concurrency or stampede a gateway's API. No batching window: SQS FIFO event sources do not support one.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from infra.config import StackSettings
from infra.constructs.dispatch_queue import DispatchQueue
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.outbox import Outbox
from infra.constructs.payments_storage import PaymentsStorage
from infra.constructs.python_function import FunctionConstruct, FunctionSpec
from infra.constructs.secrets import SourceSecrets
from shared import definitions

PROCESSOR = FunctionSpec(
    "Processor",
    "process",
    definitions.PROCESSOR_MEMORY_MB,
    definitions.PROCESSOR_TIMEOUT_SECONDS,
    "Webhook Inbox processor: refetch the payment, apply the event once, settle the inbox item",
)


class ProcessorFunction(FunctionConstruct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        inbox: InboxStorage,
        payments: PaymentsStorage,
        outbox: Outbox,
        queues: DispatchQueue,
        api_keys: SourceSecrets,
        settings: StackSettings,
        sources_environment: Mapping[str, str],
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            spec=PROCESSOR,
            # Item actions on the table ARNs alone, never their indexes.
            uses=(
                inbox.table_access("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem"),
                payments.payments_access("dynamodb:GetItem", "dynamodb:PutItem"),
                payments.control_access("dynamodb:GetItem", "dynamodb:UpdateItem"),
                outbox.table_access("dynamodb:PutItem"),
                queues.queue_access(),  # consumed through the event source mapping, below
                queues.dead_letter_access("sqs:SendMessage"),
            ),
            environment={
                definitions.ENV_MAX_ATTEMPTS: str(definitions.MAX_PROCESSING_ATTEMPTS),
                definitions.ENV_RETRY_BASE_SECONDS: str(definitions.RETRY_BASE_SECONDS),
                definitions.ENV_API_KEY_SECRETS: api_keys.arn_map,
                **sources_environment,  # INBOX_SOURCES: the declared sources
            },
        )

        api_keys.grant_read(self.function)

        # Grants the mapping's consume permissions on the queue (ReceiveMessage, DeleteMessage,
        # ChangeMessageVisibility, GetQueueAttributes, GetQueueUrl).
        self.function.add_event_source(
            event_sources.SqsEventSource(
                queues.queue,
                batch_size=definitions.PROCESSOR_BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=definitions.PROCESSOR_MAX_CONCURRENCY,
            )
        )
