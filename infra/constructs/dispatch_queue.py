"""The dispatch queue: SQS FIFO, one message group per payment, and its FIFO dead-letter queue.

Settings come from shared/definitions/resources.py, the values the local runtime creates its moto queues with.

Choices:
- High-throughput FIFO (deduplication per message group, throughput limit per message group): ordering is only
  needed within a payment, and this mode scales with the number of groups instead of capping the whole queue.
- Content-based deduplication off: the Pipe sets an explicit deduplication id (the item's `dispatch_id`, fresh on
  every dispatching write), so a re-dispatch of the same event within five minutes is not swallowed, while a retried
  delivery of one stream record still deduplicates.
- Visibility timeout: six times the processor's timeout (definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS explains).
- Redrive after definitions.QUEUE_MAX_RECEIVE_COUNT receives: a safety net, the processor dead-letters exhausted
  events itself (it counts attempts on the item, not receives).
- Encryption: SQS managed keys (SSE-SQS). Messages hold only an inbox key and a dispatch id (no payment data), and
  SSE-SQS needs no KMS grants for the Pipe that sends or the Lambda service that receives, no key policy and no
  per-request KMS cost; a customer managed key would buy no control we use (no cross-account access).
- TLS only (a queue policy denies requests without aws:SecureTransport).
- Not retained (CDK's default for queues): a queue holds no state of its own. A message in flight is an event
  still pending in the inbox table, one in the dead-letter queue an event marked failed there; the sweeper or a
  replay dispatches them again from the table.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.constructs.access import Access, queue_access
from shared import definitions


def _fifo_queue(
    scope: Construct, construct_id: str, *, dead_letter_queue: sqs.DeadLetterQueue | None = None
) -> sqs.Queue:
    return sqs.Queue(
        scope,
        construct_id,
        fifo=True,
        content_based_deduplication=False,
        deduplication_scope=sqs.DeduplicationScope.MESSAGE_GROUP,
        fifo_throughput_limit=sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
        retention_period=Duration.days(definitions.QUEUE_RETENTION_DAYS),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        visibility_timeout=Duration.seconds(definitions.QUEUE_VISIBILITY_TIMEOUT_SECONDS),
        dead_letter_queue=dead_letter_queue,
    )


class DispatchQueue(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        # Where the processor parks events it gave up on (and, as a safety net, SQS parks messages received
        # QUEUE_MAX_RECEIVE_COUNT times). Same FIFO settings: the processor sends with the message's group id.
        self.dead_letter_queue = _fifo_queue(self, "DeadLetterQueue")
        self.queue = _fifo_queue(
            self,
            "Queue",
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=definitions.QUEUE_MAX_RECEIVE_COUNT
            ),
        )

    def queue_access(self, *actions: str) -> Access:
        """The dispatch queue, named by INBOX_QUEUE_URL, with `actions` on it."""
        return queue_access(self.queue, definitions.ENV_QUEUE_URL, actions)

    def dead_letter_access(self, *actions: str) -> Access:
        """The dead-letter queue, named by INBOX_DLQ_URL, with `actions` on it."""
        return queue_access(self.dead_letter_queue, definitions.ENV_DLQ_URL, actions)
