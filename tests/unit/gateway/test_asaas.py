"""Asaas refetch: every row of the status table, money as decimals, and how "not found" looks."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from shared.gateway.base import GatewayRejected, ResourceNotFound
from shared.gateway.http import GatewayResponseInvalid, JsonHttpClient
from shared.payments.status import PaymentStatus as S
from shared.providers.asaas.client import STATUS_MAP, AsaasClient, asaas_status, refunded_amount, to_minor_units
from tests.unit.gateway.fakes import FakePool, FakeResponse, Sleeps

KEY = "$aact_YTU5YTE0M2M2N2I4MTliNzk0YTI5N2U5MzdjNWZmNDQ6OjAwMDAwMDAwMDAwMDAwMDAwMDA6OiRhYWNoXzQ="


def payment(status: str, **extra: Any) -> dict[str, Any]:
    return {"object": "payment", "id": "pay_1", "value": Decimal("100.00"), "status": status, "deleted": False, **extra}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("PENDING", S.PENDING),
        ("OVERDUE", S.PENDING),
        ("AWAITING_RISK_ANALYSIS", S.PENDING),
        ("DUNNING_REQUESTED", S.PENDING),
        ("AUTHORIZED", S.AUTHORIZED),
        ("CONFIRMED", S.PAID),
        ("RECEIVED", S.PAID),
        ("RECEIVED_IN_CASH", S.PAID),
        ("DUNNING_RECEIVED", S.PAID),
        ("REFUND_REQUESTED", S.PAID),
        ("REFUND_IN_PROGRESS", S.PAID),
        ("REFUNDED", S.REFUNDED),
        ("CHARGEBACK_REQUESTED", S.DISPUTED),
        ("CHARGEBACK_DISPUTE", S.DISPUTED),
        ("AWAITING_CHARGEBACK_REVERSAL", S.DISPUTED),
    ],
)
def test_status_table(status, expected):
    canonical, provider_status = asaas_status(payment(status), amount=10000, amount_refunded=0)
    assert canonical is expected
    assert provider_status == status


def test_the_table_covers_every_documented_status():
    assert len(STATUS_MAP) == 15


@pytest.mark.parametrize("status", ["PENDING", "RECEIVED", "OVERDUE"])
def test_a_deleted_payment_is_canceled(status):
    canonical, provider_status = asaas_status(payment(status, deleted=True), amount=10000, amount_refunded=0)
    assert canonical is S.CANCELED
    assert provider_status == f"{status}/deleted"


@pytest.mark.parametrize(
    ("chargeback_status", "expected"),
    [("DISPUTE_LOST", S.CHARGED_BACK), ("DONE", S.CHARGED_BACK), ("REQUESTED", S.DISPUTED), ("IN_DISPUTE", S.DISPUTED)],
)
def test_the_chargeback_object_decides_a_lost_chargeback(chargeback_status, expected):
    body = payment("CHARGEBACK_DISPUTE", chargeback={"status": chargeback_status, "reason": "FRAUD"})
    assert asaas_status(body, amount=10000, amount_refunded=0)[0] is expected


def test_a_reversed_chargeback_reads_as_the_payment_status():
    body = payment("RECEIVED", chargeback={"status": "REVERSED"})
    assert asaas_status(body, amount=10000, amount_refunded=0)[0] is S.PAID


@pytest.mark.parametrize(
    ("status", "refunded", "expected"),
    [
        ("RECEIVED", 2500, S.PARTIALLY_REFUNDED),
        ("CONFIRMED", 2500, S.PARTIALLY_REFUNDED),
        ("REFUND_IN_PROGRESS", 2500, S.PARTIALLY_REFUNDED),
        ("RECEIVED", 10000, S.REFUNDED),  # several partial refunds adding up to the whole value
        ("REFUNDED", 2500, S.REFUNDED),  # Asaas says refunded: trust it
        ("CHARGEBACK_REQUESTED", 2500, S.DISPUTED),
        ("PENDING", 0, S.PENDING),
    ],
)
def test_refunds_refine_a_paid_payment(status, refunded, expected):
    assert asaas_status(payment(status), amount=10000, amount_refunded=refunded)[0] is expected


def test_only_done_refunds_count():
    body = payment(
        "RECEIVED",
        refunds=[
            {"status": "DONE", "value": Decimal("10.10")},
            {"status": "PENDING", "value": Decimal("5.00")},
            {"status": "CANCELLED", "value": Decimal("7.00")},
            {"status": "DONE", "value": 2},
        ],
    )
    assert refunded_amount(body) == 1210
    assert refunded_amount(payment("RECEIVED", refunds=None)) == 0
    with pytest.raises(GatewayResponseInvalid):
        refunded_amount(payment("RECEIVED", refunds={"status": "DONE"}))


@pytest.mark.parametrize("status", ["SOMETHING_NEW", ""])
def test_an_unknown_status_is_invalid_not_a_guess(status):
    with pytest.raises(GatewayResponseInvalid):
        asaas_status(payment(status), amount=10000, amount_refunded=0)


@pytest.mark.parametrize(
    ("value", "minor"),
    [(Decimal("10.1"), 1010), (Decimal("100.00"), 10000), (Decimal("0.005"), 1), (Decimal("19.99"), 1999), (5, 500)],
)
def test_values_become_centavos_exactly(value, minor):
    assert to_minor_units(value, "value") == minor


@pytest.mark.parametrize("value", ["10.00", True, 10.1, Decimal("NaN"), Decimal("1e15"), None])
def test_values_that_are_not_decimal_numbers_are_invalid(value):
    with pytest.raises(GatewayResponseInvalid):
        to_minor_units(value, "value")


def make_client(pool: FakePool) -> AsaasClient:
    http = JsonHttpClient("https://api.asaas.test", provider="asaas", pool=pool, sleep=Sleeps(), random=lambda: 0)
    return AsaasClient(http, lambda: KEY)


def test_fetches_the_payment_with_the_access_token_header():
    body = b'{"object": "payment", "id": "pay_1", "value": 10.1, "status": "RECEIVED", "deleted": false}'
    pool = FakePool([FakeResponse(200, body)])

    snapshot = make_client(pool).fetch_payment("pay_1")

    assert (snapshot.status, snapshot.amount, snapshot.currency, snapshot.amount_refunded) == (S.PAID, 1010, "BRL", 0)
    assert pool.urls == ["https://api.asaas.test/v3/payments/pay_1"]
    headers = pool.calls[0][2]["headers"]
    assert headers["access_token"] == KEY
    assert "Authorization" not in headers


def test_a_refunded_payment_without_itemised_refunds_refunded_everything():
    body = b'{"id": "pay_1", "value": 50.0, "status": "REFUNDED", "deleted": false}'

    snapshot = make_client(FakePool([FakeResponse(200, body)])).fetch_payment("pay_1")
    assert (snapshot.status, snapshot.amount_refunded) == (S.REFUNDED, 5000)


def test_a_partially_refunded_payment_reports_the_refunded_amount():
    body = (
        b'{"id": "pay_1", "value": 50.0, "status": "RECEIVED", "deleted": false,'
        b' "refunds": [{"status": "DONE", "value": 12.34, "dateCreated": "2024-06-12 10:00:00"}]}'
    )

    snapshot = make_client(FakePool([FakeResponse(200, body)])).fetch_payment("pay_1")
    assert (snapshot.status, snapshot.amount_refunded, snapshot.provider_status) == (
        S.PARTIALLY_REFUNDED,
        1234,
        "RECEIVED/partially_refunded",
    )


def test_a_404_is_not_found():
    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(404, b"")])).fetch_payment("pay_unknown")


@pytest.mark.parametrize(
    "codes", [["invalid_object"], ["not_found"], ["payment_not_found"], ["invalid_object", "not_found"]]
)
def test_a_400_that_says_no_such_object_is_not_found(codes):
    body = {"errors": [{"code": code, "description": "Cobrança inexistente"} for code in codes]}

    with pytest.raises(ResourceNotFound):
        make_client(FakePool([FakeResponse(400, body)])).fetch_payment("pay_unknown")


@pytest.mark.parametrize(
    "body",
    [{"errors": [{"code": "invalid_value"}]}, {"errors": [{"code": "invalid_object"}, {"code": "invalid_value"}]}, {}],
)
def test_any_other_400_is_rejected(body):
    with pytest.raises(GatewayRejected) as caught:
        make_client(FakePool([FakeResponse(400, body)])).fetch_payment("pay_1")
    assert not isinstance(caught.value, ResourceNotFound)


def test_a_bad_token_is_rejected():
    body = {
        "errors": [
            {"code": "invalid_access_token", "description": "A chave de API informada não pertence a este ambiente"}
        ]
    }
    with pytest.raises(GatewayRejected):
        make_client(FakePool([FakeResponse(401, body)])).fetch_payment("pay_1")


@pytest.mark.parametrize(
    "body",
    [
        b'{"id": "pay_other", "value": 1.0, "status": "RECEIVED"}',
        b'{"id": "pay_1", "value": "1.00", "status": "RECEIVED"}',
        b'{"id": "pay_1", "value": 1.0}',
    ],
)
def test_malformed_answers_are_invalid(body):
    with pytest.raises(GatewayResponseInvalid):
        make_client(FakePool([FakeResponse(200, body)])).fetch_payment("pay_1")
