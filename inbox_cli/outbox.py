"""`inbox outbox list`: what the service published (or is about to), read from the outbox table."""

from __future__ import annotations

from typing import Any

import click

from shared import aws
from shared.inbox.store import from_attributes
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
