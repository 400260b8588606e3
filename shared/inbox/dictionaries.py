"""Preset dictionaries for the inline bodies' zlib compression, one per provider that has one.

A webhook body is short JSON whose field names repeat from one event to the next but not within one body, so
plain zlib finds little to match; a preset dictionary (RFC 1950 "FDICT": bytes fed to the compressor before the
data, never stored with it) gives it those names to refer to. A Stripe PaymentIntent event of the documented
example's 1,863 bytes stores as 667 bytes with plain zlib and 292 with the dictionary; the bench's Stripe bodies,
median 730 -> 353 (docs/cost.md).

Versioned forever. The zlib stream of a body compressed with a dictionary names it in its header (DICTID, the
Adler-32 of the dictionary's bytes), so the item needs no attribute for it; `inline_body` (shared/inbox/model.py)
reads the id and looks the bytes up here. A dictionary's file is therefore never edited or removed while an item
compressed with it may exist (retention, archives, backups): a better dictionary is a new file under a new id,
added to DICTIONARIES and made the provider's CURRENT one; the old one stays readable.
tests/unit/test_inbox_body.py pins every file's digest.

Stdlib only, read lazily: the ingest loads a provider's dictionary once per instance, on its first body.
"""

from __future__ import annotations

import zlib
from functools import cache
from pathlib import Path
from typing import Final

_FOLDER = Path(__file__).parent

# Every dictionary ever used, by the DICTID a zlib stream carries (its Adler-32): append only.
DICTIONARIES: Final[dict[int, str]] = {
    # Stripe's event, dispute, refund, charge and PaymentIntent shapes (how it was built: bench/stripe_zdict.py)
    0x4E6F6678: "stripe-1.zdict",
}
# The dictionary each provider's bodies are compressed with now; a provider not named here: plain zlib.
CURRENT: Final[dict[str, int]] = {"stripe": 0x4E6F6678}

_FDICT = 0x20  # RFC 1950, 2.2: bit 5 of the FLG byte: a DICTID follows the two header bytes


class UnknownDictionary(ValueError):
    """A stored body names a dictionary this code does not have: it cannot be read (never deleted ones: see above)."""


@cache
def dictionary(dict_id: int) -> bytes:
    """The bytes of the dictionary `dict_id`, checked against the id (a changed file would misread every item)."""
    name = DICTIONARIES.get(dict_id)
    if name is None:
        raise UnknownDictionary(f"no zlib dictionary {dict_id:#010x}")
    data = (_FOLDER / name).read_bytes()
    if zlib.adler32(data) != dict_id:
        raise UnknownDictionary(f"{name} is not the dictionary {dict_id:#010x} it is registered as")
    return data


def current_dictionary(provider: str | None) -> bytes | None:
    """The dictionary `provider`'s bodies are compressed with now, or None (plain zlib)."""
    dict_id = CURRENT.get(provider or "")
    return None if dict_id is None else dictionary(dict_id)


def stream_dictionary(stream: bytes) -> bytes | None:
    """The dictionary a zlib stream was compressed with (its header's DICTID), or None when it names none."""
    if len(stream) < 6 or not stream[1] & _FDICT:
        return None
    return dictionary(int.from_bytes(stream[2:6], "big"))
