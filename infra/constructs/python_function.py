"""How every function of the inbox is built: one place for runtime, architecture, layer, logs and tracing.

- Python 3.13 on arm64 with the official Powertools v3 layer (Powertools + pydantic); boto3 comes with the
  runtime, so the asset holds only our code (``functions/<name>/`` + ``shared/``, see infra/assets.py).
- An explicit role with no managed policy: ``AWSLambdaBasicExecutionRole`` would allow creating log groups
  and writing to any of them. The role may write to the function's own log group only; everything else is
  granted by the stack, resource by resource.
- An explicit log group with a retention period, JSON log format (Powertools' logger writes JSON; the platform
  lines become JSON too) and X-Ray active tracing.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import definitions
from infra.assets import stage_function_asset
from infra.config import POWERTOOLS_LAYER_ACCOUNT, POWERTOOLS_LAYER_NAME
from infra.nag import acknowledge

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
HANDLER = "handler.lambda_handler"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


def powertools_layer_arn(version: int) -> str:
    return f"arn:aws:lambda:{Aws.REGION}:{POWERTOOLS_LAYER_ACCOUNT}:layer:{POWERTOOLS_LAYER_NAME}:{version}"


class PythonFunction(Construct):
    """A Lambda function from ``functions/<asset_name>/handler.py``, with its role and log group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        asset_name: str,
        description: str,
        memory_size: int,
        timeout_seconds: int,
        powertools_layer_version: int,
        environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)

        # Kept when the stack is deleted (CDK's default): logs outlive a teardown for the post-mortem, and the
        # retention period empties the group anyway.
        self.log_group = logs.LogGroup(self, "LogGroup", retention=LOG_RETENTION)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the {asset_name} function (no managed policies: grants are explicit)",
        )
        self.log_group.grant_write(self.role)

        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(stage_function_asset(asset_name)),
            memory_size=memory_size,
            timeout=Duration.seconds(timeout_seconds),
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            tracing=lambda_.Tracing.ACTIVE,
            layers=[
                lambda_.LayerVersion.from_layer_version_arn(
                    self, "PowertoolsLayer", powertools_layer_arn(powertools_layer_version)
                )
            ],
            environment={
                "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
                **environment,
            },
        )

        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no "
            "resource-level permission (the IAM reference lists no resource type for them): '*' is the only "
            "resource they can be granted on.",
        )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "Python 3.13 is pinned on purpose: the official Powertools layer used here is the python313 build "
            "(its compiled pydantic-core must match the runtime), and 3.13 is a supported runtime. Runtime and "
            "layer are moved together, deliberately, not by a linter.",
        )
