"""Monitoring: the alarms an operator is paged for, their SNS topic, and (when asked for) a dashboard of the flow.

What each costs is what CloudWatch bills: every metric an alarm references, by the hour (a metric-math alarm pays
for each metric in its expression), the dashboard by the month, and each custom metric (namespace + name + dimension
set) for each hour it is sent (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_billing.html).
So the alarms below watch AWS's own metrics where one tells the failure (free metrics: only the alarm is paid), the
custom metrics are those of shared/observability.METRICS (service-wide unless an alarm needs a provider), and the
cost model (inbox_cli/cost.py, `fixed_monitoring`) counts the same alarms and metrics; tests/infra/test_monitoring.py
fails when it and the synthesized template disagree. docs/replay-and-monitoring.md says what each cut left out.

Alarms (each notifies the topic when it fires and when it recovers):
- ``failed-events``: any event failed (EventsFailed, from the processor, service-wide); and ``unparseable-events``:
  a verified body the ingest could not parse and stored as failed (EventsUnparseable). Which source, and why, is on
  the event (`inbox events list --status failed`). ``ignored`` never alarms: it is not an error.
- ``oldest-pending``: the oldest pending event (OldestPendingAgeSeconds, measured by the sweeper) is older than
  ``OLDEST_PENDING_THRESHOLD_SECONDS`` for two sweeps in a row. Missing data counts as breaching: the sweeper not
  reporting is itself something to look at (it also re-dispatches and reconciles).
- ``dead-letter-queue``, ``pipe-dead-letter-queue``, ``archive-failures``: a message is waiting there.
- ``archive-incomplete``: an item TTL removed was archived without its body or its attributes (ArchivedIncomplete,
  from the archiver); its archive line says why. The batch is not failed for it, so its shard goes on.
- ``signature-rejections``: more than ``SIGNATURE_REJECTIONS_THRESHOLD`` rejected signatures in five minutes
  (SignaturesRejected, service-wide: a rotated secret not yet stored, or someone probing the endpoint; the rejected
  log, `inbox rejected list`, names the source).
- ``payments-corrected``: at least ``PAYMENTS_CORRECTED_THRESHOLD`` payments in ``PAYMENTS_CORRECTED_PERIOD`` whose
  status was confirmed from a signed payload and then corrected by the gateway's API (PaymentsCorrected,
  service-wide): a few are a refund or a cancellation right after the payment; a rate of them is a payload reading
  that disagrees with the API. ``verifications-refused``: any verification whose API status the state machine
  refused (VerificationsRefused): the payment keeps its status, flagged `verification_refused`, for an operator.
  Both exist only when a declared provider may confirm from the payload (the catalog's `payload_status_from`).
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
  one alarm per function, two metrics each (errors and throttles are told apart on the dashboard). Not where
  another alarm already pages on the same failures (``ALARMED_THROUGH``; each alarm metric is billed): the ingest
  is invoked only by the API, which answers 5xx for each of its errors, timeouts and throttles (``api-5xx``); a
  throttled sweeper does not run, so the gauge it sends every run goes missing, which ``oldest-pending`` counts as
  breaching (the sweeper's errors keep their alarm: a run that fails may have sent the gauge first). Nor for a
  function only an operator's action invokes and that reports its failures to that operator
  (``REPORTED_TO_CALLER``): the replay's page function, whose errors and throttles the replay execution retries and,
  when they persist, fails with, which `inbox replay` and the console show to whoever started it. Nothing waits
  on it unattended (a replay is never started by the stack itself), and the replay's own DynamoDB tasks, which did
  that work before, had no alarm either.
- ``pipe-<pipe>``: each EventBridge Pipe's failed executions (``AWS/EventBridge/Pipes`` ``ExecutionFailed`` by
  PipeName: ``PIPE_ALARM_METRICS``). One metric, not the five failure counts Pipes publishes (each would be billed
  as one more alarm metric): every Pipe retries a bounded number of times and then dead-letters what it could not
  deliver, and each Pipe's dead-letter queue has its alarm, so a timed-out, throttled or partially failed
  execution that does not recover on retry still pages; this alarm is the early word. A Pipe that Pipes disabled
  emits nothing, which ``oldest-pending`` still catches for dispatch.

The only per-provider alarms are the ratio alarms, per provider by nature; the no-payment alarms are per declared
source (a bounded set: the declaration's, never a value a delivery brings), on one metric each. The optional
dashboard (context value ``inbox_dashboard``) draws the settled and ignored counts one line per provider with
SEARCH expressions, and all five Pipe failure counts (dashboards' own metric reads are not billed).

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
IGNORED_REASON_THRESHOLD = 10
PAYMENTS_CORRECTED_THRESHOLD = 10
PAYMENTS_CORRECTED_PERIOD = Duration.minutes(15)
IGNORED_REASON_PERIOD = Duration.minutes(15)
PIPES_NAMESPACE = "AWS/EventBridge/Pipes"
# The failure metrics of a Pipe (EventBridge user guide, "Logging and monitoring Amazon EventBridge Pipes":
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-pipes-monitoring.html), all counts by PipeName. An
# execution fails as a whole, partially (some records of the batch), by timing out, by being throttled, or in its
# target stage (the queue or function refused): the dashboard draws them all; the alarm watches ExecutionFailed
# (the dead-letter queues' alarms catch whatever retries do not cure; see the docstring).
PIPE_ALARM_METRICS = ("ExecutionFailed",)
# Function -> the alarm that already pages on its failures ("errors" and "throttles" of `lambda-<function>`), see
# the module's docstring. The function's alarm keeps the metrics not listed; none, and it has no alarm of its own.
ALARMED_THROUGH: dict[str, dict[str, str]] = {
    "ingest": {"errors": "api-5xx", "throttles": "api-5xx"},
    "sweeper": {"throttles": "oldest-pending"},
}
# Function -> who is told of its failures instead of an alarm (see the module's docstring).
REPORTED_TO_CALLER: dict[str, str] = {
    "replay-page": "the replay execution that invokes it fails, and `inbox replay` or the console reports it",
}
PIPE_FAILURE_METRICS = (
    "ExecutionFailed",
    "ExecutionPartiallyFailed",
    "ExecutionTimeout",
    "ExecutionThrottled",
    "TargetStageFailed",
)


def provider_metric(name: str, provider: str, *, statistic: str = "Sum", period: Duration = FIVE_MINUTES) -> cw.Metric:
    """A per-provider metric as the functions emit it (shared/observability: declared with a provider)."""
    return cw.Metric(
        namespace=definitions.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": definitions.SERVICE_NAME, "provider": provider},
        statistic=statistic,
        period=period,
        label=f"{name} {statistic} {provider}",
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


def source_reason_metric(
    name: str, source: str, reason: str, *, statistic: str = "Sum", period: Duration = FIVE_MINUTES
) -> cw.Metric:
    """A metric the functions emit per source and reason (shared/observability: count_ignored)."""
    return cw.Metric(
        namespace=definitions.METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": definitions.SERVICE_NAME, "source": source, "reason": reason},
        statistic=statistic,
        period=period,
        label=f"{name} {statistic} {source} {reason}",
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


def pipe_failures(label: str, pipe_name: str, names: Sequence[str] = PIPE_FAILURE_METRICS) -> cw.MathExpression:
    """The failures `names` a Pipe reports, summed (a missing count is 0: Pipes reports 0 only while it runs). The
    ids start with `label` (a lower-case word) so that one graph can draw several Pipes."""
    metrics = {
        f"{label}{name}": cw.Metric(
            namespace=PIPES_NAMESPACE,
            metric_name=name,
            dimensions_map={"PipeName": pipe_name},
            statistic="Sum",
            period=FIVE_MINUTES,
        )
        for name in names
    }
    return cw.MathExpression(
        expression=" + ".join(f"FILL({key}, 0)" for key in metrics),
        using_metrics=dict(metrics),
        label=f"{label} Pipe failures",
        period=FIVE_MINUTES,
    )


def function_failures(name: str, function: lambda_.IFunction, kinds: Sequence[str]) -> cw.MathExpression:
    """The sum of a function's `kinds` of failure: "errors" (its code, its init, its timeout), "throttles"."""
    metrics = {
        "errors": function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
        "throttles": function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
    }
    return cw.MathExpression(
        expression=" + ".join(f"FILL({kind}, 0)" for kind in kinds),
        using_metrics={kind: metrics[kind] for kind in kinds},
        label=f"{name} {' + '.join(kinds)}",
        period=FIVE_MINUTES,
    )


def alarmed_failures(name: str) -> tuple[str, ...]:
    """The kinds of failure `lambda-<name>` alarms on: those no other alarm pages on (`ALARMED_THROUGH`)."""
    return tuple(kind for kind in ("errors", "throttles") if kind not in ALARMED_THROUGH.get(name, {}))


def ignored_ratio(provider: str) -> cw.MathExpression:
    """The ignored share of a provider's settled events: EventsSettled's Average (each sample is 1 if ignored, 0 if
    processed), once SampleCount (the settled events) reaches the minimum."""
    return cw.MathExpression(
        expression=f"IF(FILL(settled, 0) >= {IGNORED_RATIO_MIN_EVENTS}, FILL(share, 0), 0)",
        using_metrics={
            "share": provider_metric(
                definitions.METRIC_EVENTS_SETTLED, provider, statistic="Average", period=IGNORED_RATIO_PERIOD
            ),
            "settled": provider_metric(
                definitions.METRIC_EVENTS_SETTLED, provider, statistic="SampleCount", period=IGNORED_RATIO_PERIOD
            ),
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
        sources: Sequence[str] | None = None,
    ) -> None:
        """`functions`: every Lambda function of the stack by short name; `api_stage`: the stage gateways call;
        `pipe_names`: every Pipe's name by short name; `downstream_dead_letter_queues`: (alarm name, queue, what
        lands there) of the outbox's Pipes; `providers`: those of the declared sources (an ignored-ratio alarm
        each: a bounded set, the declaration's, never a value a delivery brings); `sources`: the declared sources'
        names (an ignored-no-payment alarm each; default: one source per provider, named after it)."""
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
            service_metric(definitions.METRIC_EVENTS_FAILED, statistic="Sum"),
            threshold=1,
            description=(
                "An event failed (retries exhausted, the gateway refused the key, an amount or currency mismatch). "
                "`inbox events list --status failed`, fix the cause, then `inbox replay`."
            ),
        )
        alarm(
            "unparseable-events",
            service_metric(definitions.METRIC_EVENTS_UNPARSEABLE, statistic="Sum"),
            threshold=1,
            description=(
                "A validly signed body could not be parsed: it is stored as failed with the reason. "
                "`inbox events list --status failed`; once the driver handles it, `inbox replay`."
            ),
        )
        alarm(
            "archive-incomplete",
            service_metric(definitions.METRIC_ARCHIVED_INCOMPLETE, statistic="Sum"),
            threshold=1,
            description=(
                "An item removed by TTL was archived without its body (the body bucket no longer held it, or "
                "refused it) or without its attributes: its archive line says which (body_error, archive_error). "
                "Check the body bucket's lifecycle against the retention, and the archiver's log."
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
            service_metric(definitions.METRIC_SIGNATURES_REJECTED, statistic="Sum"),
            threshold=SIGNATURE_REJECTIONS_THRESHOLD,
            description=(
                f"At least {SIGNATURE_REJECTIONS_THRESHOLD} deliveries refused for a bad signature in 5 minutes: a "
                "rotated signing secret not stored yet, a clock far off, or someone probing the endpoint."
            ),
        )
        if any(definitions.provider_entry(provider).confirms_from_payload for provider in providers):
            alarm(
                "payments-corrected",
                service_metric(
                    definitions.METRIC_PAYMENTS_CORRECTED, statistic="Sum", period=PAYMENTS_CORRECTED_PERIOD
                ),
                threshold=PAYMENTS_CORRECTED_THRESHOLD,
                description=(
                    f"At least {PAYMENTS_CORRECTED_THRESHOLD} payments confirmed from a signed webhook were corrected "
                    "by the gateway's API in 15 minutes (PaymentsCorrected): the corrections are published as "
                    "ordinary status changes, but a rate of them means the payload reading disagrees with the API. "
                    "The processor's log ('payment verification disagreed') names each payment and source; set the "
                    "source's confirm_from_payload to never until the cause is found."
                ),
            )
            alarm(
                "verifications-refused",
                service_metric(definitions.METRIC_VERIFICATIONS_REFUSED, statistic="Sum"),
                threshold=1,
                description=(
                    "The gateway's API reported a status the state machine refuses for a payment confirmed from a "
                    "signed webhook (VerificationsRefused): nothing was applied, the payment keeps its status and is "
                    "flagged verification_refused. `inbox payments show` the payment (the log names it), compare "
                    "with the gateway's dashboard, and decide."
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

        for source in providers if sources is None else sources:
            alarm(
                f"ignored-no-payment-{source}",
                source_reason_metric(
                    definitions.METRIC_EVENTS_IGNORED,
                    source,
                    definitions.ALARMED_IGNORED_REASON,
                    period=IGNORED_REASON_PERIOD,
                ),
                threshold=IGNORED_REASON_THRESHOLD,
                description=(
                    f"Source {source} ignored at least {IGNORED_REASON_THRESHOLD} payment events in 15 minutes that "
                    "name no payment (EventsIgnored, reason no_payment): a driver that lost the resource, or a "
                    f"gateway that changed its payload. `inbox events list --source {source} --status ignored` shows "
                    "each one's ignored_reason."
                ),
            )

        # The front door and the plumbing, from the services' own metrics (see the module's docstring).
        alarm(
            "api-5xx",
            api_stage.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
            threshold=1,
            description=(
                "The webhook API answered 5xx: the ingest crashed, timed out, was throttled or could not store the "
                "delivery, and the gateway will retry it (this is the ingest function's alarm). See the ingest's "
                "Errors and Throttles (AWS/Lambda), the API's access log (integrationError) and the ingest's log."
            ),
        )
        for name, function in functions.items():
            kinds = alarmed_failures(name)
            if not kinds:
                continue
            alarm(
                f"lambda-{name}",
                function_failures(name, function, kinds),
                threshold=1,
                description=(
                    f"The {name} Lambda failed (an exception, an init crash, a timeout, out of memory)"
                    + (" or was throttled (concurrency exhausted)" if "throttles" in kinds else "")
                    + ". The dashboard tells errors from throttles; its log says why."
                ),
            )
        for name, pipe_name in pipe_names.items():
            alarm(
                f"pipe-{name}",
                pipe_failures(name, pipe_name, PIPE_ALARM_METRICS),
                threshold=1,
                description=(
                    f"The {name} EventBridge Pipe reported failed executions: it retries a bounded number of times, "
                    "then dead-letters the records (that queue alarms too). Its log group (ERROR level) says why."
                ),
            )

        # Optional (context value inbox_dashboard): $3 a month, for graphs of what the alarms already watch.
        self.dashboard: cw.Dashboard | None = None
        if settings.dashboard:
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
                "Deliveries, rejected signatures, storage failures",
                [api_stage.metric_count(label="deliveries", period=FIVE_MINUTES, statistic="Sum")],
                [
                    service_metric(definitions.METRIC_SIGNATURES_REJECTED, statistic="Sum"),
                    service_metric(definitions.METRIC_STORAGE_FAILURES, statistic="Sum"),
                ],
            ),
            graph(
                "Settled, ignored (per provider), failed",
                [
                    every_provider(definitions.METRIC_EVENTS_SETTLED, statistic="SampleCount"),
                    every_provider(definitions.METRIC_EVENTS_SETTLED, statistic="Sum"),
                ],
                [
                    service_metric(definitions.METRIC_EVENTS_FAILED, statistic="Sum"),
                    service_metric(definitions.METRIC_EVENTS_UNPARSEABLE, statistic="Sum"),
                ],
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
                "Rejected deliveries, recorded, and not recorded by cause (reasons: `inbox rejected list`)",
                [
                    service_metric(definitions.METRIC_DELIVERIES_REJECTED, statistic="Sum"),
                    service_metric(definitions.METRIC_REJECTIONS_RECORDED, statistic="Sum"),
                ],
                [
                    dimension_metric(definitions.METRIC_REJECTIONS_NOT_RECORDED, "cause", cause)
                    for cause in definitions.REJECTION_NOT_RECORDED_CAUSES
                ],
                width=24,
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
