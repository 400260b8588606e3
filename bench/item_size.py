"""What DynamoDB bills for a write, from the items themselves: pure arithmetic, no I/O.

Sources (AWS documentation):
- Item size: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
  (attribute names + values; a string is its UTF-8 bytes; a number ~ 1 byte per two significant digits + 1 byte,
  leading and trailing zeroes trimmed; a binary its raw bytes; null and Boolean 1 byte; a List or Map 3 bytes of
  overhead plus 1 byte per element, plus its elements).
- Write units: https://aws.amazon.com/dynamodb/pricing/on-demand/ and
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
  (a standard write unit writes up to 1 KB, larger items take more; a transactional write takes two units per
  1 KB; an UpdateItem is billed on the larger of the item before and after the update; a strongly consistent
  read is one unit per 4 KB, an eventually consistent one half of that).
- Index writes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations
  (a write that puts an item into a sparse index, or removes it, is one index write; a change of an index key
  attribute is two: a delete of the old entry and a put of the new one; a change of projected attributes only is
  one write; an item in the index neither before nor after costs the index nothing). Each index write is billed
  on the size of the projected entry: the table's keys, the index's keys and the projected attributes.

What the documentation leaves open, and the choice made here:
- Sets (SS, NS, BS) are not described on the sizing page; they are counted as the sum of their elements.
- Whether the index writes caused by a transactional write are billed at the transactional rate is not stated;
  they are counted at the standard rate (`index_write_units(..., transactional=...)` says which was used).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KB = 1024
WRITE_UNIT_BYTES = 1 * KB
READ_UNIT_BYTES = 4 * KB
LIST_OR_MAP_OVERHEAD = 3
PER_ELEMENT_OVERHEAD = 1
NULL_OR_BOOLEAN_BYTES = 1

AttributeValue = Mapping[str, Any]  # the low-level wire shape: {"S": "..."}, {"N": "12"}, {"M": {...}}, ...
Item = Mapping[str, AttributeValue]


def number_bytes(text: str) -> int:
    """A number as DynamoDB sends it ("1990", "-0.050", "1.5E+3"): 1 byte per two significant digits, + 1."""
    mantissa = text.strip().lstrip("+-").upper().split("E", 1)[0]
    digits = mantissa.replace(".", "").strip("0")
    return math.ceil(len(digits) / 2) + 1


def value_bytes(value: AttributeValue) -> int:
    """The size of one attribute value (without its name)."""
    ((kind, payload),) = value.items()
    if kind == "S":
        return len(payload.encode("utf-8"))
    if kind == "N":
        return number_bytes(payload)
    if kind == "B":
        return len(payload)  # raw bytes, not their base64 text
    if kind in ("BOOL", "NULL"):
        return NULL_OR_BOOLEAN_BYTES
    if kind == "SS":
        return sum(len(element.encode("utf-8")) for element in payload)
    if kind == "NS":
        return sum(number_bytes(element) for element in payload)
    if kind == "BS":
        return sum(len(element) for element in payload)
    if kind == "L":
        return LIST_OR_MAP_OVERHEAD + sum(PER_ELEMENT_OVERHEAD + value_bytes(element) for element in payload)
    if kind == "M":
        return LIST_OR_MAP_OVERHEAD + sum(
            PER_ELEMENT_OVERHEAD + len(name.encode("utf-8")) + value_bytes(element) for name, element in payload.items()
        )
    raise ValueError(f"not a DynamoDB attribute value type: {kind!r}")


def item_bytes(item: Item | None) -> int:
    """The billed size of an item: the sum of its attribute names and values (0 for no item)."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_bytes(value) for name, value in item.items())


def write_units(size: int, *, transactional: bool = False) -> int:
    """Write request units for writing an item of `size` bytes: 1 per started KB (at least 1), doubled in a
    transaction."""
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return 2 * units if transactional else units


def item_write_units(before: Item | None, after: Item | None, *, transactional: bool = False) -> int:
    """A put, update or delete of one item: billed on the larger of the item before and after the write."""
    return write_units(max(item_bytes(before), item_bytes(after)), transactional=transactional)


def read_units(size: int, *, consistent: bool) -> float:
    """Read request units for reading `size` bytes: 1 per started 4 KB when strongly consistent, half otherwise."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class IndexShape:
    """A global secondary index as DescribeTable tells it: its keys and what it projects."""

    name: str
    keys: tuple[str, ...]  # the index's partition (and sort) key attributes
    projection: str  # ALL | KEYS_ONLY | INCLUDE
    included: tuple[str, ...] = ()

    def entry(self, item: Item | None, table_keys: Sequence[str]) -> dict[str, AttributeValue] | None:
        """The index's copy of `item`, or None when the item is not in this (sparse) index."""
        if not item or any(key not in item for key in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        kept = set(table_keys) | set(self.keys)
        if self.projection == "INCLUDE":
            kept |= set(self.included)
        return {name: value for name, value in item.items() if name in kept}


def index_write_units(
    index: IndexShape, table_keys: Sequence[str], before: Item | None, after: Item | None
) -> tuple[int, int]:
    """(index writes, write units) that one table write costs this index, by the GSI documentation's rules,
    at the standard rate."""
    old, new = index.entry(before, table_keys), index.entry(after, table_keys)
    if old is None and new is None:
        return 0, 0
    if old is None:
        return 1, write_units(item_bytes(new))
    if new is None:
        return 1, write_units(item_bytes(old))
    if any(old[key] != new[key] for key in index.keys):  # a key change: delete the old entry, put the new one
        return 2, write_units(item_bytes(old)) + write_units(item_bytes(new))
    if old == new:
        return 0, 0
    return 1, write_units(max(item_bytes(old), item_bytes(new)))
