"""Monitoring: the alarms an operator is paged for, their SNS topic, and a dashboard of the whole flow.

Alarms (each notifies the topic when it fires and when it recovers):
- ``failed-events``: any event failed (EventsFailed, from the processor), summed over the providers; and
  ``unparseable-events``: a verified body the ingest could not parse and stored as failed (EventsUnparseable).
  ``ignored`` never alarms: it is not an error.
- ``oldest-pending``: the oldest pending event (OldestPendingAgeSeconds, measured by the sweeper) is older than
  ``OLDEST_PENDING_THRESHOLD_SECONDS`` for two sweeps in a row. Missing data counts as breaching: the sweeper not
  reporting is itself something to look at (it also re-dispatches and reconciles).
- ``dead-letter-queue``, ``pipe-dead-letter-queue``, ``archive-failures``: a message is waiting there.
- ``signature-rejections``: more than ``SIGNATURE_REJECTIONS_THRESHOLD`` rejected signatures in five minutes, summed
  over the providers (a rotated secret not yet stored, or someone probing the endpoint).
- ``ignored-ratio-<provider>``: the share of ignored among the settled events of a provider jumps above
  ``IGNORED_RATIO_THRESHOLD`` over ``IGNORED_RATIO_PERIOD`` (with at least ``IGNORED_RATIO_MIN_EVENTS`` settled
  events, so that two events do not make a ratio): a provider that suddenly sends stale or repeated events, or a
  mapping that stopped recognizing its statuses.

The alarms above are built on metrics our functions emit; a function that cannot run (an init crash, a timeout,
a throttle, a request too large to invoke it with) emits none of them while the gateways keep retrying. So the
services' own metrics are alarmed as well, each on any occurrence in five minutes (no data = nothing went wrong):
- ``api-5xx``: the HTTP API answered a 5xx (``AWS/ApiGateway`` ``5xx`` by ApiId and Stage): the ingest crashed,
  timed out, was throttled or could not store, and a gateway will have to retry the delivery.
- ``lambda-<function>``: ``AWS/Lambda`` ``Errors`` + ``Throttles`` of each function of the stack (FunctionName):
  one alarm per function, two metrics each (errors and throttles are told apart on the dashboard).
- ``pipe-<pipe>``: each EventBridge Pipe's own failures (``AWS/EventBridge/Pipes``, PipeName), summed:
  ``PIPE_FAILURE_METRICS``. A failing Pipe retries while the stream keeps its records (24 h); a Pipe that Pipes
  disabled emits nothing, which ``oldest-pending`` still catches for dispatch.

Sums over providers are CloudWatch Metrics Insights queries (``SELECT SUM(...) FROM SCHEMA(...)``): an alarm
cannot use a SEARCH expression, and naming each provider's metric would exceed the 10 metrics an alarm's math may
use (definitions.PROVIDERS has more). A metric is counted once per period, whichever provider emitted it. The
dashboard draws one line per provider with SEARCH expressions. The ratio alarms are per provider by nature.

The topic is encrypted with a customer managed KMS key (rotated yearly): CloudWatch cannot publish to a topic
encrypted with the AWS managed ``aws/sns`` key, whose policy cannot be changed to let it. The key and the topic
let only CloudWatch of this account use them for that (aws:SourceAccount), and the topic refuses plain HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import StackSettings
from shared import definitions

FIVE_MINUTES = Duration.minutes(5)
OLDEST_PENDING_THRESHOLD_SECONDS = 1800  # twice the sweeper's stale threshold: re-dispatching did not help
SIGNATURE_REJECTIONS_THRESHOLD = 20
IGNORED_RATIO_THRESHOLD = 0.5
IGNORED_RATIO_MIN_EVENTS = 20
IGNORED_RATIO_PERIOD = Duration.minutes(15)
PIPES_NAMESPACE = "AWS/EventBridge/Pipes"
# The failure metrics of a Pipe (EventBridge user guide, "Monitoring Amazon EventBridge Pipes"), all counts by
# PipeName. An execution fails as a whole, partially (some records of the batch), by timing out, by being
# throttled, or in its target stage (the queue or function refused): each is worth a look, any is enough.
PIPE_FAILURE_METRICS = (
    "ExecutionFailed",
    "ExecutionPartiallyFailed",
    "ExecutionTimeout",
    "ExecutionThrottled",
    "TargetStageFailed",
)


def provider_metric(name: str, provider: str, *, period: Duration = FIVE_MINUTES) -> cw.Metric:
    """A per-provider count as the functions emit it (shared/observability.count_for_provider)."""
    return cw.Metric(
        namespace=definitions.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": definitions.SERVICE_NAME, "provider": provider},
        statistic="Sum",
        period=period,
        label=f"{name} {provider}",
    )


def dimension_metric(name: str, dimension: str, value: str, *, period: Duration = FIVE_MINUTES) -> cw.Metric:
    """A count with one dimension of a closed set (shared/observability.count_by: a refusal's reason...)."""
    return cw.Metric(
        namespace=definitions.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": definitions.SERVICE_NAME, dimension: value},
        statistic="Sum",
        period=period,
        label=value,
    )


def service_metric(name: str, *, statistic: str = "Maximum", period: Duration = FIVE_MINUTES) -> cw.Metric:
    """A service-wide gauge (shared/observability.put_gauge: the sweeper's measurements)."""
    return cw.Metric(
        namespace=definitions.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": definitions.SERVICE_NAME},
        statistic=statistic,
        period=period,
        label=name,
    )


def summed_over_providers(name: str, label: str, *, period: Duration = FIVE_MINUTES) -> cw.MathExpression:
    """One per-provider count summed over every provider that emits it: a CloudWatch Metrics Insights query, which
    an alarm may use (SEARCH it may not) and which covers providers added later without naming each one."""
    # CloudWatch Metrics Insights, built from our own constants (no user input):
    schema = f'SCHEMA("{definitions.METRICS_NAMESPACE}", provider, service)'
    query = f"SELECT SUM({name}) FROM {schema} WHERE service = '{definitions.SERVICE_NAME}'"  # noqa: S608
    return cw.MathExpression(
        expression=query,
        using_metrics={},
        label=label,
        period=period,
    )


def every_provider(name: str, *, statistic: str = "Sum") -> cw.MathExpression:
    """For a graph: one line per provider (a SEARCH expression, for dashboards only)."""
    return cw.MathExpression(
        expression=(
            f'SEARCH(\'{{{definitions.METRICS_NAMESPACE},provider,service}} MetricName="{name}" '
            f"service=\"{definitions.SERVICE_NAME}\"', '{statistic}', {int(FIVE_MINUTES.to_seconds())})"
        ),
        using_metrics={},
        label="",
        period=FIVE_MINUTES,
    )


def pipe_failures(label: str, pipe_name: str) -> cw.MathExpression:
    """Every failure a Pipe reports, summed (a missing count is 0: Pipes reports 0 only while it runs). The ids
    start with `label` (a lower-case word) so that one graph can draw several Pipes."""
    metrics = {
        f"{label}{name}": cw.Metric(
            namespace=PIPES_NAMESPACE,
            metric_name=name,
            dimensions_map={"PipeName": pipe_name},
            statistic="Sum",
            period=FIVE_MINUTES,
        )
        for name in PIPE_FAILURE_METRICS
    }
    return cw.MathExpression(
        expression=" + ".join(f"FILL({key}, 0)" for key in metrics),
        using_metrics=dict(metrics),
        label=f"{label} Pipe failures",
        period=FIVE_MINUTES,
    )


def function_errors_and_throttles(name: str, function: lambda_.IFunction) -> cw.MathExpression:
    """A function's errors (its code, its init, its timeout) plus its throttled invocations."""
    return cw.MathExpression(
        expression="FILL(errors, 0) + FILL(throttles, 0)",
        using_metrics={
            "errors": function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            "throttles": function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
        },
        label=f"{name} errors + throttles",
        period=FIVE_MINUTES,
    )


def ignored_ratio(provider: str) -> cw.MathExpression:
    ignored = "FILL(ignored, 0)"
    settled = f"({ignored} + FILL(processed, 0))"
    return cw.MathExpression(
        expression=f"IF({settled} >= {IGNORED_RATIO_MIN_EVENTS}, {ignored} / {settled}, 0)",
        using_metrics={
            "ignored": provider_metric(definitions.METRIC_EVENTS_IGNORED, provider, period=IGNORED_RATIO_PERIOD),
            "processed": provider_metric(definitions.METRIC_EVENTS_PROCESSED, provider, period=IGNORED_RATIO_PERIOD),
        },
        label=f"ignored / settled, {provider}",
        period=IGNORED_RATIO_PERIOD,
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: StackSettings,
        functions: dict[str, lambda_.IFunction],
        api_stage: apigwv2.IHttpStage,
        pipe_names: Mapping[str, str],
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        pipe_dead_letter_queue: sqs.IQueue,
        archive_failure_queue: sqs.IQueue,
        replay_state_machine: sfn.IStateMachine,
        downstream_dead_letter_queues: Sequence[tuple[str, sqs.IQueue, str]] = (),
        providers: Sequence[str] = definitions.PROVIDERS,
    ) -> None:
        """`functions`: every Lambda function of the stack by short name; `api_stage`: the stage gateways call;
        `pipe_names`: every Pipe's name by short name; `downstream_dead_letter_queues`: (alarm name, queue, what
        lands there) of the outbox's Pipes; `providers`: those of the declared sources (an ignored-ratio alarm
        each: a bounded set, the declaration's, never a value a delivery brings)."""
        super().__init__(scope, construct_id)
        stack_name = Stack.of(self).stack_name

        self.key = kms.Key(
            self,
            "AlarmTopicKey",
            description=f"Encrypts the alarm topic of {stack_name}; CloudWatch may use it to publish alarms",
            enable_key_rotation=True,
        )
        cloudwatch = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        same_account = {"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[cloudwatch],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
                conditions=same_account,
            )
        )
        self.topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name=f"{stack_name} alarms",
            master_key=self.key,
            enforce_ssl=True,
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[cloudwatch],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=same_account,
            )
        )
        if settings.alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(settings.alarm_email))
        action = cw_actions.SnsAction(self.topic)

        self.alarms: dict[str, cw.Alarm] = {}

        def alarm(
            name: str,
            metric: cw.IMetric,
            *,
            threshold: float,
            description: str,
            comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            periods: int = 1,
            missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
        ) -> cw.Alarm:
            created = cw.Alarm(
                self,
                "".join(part.capitalize() for part in name.split("-")) + "Alarm",
                alarm_name=f"{stack_name}-{name}",
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                comparison_operator=comparison,
                evaluation_periods=periods,
                datapoints_to_alarm=periods,
                treat_missing_data=missing,
            )
            created.add_alarm_action(action)
            created.add_ok_action(action)
            self.alarms[name] = created
            return created

        alarm(
            "failed-events",
            summed_over_providers(definitions.METRIC_EVENTS_FAILED, "failed events"),
            threshold=1,
            description=(
                "An event failed (retries exhausted, the gateway refused the key, an amount or currency mismatch). "
                "`inbox events list --status failed`, fix the cause, then `inbox replay`."
            ),
        )
        alarm(
            "unparseable-events",
            summed_over_providers(definitions.METRIC_EVENTS_UNPARSEABLE, "unparseable events"),
            threshold=1,
            description=(
                "A validly signed body could not be parsed: it is stored as failed with the reason. "
                "`inbox events list --status failed`; once the driver handles it, `inbox replay`."
            ),
        )
        sweep_period = Duration.minutes(max(5, settings.sweep_interval_minutes))
        alarm(
            "oldest-pending",
            service_metric(definitions.METRIC_OLDEST_PENDING_AGE, period=sweep_period),
            threshold=OLDEST_PENDING_THRESHOLD_SECONDS,
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            periods=2,
            missing=cw.TreatMissingData.BREACHING,
            description=(
                f"An event has been pending for more than {OLDEST_PENDING_THRESHOLD_SECONDS} s for two sweeps, or the "
                "sweeper stopped reporting. Check the processor's errors, the dispatch queue and the Pipe."
            ),
        )
        for name, dead_letters, what in (
            ("dead-letter-queue", dead_letter_queue, "events the processor gave up on (they are failed)"),
            ("pipe-dead-letter-queue", pipe_dead_letter_queue, "stream records the Pipe could not deliver"),
            ("archive-failures", archive_failure_queue, "TTL deletions the archiver could not archive"),
            *downstream_dead_letter_queues,
        ):
            alarm(
                name,
                dead_letters.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES, statistic="Maximum"),
                threshold=1,
                description=f"Messages are waiting in a dead-letter queue: {what}.",
            )
        alarm(
            "signature-rejections",
            summed_over_providers(definitions.METRIC_SIGNATURES_REJECTED, "signatures rejected"),
            threshold=SIGNATURE_REJECTIONS_THRESHOLD,
            description=(
                f"At least {SIGNATURE_REJECTIONS_THRESHOLD} deliveries refused for a bad signature in 5 minutes: a "
                "rotated signing secret not stored yet, a clock far off, or someone probing the endpoint."
            ),
        )
        for provider in providers:
            alarm(
                f"ignored-ratio-{provider}",
                ignored_ratio(provider),
                threshold=IGNORED_RATIO_THRESHOLD,
                comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
                description=(
                    f"More than {IGNORED_RATIO_THRESHOLD:.0%} of {provider}'s settled events were ignored in 15 "
                    f"minutes (at least {IGNORED_RATIO_MIN_EVENTS} events): stale or repeated deliveries, or "
                    "statuses the driver no longer maps."
                ),
            )

        # The front door and the plumbing, from the services' own metrics (see the module's docstring).
        alarm(
            "api-5xx",
            api_stage.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            description=(
                "The webhook API answered 5xx: the ingest crashed, timed out, was throttled or could not store the "
                "delivery, and the gateway will retry it. See lambda-ingest, the API's access log "
                "(integrationError) and the ingest's log."
            ),
        )
        for name, function in functions.items():
            alarm(
                f"lambda-{name}",
                function_errors_and_throttles(name, function),
                threshold=1,
                description=(
                    f"The {name} Lambda failed (an exception, an init crash, a timeout, out of memory) or was "
                    "throttled (concurrency exhausted). The dashboard tells errors from throttles; its log says why."
                ),
            )
        for name, pipe_name in pipe_names.items():
            alarm(
                f"pipe-{name}",
                pipe_failures(name, pipe_name),
                threshold=1,
                description=(
                    f"The {name} EventBridge Pipe reported failed, partially failed, timed-out or throttled "
                    "executions: it retries while the stream keeps its records (24 h), then dead-letters them. "
                    "Its log group (ERROR level) says why."
                ),
            )

        self.dashboard = self._dashboard(
            stack_name,
            functions,
            api_stage,
            pipe_names,
            queue,
            dead_letter_queue,
            pipe_dead_letter_queue,
            archive_failure_queue,
            replay_state_machine,
            downstream_dead_letter_queues,
        )

    def _dashboard(
        self,
        stack_name: str,
        functions: dict[str, lambda_.IFunction],
        api_stage: apigwv2.IHttpStage,
        pipe_names: Mapping[str, str],
        queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        pipe_dead_letter_queue: sqs.IQueue,
        archive_failure_queue: sqs.IQueue,
        replay_state_machine: sfn.IStateMachine,
        downstream_dead_letter_queues: Sequence[tuple[str, sqs.IQueue, str]],
    ) -> cw.Dashboard:
        def per_provider(*names: str) -> list[cw.IMetric]:
            return [every_provider(name) for name in names]

        def graph(
            title: str, left: Sequence[cw.IMetric], right: Sequence[cw.IMetric] = (), width: int = 8
        ) -> cw.GraphWidget:
            return cw.GraphWidget(title=title, left=list(left), right=list(right), width=width, height=6)

        dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"{stack_name}-flow")
        dashboard.add_widgets(
            cw.TextWidget(
                markdown=(
                    f"# {stack_name}: webhook flow\n"
                    "gateway -> ingest (verify, store once) -> inbox -> Pipe -> FIFO queue -> processor -> payments. "
                    "Failed events: `inbox events list --status failed`, then `inbox replay`."
                ),
                width=24,
                height=2,
            )
        )
        dashboard.add_widgets(
            graph(
                "Received, duplicates, rejected",
                per_provider(
                    definitions.METRIC_EVENTS_RECEIVED,
                    definitions.METRIC_DUPLICATES,
                    definitions.METRIC_SIGNATURES_REJECTED,
                ),
            ),
            graph(
                "Processed, ignored, failed",
                per_provider(
                    definitions.METRIC_EVENTS_PROCESSED,
                    definitions.METRIC_EVENTS_IGNORED,
                    definitions.METRIC_EVENTS_FAILED,
                    definitions.METRIC_EVENTS_UNPARSEABLE,
                ),
            ),
            graph(
                "Oldest pending (s), stuck and failed events",
                [service_metric(definitions.METRIC_OLDEST_PENDING_AGE)],
                [service_metric("StuckPendingEvents"), service_metric("FailedEvents")],
            ),
        )
        dashboard.add_widgets(
            graph(
                "Dispatch queue: depth and age of the oldest message",
                [queue.metric_approximate_number_of_messages_visible(statistic="Maximum")],
                [queue.metric_approximate_age_of_oldest_message(statistic="Maximum")],
            ),
            graph(
                "Dead-letter queues",
                [
                    q.metric_approximate_number_of_messages_visible(statistic="Maximum", label=label)
                    for q, label in (
                        (dead_letter_queue, "processor DLQ"),
                        (pipe_dead_letter_queue, "Pipe DLQ"),
                        (archive_failure_queue, "archive failures"),
                        *((q, name) for name, q, _ in downstream_dead_letter_queues),
                    )
                ],
            ),
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values()), width=8, height=6),
        )
        dashboard.add_widgets(
            graph(
                "Lambda errors",
                [fn.metric_errors(label=f"{name} errors", period=FIVE_MINUTES) for name, fn in functions.items()],
                width=12,
            ),
            graph(
                "Lambda duration p99 (ms)",
                [
                    fn.metric_duration(label=f"{name} p99", statistic="p99", period=FIVE_MINUTES)
                    for name, fn in functions.items()
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            graph(
                "Webhook API: requests, 4xx, 5xx",
                [api_stage.metric_count(label="requests", period=FIVE_MINUTES, statistic="Sum")],
                [
                    api_stage.metric_client_error(label="4xx", period=FIVE_MINUTES, statistic="Sum"),
                    api_stage.metric_server_error(label="5xx", period=FIVE_MINUTES, statistic="Sum"),
                ],
            ),
            graph(
                "Lambda throttles",
                [fn.metric_throttles(label=f"{name} throttles", period=FIVE_MINUTES) for name, fn in functions.items()],
            ),
            graph("Pipe failures", [pipe_failures(name, pipe_name) for name, pipe_name in pipe_names.items()]),
        )
        # The rejected-delivery log (shared/rejections.py): every refusal by reason; what was not recorded, by why.
        dashboard.add_widgets(
            graph(
                "Rejected deliveries by reason (`inbox rejected list`)",
                [
                    dimension_metric(definitions.METRIC_DELIVERIES_REJECTED, "reason", reason)
                    for reason in definitions.REJECTION_REASONS
                ],
                width=12,
            ),
            graph(
                "Rejected deliveries recorded, and not recorded by cause",
                [
                    dimension_metric(definitions.METRIC_REJECTIONS_RECORDED, "reason", reason)
                    for reason in definitions.REJECTION_REASONS
                    if reason != "unknown_source"
                ],
                [
                    dimension_metric(definitions.METRIC_REJECTIONS_NOT_RECORDED, "cause", cause)
                    for cause in definitions.REJECTION_NOT_RECORDED_CAUSES
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            graph(
                "Replay executions",
                [
                    replay_state_machine.metric_started(label="started"),
                    replay_state_machine.metric_succeeded(label="succeeded"),
                    replay_state_machine.metric_failed(label="failed"),
                ],
                width=12,
            ),
            graph(
                "Sweeper: re-dispatched events and reconciliations",
                [service_metric("EventsRedispatched", statistic="Sum")],
                [service_metric("ReconciliationsRequested", statistic="Sum")],
                width=12,
            ),
        )
        return dashboard
