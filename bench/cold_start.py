"""Cold start: import-and-init time of each function in fresh interpreters, against `import boto3` + a client.

Each sample is a new process (nothing cached in memory; .pyc files are warm, as they are in a Lambda image).
Medians of N samples, the baseline measured in the same run, interleaved with the functions to share the noise.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
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

# What each measured program does after the timer starts. The clients are created as the functions create
# them on their first request (the init of a Lambda instance).
PROGRAMS = {
    "baseline: import boto3 + client": "import boto3; boto3.client('dynamodb')",
    "ingest: import + init": (
        "import functions.ingest.handler; from shared.ingest import default_ingest_service; "
        "default_ingest_service(); from shared import aws; aws.dynamodb()"
    ),
    "processor: import + init": (
        "import functions.process.handler; from shared.process.app import default_processor; "
        "default_processor(); from shared import aws; aws.dynamodb(); aws.sqs()"
    ),
}


def sample(statement: str) -> float:
    code = f"import time; _t = time.perf_counter(); {statement}; print((time.perf_counter() - _t) * 1000)"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **_ENV}
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    return float(output.strip().splitlines()[-1])


def measure(samples: int = 7) -> dict[str, dict[str, float]]:
    for statement in PROGRAMS.values():  # one warm-up each: .pyc compiled, page cache warm
        sample(statement)
    runs: dict[str, list[float]] = {name: [] for name in PROGRAMS}
    for _ in range(samples):
        for name, statement in PROGRAMS.items():
            runs[name].append(sample(statement))
    baseline = statistics.median(runs["baseline: import boto3 + client"])
    return {
        name: {
            "median_ms": round(statistics.median(values), 1),
            "min_ms": round(min(values), 1),
            "ratio_to_baseline": round(statistics.median(values) / baseline, 2),
            "samples": len(values),
        }
        for name, values in runs.items()
    }
