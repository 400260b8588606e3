"""The one Logger and Metrics every function shares.

Tracer is left out on purpose: the X-Ray SDK costs ~170 ms of import on a cold start (measured, see
bench/) and the ingest answers on the gateway's clock. Lambda's active tracing still records each invocation.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME", "webhook-inbox")
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "WebhookInbox")

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
