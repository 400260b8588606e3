"""`inbox outbox list`: what the service published (or is about to), read from the outbox table.
`inbox outbox resend`: forward what the forwarding has not delivered yet (after its dead-letter queue), from there."""

from __future__ import annotations

from typing import Any

import click

from shared import aws
from shared.forwarding import ForwardCheckpoints, Forwarder, forward_in_order
from shared.inbox.store import from_attributes
from shared.payments.events import check_published
from shared.payments.outbox import published_event


def outbox_records(table: str, *, provider: str | None = None, resource_id: str | None = None) -> list[dict[str, Any]]:
    """Outbox records as published events (plus their `pk`), by partition then sequence. One payment is a Query."""
    dynamodb = aws.dynamodb()
    items: list[dict[str, Any]] = []
    if provider and resource_id:
        kwargs: dict[str, Any] = {
            "TableName": table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": f"{provider}#{resource_id}"}},
        }
        while True:
            page = dynamodb.query(**kwargs)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    else:
        scan: dict[str, Any] = {"TableName": table}
        while True:
            page = dynamodb.scan(**scan)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    records = []
    for raw in items:
        item = from_attributes(raw)
        event = {"pk": item["pk"], **published_event(item)}
        if provider and event.get("provider") != provider:
            continue
        if resource_id and event.get("resource_id") != resource_id:
            continue
        records.append(event)
    return sorted(records, key=lambda e: (str(e["pk"]), int(e["sequence"])))


def show(records: list[dict[str, Any]], table: Any) -> None:
    rows = [
        {
            **record,
            "change": (
                f"{record.get('previous_status') or '-'} -> {record.get('new_status')}"
                if record.get("type") == "payment.status_changed"
                else record.get("last_error", "")[:60]
            ),
        }
        for record in records
    ]
    if not rows:
        click.echo("(none)")
        return
    table(rows, ["type", "provider", "resource_id", "sequence", "change", "id", "created_at"])


def resend(
    records: list[dict[str, Any]],
    forwarder: Forwarder,
    checkpoints: ForwardCheckpoints,
    *,
    on_delivered: Any = None,
) -> list[dict[str, Any]]:
    """Deliver, in order per payment, the records (with their `pk`, as `outbox_records` returns them) past each
    partition's forwarding checkpoint: exactly what the forwarder gave up on (its dead-letter queue) or has not
    reached yet. The same checkpoints as the forwarder Lambda, so nothing already delivered goes again, and the
    forwarder, when it resumes, skips what this sent. DeliveryFailed stops at the first event the endpoint refuses."""
    for record in records:
        check_published(record)
    return forward_in_order(
        records,
        deliver=forwarder.deliver,
        delivered=checkpoints.delivered,
        save=checkpoints.save,
        on_delivered=on_delivered or (lambda _event: None),
    )
