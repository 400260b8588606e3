"""How every function of the inbox is built: one place for runtime, architecture, layer, logs and tracing.

- Python 3.13 on arm64 with one dependency layer per stack, built from uv.lock (Powertools, pydantic,
  cryptography, tzdata, the AWS SDK and their dependencies, as wheels for that platform: infra/dependency_layer.py),
  so the asset holds only our code (``functions/<name>/`` + the ``shared/`` modules it imports, see
  infra/assets.py). Both carry the runtime's bytecode where the synthesizing machine has that Python, and both are
  hashed from their sources, so whether it had does not change the deployed code (infra/bytecode.py).
- An explicit role with no managed policy: ``AWSLambdaBasicExecutionRole`` would allow creating log groups
  and writing to any of them. The role may write to the function's own log group only; everything else is
  granted by the stack, resource by resource.
- An explicit log group with a retention period and the JSON log format: Powertools' logger writes JSON, and
  with it Lambda filters by level. The application level is INFO (``-c inbox_log_level=DEBUG`` for an incident);
  the system level WARN, so the platform's START, END and REPORT lines (INFO and DEBUG events) are not written:
  log bytes billed per invocation for what Lambda's own metrics (Duration, Errors, Throttles) already count
  ("Log-level filtering", https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html).
- X-Ray active tracing only with ``-c inbox_tracing=true`` (infra/config.py says what it costs). Off, there is no
  TracingConfig (Lambda's PassThrough: the HTTP API, the queue and the schedules send no sampled header) and no
  X-Ray permission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.assets import function_asset_hash, stage_function_asset
from infra.config import FunctionObservability
from infra.constructs.access import Access
from infra.dependency_layer import (
    REQUIREMENTS_FILE,
    STAGING_FILES,
    layer_asset_hash,
    pinned_versions,
    stage_dependency_layer,
)
from infra.nag import acknowledge
from shared import definitions

RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
HANDLER = "handler.lambda_handler"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


DEPENDENCY_LAYER_ID = "DependencyLayer"
XRAY_WILDCARD_REASON = (
    "Active X-Ray tracing (-c inbox_tracing=true) needs xray:PutTraceSegments and xray:PutTelemetryRecords, which "
    "support no resource-level permission (the IAM reference lists no resource type for them): '*' is the only "
    "resource they can be granted on."
)


def dependency_layer(scope: Construct) -> lambda_.LayerVersion:
    """The stack's one dependency layer, created by the first function that asks for it (every function runs the
    same locked dependencies, so one layer version serves them all)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(DEPENDENCY_LAYER_ID)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    staged = Path(stage_dependency_layer())
    pins = pinned_versions((staged / REQUIREMENTS_FILE).read_text())
    return lambda_.LayerVersion(
        stack,
        DEPENDENCY_LAYER_ID,
        code=lambda_.Code.from_asset(str(staged), exclude=list(STAGING_FILES), asset_hash=layer_asset_hash(staged)),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[ARCHITECTURE],
        # The versions worth seeing from the console; the full list is the staged requirements.txt.
        description=(
            f"Locked runtime dependencies (uv.lock): aws-lambda-powertools {pins.get('aws-lambda-powertools')}, "
            f"pydantic {pins.get('pydantic')}, cryptography {pins.get('cryptography')}, tzdata {pins.get('tzdata')}, "
            f"boto3 {pins.get('boto3')}"
        ),
    )


@dataclass(frozen=True)
class FunctionSpec:
    """A function of functions/ as the stack deploys it: the construct id of its PythonFunction (part of every
    logical id beneath it), its asset, its sizing (shared/definitions/resources.py) and the description Lambda shows."""

    function_id: str
    asset_name: str
    memory_size: int
    timeout_seconds: int
    description: str


class PythonFunction(Construct):
    """A Lambda function from ``functions/<spec.asset_name>/handler.py``, with its role and log group. Each resource
    of `uses` is named in its environment and granted its actions; `environment` adds the settings."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        uses: Sequence[Access] = (),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)

        # Kept when the stack is deleted (CDK's default): logs outlive a teardown for the post-mortem, and the
        # retention period empties the group anyway.
        self.log_group = logs.LogGroup(self, "LogGroup", retention=LOG_RETENTION)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Execution role of the {spec.asset_name} function (no managed policies: grants are explicit)",
        )
        self.log_group.grant_write(self.role)
        observability = FunctionObservability.from_context(self.node)
        self.tracing = observability.tracing

        staged = stage_function_asset(spec.asset_name)
        self.function = lambda_.Function(
            self,
            "Function",
            description=spec.description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=lambda_.Code.from_asset(staged, asset_hash=function_asset_hash(staged)),
            memory_size=spec.memory_size,
            timeout=Duration.seconds(spec.timeout_seconds),
            role=self.role,
            log_group=self.log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel[observability.log_level],
            system_log_level_v2=lambda_.SystemLogLevel.WARN,
            tracing=lambda_.Tracing.ACTIVE if observability.tracing else lambda_.Tracing.DISABLED,
            layers=[dependency_layer(self)],
            environment={
                "POWERTOOLS_SERVICE_NAME": definitions.SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": definitions.METRICS_NAMESPACE,
                **{use.variable: use.value for use in uses if use.variable is not None and use.value is not None},
                **(environment or {}),
            },
        )
        for use in uses:
            use.grant(self.function)

        if self.tracing:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5[Resource::*]",
                XRAY_WILDCARD_REASON,
            )
        acknowledge(
            self.function,
            "AwsSolutions-L1",
            "Python 3.13 is pinned on purpose: the dependency layer is built from cp313 wheels (its compiled "
            "pydantic-core, cryptography and cffi must match the runtime's interpreter; "
            "infra/dependency_layer.py), and 3.13 is a supported runtime. Runtime and layer are moved together, "
            "deliberately, not by a linter.",
        )


class FunctionConstruct(Construct):
    """A construct that is one function of functions/ (`spec`), the resources its code uses (`uses`: named in its
    environment, granted their actions) and its settings (`environment`); `function` and `role` are its
    PythonFunction's. A subclass adds the grants that are not one resource's actions (secrets, S3)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: FunctionSpec,
        uses: Sequence[Access] = (),
        environment: Mapping[str, str] | None = None,
    ):
        super().__init__(scope, construct_id)
        built = PythonFunction(self, spec.function_id, spec=spec, uses=uses, environment=environment)
        self.function = built.function
        self.role = built.role
