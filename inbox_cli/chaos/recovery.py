"""After the storm: failed events replayed through the replay workflow, the dead-letter queue drained of what the
replay recovered, and the outbox read back for the checks. The local stack's AWS, through boto3."""

from __future__ import annotations

import json
from typing import Any

from inbox_cli.chaos.invariants import SETTLED
from shared.inbox.store import InboxStore

DLQ_RECEIVE_LIMIT = 1000  # receive calls at most, while draining the dead-letter queue
REPLAY_BATCH = 100  # event ids per replay request


def replay_failed(inbox_table: str, failed_items: list[dict[str, Any]]) -> int:
    """`inbox replay` of these failed events (by id, per provider): the replay workflow sets them back to pending
    with a new dispatch, the Pipe and the queue take it from there. How many it replayed."""
    import boto3  # noqa: PLC0415

    from inbox_cli.replay import ReplayRequest, run_replay  # noqa: PLC0415
    from inbox_local.replay import ensure_replay_state_machine  # noqa: PLC0415

    sfn = boto3.client("stepfunctions")
    arn = ensure_replay_state_machine(sfn, inbox_table)
    by_provider: dict[str, list[str]] = {}
    for item in failed_items:
        by_provider.setdefault(item["provider"], []).append(item["event_id"])
    replayed = 0
    for provider, event_ids in sorted(by_provider.items()):
        for start in range(0, len(event_ids), REPLAY_BATCH):
            request = ReplayRequest(
                provider=provider,
                status="failed",
                event_ids=tuple(event_ids[start : start + REPLAY_BATCH]),
                wait_seconds=0,
            )
            report = run_replay(sfn, arn, request, timeout_seconds=300, poll_seconds=0.25)
            replayed += report.counts.get("replayed", 0)
    return replayed


def drain_dead_letters(inbox: InboxStore, ours: set[str]) -> dict[str, Any]:
    """Receive every dead-lettered message: delete those of this run's events that are settled now (the replay
    recovered them), leave the rest in the queue (visible again) and say how many."""
    import boto3  # noqa: PLC0415

    from inbox_local.config import LocalNames  # noqa: PLC0415

    sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName=LocalNames().dead_letter_queue)["QueueUrl"]
    drained, unrecovered, other = 0, [], []
    seen: set[str] = set()
    for _ in range(DLQ_RECEIVE_LIMIT):
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=0
        ).get("Messages", [])
        fresh = [m for m in messages if m["MessageId"] not in seen]
        if not fresh:
            break
        for message in fresh:
            seen.add(message["MessageId"])
            try:
                pk = json.loads(message["Body"]).get("pk")
            except (ValueError, AttributeError):
                pk = None
            if pk not in ours:
                other.append(message)
                continue
            item = inbox.get(pk)
            if item is not None and item.get("status") in SETTLED:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                drained += 1
            else:
                unrecovered.append({"pk": pk, "status": None if item is None else item.get("status")})
                other.append(message)
    for message in other:  # back to visible, for an operator to look at
        sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return {
        "drained": drained,
        "left": len(unrecovered),
        "other": len(other) - len(unrecovered),
        "unrecovered": unrecovered,
    }


def outbox_sequences(payment_keys: list[str]) -> dict[str, list[int]] | None:
    """The outbox's `payment.status_changed` sequences of each payment (sorted), or None without an outbox."""
    import boto3  # noqa: PLC0415

    from inbox_local.config import LocalNames  # noqa: PLC0415

    table = getattr(LocalNames(), "outbox_table", None)
    if not table:
        return None
    dynamodb = boto3.client("dynamodb")
    sequences: dict[str, list[int]] = {}
    try:
        for key in sorted(payment_keys):
            pages = dynamodb.get_paginator("query").paginate(
                TableName=table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": key}},
                ProjectionExpression="#sequence",
                ExpressionAttributeNames={"#sequence": "sequence"},
            )
            sequences[key] = sorted(int(item["sequence"]["N"]) for page in pages for item in page["Items"])
    except dynamodb.exceptions.ResourceNotFoundException:
        return None
    return sequences
