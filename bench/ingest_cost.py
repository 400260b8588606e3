"""Ingest cost per event: the real handler against a bare botocore conditional PutItem of the same item,
both on the same in-process moto backend, interleaved so both see the same noise."""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

BODY_SIZES = {"2 KB": 2 * 1024, "64 KB": 64 * 1024}


def _body(size: int, event_id: str) -> bytes:
    import json  # noqa: PLC0415

    filler = "x" * max(0, size - 300)
    return json.dumps(
        {
            "type": "payment.paid",
            "timestamp": "2026-11-29T10:00:00Z",
            "data": {"id": f"pay_{event_id}", "status": "paid", "amount": 1990, "currency": "BRL", "note": filler},
        }
    ).encode()


def measure(events: int = 300) -> dict[str, dict[str, Any]]:
    os.environ.update(
        {
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "b",
            "AWS_SECRET_ACCESS_KEY": "b",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
    )
    from moto import mock_aws  # noqa: PLC0415

    from inbox_local.config import LocalNames, function_environment  # noqa: PLC0415
    from inbox_local.dev_secrets import DEV_SECRETS, store_signing_secrets  # noqa: PLC0415
    from inbox_local.resources import provision  # noqa: PLC0415

    names = LocalNames()
    os.environ.update(function_environment(names))
    results: dict[str, dict[str, Any]] = {}
    with mock_aws():
        import boto3  # noqa: PLC0415

        from functions.ingest.handler import lambda_handler  # noqa: PLC0415
        from inbox_local.lambda_context import LocalLambdaContext  # noqa: PLC0415
        from inbox_local.senders import sender_for  # noqa: PLC0415
        from inbox_local.server import api_gateway_event  # noqa: PLC0415
        from shared import aws  # noqa: PLC0415
        from shared.definitions import SourceSpec  # noqa: PLC0415
        from shared.inbox.model import StoredBody, build_item  # noqa: PLC0415
        from shared.inbox.store import to_attributes  # noqa: PLC0415
        from shared.ingest import default_ingest_service  # noqa: PLC0415
        from shared.providers.base import WebhookRequest  # noqa: PLC0415
        from shared.providers.registry import get_driver  # noqa: PLC0415

        provision(boto3.session.Session(), names)
        # The ingest reads the source's signing secret from Secrets Manager, as the local stack stores it.
        store_signing_secrets(boto3.client("secretsmanager"), names.secret_prefix, [SourceSpec("standard", "standard")])
        aws.reset_clients()
        default_ingest_service.reset()
        bare = boto3.client("dynamodb")
        driver, sender = get_driver("standard"), sender_for("standard")
        context = LocalLambdaContext("ingest")
        for label, size in BODY_SIZES.items():
            ours, baseline = [], []
            for index in range(events):
                event_id = f"{label}-{index}"
                body = _body(size, event_id)
                signed = sender.sign(body, DEV_SECRETS["standard"], now=int(time.time()), event_id=f"msg_{event_id}")
                event = api_gateway_event(
                    "POST",
                    "/webhooks/standard",
                    {"content-type": "application/json", **signed.headers},
                    body,
                    "1.2.3.4",
                )
                started = time.perf_counter()
                response = lambda_handler(event, context)
                ours.append(time.perf_counter() - started)
                assert response["statusCode"] == 200, response
                # the same item, written by a bare conditional PutItem under another key
                parsed = driver.parse(WebhookRequest(body=body, headers=signed.headers))
                item = build_item(
                    provider="standard",
                    event_id=f"bare_{event_id}",
                    event=parsed,
                    request=signed,
                    replay_headers=driver.replay_headers,
                    body=StoredBody(sha256="0" * 64, size=len(body), inline=body),
                    received_at=parsed.occurred_at,
                    retention_days=30,
                )
                attributes = to_attributes(item)
                started = time.perf_counter()
                bare.put_item(
                    TableName=names.inbox_table, Item=attributes, ConditionExpression="attribute_not_exists(pk)"
                )
                baseline.append(time.perf_counter() - started)
            ours_ms, base_ms = statistics.median(ours) * 1000, statistics.median(baseline) * 1000
            results[label] = {
                "handler_median_ms": round(ours_ms, 3),
                "bare_putitem_median_ms": round(base_ms, 3),
                "overhead_ratio": round(ours_ms / base_ms, 2),
                "events": events,
            }
    return results
