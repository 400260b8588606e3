"""inbox_local/moto_query_speedup.py answers as moto does: every Query and Scan below, run with moto's own
`all_items` and `DynamoType.cast_value` and with the faster ones, gets the same items, in the same order, with the same
LastEvaluatedKey, or the same error."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

from inbox_local import moto_query_speedup

ACCOUNT = "123456789012"
MAX_PAGES = 40  # more than any request below has (30 items a table, pages of one)


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.session.Session(region_name="us-east-1").client("dynamodb")
        _create_tables(client)
        yield client


def _create_tables(client: Any) -> None:
    # The inbox's shape: a string hash key, a sparse index of (string hash, string range), with ties on the range
    client.create_table(
        TableName="hash",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "open_status", "received_at", "provider")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "open",
                "KeySchema": [
                    {"AttributeName": "open_status", "KeyType": "HASH"},
                    {"AttributeName": "received_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["provider"]},
            },
            {
                "IndexName": "by-provider",  # a hash-only index: the table's key orders it
                "KeySchema": [{"AttributeName": "provider", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    # A table with a number range key, and an index of (number hash, string range)
    client.create_table(
        TableName="range",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
            {"AttributeName": "g", "AttributeType": "N"},
            {"AttributeName": "r", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "r", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    rng = random.Random(7)
    for n in range(30):
        item = {"pk": {"S": f"{rng.choice('abcxyz')}#evt_{rng.randrange(10**6):06d}"}, "n": {"N": str(n)}}
        if n % 5:  # sparse: one in five is not in the index
            item["open_status"] = {"S": f"{rng.choice(['failed', 'pending'])}#{rng.randrange(3)}"}
            item["received_at"] = {"S": f"2026-01-0{rng.randrange(1, 4)}T12:00:00Z"}  # ties: the table key orders
        item["provider"] = {"S": rng.choice(["stripe", "asaas"])}
        client.put_item(TableName="hash", Item=item)
    for _ in range(30):
        client.put_item(
            TableName="range",
            Item={
                "pk": {"S": f"p{rng.randrange(6)}"},
                "sk": {"N": str(rng.choice([rng.randrange(-50, 50), rng.randrange(1000) / 8]))},
                "g": {"N": str(rng.randrange(3))},
                "r": {"S": rng.choice(["a", "b", "c", "ab"])},
            },
        )


def _pages(client: Any, operation: str, **request: Any) -> list[Any]:
    """Every page of a Query or Scan, following LastEvaluatedKey, or the error it ends with."""
    answers: list[Any] = []
    while len(answers) < MAX_PAGES:  # a broken order can page for ever
        try:
            page = getattr(client, operation)(**request)
        except client.exceptions.ClientError as error:
            answers.append(("error", error.response["Error"]))
            return answers
        page.pop("ResponseMetadata", None)
        answers.append(page)
        if "LastEvaluatedKey" not in page:
            return answers
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
    return answers


def _queries() -> Iterator[dict[str, Any]]:
    for forward, limit in itertools.product((True, False), (None, 1, 4)):
        common: dict[str, Any] = {"ScanIndexForward": forward, **({"Limit": limit} if limit else {})}
        for shard in range(3):
            yield {
                "TableName": "hash",
                "IndexName": "open",
                "KeyConditionExpression": "open_status = :s",
                "ExpressionAttributeValues": {":s": {"S": f"failed#{shard}"}},
                **common,
            }
        yield {
            "TableName": "hash",
            "IndexName": "open",
            "KeyConditionExpression": "open_status = :s AND received_at BETWEEN :a AND :b",
            "FilterExpression": "provider = :p",
            "ExpressionAttributeValues": {
                ":s": {"S": "pending#1"},
                ":a": {"S": "2026-01-02"},
                ":b": {"S": "2026-01-04"},
                ":p": {"S": "stripe"},
            },
            **common,
        }
        yield {
            "TableName": "hash",
            "IndexName": "by-provider",
            "KeyConditionExpression": "provider = :p",
            "ExpressionAttributeValues": {":p": {"S": "asaas"}},
            **common,
        }
        for pk in ("p0", "p3"):
            yield {
                "TableName": "range",
                "KeyConditionExpression": "pk = :p AND sk > :n",
                "ExpressionAttributeValues": {":p": {"S": pk}, ":n": {"N": "-10"}},
                **common,
            }
        yield {
            "TableName": "range",
            "IndexName": "by-g",
            "KeyConditionExpression": "g = :g AND begins_with(r, :r)",
            "ExpressionAttributeValues": {":g": {"N": "1"}, ":r": {"S": "a"}},
            **common,
        }
        yield {
            "TableName": "hash",
            "IndexName": "missing",
            "KeyConditionExpression": "open_status = :s",
            "ExpressionAttributeValues": {":s": {"S": "failed#0"}},
            **common,
        }
        yield {  # a consistent read on a global index is refused
            "TableName": "range",
            "IndexName": "by-g",
            "ConsistentRead": True,
            "KeyConditionExpression": "g = :g",
            "ExpressionAttributeValues": {":g": {"N": "2"}},
            **common,
        }


def _scans() -> Iterator[dict[str, Any]]:
    for table, limit in itertools.product(("hash", "range"), (None, 4)):
        yield {"TableName": table, **({"Limit": limit} if limit else {})}
        yield {"TableName": table, "IndexName": "by-g" if table == "range" else "open"}


def _answers(client: Any) -> list[list[Any]]:
    queries = [_pages(client, "query", **request) for request in _queries()]
    return queries + [_pages(client, "scan", **request) for request in _scans()]


def test_every_query_and_scan_answers_as_moto_does(dynamodb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Table.all_items is moto_query_speedup.all_items  # installed by inbox_local/moto_speedups.py
    moto_all_items = moto_query_speedup.MOTO_ALL_ITEMS
    fell_back: list[str] = []

    def counted(table: Table) -> list[Item]:
        fell_back.append(table.name)
        return moto_all_items(table)

    monkeypatch.setattr(moto_query_speedup, "MOTO_ALL_ITEMS", counted)
    faster = _answers(dynamodb)
    assert fell_back == []  # these tables' keys take the faster sort
    monkeypatch.setattr(Table, "all_items", moto_all_items)
    monkeypatch.setattr(DynamoType, "cast_value", moto_query_speedup.MOTO_CAST_VALUE)
    assert _answers(dynamodb) == faster
    # And the answers are not trivial: pages of several sizes, items in both orders, errors
    pages = [page for answer in faster for page in answer if isinstance(page, dict)]
    assert {len(page["Items"]) for page in pages} >= {0, 1, 4}
    assert sum("LastEvaluatedKey" in page for page in pages) > 50
    assert sum(isinstance(page, tuple) for answer in faster for page in answer) == 12


def _same_list(table: Table, mutate: Callable[[], None] | None = None) -> None:
    if mutate:
        mutate()
    outcomes: list[list[Any]] = []
    for implementation in (moto_query_speedup.all_items, moto_query_speedup.MOTO_ALL_ITEMS):
        try:
            outcomes.append([id(item) for item in implementation(table)])
        except Exception as error:
            outcomes.append([type(error).__name__])
    assert outcomes[0] == outcomes[1]


def test_all_items_is_moto_s_list_in_moto_s_order_for_any_keys(dynamodb: Any) -> None:
    backend = dynamodb_backends[ACCOUNT]["us-east-1"]
    hash_table, range_table = backend.get_table("hash"), backend.get_table("range")
    _same_list(hash_table)
    _same_list(range_table)

    # Keys no request could store, put straight into the tables: of several types, numbers that are NaN
    def add(table: Table, hash_key: dict[str, Any], range_key: dict[str, Any] | None = None) -> None:
        h, r = DynamoType(hash_key), DynamoType(range_key) if range_key else None
        item = Item(h, r, {"pk": hash_key, **({"sk": range_key} if range_key else {})})
        if r is None:
            table.items[h] = item  # type: ignore[assignment]
        else:
            table.items[h][r] = item

    _same_list(range_table, lambda: add(range_table, {"S": "p0"}, {"N": "NaN"}))
    _same_list(range_table, lambda: add(range_table, {"S": "p9"}, {"S": "9"}))  # range keys of two types
    _same_list(hash_table, lambda: add(hash_table, {"N": "5"}))  # str < Decimal: a TypeError, as moto's
    del hash_table.items[DynamoType({"N": "5"})]
    _same_list(hash_table, lambda: add(hash_table, {"B": "YQ=="}))
    numbers = backend.get_table("hash")
    numbers.items.clear()
    for value in ("3", "-1.5", "10", "2e3", "0.0001"):
        add(numbers, {"N": value})
    _same_list(numbers)
    assert [item.hash_key.cast_value for item in moto_query_speedup.all_items(numbers)] == sorted(
        Decimal(value) for value in ("3", "-1.5", "10", "2e3", "0.0001")
    )


@pytest.mark.parametrize(
    "value",
    [
        {"S": "a#1"},
        {"S": ""},
        {"N": "-1.50"},
        {"B": "YQ=="},
        {"BOOL": False},
        {"NULL": True},
        {"SS": ["a", "b"]},
        {"NS": ["1", "2.5"]},
        {"BS": ["YQ=="]},
        {"L": [{"S": "a"}, {"N": "1"}]},
        {"M": {"k": {"S": "v"}, "n": {"NULL": True}}},
    ],
)
def test_cast_value_is_moto_s(value: dict[str, Any]) -> None:
    dynamo = DynamoType(value)
    assert dynamo.cast_value == moto_query_speedup.MOTO_CAST_VALUE.fget(dynamo)  # type: ignore[misc]
    assert type(dynamo.cast_value) is type(moto_query_speedup.MOTO_CAST_VALUE.fget(dynamo))  # type: ignore[misc]
