"""The sweeper Lambda on a schedule, and exactly the permissions its code uses (shared/sweeper.py).

What the code calls:
- inbox table: Query on the open-events index (oldest pending, failed count, stale pending events) and UpdateItem
  on the table (the conditional re-dispatch: new dispatch id, dispatch_reason = redispatch);
- payments table: Query on the reconcile index (payments stuck in an intermediate status) and UpdateItem on the
  table (the conditional claim of a payment it asks the processor to reconcile);
- dispatch queue: SendMessage (SendMessageBatch is authorized as SendMessage) of reconcile requests.
No GetItem, Scan, PutItem or DeleteItem; no other index. Metrics go out as EMF log lines (no PutMetricData).

Schedule: an EventBridge rule every ``sweep_interval_minutes`` (context value, default
definitions.SWEEP_SCHEDULE_MINUTES). A missed or failed run is covered by the next one (every write is conditional,
and two runs at once do no harm), so the asynchronous invocation is not retried and an invocation that could not
start within one interval is dropped rather than piling up behind the next.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from infra.config import StackSettings
from infra.constructs.dispatch_queue import DispatchQueue
from infra.constructs.inbox_storage import InboxStorage
from infra.constructs.payments_storage import PaymentsStorage
from infra.constructs.python_function import FunctionConstruct, FunctionSpec
from infra.constructs.secrets import check_environment_share, environment_share
from shared import definitions

SWEEPER = FunctionSpec(
    "Sweeper",
    "sweeper",
    definitions.SWEEPER_MEMORY_MB,
    definitions.SWEEPER_TIMEOUT_SECONDS,
    "Webhook Inbox sweeper: re-dispatch stale pending events, measure, request reconciliations",
)


class SweeperFunction(FunctionConstruct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        inbox: InboxStorage,
        payments: PaymentsStorage,
        queues: DispatchQueue,
        settings: StackSettings,
        sources_environment: Mapping[str, str],
    ) -> None:
        # The sweeper has no secret map: the declaration is what grows in its environment.
        check_environment_share("sweeper", environment_share(sources_environment))
        super().__init__(
            scope,
            construct_id,
            spec=SWEEPER,
            uses=(
                inbox.index_access(definitions.OPEN_EVENTS_INDEX, "dynamodb:Query"),
                # The conditional re-dispatch (UpdateItem), and the waits of the events that look stale
                # (`wait_until`, which the open-events index does not project: BatchGetItem).
                inbox.table_access("dynamodb:UpdateItem", "dynamodb:BatchGetItem"),
                payments.reconcile_index_access("dynamodb:Query"),
                payments.payments_access("dynamodb:UpdateItem"),
                queues.queue_access("sqs:SendMessage"),
            ),
            environment={
                definitions.ENV_STALE_AFTER: str(definitions.DEFAULT_STALE_AFTER_SECONDS),
                definitions.ENV_RECONCILE_AFTER: str(definitions.DEFAULT_RECONCILE_AFTER_SECONDS),
                definitions.ENV_SWEEP_MAX_ITEMS: str(definitions.DEFAULT_SWEEP_MAX_ITEMS),
                **sources_environment,  # INBOX_SOURCES: the declared sources
            },
        )
        interval = Duration.minutes(settings.sweep_interval_minutes)

        self.function.configure_async_invoke(retry_attempts=0, max_event_age=interval)
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Runs the Webhook Inbox sweeper every {settings.sweep_interval_minutes} minute(s)",
            schedule=events.Schedule.rate(interval),
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
