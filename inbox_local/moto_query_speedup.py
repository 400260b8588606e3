"""moto's DynamoDB `Table.all_items`, the same list in the same order, sorted without a Python call per comparison.

moto 5.2.5 answers every Query (on the table or on an index) and every Scan by listing the whole table with
`Table.all_items`, which sorts it by key with `DynamoType` objects as sort keys: each of the n log n comparisons
calls `DynamoType.__lt__`, which evaluates the `cast_value` property of both sides (five type tests each). The
replay workflow's 1,000-event test queries the open-events index ~1,000 times on a 1,000-item table: that sort was
a quarter of the test's CPU (py-spy, samples holding the GIL).

Here each item's key is computed once, as what `DynamoType.__lt__` compares (`cast_value`), and the list is sorted by
those: `list.sort` compares keys with `<` only, and `a < b` on two DynamoTypes *is* `a.cast_value < b.cast_value`, so
every comparison answers as moto's does, in the same sequence, and the result is the same list (exceptions too).
Tuple keys (tables with a range key) also compare with `==` first (`DynamoType.__eq__`: type and cast value): they
go this way only when every hash key has one type and every range key one type, and each key equals itself (no
NaN), where comparing the cast values alone answers the same; any other table, or any key whose cast value fails,
is sorted by moto's own code.

And `DynamoType.cast_value` answers a string's value first: moto's property tests five other types before it gets
there, on every `==`, `!=`, `<` and hash of a DynamoType (a Query on an index compares the key of each item of the
table with `!=`). For any other type it is moto's property.

tests/integration/test_moto_query_speedup.py compares Query and Scan answers with moto's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

MOTO_ALL_ITEMS: Final[Callable[[Table], list[Item]]] = getattr(Table.all_items, "moto_all_items", Table.all_items)
MOTO_CAST_VALUE: Final[property] = getattr(
    DynamoType.__dict__["cast_value"], "moto_cast_value", DynamoType.__dict__["cast_value"]
)


class _CastValue(property):
    moto_cast_value = MOTO_CAST_VALUE


def _cast_value(self: DynamoType) -> Any:
    """`DynamoType.cast_value`: a string's value (which moto's property returns once its type is none of N, SS, NS,
    BS, L, M and NULL), any other type's moto's."""
    if self.type == "S":
        return self.value
    return MOTO_CAST_VALUE.fget(self)  # type: ignore[misc]


def _lt_value(value: DynamoType) -> Any:
    """What `DynamoType.__lt__` compares: its `cast_value` (a string's is its value, without the type tests)."""
    return value.value if value.type == "S" else value.cast_value


def _items_of(table: Table) -> list[Item]:
    """The table's items in moto's collection order (`Table.all_items` before its sort)."""
    if table.range_key_attr:
        return [item for hash_set in table.items.values() for item in hash_set.values()]
    return list(table.items.values())  # type: ignore[arg-type]


def _one_type(values: list[DynamoType]) -> bool:
    return len({value.type for value in values}) <= 1


def all_items(self: Table) -> list[Item]:
    """`Table.all_items`: moto's list, in moto's order."""
    items = _items_of(self)
    try:
        if not any(item.range_key for item in items):  # moto's key: the hash key alone, compared with `<` only
            return sorted(items, key=lambda item: _lt_value(item.hash_key))
        if all(item.range_key for item in items):  # moto's key: (hash key, range key), compared with `==` then `<`
            ranges: list[DynamoType] = [item.range_key for item in items]  # type: ignore[misc]
            if _one_type([item.hash_key for item in items]) and _one_type(ranges):
                keys = {id(item): (_lt_value(item.hash_key), _lt_value(item.range_key)) for item in items}  # type: ignore[arg-type]
                # A tuple's `==` takes an element's identity for equality, DynamoType's `==` its type and value:
                # the same answer for values of one type that equal themselves.
                if all(key[0] == key[0] and key[1] == key[1] for key in keys.values()):
                    return sorted(items, key=lambda item: keys[id(item)])
    except Exception:  # noqa: S110 (then moto's own sort raises, or not, as it does)
        pass
    return MOTO_ALL_ITEMS(self)


all_items.moto_all_items = MOTO_ALL_ITEMS  # type: ignore[attr-defined]


def install() -> None:
    Table.all_items = all_items  # type: ignore[method-assign]
    DynamoType.cast_value = _CastValue(_cast_value)  # type: ignore[method-assign,assignment]


def uninstall() -> None:
    Table.all_items = MOTO_ALL_ITEMS  # type: ignore[method-assign,assignment]
    DynamoType.cast_value = MOTO_CAST_VALUE  # type: ignore[method-assign,assignment]
