"""The public edge: an HTTP API whose two routes go to the ingest Lambda.

``POST /webhooks/{provider}`` receives deliveries; ``GET /health`` answers 200 once the function is ready. Any
other path is answered 404 by API Gateway itself, without invoking anything. The stage throttles (rate and
burst from definitions) and writes one JSON access-log line per request: who, which route, what status, how
large, and any integration error. Never a body or a header: signatures and payment data stay out of the logs.
"""

from __future__ import annotations

import json

import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.constructs.vended_logs import vended_log_group
from infra.nag import acknowledge
from shared import definitions

# One line per request, billed per byte (docs/cost.md, "Logs"): not the request time (the log event's own
# timestamp), the route key (the method and the path say it), nor our answer's length.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "method": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
}
ACCESS_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS


class IngestApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        throttle: tuple[int, int] = (definitions.API_THROTTLE_RATE_LIMIT, definitions.API_THROTTLE_BURST_LIMIT),
    ) -> None:
        """`throttle`: the stage's (rate, burst), what the inbox table absorbs (`definitions.api_throttle`)."""
        super().__init__(scope, construct_id)

        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="Webhook Inbox: payment-gateway webhooks in, GET /health",
            create_default_stage=False,  # the stage is created below, with throttling and access logs
        )
        integration = integrations.HttpLambdaIntegration(
            "IngestIntegration", handler, payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0
        )
        routes = [
            *self.http_api.add_routes(
                path=definitions.WEBHOOK_ROUTE, methods=[apigwv2.HttpMethod.POST], integration=integration
            ),
            *self.http_api.add_routes(
                path=definitions.HEALTH_ROUTE, methods=[apigwv2.HttpMethod.GET], integration=integration
            ),
            # The segments some providers append to the registered URL (Efí's /pix): the same source.
            *(
                route
                for suffix in definitions.WEBHOOK_PATH_SUFFIXES
                for route in self.http_api.add_routes(
                    path=definitions.WEBHOOK_SUFFIX_ROUTE % suffix,
                    methods=[apigwv2.HttpMethod.POST],
                    integration=integration,
                )
            ),
        ]
        for route in routes:
            acknowledge(
                route,
                "AwsSolutions-APIG4",
                "Payment gateways cannot present IAM, JWT or Lambda-authorizer credentials: each delivery is "
                "authenticated by the provider's HMAC signature over the raw body, verified in constant time "
                "(with a timestamp tolerance) by the ingest before anything is stored (Efí Pix: its mutual-TLS "
                "client certificate, or its registered hmac); unsigned or badly signed requests get 401. "
                "GET /health is public by design and reveals nothing.",
            )

        # Under /aws/vendedlogs/: API Gateway adds the group to the account's CloudWatch Logs resource policy
        # otherwise, and that policy's size cap would fail the deploy (infra/constructs/vended_logs.py).
        self.access_log_group = vended_log_group(
            self, "AccessLogs", service="apigateway", purpose="access", retention=ACCESS_LOG_RETENTION
        )
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=throttle[0],
                burst_limit=throttle[1],
            ),
            access_log_settings=_AccessLogSettings(self.access_log_group),
        )

    @property
    def url(self) -> str:
        url = self.stage.url
        assert url is not None
        return url


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    """JSON access log lines (HttpStage takes an IAccessLogSettings; this is the plain implementation)."""

    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(log_group)
        self._format = apigateway.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS, separators=(",", ":")))

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return self._format
