"""The logs an operator has in an incident: one bounded line per delivery and one per settled event, both carrying
the event's pk (its outcome, provider and reason), so that one event is followed from delivery to settle by its pk
alone; at INFO only what its inbox item does not say already (a duplicate, a failure), the rest at DEBUG
(`-c inbox_log_level=DEBUG`); the batch's metrics flushed once, as one EMF blob (docs/operations.md, "Logs")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from functions.process.handler import lambda_handler as process_handler
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.queue_mapping import lambda_sqs_record
from shared import definitions
from shared.observability import logger
from shared.payments.status import PaymentStatus
from tests.integration.test_ingest_handler import deliver, signed_delivery
from tests.integration.test_process_handler import gateway  # noqa: F401 - the gateway simulator fixture

# What one line may take: the context (level, message, timestamp, request id) and the incident's fields.
MAX_LINE_BYTES = 400
# What Powertools' Lambda context used to add to every line, and what CloudWatch already knows.
DROPPED_KEYS = {"function_arn", "function_name", "function_memory_size", "location", "service", "function_request_id"}


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Each record of the functions' logger as its log line (Powertools' formatter, as written to CloudWatch)."""
    return [logger.registered_formatter.format(record) for record in caplog.records if record.name == logger.name]


def _emf_blobs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]


def test_one_event_is_followed_from_delivery_to_settle_by_its_pk(aws_world, gateway, caplog, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    # Given a paid Stripe payment and a signed webhook announcing it
    resource_id = gateway.create_payment("stripe", 1990)
    gateway.transition("stripe", resource_id, PaymentStatus.PAID)
    pk = f"stripe#evt_trail_{resource_id}"
    caplog.set_level("DEBUG", logger=logger.name)  # as `-c inbox_log_level=DEBUG` deploys it
    # When the gateway delivers it twice (a retry) and the processor settles the batch the Pipe hands over
    delivery = signed_delivery("stripe", event_id=pk.split("#")[1], resource_id=resource_id)
    assert [deliver("stripe", delivery)[0] for _ in range(2)] == [200, 200]
    sqs = aws_world.session.client("sqs")
    sqs.send_message(
        QueueUrl=aws_world.resources["queue_url"],
        MessageBody=json.dumps({"pk": pk, "dispatch_id": "d1", "dispatch_reason": "received"}),
        MessageGroupId=f"stripe#{resource_id}",
        MessageDeduplicationId="d1",
    )
    (message,) = sqs.receive_message(
        QueueUrl=aws_world.resources["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
    )["Messages"]
    capsys.readouterr()
    response = process_handler(
        {"Records": [lambda_sqs_record(message, "arn:aws:sqs:us-east-1:123456789012:q.fifo")]},
        LocalLambdaContext("process"),
    )
    assert response == {"batchItemFailures": []}

    # Then filtering the logs by the pk gives the event's whole story: each delivery, then its settlement
    lines = [json.loads(line) for line in _lines(caplog) if pk in line]
    assert [(line["message"], line["outcome"], line["level"]) for line in lines] == [
        ("webhook", "stored", "DEBUG"),  # the stored item says it (`inbox events show`)
        ("webhook", "duplicate", "INFO"),  # only the log says it
        ("event settled", "processed", "DEBUG"),  # the settled item says it, EventsSettled counts it
    ]
    assert all(line["pk"] == pk and line["provider"] == "stripe" for line in lines)
    assert lines[-1]["reason"] == "first seen" and lines[-1]["type"].startswith("payment_intent.")
    # And at INFO (what Lambda keeps by default) nothing else is logged for it (the batch's own line is DEBUG when
    # all went well); every line is bounded and carries the invocation's request id, not the function's name, ARN,
    # memory or code location
    info = [line for line in _lines(caplog) if json.loads(line)["level"] != "DEBUG"]
    assert [json.loads(line)["outcome"] for line in info] == ["duplicate"]
    for line in _lines(caplog):
        assert len(line.encode()) <= MAX_LINE_BYTES, line
        assert not DROPPED_KEYS & set(json.loads(line)), line
        assert json.loads(line)["request_id"]
    # And the processor's metrics left in one EMF blob for the invocation: the settled event's sample, per provider
    (blob,) = _emf_blobs(capsys)
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == definitions.METRICS_NAMESPACE
    assert directive["Dimensions"] == [["service", "provider"]]
    assert blob[definitions.METRIC_EVENTS_SETTLED] == [0.0]
