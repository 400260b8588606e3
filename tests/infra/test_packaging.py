"""The synthesized function assets (ingest, process) run as Lambda would run them: in a clean interpreter whose
only code is the asset (/var/task), the Powertools layer (/opt/python) and the runtime's boto3 - nothing from the
dev venv.

The "layer" holds aws-lambda-powertools and pydantic, the "runtime" boto3, at the versions the venv resolved
(uv.lock), installed with uv into build/lambda-layer-cache/<hash of the versions>/ once and reused. A module
missing from the asset, an import of something the layer does not carry, or a handler that breaks outside the
test harness fails here, not in AWS.

Not simulated: the interpreter is the venv's CPython (3.11) on x86_64, not Lambda's 3.13 on arm64.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from constructs import IConstruct

from infra import definitions

from .conftest import Synthesized

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

REPO_ROOT = Path(__file__).resolve().parents[2]
UV = REPO_ROOT / ".tools" / "bin" / "uv"
CACHE_ROOT = REPO_ROOT / "build" / "lambda-layer-cache"

LAYER_PACKAGES = ("aws-lambda-powertools", "pydantic")  # what the official Powertools layer carries for us
RUNTIME_PACKAGES = ("boto3",)  # what the Lambda Python runtime carries

RUNTIME_ENVIRONMENT = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}
LAMBDA_ENVIRONMENT = {
    **RUNTIME_ENVIRONMENT,
    "AWS_LAMBDA_FUNCTION_NAME": "ingest",
    "INBOX_TABLE": "x",
    "INBOX_BODY_BUCKET": "x",
    "INBOX_SECRET_PREFIX": "x/",
    "INBOX_SECRET_STRIPE": "whsec_test",
    "POWERTOOLS_METRICS_NAMESPACE": "WebhookInbox",
    "POWERTOOLS_SERVICE_NAME": "webhook-inbox",
}


def _pins(packages: tuple[str, ...]) -> list[str]:
    return [f"{name}=={version(name)}" for name in packages]


def _install(target: Path, requirements: list[str]) -> None:
    subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", sys.executable, "--target", str(target), *requirements],
        check=True,
        timeout=600,
        capture_output=True,
    )


def _lambda_dependencies() -> tuple[Path, Path]:
    """(layer dir, runtime dir), installed once per set of versions."""
    layer_pins, runtime_pins = _pins(LAYER_PACKAGES), _pins(RUNTIME_PACKAGES)
    key = json.dumps([sys.implementation.cache_tag, layer_pins, runtime_pins])
    cached = CACHE_ROOT / hashlib.sha256(key.encode()).hexdigest()[:16]
    if not (cached / "complete").exists():
        if not UV.exists():
            pytest.fail(f"uv not found at {UV}: the project's setup installs it")
        CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=CACHE_ROOT))
        try:
            _install(staging / "layer", layer_pins)
            _install(staging / "runtime", runtime_pins)
            (staging / "complete").write_text(key)
            try:
                staging.rename(cached)
            except OSError:  # another worker finished first: theirs is as good as ours
                if not (cached / "complete").exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return cached / "layer", cached / "runtime"


# Runs inside the isolated interpreter: argv[1] is a JSON list of sys.path entries, argv[2] the events, argv[3] a
# JSON list of "module:callable" probes, called without arguments after the events; each reports its result, or
# the name of its result's type when that is not JSON.
RUNNER = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = json.loads(sys.argv[1])
    for entry in sys.path[3:]:
        assert "site-packages" not in entry and "dist-packages" not in entry, f"leaked path {entry}"

    import importlib, os
    name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]

    class Context:
        function_name = name
        function_version = "$LATEST"
        memory_limit_in_mb = 512
        invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e812345678"
        log_group_name = f"/aws/lambda/{name}"
        log_stream_name = "2024/01/01/[$LATEST]abcdef"
        def get_remaining_time_in_millis(self):
            return 10_000

    import handler
    import aws_lambda_powertools, boto3, pydantic
    origins = {m.__name__: m.__file__ for m in (handler, aws_lambda_powertools, boto3, pydantic)}
    results = [handler.lambda_handler(event, Context()) for event in json.loads(sys.argv[2])]
    probes = {}
    for probe in json.loads(sys.argv[3]):
        module, attributes = probe.split(":")
        target = importlib.import_module(module)
        for attribute in attributes.split("."):
            target = getattr(target, attribute)
        value = target()
        try:
            probes[probe] = json.loads(json.dumps(value))
        except TypeError:
            probes[probe] = type(value).__name__
    print(json.dumps({"origins": origins, "results": results, "probes": probes}))
    """
)


def _http_api_event(
    method: str,
    path: str,
    *,
    route_key: str,
    body: str = "",
    headers: dict[str, str] | None = None,
    path_parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) event, as the integration sends it."""
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "host": "abc123.execute-api.us-east-1.amazonaws.com",
            "user-agent": "packaging-test",
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "packaging-test",
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": route_key,
            "stage": "$default",
            "time": "10/Mar/2025:12:00:00 +0000",
            "timeEpoch": 1741608000000,
        },
        "isBase64Encoded": False,
    }
    if body:
        event["body"] = body
    if path_parameters:
        event["pathParameters"] = path_parameters
    return event


def _asset(synthesized: Synthesized, function: IConstruct) -> Path:
    """The folder CDK zips and uploads for a function, found through the template's S3 key."""
    _function_id, resource = synthesized.resource(function)
    asset_hash = resource["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    asset = synthesized.assembly_dir / f"asset.{asset_hash}"
    assert (asset / "handler.py").is_file(), f"{asset} holds no handler.py"
    return asset


def _run_in_lambda_like_interpreter(
    asset: Path, environment: dict[str, str], events: list[Any], probes: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Run the asset's handler on `events` (then the probes) in the isolated interpreter; check where each
    module came from; return the handler's results and the probes' values."""
    layer, runtime = _lambda_dependencies()
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            RUNNER,
            json.dumps([str(asset), str(layer), str(runtime)]),
            json.dumps(events),
            json.dumps(list(probes)),
        ],
        env=environment,
        cwd=asset,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])

    origins = output["origins"]
    assert origins["handler"] == str(asset / "handler.py")
    assert origins["aws_lambda_powertools"].startswith(str(layer))
    assert origins["pydantic"].startswith(str(layer))
    assert origins["boto3"].startswith(str(runtime))
    return output


def test_ingest_asset_runs_in_a_lambda_like_interpreter(synthesized: Synthesized) -> None:
    asset = _asset(synthesized, synthesized.stack.ingest.function)
    stripe_body = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": {}}})
    events = [
        _http_api_event("GET", "/health", route_key="GET /health"),
        _http_api_event(
            "POST",
            "/webhooks/nope",
            route_key="POST /webhooks/{provider}",
            body="{}",
            headers={"content-type": "application/json"},
            path_parameters={"provider": "nope"},
        ),
        _http_api_event(
            "POST",
            "/webhooks/stripe",
            route_key="POST /webhooks/{provider}",
            body=stripe_body,
            headers={"content-type": "application/json", "stripe-signature": "t=1741608000,v1=" + "0" * 64},
            path_parameters={"provider": "stripe"},
        ),
    ]
    output = _run_in_lambda_like_interpreter(asset, LAMBDA_ENVIRONMENT, events)

    health, unknown_provider, bad_signature = output["results"]
    assert health["statusCode"] == 200, health
    assert unknown_provider["statusCode"] == 404, unknown_provider
    assert bad_signature["statusCode"] == 401, bad_signature
    for response in output["results"]:
        json.loads(response["body"])  # the gateway is always answered with JSON


def _processor_environment(synthesized: Synthesized) -> dict[str, str]:
    """The processor's environment as the stack sets it; references to resources become sample values. Every AWS
    endpoint is a closed local port: whatever the handler calls fails at once, as an unreachable service would."""
    _function_id, function = synthesized.resource(synthesized.stack.processor.function)
    samples = {
        definitions.ENV_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/dispatch.fifo",
        definitions.ENV_DLQ_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/dead-letter.fifo",
    }
    variables = {
        name: value if isinstance(value, str) else samples.get(name, f"sample-{name.lower()}")
        for name, value in function["Properties"]["Environment"]["Variables"].items()
    }
    return {
        **RUNTIME_ENVIRONMENT,
        "AWS_LAMBDA_FUNCTION_NAME": "process",
        "AWS_ENDPOINT_URL": UNREACHABLE_ENDPOINT,
        **variables,
    }


UNREACHABLE_ENDPOINT = "http://127.0.0.1:9"  # the discard port: nothing listens there


def _sqs_fifo_record(message_id: str, body: str, group_id: str) -> dict[str, Any]:
    """A message of the dispatch queue as the event source mapping hands it to the function."""
    return {
        "messageId": message_id,
        "receiptHandle": f"receipt-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1741608000000",
            "SequenceNumber": "18849496460467696128",
            "MessageGroupId": group_id,
            "SenderId": "AROAEXAMPLE:pipes",
            "MessageDeduplicationId": f"dedup-{message_id}",
            "ApproximateFirstReceiveTimestamp": "1741608000001",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:dispatch.fifo",
        "awsRegion": "us-east-1",
    }


def test_process_asset_runs_in_a_lambda_like_interpreter(synthesized: Synthesized) -> None:
    """The processor, with the stack's own environment, builds its processor (settings validated) and answers
    an SQS batch with a partial batch response. AWS is out of reach here, so both messages must come back as
    failures rather than be lost: the well-formed one cannot load its event, and the malformed one (which would
    be parked in the dead-letter queue) cannot be sent there. The processor can refetch from exactly the
    providers the stack creates API-key secrets for. (Against moto, the integration tests go further.)"""
    asset = _asset(synthesized, synthesized.stack.processor.function)
    batch = {
        "Records": [
            _sqs_fifo_record("m-malformed", "{not json", "stripe#pi_1"),
            _sqs_fifo_record(
                "m-valid",
                json.dumps({"pk": "stripe#evt_1", "dispatch_id": "d1", "dispatch_reason": "received"}),
                "stripe#pi_2",
            ),
        ]
    }
    output = _run_in_lambda_like_interpreter(
        asset,
        _processor_environment(synthesized),
        [batch],
        probes=("shared.process.app:default_processor", "shared.gateway.registry:supported_providers"),
    )
    assert output["results"] == [
        {"batchItemFailures": [{"itemIdentifier": "m-malformed"}, {"itemIdentifier": "m-valid"}]}
    ]
    assert output["probes"] == {
        "shared.process.app:default_processor": "EventProcessor",
        "shared.gateway.registry:supported_providers": list(definitions.REFETCH_PROVIDERS),
    }


def _environment_of(synthesized: Synthesized, function: IConstruct, name: str) -> dict[str, str]:
    """A function's environment as the stack sets it (references become sample values), AWS out of reach."""
    _function_id, resource = synthesized.resource(function)
    variables = {
        key: value if isinstance(value, str) else f"sample-{key.lower()}"
        for key, value in resource["Properties"]["Environment"]["Variables"].items()
    }
    return {
        **RUNTIME_ENVIRONMENT,
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_ENDPOINT_URL": UNREACHABLE_ENDPOINT,
        **variables,
    }


def _outbox_stream_record(event_name: str) -> dict[str, Any]:
    """An outbox stream record as a Pipe hands it to its target (a TTL deletion here: nothing to publish)."""
    return {
        "eventID": "1",
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {"Keys": {"pk": {"S": "stripe#pi_1"}, "sequence": {"N": "1"}}, "SequenceNumber": "100"},
    }


def test_publisher_and_forwarder_assets_run_in_a_lambda_like_interpreter(synthesized: Synthesized) -> None:
    """Both downstream functions import from their asset and the layer alone and answer a Pipe batch that holds
    no event (a TTL deletion the filter would drop anyway) without calling AWS: nothing to publish or sign."""
    outbox = synthesized.stack.outbox
    assert outbox.forwarder is not None
    for function, name, key in (
        (outbox.publisher, "publisher", "published"),
        (outbox.forwarder, "forwarder", "forwarded"),
    ):
        asset = _asset(synthesized, function)
        output = _run_in_lambda_like_interpreter(
            asset, _environment_of(synthesized, function, name), [[], [_outbox_stream_record("REMOVE")]]
        )
        assert output["results"] == [{key: 0}, {key: 0}], name
