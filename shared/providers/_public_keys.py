"""Public-key signatures for the providers that sign with a private key (Pagar.me v5 RS256, Kiwify Banking Ed25519).

What lives here, and why it is separate from `_signing.py`:
- the verification primitives need `cryptography`, which the Lambda runtime does not ship. It is a runtime
  dependency (pyproject.toml) that the stack's dependency layer carries (infra/dependency_layer.py), and it is
  imported lazily, on the first delivery that needs it: the HMAC and token drivers never pay for it. When it is
  missing, `CryptoUnavailable` (a ValueError) is raised: the ingest answers 5xx ("not configured"), the gateway
  retries, nothing is lost once the package is there. A signature is never "assumed valid" without it.
- the keys come from the provider (a JWKS URL, an API) and are cached; tests and the local stack inject a fixed
  set. `KeySource` is the seam.

Nothing here is hand-rolled cryptography: RSA PKCS#1 v1.5 / SHA-256 and Ed25519 are `cryptography`'s.
Error messages never hold key material or signatures.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

RS256 = "RS256"
ED25519 = "Ed25519"
FETCH_TIMEOUT_SECONDS = 3.0
MAX_KEYS_DOCUMENT_BYTES = 64 * 1024


class CryptoUnavailable(ValueError):
    """`cryptography` is not importable here: public-key signatures cannot be checked (configuration error)."""


class KeysUnavailable(ValueError):  # a ValueError on purpose: the ingest answers 5xx
    """The provider's public keys could not be obtained (not configured, or the key endpoint failed)."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    """One verification key. `material` is (n, e) for RSA and the 32 raw bytes for Ed25519."""

    algorithm: str
    material: bytes | tuple[int, int]
    kid: str | None = None


class KeySource(Protocol):
    def current(self) -> Sequence[PublicKey]:
        """The keys currently trusted (possibly cached)."""
        ...

    def refreshed(self) -> Sequence[PublicKey]:
        """The keys after asking the provider again (rate-limited): called when a key id is not known."""
        ...


# ---------------------------------------------------------------------------------------------------- encodings


def b64url_decode(text: str) -> bytes:
    """Base64url with or without padding; anything else (a `+`, a `/`, a stray character) is ValueError."""
    if not text or not text.isascii():
        raise ValueError("not base64url")
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded, altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64_any(text: str) -> bytes:
    """Standard or url-safe base64, padded or not."""
    cleaned = text.strip()
    try:
        return b64url_decode(cleaned.replace("+", "-").replace("/", "_").rstrip("="))
    except ValueError:
        raise ValueError("not base64") from None


def _int_from_b64url(text: Any, where: str) -> int:
    if not isinstance(text, str):
        raise KeysUnavailable(f"JWK {where} is not a string")
    try:
        return int.from_bytes(b64url_decode(text), "big")
    except ValueError:
        raise KeysUnavailable(f"JWK {where} is not base64url") from None


def parse_jwks(document: Any) -> tuple[PublicKey, ...]:
    """The usable signature keys of a JWKS (`{"keys": [...]}`): RSA (n, e) and OKP/Ed25519 (x).

    Keys for another use (`use` other than `sig`) or of another type are skipped; so is an RSA key shorter
    than 2048 bits. A document with no usable key is KeysUnavailable.
    """
    if isinstance(document, bytes | str):
        try:
            document = json.loads(document)
        except (ValueError, RecursionError):
            raise KeysUnavailable("key set is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeysUnavailable("key set has no 'keys' list")
    keys: list[PublicKey] = []
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid") if isinstance(entry.get("kid"), str) else None
        if entry.get("kty") == "RSA" and entry.get("alg", RS256) == RS256:
            modulus = _int_from_b64url(entry.get("n"), "n")
            if modulus.bit_length() < 2048:
                continue
            keys.append(PublicKey(RS256, (modulus, _int_from_b64url(entry.get("e"), "e")), kid))
        elif entry.get("kty") == "OKP" and entry.get("crv") == "Ed25519":
            raw = entry.get("x")
            try:
                material = b64url_decode(raw) if isinstance(raw, str) else b""
            except ValueError:
                material = b""
            if len(material) == 32:
                keys.append(PublicKey(ED25519, material, kid))
    if not keys:
        raise KeysUnavailable("key set holds no usable signature key")
    return tuple(keys)


def parse_ed25519_keys(text: str) -> tuple[PublicKey, ...]:
    """Ed25519 public keys written by an operator: a JWKS, PEM blocks, or base64 / base64url / hex raw keys
    separated by commas or whitespace. (Kiwify's key endpoint needs an authenticated service account, so the
    active key is configured rather than fetched; see kiwify.py.)"""
    text = text.strip()
    if not text:
        raise KeysUnavailable("no Ed25519 public key configured")
    if text.startswith("{"):
        return tuple(key for key in parse_jwks(text) if key.algorithm == ED25519) or _no_ed25519()
    keys: list[PublicKey] = []
    if "-----BEGIN" in text:
        for block in text.split("-----END PUBLIC KEY-----"):
            if "-----BEGIN PUBLIC KEY-----" in block:
                pem = block[block.index("-----BEGIN PUBLIC KEY-----") :] + "-----END PUBLIC KEY-----\n"
                keys.append(PublicKey(ED25519, _raw_ed25519_from_pem(pem.encode("ascii"))))
        return tuple(keys) or _no_ed25519()
    for token in text.replace(",", " ").split():
        raw: bytes | None = None
        if len(token) == 64:
            try:
                raw = bytes.fromhex(token)
            except ValueError:
                raw = None
        if raw is None:
            try:
                raw = _b64_any(token)
            except ValueError:
                raise KeysUnavailable("an Ed25519 public key is neither hex nor base64") from None
        if len(raw) == 44 and raw.startswith(_ED25519_SPKI_PREFIX):  # base64 of a DER SubjectPublicKeyInfo
            raw = raw[len(_ED25519_SPKI_PREFIX) :]
        if len(raw) != 32:
            raise KeysUnavailable("an Ed25519 public key is not 32 bytes")
        keys.append(PublicKey(ED25519, raw))
    return tuple(keys)


_PEM_PUBLIC_KEY = re.compile(r"-----BEGIN PUBLIC KEY-----[A-Za-z0-9+/=\s\\n]*?-----END PUBLIC KEY-----")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")
MAX_KEYS_TEXT_CHARS = 16 * 1024  # a handful of PEM keys; anything longer is not a key list


def parse_rsa_public_keys(text: str, *, min_bits: int = 2048) -> tuple[PublicKey, ...]:
    """The RSA public keys (RS256 material) written in `text`: PEM blocks (`-----BEGIN PUBLIC KEY-----`, also with
    literal `\\n` escapes as JSON shows them) and base64 of such a PEM (the form Woovi publishes next to the PEM).
    Anything else in the text is ignored: a value that holds no key (a generated placeholder) yields none. A key
    shorter than `min_bits` is KeysUnavailable (a configuration error, never silently trusted)."""
    if not text or len(text) > MAX_KEYS_TEXT_CHARS:
        return ()
    pems = [match.group(0).replace("\\n", "\n") for match in _PEM_PUBLIC_KEY.finditer(text)]
    rest = _PEM_PUBLIC_KEY.sub(" ", text)
    for run in _BASE64_RUN.findall(rest):
        try:
            decoded = base64.b64decode(run, validate=True).decode("ascii")
        except (binascii.Error, ValueError):
            continue
        pems.extend(match.group(0) for match in _PEM_PUBLIC_KEY.finditer(decoded))
    if not pems:
        return ()
    _invalid, _hashes, _ed25519, _padding, rsa = _crypto()
    from cryptography.hazmat.primitives.serialization import load_pem_public_key  # noqa: PLC0415 - lazy, as _crypto

    keys: list[PublicKey] = []
    for pem in pems:
        try:
            key = load_pem_public_key(pem.encode("ascii"))
        except (ValueError, TypeError):
            raise KeysUnavailable("a configured PEM public key cannot be read") from None
        if not isinstance(key, rsa.RSAPublicKey):
            raise KeysUnavailable("a configured public key is not an RSA key")
        if key.key_size < min_bits:
            raise KeysUnavailable(f"a configured RSA public key has {key.key_size} bits, fewer than {min_bits}")
        numbers = key.public_numbers()
        keys.append(PublicKey(RS256, (numbers.n, numbers.e)))
    return tuple(keys)


def _no_ed25519() -> tuple[PublicKey, ...]:
    raise KeysUnavailable("no Ed25519 public key in the configured value")


# DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING }
_ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def _raw_ed25519_from_pem(pem: bytes) -> bytes:
    body = b"".join(line for line in pem.splitlines() if line and not line.startswith(b"-----"))
    try:
        der = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise KeysUnavailable("an Ed25519 PEM key is not base64") from None
    if len(der) != 44 or not der.startswith(_ED25519_SPKI_PREFIX):
        raise KeysUnavailable("a PEM key is not an Ed25519 public key")
    return der[len(_ED25519_SPKI_PREFIX) :]


# -------------------------------------------------------------------------------------------------- verification


def _crypto() -> Any:
    try:
        from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 - lazy: only public-key providers pay
        from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa  # noqa: PLC0415
    except ImportError:
        raise CryptoUnavailable(
            "public-key webhook signatures need the 'cryptography' package, which is not available here"
        ) from None
    return InvalidSignature, hashes, ed25519, padding, rsa


def verify_with(key: PublicKey, signature: bytes, message: bytes) -> bool:
    """Whether `signature` over `message` verifies with `key` (RS256: PKCS#1 v1.5 + SHA-256; Ed25519: pure)."""
    invalid_signature, hashes, ed25519, padding, rsa = _crypto()
    try:
        if key.algorithm == RS256:
            assert isinstance(key.material, tuple)
            modulus, exponent = key.material
            rsa.RSAPublicNumbers(exponent, modulus).public_key().verify(
                signature, message, padding.PKCS1v15(), hashes.SHA256()
            )
            return True
        if key.algorithm == ED25519:
            assert isinstance(key.material, bytes)
            ed25519.Ed25519PublicKey.from_public_bytes(key.material).verify(signature, message)
            return True
    except (invalid_signature, ValueError):
        return False
    return False


def verify_any(keys: Sequence[PublicKey], signature: bytes, message: bytes) -> bool:
    """Whether any key verifies (each tried; public keys and signatures leak nothing through timing)."""
    matched = False
    for key in keys:
        matched |= verify_with(key, signature, message)
    return matched


# ---------------------------------------------------------------------------------------------------- key sources


class StaticKeySource:
    """A fixed key set: tests, the local stack, or keys an operator configured."""

    def __init__(self, keys: Sequence[PublicKey]) -> None:
        self._keys = tuple(keys)

    def current(self) -> Sequence[PublicKey]:
        return self._keys

    def refreshed(self) -> Sequence[PublicKey]:
        return self._keys


class CachedKeySource:
    """Keys fetched with `fetch`, kept `max_age` seconds, and fetched again at most every `min_refresh`
    seconds when a key id is not known (a rotation) — so a flood of forged key ids cannot hammer the provider.

    A failed fetch with cached keys keeps the cached keys (stale beats down); with none it is KeysUnavailable.
    """

    def __init__(
        self,
        fetch: Callable[[], Sequence[PublicKey]],
        *,
        max_age: float = 86_400,
        min_refresh: float = 300,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._max_age = max_age
        self._min_refresh = min_refresh
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: tuple[PublicKey, ...] = ()
        self._fetched_at: float | None = None

    def current(self) -> Sequence[PublicKey]:
        with self._lock:
            if self._fetched_at is None or self._clock() - self._fetched_at > self._max_age:
                self._load()
            return self._keys

    def refreshed(self) -> Sequence[PublicKey]:
        with self._lock:
            if self._fetched_at is None or self._clock() - self._fetched_at >= self._min_refresh:
                self._load()
            return self._keys

    def _load(self) -> None:
        try:
            self._keys = tuple(self._fetch())
        except KeysUnavailable:
            if not self._keys:
                raise
        self._fetched_at = self._clock()


def fetch_json_keys(url: str, *, timeout: float = FETCH_TIMEOUT_SECONDS) -> tuple[PublicKey, ...]:
    """GET a JWKS over HTTPS (stdlib: the ingest carries no HTTP client). Failures are KeysUnavailable."""
    import urllib.error  # noqa: PLC0415 - only a cache miss pays for the HTTP stack
    import urllib.request  # noqa: PLC0415

    if not url.startswith("https://"):
        raise KeysUnavailable("key set URL must be https")
    request = urllib.request.Request(url, headers={"Accept": "application/json"}, method="GET")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - https enforced above
            document = response.read(MAX_KEYS_DOCUMENT_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise KeysUnavailable(f"key set could not be fetched: {type(error).__name__}") from None
    if len(document) > MAX_KEYS_DOCUMENT_BYTES:
        raise KeysUnavailable("key set is too large")
    return parse_jwks(document)
