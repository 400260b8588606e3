"""What the doctor knows of each provider's scheme: where the proof travels, how the MAC is spelled, whether the
raw body and a timestamp are signed. Data, not code: the diagnoses a scheme makes possible follow from its row
(`SchemeProfile.applicable`), and docs/troubleshooting.md's matrix is generated from the same rows
(tests/unit/test_doctor.py checks the page against `matrix_rows()`).

Rows come from the drivers' own declarations wherever a driver is a row of the scheme engine (`_schemes.py`:
GitHub, Shopify, Asaas, Hotmart, iugu, Kiwify sales, Pagar.me legacy, generic), so a header renamed there is
renamed here. The drivers that verify in code (Stripe, Standard Webhooks, Paddle, Mercado Pago, PagBank, Adyen,
Pagar.me v5, Kiwify Banking) are described from their modules' constants.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import string
from dataclasses import dataclass
from typing import Literal

from shared.definitions import PROVIDER_CATALOG
from shared.providers._schemes import FirstCarried, HmacScheme, Scheme, SchemeVerified, TokenScheme
from shared.providers.base import ProviderDriver, WebhookRequest
from shared.providers.generic import driver as generic
from shared.providers.kiwify import driver as kiwify
from shared.providers.mercadopago import driver as mercadopago
from shared.providers.paddle import driver as paddle
from shared.providers.pagarme import driver as pagarme
from shared.providers.pagbank import driver as pagbank
from shared.providers.standard import driver as standard
from shared.providers.stripe import driver as stripe
from shared.providers.woovi import driver as woovi

Kind = Literal["hmac", "digest", "token", "asymmetric", "in_body"]
Encoding = Literal["hex", "base64"]

# Every diagnosis the doctor gives, in the order the matrix shows them.
DIAGNOSES: tuple[str, ...] = (
    "valid",
    "wrong_secret",
    "body_reserialized",
    "encoding_mismatch",
    "timestamp_out_of_tolerance",
    "missing_header",
    "malformed_header",
    "wrong_provider",
    "unexplained",
)


@dataclass(frozen=True, slots=True)
class MacAt:
    """Where a MAC is presented and how the scheme spells it."""

    headers: tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    encoding: Encoding = "hex"
    prefix: str = ""  # what precedes the MAC inside its carrier: "v1=", "sha256=", "v1,"
    digest_size: int = 32  # bytes of the MAC: a respelling must decode to exactly this many


@dataclass(frozen=True, slots=True)
class TimestampAt:
    """Where the signed timestamp is: a header's whole value, or the `key=` item of a list in it."""

    headers: tuple[str, ...]
    key: str | None = None
    separator: str = ","
    milliseconds: bool = False
    tolerance_seconds: int | None = None  # the scheme's own tolerance (generic), else the source's

    def read(self, request: WebhookRequest) -> int | None:
        """The timestamp in epoch seconds, or None when it is absent or not a number (the verifier says which)."""
        for name in self.headers:
            value = request.header(name)
            if not value:
                continue
            text = value.strip()
            if self.key is not None:
                items = (item.strip().partition("=") for item in value.split(self.separator))
                text = next((v.strip() for k, sep, v in items if sep and k.strip().lower() == self.key), "")
            if text.isascii() and text.isdigit() and len(text) <= 16:
                return int(text) // 1000 if self.milliseconds else int(text)
        return None


@dataclass(frozen=True, slots=True)
class SchemeProfile:
    """One way a provider proves a delivery's origin, as far as the doctor needs to know it."""

    family: str  # the matrix's "scheme" column
    kind: Kind
    expected: str  # what the carrier should look like, for missing/malformed header answers
    proof_headers: tuple[str, ...] = ()  # headers whose presence says "this scheme" (wrong_provider)
    proof_query: tuple[str, ...] = ()
    mac: MacAt | None = None  # None: nothing whose encoding can be wrong (a token, RSA, a MAC inside the body)
    signs_raw_body: bool = False  # the raw bytes are signed: a re-serialized body breaks the proof
    timestamp: TimestampAt | None = None
    # A prefix the provider's secrets carry that is part of the key (Stripe's "whsec_"): dropping or adding it is
    # a mistake worth trying. Standard Webhooks strips its own "whsec_" before decoding: no such mistake there.
    secret_prefix: str | None = None
    structured: bool = False  # the carrier has a syntax of its own that can be malformed
    pretty_indent: int | None = None  # the provider's own pretty-printing of its JSON bodies
    authorization_schemes: tuple[str, ...] = ()  # a token in an Authorization header may follow these words

    @property
    def uses_secret(self) -> bool:
        return self.kind in ("hmac", "digest", "token", "in_body")

    def carried_by(self, request: WebhookRequest) -> bool:
        return any(request.header(name) is not None for name in self.proof_headers) or any(
            name in request.query for name in self.proof_query
        )

    def unreadable(self, request: WebhookRequest) -> str | None:
        """Why the MAC's carrier, present, holds nothing the scheme could read (some verifiers say only "no
        signature matches" then); None when it holds a well-spelled MAC or is absent."""
        if self.mac is None:
            return None
        present = [
            *((f"the {name} header", request.header(name)) for name in self.mac.headers),
            *((f"the {name} query parameter", request.query.get(name)) for name in self.mac.query),
        ]
        carried = [(where, value) for where, value in present if value]
        if not carried:
            return None
        prefix = self.mac.prefix.lower()
        for _, value in carried:
            for match in MAC_TOKEN.finditer(value):
                if _is_mac(match.group(), self.mac) and value[: match.start()].lower().endswith(prefix):
                    return None
        where = " and ".join(where for where, _ in carried)
        return f"{where} holds no `{self.mac.prefix}<{self.mac.encoding} MAC of {self.mac.digest_size} bytes>`"

    def applicable(self) -> tuple[str, ...]:
        """The diagnoses this scheme makes possible (the matrix's row), in DIAGNOSES order."""
        possible = {
            "valid": True,
            "wrong_secret": self.uses_secret,
            "body_reserialized": self.signs_raw_body,
            "encoding_mismatch": self.mac is not None,
            "timestamp_out_of_tolerance": self.timestamp is not None,
            "missing_header": bool(self.proof_headers or self.proof_query),
            "malformed_header": self.structured or self.mac is not None,
            "wrong_provider": True,
            "unexplained": True,
        }
        return tuple(code for code in DIAGNOSES if possible[code])


# A run of base64/base64url/hex characters long enough to be a MAC, not preceded by one (so `v1=` stays out).
MAC_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}")


def _is_mac(token: str, mac: MacAt) -> bool:
    """Whether `token` is a MAC spelled exactly as the scheme spells it (encoding and length)."""
    if mac.encoding == "hex":
        return len(token) == 2 * mac.digest_size and all(c in string.hexdigits for c in token)
    try:
        return len(base64.b64decode(token, validate=True)) == mac.digest_size
    except (binascii.Error, ValueError):
        return False


def _digest_size(algorithm: str) -> int:
    return hashlib.new(algorithm).digest_size


def profile_of_scheme(scheme: Scheme, *, family: str | None = None) -> tuple[SchemeProfile, ...]:
    """The profiles of a scheme-engine row (a FirstCarried gives one per member, in its order)."""
    if isinstance(scheme, FirstCarried):
        return tuple(profile for member in scheme.schemes for profile in profile_of_scheme(member))
    if isinstance(scheme, TokenScheme):
        carriers = [*scheme.headers, *((f"?{scheme.query_param}",) if scheme.query_param else ())]
        return (
            SchemeProfile(
                family=family or f"static token in {' or '.join(carriers)}",
                kind="token",
                expected=f"{' or '.join(carriers)} holding the configured token",
                proof_headers=tuple(h.lower() for h in scheme.headers),
                proof_query=(scheme.query_param,) if scheme.query_param else (),
                authorization_schemes=scheme.authorization_schemes,
            ),
        )
    if isinstance(scheme, HmacScheme):
        carriers = [*scheme.headers, *((f"?{scheme.query_param}",) if scheme.query_param else ())]
        spelled = f"{scheme.prefix}<{scheme.encoding} HMAC-{scheme.algorithm.upper()}>"
        timestamp = (
            TimestampAt((scheme.timestamp_header.lower(),), tolerance_seconds=scheme.tolerance_seconds)
            if scheme.timestamp_header
            else None
        )
        return (
            SchemeProfile(
                family=family
                or f"HMAC-{scheme.algorithm.upper()} {scheme.encoding} of `{scheme.signed_content}` in "
                f"`{' or '.join(carriers)}: {scheme.prefix}..`",
                kind="hmac",
                expected=f"{' or '.join(carriers)}: {spelled}"
                + (f" and {scheme.timestamp_header}: <epoch seconds>" if scheme.timestamp_header else ""),
                proof_headers=tuple(h.lower() for h in scheme.headers),
                proof_query=(scheme.query_param,) if scheme.query_param else (),
                mac=MacAt(
                    headers=tuple(h.lower() for h in scheme.headers),
                    query=(scheme.query_param,) if scheme.query_param else (),
                    encoding="hex" if scheme.encoding == "hex" else "base64",
                    prefix=scheme.prefix,
                    digest_size=_digest_size(scheme.algorithm),
                ),
                signs_raw_body=True,  # the engine refuses a template without {body}
                timestamp=timestamp,
                structured=bool(scheme.prefix or scheme.separator),
            ),
        )
    raise TypeError(f"no doctor profile for scheme {type(scheme).__name__}")


_STANDARD_SIGNATURES = tuple(family[2] for family in standard.HEADER_FAMILIES)
_STANDARD_TIMESTAMPS = tuple(family[1] for family in standard.HEADER_FAMILIES)

# The drivers that verify in code, and those whose profile says more than their scheme row (Stripe's secret
# prefix and pretty-printed bodies): their profiles, from their modules' constants.
_CODE_PROFILES: dict[str, tuple[SchemeProfile, ...]] = {
    "stripe": (
        SchemeProfile(
            family="HMAC-SHA256 hex of `{t}.{body}` in `Stripe-Signature: t=..,v1=..`",
            kind="hmac",
            expected="Stripe-Signature: t=<epoch seconds>,v1=<hex HMAC-SHA256>",
            proof_headers=(stripe.SIGNATURE_HEADER,),
            mac=MacAt(headers=(stripe.SIGNATURE_HEADER,), encoding="hex", prefix=f"{stripe.SCHEME}="),
            signs_raw_body=True,
            timestamp=TimestampAt((stripe.SIGNATURE_HEADER,), key="t"),
            secret_prefix=standard.SECRET_PREFIX,  # Stripe's endpoint secrets are whsec_..., used whole as the key
            structured=True,
            pretty_indent=2,  # Stripe sends its events pretty-printed with two spaces
        ),
    ),
    "standard": (
        SchemeProfile(
            family="HMAC-SHA256 base64 of `{id}.{ts}.{body}` in `webhook-signature: v1,..`",
            kind="hmac",
            expected="webhook-id, webhook-timestamp: <epoch seconds> and webhook-signature: v1,<base64 HMAC-SHA256>"
            " (or the svix-* trio)",
            proof_headers=_STANDARD_SIGNATURES,
            mac=MacAt(headers=_STANDARD_SIGNATURES, encoding="base64", prefix=f"{standard.SCHEME},"),
            signs_raw_body=True,
            timestamp=TimestampAt(_STANDARD_TIMESTAMPS),
            structured=True,
        ),
    ),
    "paddle": (
        SchemeProfile(
            family="HMAC-SHA256 hex of `{ts}:{body}` in `Paddle-Signature: ts=..;h1=..`",
            kind="hmac",
            expected="Paddle-Signature: ts=<epoch seconds>;h1=<hex HMAC-SHA256>",
            proof_headers=(paddle.SIGNATURE_HEADER,),
            mac=MacAt(headers=(paddle.SIGNATURE_HEADER,), encoding="hex", prefix=f"{paddle.SCHEME}="),
            signs_raw_body=True,
            timestamp=TimestampAt((paddle.SIGNATURE_HEADER,), key="ts", separator=";"),
            structured=True,
        ),
    ),
    "mercadopago": (
        SchemeProfile(
            # The manifest is data.id, x-request-id and ts: the body is not signed, and no tolerance is enforced.
            family="HMAC-SHA256 hex of the `id:..;request-id:..;ts:..;` manifest (body not signed)",
            kind="hmac",
            expected="x-signature: ts=<ts>,v1=<hex HMAC-SHA256>, x-request-id and ?data.id=",
            proof_headers=(mercadopago.SIGNATURE_HEADER,),
            mac=MacAt(headers=(mercadopago.SIGNATURE_HEADER,), encoding="hex", prefix=f"{mercadopago.SCHEME}="),
            structured=True,
        ),
    ),
    "pagbank": (
        SchemeProfile(
            family="SHA-256 hex of `{token}-{body}` in `x-authenticity-token`",
            kind="digest",
            expected="x-authenticity-token: <hex SHA-256 of token-body>",
            proof_headers=(pagbank.SIGNATURE_HEADER,),
            mac=MacAt(headers=(pagbank.SIGNATURE_HEADER,), encoding="hex"),
            signs_raw_body=True,
        ),
    ),
    "adyen": (
        SchemeProfile(
            # The HMAC is over fields of each item, inside the body: re-serializing the JSON does not break it.
            family="HMAC-SHA256 base64 of item fields, in `additionalData.hmacSignature` (body not signed)",
            kind="in_body",
            expected="a notificationItems[].NotificationRequestItem with additionalData.hmacSignature",
            structured=True,
        ),
    ),
}

_PAGARME_V5 = SchemeProfile(
    family="RS256 over the raw body in `X-Webhook-Asymmetric-Signature` (Pagar.me's key, no secret)",
    kind="asymmetric",
    expected="X-Webhook-Asymmetric-Signature: alg=RS256; kid=<key id>; signature=<base64url>",
    proof_headers=(pagarme.ASYMMETRIC_HEADER,),
    signs_raw_body=True,
    structured=True,
)
_KIWIFY_BANKING = SchemeProfile(
    family="Ed25519 over `{path}:POST:{body}:{ts}` in `x-kiwify-digital-signature` (Kiwify's key, no secret)",
    kind="asymmetric",
    expected="x-kiwify-digital-signature: <base64url Ed25519> and x-kiwify-timestamp: <epoch milliseconds>",
    proof_headers=(kiwify.BANKING_SIGNATURE_HEADER,),
    signs_raw_body=True,
    timestamp=TimestampAt((kiwify.BANKING_TIMESTAMP_HEADER,), milliseconds=True),
    structured=True,
)
_WOOVI = SchemeProfile(
    family="RSA-SHA256 over the raw body in `x-webhook-signature` (Woovi's published keys, no secret)",
    kind="asymmetric",
    expected="x-webhook-signature: <base64 RSA PKCS#1 v1.5 SHA-256 signature>",
    proof_headers=(woovi.SIGNATURE_HEADER,),
    signs_raw_body=True,
)
_CODE_PROFILES["woovi"] = (_WOOVI,)
# Providers whose driver verifies in code but delegates one path to a scheme-engine row.
_MIXED_PROFILES: dict[str, tuple[SchemeProfile, ...]] = {
    "pagarme": (_PAGARME_V5, *profile_of_scheme(pagarme.HUB_AUTHENTICATION)),
    "stone": (_PAGARME_V5, *profile_of_scheme(pagarme.HUB_AUTHENTICATION)),  # the Pagar.me driver (stone.py)
    "kiwify": (_KIWIFY_BANKING, *profile_of_scheme(kiwify.SALES_AUTHENTICATION)),
}


def profiles_for(provider: str, driver: ProviderDriver) -> tuple[SchemeProfile, ...]:
    """The schemes of `provider` (its driver given: a generic one is configured at run time)."""
    if isinstance(driver, generic.GenericHmacDriver):
        return profile_of_scheme(driver.scheme)
    if provider in _CODE_PROFILES:  # before its scheme row: Stripe's and Paddle's profiles say more
        return _CODE_PROFILES[provider]
    if isinstance(driver, SchemeVerified):
        return profile_of_scheme(driver.authentication)
    if provider in _MIXED_PROFILES:
        return _MIXED_PROFILES[provider]
    raise KeyError(f"the doctor knows no scheme of provider {provider!r}")


def scheme_of(profiles: tuple[SchemeProfile, ...], request: WebhookRequest) -> SchemeProfile:
    """The scheme the delivery carries (the first one, as the drivers choose), else the provider's first."""
    return next((profile for profile in profiles if profile.carried_by(request)), profiles[0])


def matrix_rows() -> list[tuple[str, str, tuple[str, ...]]]:
    """(provider, scheme, applicable diagnoses): one row per provider and scheme, for docs/troubleshooting.md."""
    from shared.providers.registry import get_driver  # noqa: PLC0415 - loads the drivers, only when asked

    rows = []
    for entry in PROVIDER_CATALOG:
        for profile in profiles_for(entry.id, get_driver(entry.id)):
            rows.append((entry.facts.display_name, profile.family, profile.applicable()))
    return rows


def matrix_markdown() -> str:
    """The matrix as docs/troubleshooting.md shows it."""
    shown = [code for code in DIAGNOSES if code not in ("valid", "unexplained")]  # every row has both
    header = "| provider | scheme | " + " | ".join(f"`{code}`" for code in shown) + " |"
    rule = "|" + "---|" * (len(shown) + 2)
    lines = [header, rule]
    for provider, family, codes in matrix_rows():
        cells = " | ".join("yes" if code in codes else "—" for code in shown)
        lines.append(f"| {provider} | {family} | {cells} |")
    return "\n".join(lines)


__all__ = [
    "DIAGNOSES",
    "MacAt",
    "SchemeProfile",
    "TimestampAt",
    "matrix_markdown",
    "matrix_rows",
    "profile_of_scheme",
    "profiles_for",
    "scheme_of",
]
