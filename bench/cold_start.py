"""Cold start: import + init of the ingest and the processor as Lambda runs them, with and without bytecode, against
`import boto3` + a client measured in the same run.

What runs is a host-platform copy of what the stack deploys (the layer itself is built for arm64 and cannot be
imported here): each function's asset staged as synth stages it (infra/assets.py) as /var/task, and the dependency
layer's own requirement list (uv.lock's versions and hashes, the AWS SDK included) installed for this platform as
/opt/python. Two copies of both: the sources alone (what a machine without the runtime's Python deploys), and the
sources with unchecked-hash bytecode compiled as synth compiles it (infra/bytecode.py).

Each sample is a fresh interpreter whose only code is those two folders and the standard library (compiled, as
the runtime's is), run with -B: Lambda's /var/task and /opt are read-only, so without shipped bytecode every module
is compiled again at every cold start, and so it is here. The interpreter is CPython of the runtime's version where
this machine has one (found as synth finds it), else the one running the bench: the section says which.

Figures are the process's CPU time (user + system) from the first import to the clients made, median of the
samples, interleaved so that every program shares the machine's noise (wall time is recorded beside it: on a
shared machine it measures the neighbours too). Each ratio is against the baseline of the same copy.

CPU time still moves with the machine's load (caches and cores shared with other work). Where valgrind is installed,
the programs of the bytecode copy also run once each under its callgrind tool, which counts the instructions
executed whatever the load; the interpreter's start-up (an empty program's count) is subtracted. The target's
verdict uses that ratio where it was measured.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from infra.assets import stage_function_asset
from infra.bytecode import RuntimePython, find_runtime_python
from infra.dependency_layer import PYTHON_VERSION, install, layer_requirements

ROOT = Path(__file__).resolve().parents[1]
COPIES = ROOT / "build" / "bench" / "cold-start"
BASELINE = "baseline: import boto3 + client"
MODES = ("no bytecode", "bytecode")

_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_LAMBDA_FUNCTION_NAME": "bench",
    "INBOX_TABLE": "t",
    "INBOX_BODY_BUCKET": "b",
    "INBOX_SECRET_PREFIX": "p/",
    "PAYMENTS_TABLE": "p",
    "CONTROL_TABLE": "c",
    "INBOX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
    "INBOX_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/1/d.fifo",
    "POWERTOOLS_SERVICE_NAME": "webhook-inbox",
    "POWERTOOLS_METRICS_NAMESPACE": "WebhookInbox",
}

# (function asset or None, what runs after the timer starts). The clients are created as the functions create them
# on their first request (the init of a Lambda instance): the processor makes its SQS client only when a message
# is retried, released or parked (shared/process/app.py, SqsRetryQueue), not for a batch that goes through.
PROGRAMS: dict[str, tuple[str | None, str]] = {
    BASELINE: (None, "import boto3; boto3.client('dynamodb')"),
    "ingest: import + init": (
        "ingest",
        "import handler; from shared.ingest import default_ingest_service; default_ingest_service(); "
        "from shared import aws; aws.dynamodb()",
    ),
    "processor: import + init": (
        "process",
        "import handler; from shared.process.app import default_processor; default_processor(); "
        "from shared import aws; aws.dynamodb()",
    ),
}

# argv[1]: JSON list of the folders to put first on sys.path; argv[2]: the statement. Prints CPU and wall ms.
_RUNNER = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[1])
_cpu, _wall = time.process_time(), time.perf_counter()
exec(sys.argv[2])
print(json.dumps([(time.process_time() - _cpu) * 1000, (time.perf_counter() - _wall) * 1000]))
"""


def interpreter() -> tuple[Path, str]:
    """(interpreter, its cache tag): the runtime's version where this machine has it, else this one."""
    runtime = find_runtime_python(PYTHON_VERSION)
    if runtime is not None:
        return runtime.interpreter, runtime.cache_tag
    return Path(sys.executable), sys.implementation.cache_tag


def _describe(python: Path) -> dict[str, str]:
    script = "import json, platform; print(json.dumps([platform.python_version(), platform.machine()]))"
    version, machine = json.loads(
        subprocess.run([str(python), "-I", "-S", "-c", script], capture_output=True, text=True, check=True).stdout
    )
    return {"python": version, "machine": machine, "interpreter": str(python)}


def stage_copies(python: Path, cache_tag: str, copies: Path = COPIES) -> dict[str, dict[str, Path]]:
    """{mode: {"layer": folder, "ingest": folder, "process": folder}}, the layer installed once per requirement
    list and interpreter, the assets staged afresh; the bytecode copy compiled by `python`."""
    requirements = layer_requirements()
    key = hashlib.sha256(f"{python}\0{cache_tag}\0{requirements}".encode()).hexdigest()[:16]
    layer = copies / f"layer-{key}"
    if not (layer / "complete").is_file():
        copies.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".layer-staging-", dir=copies))
        try:
            install(requirements, staging / "site", platform=None, python_version=None, interpreter=str(python))
            (staging / "complete").write_text(requirements)
            staging.rename(layer)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    compiler = RuntimePython(python, cache_tag)
    staged: dict[str, dict[str, Path]] = {}
    for mode in MODES:
        folder = copies / mode.replace(" ", "-")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        shutil.copytree(layer / "site", folder / "layer")
        for function in ("ingest", "process"):
            stage_function_asset(function, assets_dir=folder / "assets", python=None)
        if mode == "bytecode":
            compiler.compile_tree(folder / "layer", "/opt/python")
            for function in ("ingest", "process"):
                compiler.compile_tree(folder / "assets" / function, "/var/task")
        staged[mode] = {"layer": folder / "layer"} | {f: folder / "assets" / f for f in ("ingest", "process")}
    return staged


def sample(python: Path, folders: list[Path], statement: str) -> tuple[float, float]:
    """(CPU ms, wall ms) of `statement` in a fresh interpreter whose code is `folders` and the standard library."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}, **_ENV}
    output = subprocess.run(
        [str(python), "-I", "-S", "-B", "-c", _RUNNER, json.dumps([str(f) for f in folders]), statement],
        cwd=folders[0],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    cpu, wall = json.loads(output.strip().splitlines()[-1])
    return float(cpu), float(wall)


def instructions(python: Path, folders: list[Path], statement: str) -> int:
    """Instructions `statement` runs in a fresh interpreter (as `sample`), counted by valgrind's callgrind."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON"))}, **_ENV}
    with tempfile.TemporaryDirectory(prefix="callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        subprocess.run(
            [*valgrind, str(python), "-I", "-S", "-B", "-c", _RUNNER, json.dumps([str(f) for f in folders]), statement],
            cwd=folders[0],
            env=env,
            capture_output=True,
            check=True,
            timeout=1800,
        )
        total = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if total is None:
        raise RuntimeError("callgrind wrote no instruction total")
    return int(total.group(1))


def count_instructions(python: Path, folders: dict[str, list[Path]]) -> dict[str, Any]:
    """{program: {"millions": .., "ratio_to_baseline": ..}} on the bytecode copy, start-up subtracted; {} without
    valgrind."""
    if shutil.which("valgrind") is None:
        return {}
    start_up = instructions(python, folders[BASELINE], "pass")
    counts = {name: instructions(python, folders[name], PROGRAMS[name][1]) - start_up for name in PROGRAMS}
    return {
        name: {"millions": round(count / 1e6, 1), "ratio_to_baseline": round(count / counts[BASELINE], 3)}
        for name, count in counts.items()
    }


def summarize(runs: dict[str, dict[str, list[tuple[float, float]]]]) -> dict[str, dict[str, Any]]:
    """Per program and mode: median CPU and wall ms, min CPU ms, the ratio to the same mode's baseline."""
    figures: dict[str, dict[str, Any]] = {}
    for name, modes in runs.items():
        figures[name] = {}
        for mode, values in modes.items():
            cpu = [value[0] for value in values]
            baseline = statistics.median(value[0] for value in runs[BASELINE][mode])
            figures[name][mode] = {
                "cpu_median_ms": round(statistics.median(cpu), 1),
                "cpu_min_ms": round(min(cpu), 1),
                "wall_median_ms": round(statistics.median(value[1] for value in values), 1),
                "ratio_to_baseline": round(statistics.median(cpu) / baseline, 2),
                "samples": len(values),
            }
        no, yes = figures[name]["no bytecode"]["cpu_median_ms"], figures[name]["bytecode"]["cpu_median_ms"]
        figures[name]["bytecode_saves_ms"] = round(no - yes, 1)
    return figures


def measure(samples: int = 9) -> dict[str, Any]:
    python, cache_tag = interpreter()
    copies = stage_copies(python, cache_tag)

    def folders(mode: str, function: str | None) -> list[Path]:
        layer = copies[mode]["layer"]
        return [copies[mode][function], layer] if function else [layer]

    for mode in MODES:  # one warm-up each: the page cache warm
        for function, statement in PROGRAMS.values():
            sample(python, folders(mode, function), statement)
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {name: {mode: [] for mode in MODES} for name in PROGRAMS}
    for _ in range(samples):
        for mode in MODES:
            for name, (function, statement) in PROGRAMS.items():
                runs[name][mode].append(sample(python, folders(mode, function), statement))
    return {
        **_describe(python),
        "runtime_python": PYTHON_VERSION,
        "host_platform": platform.machine(),
        "programs": summarize(runs),
        "instructions": count_instructions(
            python, {name: folders("bytecode", function) for name, (function, _) in PROGRAMS.items()}
        ),
    }
