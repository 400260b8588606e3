"""The synthesized Lambda code: the dependency layer as deployed, and each function asset run as Lambda would run it.

The layer (what AWS runs): the staged folder CDK zips for the stack's LayerVersion is checked as it is, for the
platform it is built for (CPython 3.13, manylinux aarch64, glibc <= 2.34): every distribution at uv.lock's
version, the AWS SDK (boto3, botocore, urllib3) at the versions the tests ran, every wheel tagged for that
platform, within Lambda's unzipped size limit. The assets and the layer carry the runtime's bytecode where synth
found CPython 3.13, and their S3 keys are the hashes of their sources, whatever bytecode they carry.

The run (what the layer's code does): this machine is x86_64 with Python 3.11, so the layer's compiled aarch64
wheels cannot be imported here. The functions run instead in a clean interpreter whose only code is the asset
(/var/task), a host copy of the layer (/opt/python) and a runtime SDK after them (/var/runtime, whose boto3 the
layer's shadows) - nothing from the dev venv. The host
copy is installed from the very requirement list the layer was built from (uv.lock's versions and hashes), for
this interpreter, into build/lambda-layer-cache/<hash>/ once and reused; a test checks it holds the same
distributions at the same versions as the deployed layer. So a module missing from the asset, an import of
something the layer does not carry, or a handler that breaks outside the test harness fails here, not in AWS.

Not simulated: the interpreter (3.11 on x86_64 here, 3.13 on arm64 in Lambda) and the compiled wheels' builds.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import tomllib
from collections.abc import Iterator
from email.parser import Parser
from importlib.metadata import version
from pathlib import Path
from typing import Any

import boto3
import pytest
from constructs import IConstruct

from infra.assets import SourceModule, function_asset_hash, module_facts
from infra.bytecode import PYCACHE, UNCHECKED_HASH_FLAGS, cache_tag_of, compiled_modules, find_runtime_python
from infra.constructs.python_function import ARCHITECTURE, RUNTIME
from infra.dependency_layer import (
    GLIBC,
    LAYER_PYTHON_DIR,
    MACHINE,
    PYTHON_TAG,
    PYTHON_VERSION,
    UV,
    install,
    layer_asset_hash,
    layer_requirements,
    normalize,
    pinned_versions,
    stage_dependency_layer,
)
from shared import definitions

from .conftest import Synthesized

# One worker runs them all (`--dist loadgroup`): the session fixture synthesizes once, not once per worker.
pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ROOT = REPO_ROOT / "build" / "lambda-layer-cache"

RUNTIME_PACKAGES = ("boto3",)  # what the Lambda Python runtime carries (the layer's SDK comes first)
AWS_SDK = ("boto3", "botocore", "s3transfer", "urllib3")
# Lambda's limit on a function's code and layers, extracted: 250 MB, which Lambda's own error states in bytes
# ("Unzipped size must be smaller than 262144000 bytes").
# https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
UNZIPPED_CODE_LIMIT_BYTES = 262_144_000

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
    "POWERTOOLS_METRICS_NAMESPACE": "WebhookInbox",
    "POWERTOOLS_SERVICE_NAME": "webhook-inbox",
}


def _staged_layer(synthesized: Synthesized) -> Path:
    """The folder CDK zips for the stack's dependency layer (its python/ is /opt/python), found through the
    template: the one LayerVersion, its S3 key naming the asset."""
    (_layer_id, layer) = synthesized.only("AWS::Lambda::LayerVersion")
    asset_hash = layer["Properties"]["Content"]["S3Key"].removesuffix(".zip")
    folder = synthesized.assembly_dir / f"asset.{asset_hash}"
    assert (folder / LAYER_PYTHON_DIR).is_dir(), f"{folder} holds no {LAYER_PYTHON_DIR}/"
    return folder


def _distributions(site: Path) -> dict[str, str]:
    """{normalized name: version} of the distributions installed in a site folder (their dist-info METADATA)."""
    found: dict[str, str] = {}
    for metadata_file in site.glob("*.dist-info/METADATA"):
        metadata = Parser().parsestr(metadata_file.read_text(encoding="utf-8"), headersonly=True)
        found[normalize(metadata["Name"])] = metadata["Version"]
    return found


def _locked_versions() -> dict[str, str]:
    """{normalized name: version} of every package in uv.lock, read from the lock file itself."""
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    return {normalize(package["name"]): package["version"] for package in lock["package"] if "version" in package}


def _install_for_host(target: Path, requirements: list[str]) -> None:
    subprocess.run(
        [str(UV), "pip", "install", "--quiet", "--python", sys.executable, "--target", str(target), *requirements],
        check=True,
        timeout=600,
        capture_output=True,
    )


def _lambda_dependencies(synthesized: Synthesized) -> tuple[Path, Path]:
    """(host copy of the layer, runtime dir), installed once per requirement list and interpreter. The list is
    the one the synth built the layer from (`uv export` of uv.lock, as infra/dependency_layer.py stages it)."""
    _staged_layer(synthesized)  # the stack has its layer, built from this same list
    requirements = layer_requirements()
    runtime_pins = [f"{name}=={version(name)}" for name in RUNTIME_PACKAGES]
    key = json.dumps([sys.implementation.cache_tag, requirements, runtime_pins])
    cached = CACHE_ROOT / hashlib.sha256(key.encode()).hexdigest()[:16]
    if not (cached / "complete").exists():
        if not UV.exists():
            pytest.fail(f"uv not found at {UV}: the project's setup installs it")
        CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=CACHE_ROOT))
        try:
            # The layer's own requirement list, for this interpreter: same versions, same hashes, host wheels.
            install(requirements, staging / "layer", platform=None, python_version=None)
            _install_for_host(staging / "runtime", runtime_pins)
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
    synthesized: Synthesized,
    asset: Path,
    environment: dict[str, str],
    events: list[Any],
    probes: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run the asset's handler on `events` (then the probes) in the isolated interpreter; check where each
    module came from; return the handler's results and the probes' values."""
    layer, runtime = _lambda_dependencies(synthesized)
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-B",  # /var/task and /opt are read-only in Lambda: nothing is written beside the uploaded code
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
    assert origins["boto3"].startswith(str(layer))  # the pinned SDK, not the runtime's
    return output


@pytest.fixture
def secrets_manager() -> Iterator[str]:
    """A Secrets Manager the isolated interpreter reaches over HTTP (moto's server), holding Stripe's signing
    secret where the ingest looks for it (`{INBOX_SECRET_PREFIX}stripe`): the function reads its secrets there
    only, as in AWS. Yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        boto3.client(
            "secretsmanager",
            endpoint_url=endpoint,
            region_name=RUNTIME_ENVIRONMENT["AWS_REGION"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_secret(
            Name=f"{LAMBDA_ENVIRONMENT['INBOX_SECRET_PREFIX']}stripe",
            SecretString=json.dumps({"current": "whsec_test", "previous": ""}),
        )
        yield endpoint
    finally:
        server.stop()


def test_ingest_asset_runs_in_a_lambda_like_interpreter(synthesized: Synthesized, secrets_manager: str) -> None:
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
    environment = {**LAMBDA_ENVIRONMENT, "AWS_ENDPOINT_URL": secrets_manager}
    output = _run_in_lambda_like_interpreter(synthesized, asset, environment, events)

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
        synthesized,
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
            synthesized, asset, _environment_of(synthesized, function, name), [[], [_outbox_stream_record("REMOVE")]]
        )
        assert output["results"] == [{key: 0}, {key: 0}], name


def test_every_function_runs_on_the_stack_dependency_layer(synthesized: Synthesized) -> None:
    # Given the synthesized stack, Then there is one layer, for the functions' runtime and architecture
    layer_id, layer = synthesized.only("AWS::Lambda::LayerVersion")
    assert layer["Properties"]["CompatibleRuntimes"] == [RUNTIME.name] == [f"python{PYTHON_VERSION}"]
    assert layer["Properties"]["CompatibleArchitectures"] == [ARCHITECTURE.name] == ["arm64"]
    assert MACHINE == "aarch64"  # arm64 in Lambda's words
    # And every one of our functions uses it, and no other layer (no public layer ARN, no per-partition account)
    ours = {
        logical_id: function
        for logical_id, function in synthesized.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == "handler.lambda_handler"
    }
    assert len(ours) >= 6, sorted(ours)
    for logical_id, function in ours.items():
        assert function["Properties"]["Layers"] == [{"Ref": layer_id}], logical_id
    # And what is uploaded is the layer's python/ folder alone (the staging's requirement list stays behind)
    assert [p.name for p in _staged_layer(synthesized).iterdir()] == [LAYER_PYTHON_DIR]


def test_layer_holds_uv_lock_versions_the_aws_sdk_included(synthesized: Synthesized) -> None:
    # Given the layer as CDK uploads it
    site = _staged_layer(synthesized) / LAYER_PYTHON_DIR
    installed = _distributions(site)
    locked = _locked_versions()
    # Then every distribution in it is at uv.lock's version
    assert {name: locked.get(name) for name in installed} == installed
    # And it carries what the functions import from it, the AWS SDK included (not the runtime's, whatever AWS
    # last put there): at the versions the tests ran with, which are uv.lock's
    assert {"aws-lambda-powertools", "pydantic", "pydantic-core", "cryptography", "cffi", "tzdata"} <= set(installed)
    assert {name: installed.get(name) for name in AWS_SDK} == {name: version(name) for name in AWS_SDK}


def test_layer_requirements_pin_the_aws_sdk_to_uv_lock() -> None:
    # Given the requirement list the layer is built from (uv.lock, exported)
    pins = pinned_versions(layer_requirements())
    locked = _locked_versions()
    # Then boto3, botocore and urllib3 (and what the SDK needs) are pinned there, at uv.lock's versions
    assert {name: pins.get(name) for name in AWS_SDK} == {name: locked[name] for name in AWS_SDK}
    # And every pin is uv.lock's: the lock is the one place the versions are written
    assert {name: locked.get(name) for name in pins} == pins


_MANYLINUX = re.compile(r"manylinux_(\d+)_(\d+)_(\w+)")
_LEGACY_MANYLINUX = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}


def _runs_on_lambda(tag: str) -> bool:
    """Whether one wheel tag (interpreter-abi-platform) installs on CPython 3.13, manylinux aarch64, glibc 2.34."""
    interpreters, abis, platforms = tag.split("-")

    def python_ok(interpreter: str, abi: str) -> bool:
        if abi == "none":
            return interpreter in {"py3", PYTHON_TAG}
        if abi == PYTHON_TAG:
            return interpreter == PYTHON_TAG
        stable = re.fullmatch(r"cp3(\d+)", interpreter)  # abi3: built for 3.N, runs on every later 3.x
        return abi == "abi3" and stable is not None and int(stable.group(1)) <= int(PYTHON_TAG[3:])

    def platform_ok(platform: str) -> bool:
        if platform == "any":
            return True
        legacy, _, machine = platform.partition("_")
        if legacy in _LEGACY_MANYLINUX:
            return machine == MACHINE and _LEGACY_MANYLINUX[legacy] <= GLIBC
        match = _MANYLINUX.fullmatch(platform)
        return match is not None and match[3] == MACHINE and (int(match[1]), int(match[2])) <= GLIBC

    return any(
        python_ok(interpreter, abi) for interpreter in interpreters.split(".") for abi in abis.split(".")
    ) and any(platform_ok(platform) for platform in platforms.split("."))


@pytest.mark.parametrize(
    ("tag", "runs"),
    [
        ("py3-none-any", True),
        ("cp313-cp313-manylinux_2_17_aarch64", True),
        ("cp311-abi3-manylinux_2_34_aarch64", True),  # stable ABI built for 3.11 runs on 3.13
        ("cp313-cp313-manylinux2014_aarch64", True),
        ("cp313-cp313-manylinux_2_35_aarch64", False),  # needs a newer glibc than Amazon Linux 2023's
        ("cp313-cp313-manylinux_2_17_x86_64", False),
        ("cp311-cp311-manylinux_2_17_aarch64", False),  # another interpreter's ABI
        ("cp314-abi3-manylinux_2_17_aarch64", False),
        ("cp313-cp313-musllinux_1_2_aarch64", False),
    ],
)
def test_wheel_tag_check_tells_lambda_wheels_apart(tag: str, runs: bool) -> None:
    # Given a wheel tag, Then the check accepts it exactly when it installs on python3.13 arm64 (AL2023)
    assert _runs_on_lambda(tag) is runs


def test_layer_wheels_are_built_for_the_lambda_platform(synthesized: Synthesized) -> None:
    # Given the layer as CDK uploads it
    site = _staged_layer(synthesized) / LAYER_PYTHON_DIR
    wheels = sorted(site.glob("*.dist-info/WHEEL"))
    assert wheels
    # Then each wheel has a tag that installs on cp313 / abi3, manylinux aarch64 with glibc <= 2.34
    for wheel in wheels:
        tags = Parser().parsestr(wheel.read_text()).get_all("Tag") or []
        assert any(_runs_on_lambda(tag) for tag in tags), f"{wheel.parent.name}: {tags}"
    # And every compiled library in it is an aarch64 ELF (e_machine 183), not this machine's x86_64
    libraries = sorted(site.rglob("*.so"))
    assert libraries  # pydantic-core, cryptography, cffi
    for library in libraries:
        header = library.read_bytes()[:20]
        assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183, library


def test_layer_and_largest_function_fit_lambdas_unzipped_limit(synthesized: Synthesized) -> None:
    # Given the layer and the function assets as CDK uploads them
    def size(folder: Path) -> int:
        return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())

    layer_bytes = size(_staged_layer(synthesized) / LAYER_PYTHON_DIR)
    functions = synthesized.resources("AWS::Lambda::Function").values()
    largest_function = max(
        size(synthesized.assembly_dir / f"asset.{f['Properties']['Code']['S3Key'].removesuffix('.zip')}")
        for f in functions
        if "S3Key" in f["Properties"]["Code"]
    )
    # Then a function with its layer, extracted, stays under Lambda's 250 MB, with room to grow: under a third
    # (the AWS SDK is about half of it: botocore's service models)
    assert layer_bytes + largest_function < UNZIPPED_CODE_LIMIT_BYTES / 3, (layer_bytes, largest_function)


def test_host_copy_of_the_layer_holds_the_same_distributions(synthesized: Synthesized) -> None:
    # Given the layer as deployed and the host copy the Lambda-like runs import from
    host_layer, _runtime = _lambda_dependencies(synthesized)
    # Then they hold the same distributions at the same versions (only the platform of the wheels differs)
    assert _distributions(host_layer) == _distributions(_staged_layer(synthesized) / LAYER_PYTHON_DIR)


# Runs inside the isolated interpreter: argv[1] is a JSON list of sys.path entries. No system tz database: the
# zone must come from the layer's tzdata.
TIME_ZONE_RUNNER = textwrap.dedent(
    """
    import json, sys, zoneinfo
    sys.path[:0] = json.loads(sys.argv[1])
    zoneinfo.reset_tzpath([])
    from shared.providers.asaas.driver import parse_asaas_time
    times = [parse_asaas_time(t, "dateCreated").isoformat() for t in ("2018-12-01 12:00:00", "2024-06-12 16:45:03")]
    import tzdata
    print(json.dumps({"times": times, "tzdata": tzdata.__file__, "tzpath": list(zoneinfo.TZPATH)}))
    """
)


def test_sao_paulo_time_resolves_from_the_layer_alone(synthesized: Synthesized) -> None:
    # Given the ingest asset and the layer, and an interpreter with no system tz database on its search path
    asset = _asset(synthesized, synthesized.stack.ingest.function)
    layer, _runtime = _lambda_dependencies(synthesized)
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", TIME_ZONE_RUNNER, json.dumps([str(asset), str(layer)])],
        env=RUNTIME_ENVIRONMENT,
        cwd=asset,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = json.loads(result.stdout.strip().splitlines()[-1])
    # When Asaas times from before and after Brazil dropped DST are parsed, Then the layer's tzdata gives the
    # zone's history: UTC-2 in the 2018 summer, UTC-3 in 2024
    assert output["tzpath"] == []
    assert output["tzdata"].startswith(str(layer))
    assert output["times"] == ["2018-12-01T14:00:00+00:00", "2024-06-12T19:45:03+00:00"]


def _bytecode_python() -> str | None:
    runtime = find_runtime_python(PYTHON_VERSION)
    return runtime.cache_tag if runtime else None


def test_s3_keys_are_the_hashes_of_the_sources_not_of_the_bytecode(synthesized: Synthesized) -> None:
    # Given the layer's and every function's S3 key in the template, and the hashes of their sources
    (_layer_id, layer) = synthesized.only("AWS::Lambda::LayerVersion")
    expected = {layer["Properties"]["Content"]["S3Key"]: layer_asset_hash(stage_dependency_layer())}
    for function in synthesized.resources("AWS::Lambda::Function").values():
        if function["Properties"].get("Handler") == "handler.lambda_handler":
            s3_key = function["Properties"]["Code"]["S3Key"]
            expected[s3_key] = function_asset_hash(synthesized.assembly_dir / f"asset.{s3_key.removesuffix('.zip')}")
    # Then each key is CDK's SHA-256 of that hash (of the sources and the runtime's version, bytecode left out):
    # a machine without the runtime's Python synthesizes the same keys (test_assets.py toggles the bytecode step)
    assert len(expected) >= 6
    for s3_key, source_hash in expected.items():
        assert s3_key == f"{hashlib.sha256(source_hash.encode()).hexdigest()}.zip"


def test_the_uploaded_code_carries_the_runtimes_bytecode_where_synth_found_it(synthesized: Synthesized) -> None:
    # Given the uploaded function assets and layer, and whether this machine has CPython 3.13
    cache_tag = _bytecode_python()
    folders = [_staged_layer(synthesized) / LAYER_PYTHON_DIR]
    for function in synthesized.resources("AWS::Lambda::Function").values():
        if function["Properties"].get("Handler") == "handler.lambda_handler":
            folders.append(synthesized.assembly_dir / f"asset.{function['Properties']['Code']['S3Key'][:-4]}")
    for folder in folders:
        pycs = sorted(folder.rglob("*.pyc"))
        if cache_tag is None:
            # Then without it, no bytecode at all (none from the developer's tree)
            assert not pycs, folder
            continue
        # Then with it, every module has its unchecked-hash bytecode for the runtime's tag, and nothing else
        assert cache_tag == cache_tag_of(PYTHON_VERSION)
        compiled = compiled_modules(folder, cache_tag)
        assert sorted(compiled) == sorted(folder.rglob("*.py")), folder
        assert pycs == sorted(compiled.values()), folder
        assert {int.from_bytes(pyc.read_bytes()[4:8], "little") for pyc in pycs} == {UNCHECKED_HASH_FLAGS}
        assert all(pyc.parent.name == PYCACHE for pyc in pycs)


# ------------------------------------------------------------------------------ nothing for development ships
# What only the local stack may hold; and our packages that never ship (the assets carry functions/ and shared/).
LOCAL_ONLY_PACKAGES = ("inbox_local", "inbox_cli", "infra", "tests", "bench")


def _development_needles() -> dict[str, bytes]:
    """{what: bytes that betray it}: every development signing secret, the local fingerprint key and the Woovi
    development private key. A long value is looked for by a slice past the header every RSA key shares (and
    within one line of its source, where the literal is split), the rest whole."""
    from inbox_local.config import DEV_FINGERPRINT_KEY
    from inbox_local.dev_secrets import DEV_SECRETS
    from inbox_local.providers.woovi.sender import DEV_PRIVATE_KEY

    values = {f"{provider}'s development secret": secret for provider, secret in DEV_SECRETS.items()}
    values["the local fingerprint key"] = DEV_FINGERPRINT_KEY
    values["the Woovi development private key"] = DEV_PRIVATE_KEY.splitlines()[2]  # a line of its base64 body
    return {what: (value if len(value) <= 64 else value[100:148]).encode() for what, value in values.items()}


def _uploaded_code(synthesized: Synthesized) -> list[Path]:
    """Every folder the stack uploads as code: each function's asset and the layer's python/."""
    folders = [_staged_layer(synthesized) / LAYER_PYTHON_DIR]
    for function in synthesized.resources("AWS::Lambda::Function").values():
        if function["Properties"].get("Handler") == "handler.lambda_handler":
            folders.append(synthesized.assembly_dir / f"asset.{function['Properties']['Code']['S3Key'][:-4]}")
    return folders


def test_no_uploaded_code_holds_a_development_secret(synthesized: Synthesized) -> None:
    # Given the development secrets the local stack signs and verifies with
    needles = _development_needles()
    assert len(needles) >= len(definitions.PROVIDERS) + 2
    # When every file of every function asset and of the layer is read (sources and bytecode alike)
    folders = _uploaded_code(synthesized)
    assert len(folders) >= 7
    found = [
        f"{what} in {path.relative_to(synthesized.assembly_dir)}"
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file()
        for what, needle in needles.items()
        if needle in path.read_bytes()
    ]
    # Then none holds one
    assert found == []


def test_no_uploaded_code_imports_or_names_the_local_stack(synthesized: Synthesized) -> None:
    # Given every module of every function asset and of the layer
    problems: list[str] = []
    for folder in _uploaded_code(synthesized):
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder)
            if relative.parts[0] in LOCAL_ONLY_PACKAGES:  # a local-only package shipped as it is
                problems.append(f"{folder.name}/{relative}: ships a local-only package")
                continue
            if folder.name == LAYER_PYTHON_DIR:
                continue  # third-party distributions: none imports our packages (the check above finds ours)
            parts = relative.with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            facts = module_facts(SourceModule(name, path, parts[-1] == "__init__"), runtime_only=False)
            # Then none imports a local-only package, nor names one of its modules to load by name
            for imported in sorted(facts.imports | facts.named_modules):
                if imported.partition(".")[0] in LOCAL_ONLY_PACKAGES:
                    problems.append(f"{folder.name}/{relative}: {imported}")
    assert problems == []


# The module that reads sources.json: the stack's, the local stack's and the CLI's. A function is handed the parsed
# declaration in INBOX_SOURCES and reads no file: no asset holds the reader, and no module of one looks for the file
# (the variable that names it is only declared, in the definitions package).
SOURCES_FILE_READER = "infra/sources_file.py"
SOURCES_FILE_DECLARED_IN = "shared/definitions/sources.py"


def _sources_file_readers(folder: Path) -> list[str]:
    """What in an uploaded folder reads sources.json: the reader itself, or a module that names the variable
    saying where the file is (INBOX_SOURCES_FILE, by its definitions name or spelled out)."""
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder).as_posix()
        if relative == SOURCES_FILE_READER:
            found.append(f"{relative}: the sources.json reader")
            continue
        if relative == SOURCES_FILE_DECLARED_IN:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = (
                (isinstance(node, ast.Name) and node.id == "ENV_SOURCES_FILE")
                or (isinstance(node, ast.Attribute) and node.attr == "ENV_SOURCES_FILE")
                or (isinstance(node, ast.alias) and node.name == "ENV_SOURCES_FILE")
                or (isinstance(node, ast.Constant) and node.value == definitions.ENV_SOURCES_FILE)
            )
            if named:
                found.append(f"{relative}:{getattr(node, 'lineno', '?')}: looks for the sources file")
                break
    return found


def test_the_sources_file_check_finds_the_reader_and_a_module_looking_for_the_file(tmp_path: Path) -> None:
    # Given a folder shipping the reader, a module that looks for the file, and one that only reads INBOX_SOURCES
    (tmp_path / "infra").mkdir()
    shutil.copy(REPO_ROOT / SOURCES_FILE_READER, tmp_path / SOURCES_FILE_READER)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "reads_file.py").write_text("from shared import definitions as d\nX = d.ENV_SOURCES_FILE\n")
    (tmp_path / "shared" / "spelled.py").write_text("import os\nPATH = os.environ.get('INBOX_SOURCES_FILE')\n")
    (tmp_path / "shared" / "handed.py").write_text("from shared.definitions import ENV_SOURCES\n")
    # When the check reads it, Then it reports the reader and both modules that look for the file, not the other
    assert [line.partition(":")[0] for line in _sources_file_readers(tmp_path)] == [
        SOURCES_FILE_READER,
        "shared/reads_file.py",
        "shared/spelled.py",
    ]


def test_no_uploaded_code_reads_the_sources_file(synthesized: Synthesized) -> None:
    # Given every function asset as uploaded (the layer holds third-party code only)
    folders = [folder for folder in _uploaded_code(synthesized) if folder.name != LAYER_PYTHON_DIR]
    assert len(folders) >= 6
    # Then none holds the sources.json reader, nor a module that looks for the file
    assert [f"{folder.name}/{found}" for folder in folders for found in _sources_file_readers(folder)] == []
    # And each carries the declaration's parser, which reads what the stack hands it in INBOX_SOURCES
    assert all((folder / SOURCES_FILE_DECLARED_IN).is_file() for folder in folders)


# A gateway's API key reaches a function only through Secrets Manager (in AWS the stack's secret, locally the one the
# local stack stores from INBOX_API_KEY_<SOURCE> or its simulator): no uploaded code reads a key from a variable.
KEY_SECRET_VARIABLES = frozenset({definitions.ENV_API_KEY_SECRETS, definitions.ENV_API_KEY_SECRET_PREFIX})
# The forwarding pair likewise (locally the one the local stack stores from INBOX_FORWARD_SECRET and _PREVIOUS).
FORWARD_SECRET_VARIABLE_PREFIX = "INBOX_FORWARD_SECRET"
FORWARD_SECRET_VARIABLES = frozenset({definitions.ENV_FORWARD_SECRET_NAME})


def _plaintext_api_key_readers(folder: Path) -> list[str]:
    return _plaintext_secret_readers(folder, "INBOX_API_KEY_", KEY_SECRET_VARIABLES)


def _plaintext_secret_readers(folder: Path, prefix: str, secret_names: frozenset[str]) -> list[str]:
    """Where an uploaded module spells a plaintext secret's variable (`prefix...` as a string or the literal start
    of an f-string) other than those that name the secrets; docstrings left out (they may say where a secret comes
    from locally)."""
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and node.value.startswith(prefix)
                and node.value not in secret_names
            ):
                found.append(f"{path.relative_to(folder).as_posix()}:{node.lineno}: {node.value!r}")
    return found


def test_the_plaintext_key_check_finds_a_variable_read_not_the_secrets_names(tmp_path: Path) -> None:
    # Given modules reading a key from a variable (by f-string, by name), one naming the secrets, one only saying so
    (tmp_path / "by_source.py").write_text("import os\nKEY = os.environ.get(f'INBOX_API_KEY_{SOURCE}')\n")
    (tmp_path / "by_name.py").write_text("VARIABLE = 'INBOX_API_KEY_STRIPE'\n")
    (tmp_path / "secrets.py").write_text("MAP, PREFIX = 'INBOX_API_KEY_SECRETS', 'INBOX_API_KEY_SECRET_PREFIX'\n")
    (tmp_path / "told.py").write_text('"""Locally INBOX_API_KEY_<SOURCE> is stored as the secret."""\n')
    # Then the check reports the two that read one, and nothing else
    assert [line.partition(":")[0] for line in _plaintext_api_key_readers(tmp_path)] == ["by_name.py", "by_source.py"]


def test_no_uploaded_code_reads_an_api_key_from_a_variable(synthesized: Synthesized) -> None:
    # Given every function asset as uploaded
    folders = [folder for folder in _uploaded_code(synthesized) if folder.name != LAYER_PYTHON_DIR]
    assert len(folders) >= 6
    # Then none spells a plaintext API-key variable: the processor and the sweeper read their keys from secrets
    assert [f"{folder.name}/{found}" for folder in folders for found in _plaintext_api_key_readers(folder)] == []
    assert any((folder / "shared" / "gateway" / "registry.py").is_file() for folder in folders)


def test_the_plaintext_forwarding_secret_check_finds_the_variables_not_the_secrets_name(tmp_path: Path) -> None:
    # Given modules naming the plaintext pair's variables, and one naming the secret the forwarder reads
    (tmp_path / "current.py").write_text("SECRET = 'INBOX_FORWARD_SECRET'\n")
    (tmp_path / "previous.py").write_text("import os\nPREVIOUS = os.environ.get('INBOX_FORWARD_SECRET_PREVIOUS')\n")
    (tmp_path / "named.py").write_text("NAME = 'INBOX_FORWARD_SECRET_NAME'\n")
    # Then the check reports the two variables, not the secret's name
    found = _plaintext_secret_readers(tmp_path, FORWARD_SECRET_VARIABLE_PREFIX, FORWARD_SECRET_VARIABLES)
    assert [line.partition(":")[0] for line in found] == ["current.py", "previous.py"]


def test_no_uploaded_code_reads_the_forwarding_secret_from_a_variable(synthesized: Synthesized) -> None:
    # Given every function asset as uploaded
    folders = [folder for folder in _uploaded_code(synthesized) if folder.name != LAYER_PYTHON_DIR]
    # Then none names INBOX_FORWARD_SECRET or _PREVIOUS: the forwarder reads its pair from Secrets Manager, in AWS and
    # on the local stack alike (inbox_local/forward_secret.py stores it there)
    found = [
        f"{folder.name}/{line}"
        for folder in folders
        for line in _plaintext_secret_readers(folder, FORWARD_SECRET_VARIABLE_PREFIX, FORWARD_SECRET_VARIABLES)
    ]
    assert found == []
    assert any((folder / "shared" / "forwarding.py").is_file() for folder in folders)
