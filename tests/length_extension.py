"""SHA-256 length extension, as a forger does it: from `sha256(secret + message)` and the lengths alone, the digest
of `secret + message + glue + suffix` without the secret. Test support for the `secret_prefix` trust class (PagBank
signs `sha256(token + "-" + body)`): the tests forge with it and show the forgery is refused.

Pure Python, from FIPS 180-4 (the compression function, the padding rule); `forge` checks itself against hashlib in
the tests that use it."""

from __future__ import annotations

import struct

_MASK = 0xFFFFFFFF
_BLOCK = 64


def _primes(count: int) -> list[int]:
    found: list[int] = []
    candidate = 2
    while len(found) < count:
        if all(candidate % prime for prime in found):
            found.append(candidate)
        candidate += 1
    return found


def _integer_cube_root(value: int) -> int:
    low, high = 0, 1 << ((value.bit_length() + 2) // 3 + 1)
    while low < high:
        middle = (low + high + 1) // 2
        if middle**3 <= value:
            low = middle
        else:
            high = middle - 1
    return low


# The first 32 bits of the fractional parts of the cube roots of the first 64 primes (FIPS 180-4, 4.2.2).
_K = [_integer_cube_root(prime << 96) & _MASK for prime in _primes(64)]


def _rotate(value: int, bits: int) -> int:
    return ((value >> bits) | (value << (32 - bits))) & _MASK


def _compress(state: tuple[int, ...], block: bytes) -> tuple[int, ...]:
    words = list(struct.unpack(">16I", block))
    for index in range(16, 64):
        w15, w2 = words[index - 15], words[index - 2]
        s0 = _rotate(w15, 7) ^ _rotate(w15, 18) ^ (w15 >> 3)
        s1 = _rotate(w2, 17) ^ _rotate(w2, 19) ^ (w2 >> 10)
        words.append((words[index - 16] + s0 + words[index - 7] + s1) & _MASK)
    a, b, c, d, e, f, g, h = state
    for index in range(64):
        t1 = h + (_rotate(e, 6) ^ _rotate(e, 11) ^ _rotate(e, 25)) + ((e & f) ^ (~e & g)) + _K[index] + words[index]
        t2 = (_rotate(a, 2) ^ _rotate(a, 13) ^ _rotate(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))
        a, b, c, d, e, f, g, h = (t1 + t2) & _MASK, a, b, c, (d + t1) & _MASK, e, f, g
    return tuple((old + new) & _MASK for old, new in zip(state, (a, b, c, d, e, f, g, h), strict=True))


def padding(length: int) -> bytes:
    """SHA-256's padding of a message of `length` bytes: 0x80, zeros, the length in bits (8 bytes, big-endian)."""
    return b"\x80" + b"\x00" * ((55 - length) % _BLOCK) + (8 * length).to_bytes(8, "big")


def forge(digest_hex: str, prefix_length: int, suffix: bytes) -> tuple[bytes, str]:
    """(glue, digest): `digest` is sha256(prefix + glue + suffix) for the `prefix_length`-byte prefix whose digest
    is `digest_hex`, computed without the prefix."""
    state = struct.unpack(">8I", bytes.fromhex(digest_hex))
    glue = padding(prefix_length)
    total = prefix_length + len(glue) + len(suffix)
    tail = suffix + padding(total)
    for start in range(0, len(tail), _BLOCK):
        state = _compress(state, tail[start : start + _BLOCK])
    return glue, struct.pack(">8I", *state).hex()
