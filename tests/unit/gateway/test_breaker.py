"""The shared circuit breaker against moto's DynamoDB: open, half-open, close, races, storage failures."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws

from shared.gateway.base import GatewayRejected, GatewayUnavailable, PaymentSnapshot, ResourceNotFound
from shared.gateway.breaker import BreakerState, CircuitBreaker, GuardedClient, guarded_call
from shared.payments.status import PaymentStatus
from shared.sub_account import SubAccount
from tests.unit.gateway.fakes import CONTROL_TABLE as TABLE
from tests.unit.gateway.fakes import Clock, Spy


def item(dynamodb: Any, provider: str = "stripe") -> Any:
    return dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"breaker#{provider}"}}).get("Item")


def breaker(dynamodb: Any, clock: Clock, **kwargs: Any) -> CircuitBreaker:
    kwargs.setdefault("failure_threshold", 3)
    kwargs.setdefault("cooldown_seconds", 30)
    return CircuitBreaker(TABLE, "stripe", clock=clock, dynamodb=dynamodb, **kwargs)


def unavailable() -> None:
    raise GatewayUnavailable("503")


def test_closed_by_default_and_a_healthy_gateway_costs_no_writes(dynamodb, clock):
    spy = Spy(dynamodb)
    b = breaker(spy, clock)

    for _ in range(5):
        assert guarded_call(b, lambda: "ok") == "ok"

    assert "update_item" not in spy.calls and "put_item" not in spy.calls
    assert spy.calls.count("get_item") == 1  # cached for a second
    assert item(dynamodb) is None


def test_the_state_is_re_read_after_the_cache_expires(dynamodb, clock):
    spy = Spy(dynamodb)
    b = breaker(spy, clock)

    b.before_call()
    clock.advance(0.5)
    b.before_call()
    clock.advance(0.6)
    b.before_call()

    assert spy.calls.count("get_item") == 2


def test_opens_at_the_threshold_and_refuses_calls_while_open(dynamodb, clock):
    b = breaker(dynamodb, clock)
    for _ in range(3):
        with pytest.raises(GatewayUnavailable):
            guarded_call(b, unavailable)

    stored = item(dynamodb)
    assert stored is not None
    assert stored["consecutive_failures"] == {"N": "3"}
    assert float(stored["open_until"]["N"]) == clock.now + 30

    calls = []
    clock.advance(10)
    with pytest.raises(GatewayUnavailable) as caught:
        guarded_call(b, lambda: calls.append("called"))
    assert caught.value.circuit_open is True
    assert caught.value.retry_after == pytest.approx(20)
    assert calls == []  # no call was made


def test_below_the_threshold_it_stays_closed(dynamodb, clock):
    b = breaker(dynamodb, clock)
    for _ in range(2):
        with pytest.raises(GatewayUnavailable):
            guarded_call(b, unavailable)

    assert guarded_call(b, lambda: "ok") == "ok"
    assert item(dynamodb)["consecutive_failures"] == {"N": "0"}  # the success reset the count


def test_the_open_state_is_shared_by_every_instance(dynamodb, clock):
    first, second = breaker(dynamodb, clock), breaker(dynamodb, clock)
    second.before_call()  # second has read (and cached) the closed state
    for _ in range(3):
        first.record_failure()

    clock.advance(1.5)  # past second's cache
    with pytest.raises(GatewayUnavailable) as caught:
        second.before_call()
    assert caught.value.circuit_open


def test_half_open_after_the_cooldown_one_failure_reopens(dynamodb, clock):
    b = breaker(dynamodb, clock)
    for _ in range(3):
        b.record_failure()
    clock.advance(31)

    b.before_call()  # half-open: the call goes through
    with pytest.raises(GatewayUnavailable):
        guarded_call(b, unavailable)

    assert float(item(dynamodb)["open_until"]["N"]) == clock.now + 30
    with pytest.raises(GatewayUnavailable) as caught:
        b.before_call()
    assert caught.value.circuit_open


def test_half_open_after_the_cooldown_one_success_closes(dynamodb, clock):
    b = breaker(dynamodb, clock)
    for _ in range(3):
        b.record_failure()
    clock.advance(31)

    assert guarded_call(b, lambda: "ok") == "ok"

    stored = item(dynamodb)
    assert stored["consecutive_failures"] == {"N": "0"}
    assert "open_until" not in stored
    other = breaker(dynamodb, clock)
    assert other.state() == BreakerState()


def test_concurrent_failures_do_not_keep_extending_the_window(dynamodb, clock):
    first, second = breaker(dynamodb, clock), breaker(dynamodb, clock)
    for _ in range(3):
        first.record_failure()
    opened_until = float(item(dynamodb)["open_until"]["N"])

    clock.advance(5)
    for _ in range(4):  # calls that were already in flight fail while it is open
        second.record_failure()

    assert float(item(dynamodb)["open_until"]["N"]) == opened_until
    assert item(dynamodb)["consecutive_failures"] == {"N": "7"}


def test_only_one_instance_opens_when_both_find_it_closed(dynamodb, clock):
    first, second = breaker(dynamodb, clock), breaker(dynamodb, clock)
    for _ in range(3):
        first.record_failure()
    opened_until = float(item(dynamodb)["open_until"]["N"])

    clock.advance(1)
    # second saw the count reach the threshold but lost the race: its conditional open fails quietly
    second._open(BreakerState(consecutive_failures=4), clock.now)

    assert float(item(dynamodb)["open_until"]["N"]) == opened_until
    with pytest.raises(GatewayUnavailable):
        second.before_call()  # and it re-reads the winner's window


def test_not_found_and_rejected_count_as_the_gateway_answering(dynamodb, clock):
    b = breaker(dynamodb, clock)
    b.record_failure()
    b.record_failure()

    def not_found() -> None:
        raise ResourceNotFound("404")

    def rejected() -> None:
        raise GatewayRejected("401")

    with pytest.raises(ResourceNotFound):
        guarded_call(b, not_found)
    assert item(dynamodb)["consecutive_failures"] == {"N": "0"}

    b.record_failure()
    clock.advance(2)
    with pytest.raises(GatewayRejected):
        guarded_call(b, rejected)
    assert item(dynamodb)["consecutive_failures"] == {"N": "0"}


def test_a_circuit_open_error_from_below_is_not_counted_again(dynamodb, clock):
    b = breaker(dynamodb, clock)

    def inner_open() -> None:
        raise GatewayUnavailable("open elsewhere", circuit_open=True)

    with pytest.raises(GatewayUnavailable):
        guarded_call(b, inner_open)
    assert item(dynamodb) is None


def test_without_a_breaker_the_call_is_plain():
    assert guarded_call(None, lambda: 42) == 42


def test_breakers_of_different_providers_are_independent(dynamodb, clock):
    stripe = breaker(dynamodb, clock)
    asaas = CircuitBreaker(TABLE, "asaas", failure_threshold=3, clock=clock, dynamodb=dynamodb)
    for _ in range(3):
        stripe.record_failure()

    asaas.before_call()
    assert item(dynamodb, "asaas") is None


# ------------------------------------------------------------------------------------------- storage failures


def test_a_missing_table_never_blocks_processing(clock):
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        b = CircuitBreaker("no-such-table", "stripe", failure_threshold=1, clock=clock, dynamodb=client)

        assert guarded_call(b, lambda: "ok") == "ok"
        with pytest.raises(GatewayUnavailable) as caught:
            guarded_call(b, unavailable)
        assert caught.value.circuit_open is False  # the gateway's own error, not a breaker one
        assert guarded_call(b, lambda: "still ok") == "still ok"
        assert b.state() is None


class BrokenDynamoDB:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def get_item(self, **_: Any) -> Any:
        self.calls += 1
        raise self.error

    def update_item(self, **_: Any) -> Any:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
        ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}}, "GetItem"),
        RuntimeError("anything else"),
    ],
)
def test_storage_errors_are_logged_and_the_call_proceeds(clock, error):
    storage = BrokenDynamoDB(error)
    b = CircuitBreaker(TABLE, "stripe", failure_threshold=1, clock=clock, dynamodb=storage)  # type: ignore[arg-type]

    assert guarded_call(b, lambda: "ok") == "ok"
    with pytest.raises(GatewayUnavailable):
        guarded_call(b, unavailable)
    assert guarded_call(b, lambda: "ok") == "ok"
    assert storage.calls > 0


def test_state_parsing_tolerates_odd_items():
    assert BreakerState.from_item(None) == BreakerState()
    assert BreakerState.from_item({"consecutive_failures": {"S": "x"}, "open_until": {"N": "bad"}}) == BreakerState()
    assert BreakerState.from_item({"consecutive_failures": {"N": "4"}, "open_until": {"N": "12.5"}}) == BreakerState(
        4, 12.5
    )


def test_threshold_must_be_positive():
    with pytest.raises(ValueError, match="failure_threshold"):
        CircuitBreaker(TABLE, "stripe", failure_threshold=0)


# --------------------------------------------------------------------------------------------- guarded client


class FlakyClient:
    provider = "stripe"

    def __init__(self) -> None:
        self.calls = 0

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        self.calls += 1
        raise GatewayUnavailable("502")


def test_a_guarded_client_stops_calling_a_failing_gateway(dynamodb, clock):
    inner = FlakyClient()
    guarded = GuardedClient(inner, breaker(dynamodb, clock))

    errors = []
    for _ in range(6):
        with pytest.raises(GatewayUnavailable) as caught:
            guarded.fetch_payment("pi_1")
        errors.append(caught.value.circuit_open)

    assert inner.calls == 3
    assert errors == [False, False, False, True, True, True]
    assert guarded.provider == "stripe"


def test_a_guarded_client_passes_snapshots_through(dynamodb, clock):
    snapshot = PaymentSnapshot("pi_1", PaymentStatus.PAID, "succeeded", 100, "BRL")

    class Healthy:
        provider = "stripe"

        def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
            return snapshot

    assert GuardedClient(Healthy(), breaker(dynamodb, clock)).fetch_payment("pi_1") is snapshot
