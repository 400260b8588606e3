"""DynamoDB's billed item sizes and write units (bench/item_size.py) against the rules and examples AWS documents
(CapacityUnitCalculations, read-write-operations, GSI throughput considerations, on-demand pricing)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.item_size import (
    IndexShape,
    index_write_units,
    item_bytes,
    item_write_units,
    number_bytes,
    read_units,
    value_bytes,
    write_units,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"S": "pending"}, 7),  # a string: its UTF-8 bytes
        ({"S": "ação"}, 6),  # ç and ã take two bytes each in UTF-8
        ({"B": b"\x00" * 300}, 300),  # raw bytes, not the base64 text sent on the wire
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"L": []}, 3),  # an empty list: its 3 bytes of overhead
        ({"M": {}}, 3),
        ({"L": [{"S": "ab"}, {"S": "c"}]}, 3 + (1 + 2) + (1 + 1)),  # + 1 byte per element
        ({"M": {"id": {"S": "ab"}}}, 3 + 1 + 2 + 2),  # a map's element counts its name too
        ({"M": {"a": {"L": [{"BOOL": False}]}}}, 3 + 1 + 1 + (3 + 1 + 1)),  # nested: each level its overhead
    ],
)
def test_each_type_is_sized_as_the_documentation_says(value, expected):
    assert value_bytes(value) == expected


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        ("1990", 3),  # significant digits 199 (the trailing zero is trimmed): ceil(3 / 2) + 1
        ("12", 2),
        ("123456", 4),
        ("0.050", 2),  # leading and trailing zeroes trimmed: "5"
        ("-42", 2),
        ("1700000000", 2),  # an epoch second of round value: "17"
        ("1764604800", 5),  # trailing zeroes trimmed: 17646048, 8 digits -> 4 + 1
    ],
)
def test_a_number_takes_a_byte_per_two_significant_digits_plus_one(number, expected):
    assert number_bytes(number) == expected


def test_an_item_is_the_sum_of_its_attribute_names_and_values():
    # Given an item with a key, a number and a binary body
    item: dict[str, dict[str, Any]] = {"pk": {"S": "stripe#evt_1"}, "attempts": {"N": "1"}, "body": {"B": b"x" * 1000}}
    # Then its size is each name's bytes plus each value's
    assert item_bytes(item) == (2 + 12) + (8 + 2) + (4 + 1000)
    assert item_bytes(None) == 0


@pytest.mark.parametrize(
    ("size", "transactional", "expected"),
    [
        (1, False, 1),
        (1024, False, 1),  # a standard write unit writes up to 1 KB
        (1025, False, 2),  # larger items need more units
        (3500, False, 4),
        (1024, True, 2),  # a transactional write takes two units per KB
        (3500, True, 8),
    ],
)
def test_write_units_are_per_started_kilobyte_and_double_in_a_transaction(size, transactional, expected):
    assert write_units(size, transactional=transactional) == expected


def test_a_read_of_3500_bytes_costs_what_a_4_kb_read_does():
    # The read-write-operations page's example: 3,500 bytes are rounded up to 4 KB; 8 KB take two units
    assert read_units(3500, consistent=True) == read_units(4096, consistent=True) == 1.0
    assert read_units(8 * 1024, consistent=True) == 2.0
    assert read_units(8 * 1024, consistent=False) == 1.0  # an eventually consistent read is half


def test_an_update_is_billed_on_the_larger_of_the_item_before_and_after():
    big: dict[str, dict[str, Any]] = {"pk": {"S": "k"}, "body": {"B": b"x" * 3000}}
    small_change = {**big, "status": {"S": "processed"}}
    # Given a 3 KB item whose update adds a few bytes, When billed, Then the whole item is (3 units, not 1)
    assert item_write_units(big, small_change) == 3
    # And an update that shrinks an item is billed on the item before
    assert item_write_units(big, {"pk": {"S": "k"}}) == 3
    assert item_write_units(big, small_change, transactional=True) == 6


OPEN = IndexShape(name="open", keys=("open_pk", "open_sk"), projection="INCLUDE", included=("provider",))
TABLE_KEYS = ("pk",)


def _item(**extra):
    return {"pk": {"S": "stripe#evt_1"}, "body": {"B": b"x" * 5000}, "provider": {"S": "stripe"}, **extra}


def test_an_item_entering_a_sparse_index_is_one_write_of_its_projected_size_not_the_whole_item():
    before, after = None, _item(open_pk={"S": "pending#3"}, open_sk={"S": "2026-12-01"})
    # The body is not projected: the entry is a few dozen bytes, one write unit
    assert index_write_units(OPEN, TABLE_KEYS, before, after) == (1, 1)
    assert OPEN.entry(after, TABLE_KEYS) == {
        "pk": after["pk"],
        "open_pk": after["open_pk"],
        "open_sk": after["open_sk"],
        "provider": after["provider"],
    }


def test_an_index_key_change_is_a_delete_and_a_put():
    before = _item(open_pk={"S": "pending#3"}, open_sk={"S": "2026-12-01"})
    after = _item(open_pk={"S": "failed#3"}, open_sk={"S": "2026-12-01"})
    assert index_write_units(OPEN, TABLE_KEYS, before, after) == (2, 2)


def test_leaving_a_sparse_index_is_one_write_and_staying_out_costs_nothing():
    inside = _item(open_pk={"S": "pending#3"}, open_sk={"S": "2026-12-01"})
    assert index_write_units(OPEN, TABLE_KEYS, inside, _item()) == (1, 1)
    assert index_write_units(OPEN, TABLE_KEYS, _item(), _item(status={"S": "processed"})) == (0, 0)


def test_a_change_to_unprojected_attributes_only_costs_the_index_nothing_and_a_projected_one_costs_one_write():
    inside = _item(open_pk={"S": "pending#3"}, open_sk={"S": "2026-12-01"})
    assert index_write_units(OPEN, TABLE_KEYS, inside, {**inside, "attempts": {"N": "2"}}) == (0, 0)
    assert index_write_units(OPEN, TABLE_KEYS, inside, {**inside, "provider": {"S": "asaas"}}) == (1, 1)


def test_an_index_projecting_all_copies_the_whole_item():
    everything = IndexShape(name="all", keys=("open_pk",), projection="ALL")
    after = _item(open_pk={"S": "pending#3"})
    assert index_write_units(everything, TABLE_KEYS, None, after) == (1, write_units(item_bytes(after)))
    assert write_units(item_bytes(after)) == 5
