"""The forwarding checkpoints expire, and only they do: against moto, with the control table provisioned as the
local stack provisions it (TTL on, like the deployed table: tests/infra/test_downstream.py)."""

from __future__ import annotations

from typing import Any

from shared import definitions
from shared.forwarding import ForwardCheckpoints
from shared.gateway.breaker import CircuitBreaker
from shared.gateway.ratelimit import RateLimiter

NOW = 1_790_000_000.0
DAY = 86_400


def _item(aws_world: Any, pk: str) -> dict[str, Any]:
    dynamodb = aws_world.session.client("dynamodb")
    item: dict[str, Any] = dynamodb.get_item(TableName=aws_world.names.control_table, Key={"pk": {"S": pk}})["Item"]
    return item


def test_the_control_table_expires_items_by_the_checkpoints_ttl_attribute(aws_world: Any) -> None:
    dynamodb = aws_world.session.client("dynamodb")
    description = dynamodb.describe_time_to_live(TableName=aws_world.names.control_table)["TimeToLiveDescription"]
    assert description == {"TimeToLiveStatus": "ENABLED", "AttributeName": definitions.CONTROL_TTL_ATTRIBUTE}


def test_a_checkpoint_expires_after_the_stream_and_the_resend_window_have_passed(aws_world: Any) -> None:
    # Given the forwarder's checkpoints, at a known time
    clock = [NOW]
    checkpoints = ForwardCheckpoints(
        aws_world.session.client("dynamodb"), aws_world.names.control_table, clock=lambda: clock[0]
    )
    # When a delivery of a payment's record is checkpointed
    checkpoints.save("stripe-br#pi_1", 3)
    # Then the checkpoint carries its expiry: later than a record of it can come back from the stream (24 h) or
    # be resent from the outbox (its 7 days, and TTL's lag in deleting it)
    item = _item(aws_world, definitions.FORWARD_CHECKPOINT_PREFIX + "stripe-br#pi_1")
    expires_at = int(item[definitions.CONTROL_TTL_ATTRIBUTE]["N"])
    assert expires_at == int(NOW) + definitions.FORWARD_CHECKPOINT_RETENTION_SECONDS
    resend_window = definitions.OUTBOX_RETENTION_DAYS * DAY
    assert expires_at > NOW + definitions.DYNAMODB_STREAM_RETENTION_SECONDS + resend_window
    # (an expired outbox record is read until TTL deletes it: the checkpoint outlives that lag too)
    assert expires_at >= NOW + definitions.DYNAMODB_STREAM_RETENTION_SECONDS + resend_window + (
        definitions.DYNAMODB_TTL_DELETION_LAG_SECONDS
    )
    assert item["sequence"] == {"N": "3"}


def test_every_write_of_a_checkpoint_moves_its_expiry_with_it(aws_world: Any) -> None:
    clock = [NOW]
    checkpoints = ForwardCheckpoints(
        aws_world.session.client("dynamodb"), aws_world.names.control_table, clock=lambda: clock[0]
    )
    pk = definitions.FORWARD_CHECKPOINT_PREFIX + "asaas#pay_1"
    checkpoints.save("asaas#pay_1", 1)
    # When the payment's next record is delivered six days later (save) and a resend moves it on (advance)
    clock[0] = NOW + 6 * DAY
    checkpoints.save("asaas#pay_1", 2)
    assert int(_item(aws_world, pk)[definitions.CONTROL_TTL_ATTRIBUTE]["N"]) == int(clock[0]) + (
        definitions.FORWARD_CHECKPOINT_RETENTION_SECONDS
    )
    clock[0] = NOW + 7 * DAY
    checkpoints.advance("asaas#pay_1", 5)
    item = _item(aws_world, pk)
    assert item["sequence"] == {"N": "5"}
    assert int(item[definitions.CONTROL_TTL_ATTRIBUTE]["N"]) == int(clock[0]) + (
        definitions.FORWARD_CHECKPOINT_RETENTION_SECONDS
    )
    # And an advance that is refused (not past the checkpoint) leaves the item, expiry included, as it was
    clock[0] = NOW + 8 * DAY
    checkpoints.advance("asaas#pay_1", 4)
    assert _item(aws_world, pk) == item


def test_the_breakers_and_rate_limits_in_the_same_table_never_expire(aws_world: Any) -> None:
    # Given a breaker that counted a failure and a rate limiter that granted a request, in the control table
    table = aws_world.names.control_table
    CircuitBreaker(table, "stripe-br").record_failure()
    RateLimiter(table, "stripe-br", 5.0, dynamodb=aws_world.session.client("dynamodb")).acquire()
    # Then neither carries the TTL attribute: one item per source, rewritten in place, kept
    for pk in ("breaker#stripe-br", "ratelimit#stripe-br"):
        assert definitions.CONTROL_TTL_ATTRIBUTE not in _item(aws_world, pk)
