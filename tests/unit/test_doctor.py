"""The doctor against each diagnosis its scheme makes possible, for every provider in the catalog.

Deliveries are built by the providers' own signing code (`inbox_local/senders`, which the provider tests check
against the official libraries and documented examples) and, for Stripe and Standard Webhooks, by the official
libraries themselves. Each case breaks a good delivery in one way, as a developer would, and asserts the doctor
names that way — and that no secret ever appears in its answer.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import stripe
from standardwebhooks import webhooks

from inbox_cli.doctor import Case, Diagnosis, diagnose
from inbox_cli.doctor.candidates import SecretCandidate, body_variants
from inbox_cli.doctor.profiles import DIAGNOSES, SchemeProfile, matrix_markdown, profiles_for, scheme_of
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.providers.woovi.sender import key_pair_secret
from inbox_local.senders import sender_for
from shared.definitions import PROVIDER_CATALOG
from shared.providers.base import ProviderDriver, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver
from tests.unit.providers import test_kiwify as kiwify_tests
from tests.unit.providers import test_pagarme as pagarme_tests

NOW = 1_764_590_400
TOLERANCE = 300
ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = [entry.id for entry in PROVIDER_CATALOG]
SECRETS = dict(DEV_SECRETS)
# What a developer signs with, pretty-printed as most providers send it: non-ASCII and a slash included, so the
# re-serializations differ in more than spacing.
DOCUMENT = {"id": "evt_1", "type": "payment.paid", "data": {"id": "1234", "amount": 1990, "note": "pão/queijo"}}
PRETTY = json.dumps(DOCUMENT, indent=2, ensure_ascii=False).encode()
COMPACT = json.dumps(DOCUMENT, separators=(",", ":"), ensure_ascii=False).encode()


_WOOVI_OTHER_KEY_PAIR = key_pair_secret()


def other_secret(provider: str) -> str:
    """A second valid secret in the provider's format (another source's, a previous one)."""
    if provider == "standard":
        return "whsec_" + base64.b64encode(b"another-source-key-of-32-bytes!!").decode()
    if provider == "adyen":
        return (b"another-source-adyen-hmac-key-32").hex()
    if provider == "woovi":  # a public key to trust, with the private key the sender signs with
        return _WOOVI_OTHER_KEY_PAIR
    return f"another-source-{SECRETS[provider]}"


def body_for(provider: str) -> bytes:
    """Adyen signs inside its notification: its sample; every other scheme signs whatever body it is given."""
    if provider == "adyen":
        sample = sender_for("adyen").sample_body(
            event_id="evt_1", resource_id="PSP1", status="paid", amount=1990, occurred_at=NOW
        )
        return json.dumps(json.loads(sample), indent=2).encode()
    return PRETTY


def signed(provider: str, *, secret: str | None = None, body: bytes | None = None, at: int = NOW) -> WebhookRequest:
    request = sender_for(provider).sign(
        body if body is not None else body_for(provider), secret or SECRETS[provider], now=at
    )
    return replace(request, path=f"/webhooks/{provider}")


def scheme(provider: str, request: WebhookRequest) -> SchemeProfile:
    return scheme_of(profiles_for(provider, get_driver(provider)), request)


def doctor(
    provider: str,
    request: WebhookRequest,
    *,
    secrets: SigningSecrets | None = None,
    alternatives: tuple[SecretCandidate, ...] = (),
    driver: ProviderDriver | None = None,
) -> Diagnosis:
    result = diagnose(
        Case(
            source=provider,
            provider=provider,
            driver=driver or get_driver(provider),
            request=request,
            secrets=secrets or SigningSecrets(SECRETS[provider]),
            now=NOW,
            tolerance_seconds=TOLERANCE,
            alternatives=lambda: alternatives,
            sources_by_provider={p: [p] for p in PROVIDERS},
        )
    )
    for secret in (SECRETS[provider], other_secret(provider)):
        assert secret not in result.detail, "the doctor printed a secret"
        assert secret not in json.dumps(result.document())
    return result


# ------------------------------------------------------------------------- how a developer breaks a delivery

Built = tuple[WebhookRequest, dict[str, Any]]  # the delivery, and the doctor's options for it

_HEX = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{40,128}(?![0-9a-fA-F])")
_B64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{26,}={0,2}")


def _respelled(value: str, profile: SchemeProfile) -> str:
    """The carrier's MAC in the other encoding: a hex MAC as base64, a base64 MAC as hex."""
    assert profile.mac is not None
    if profile.mac.encoding == "hex":
        match = _HEX.search(value)
        assert match, value
        return value[: match.start()] + base64.b64encode(bytes.fromhex(match.group())).decode() + value[match.end() :]
    match = _B64.search(value)
    assert match, value
    return value[: match.start()] + base64.b64decode(match.group()).hex() + value[match.end() :]


def case_valid(provider: str) -> Built:
    return signed(provider), {}


def case_wrong_secret(provider: str) -> Built:
    # Signed with another source's secret, which the source's configuration also knows
    alternative = SecretCandidate("the secret of source 'shop-2'", other_secret(provider))
    return signed(provider, secret=other_secret(provider)), {"alternatives": (alternative,)}


def case_body_reserialized(provider: str) -> Built:
    # Signed as sent (pretty-printed), handed to the verifier after a framework parsed and re-encoded it
    return replace(signed(provider, body=PRETTY), body=COMPACT), {}


def case_encoding_mismatch(provider: str) -> Built:
    request = signed(provider)
    profile = scheme(provider, request)
    assert profile.mac is not None
    headers = {n: _respelled(v, profile) if n in profile.mac.headers else v for n, v in request.headers.items()}
    query = {n: _respelled(v, profile) if n in profile.mac.query else v for n, v in request.query.items()}
    return replace(request, headers=headers, query=query), {}


def case_timestamp_out_of_tolerance(provider: str) -> Built:
    return signed(provider, at=NOW - 1000), {}


def case_missing_header(provider: str) -> Built:
    # Every proof the provider's schemes accept is dropped (GitHub's legacy SHA-1 header would verify alone)
    request = signed(provider)
    profiles = profiles_for(provider, get_driver(provider))
    names = {n for p in profiles for n in p.proof_headers}
    params = {n for p in profiles for n in p.proof_query}
    headers = {n: v for n, v in request.headers.items() if n not in names}
    query = {n: v for n, v in request.query.items() if n not in params}
    return replace(request, headers=headers, query=query), {}


def case_malformed_header(provider: str) -> Built:
    request = signed(provider)
    profile = scheme(provider, request)
    if profile.kind == "in_body":  # Adyen: the signature field of the item is what is malformed
        payload = json.loads(request.body)
        del payload["notificationItems"][0]["NotificationRequestItem"]["additionalData"]["hmacSignature"]
        return replace(request, body=json.dumps(payload).encode()), {}
    headers = {n: "nonsense" if n in profile.proof_headers else v for n, v in request.headers.items()}
    query = {n: "nonsense" if n in profile.proof_query else v for n, v in request.query.items()}
    return replace(request, headers=headers, query=query), {}


def case_wrong_provider(provider: str) -> Built:
    other = "stripe" if provider == "github" else "github"
    return signed(other, body=body_for(provider)), {}


def case_unexplained(provider: str) -> Built:
    request = signed(provider)
    profile = scheme(provider, request)
    if profile.kind == "token":  # a token nobody configured
        return signed(provider, secret="a-token-nobody-configured-anywhere"), {}
    if provider == "mercadopago":  # the manifest, not the body, is signed: another request id
        return replace(request, headers={**request.headers, "x-request-id": "someone-else"}), {}
    # The body changed after it was signed (a value, not the layout)
    return replace(request, body=request.body.replace(b"1990", b"9190")), {}


CASES: dict[str, Callable[[str], Built]] = {
    "valid": case_valid,
    "wrong_secret": case_wrong_secret,
    "body_reserialized": case_body_reserialized,
    "encoding_mismatch": case_encoding_mismatch,
    "timestamp_out_of_tolerance": case_timestamp_out_of_tolerance,
    "missing_header": case_missing_header,
    "malformed_header": case_malformed_header,
    "wrong_provider": case_wrong_provider,
    "unexplained": case_unexplained,
}


def applicable_cases() -> list[tuple[str, str]]:
    pairs = []
    for provider in PROVIDERS:
        for code in scheme(provider, signed(provider)).applicable():
            pairs.append((provider, code))
    return pairs


def test_every_diagnosis_has_a_case():
    assert set(CASES) == set(DIAGNOSES)


@pytest.mark.parametrize(("provider", "code"), applicable_cases())
def test_the_doctor_names_each_mistake_its_scheme_makes_possible(provider, code):
    # Given a delivery of the provider's signing code, broken in one way
    request, options = CASES[code](provider)
    # When the doctor diagnoses it
    result = doctor(provider, request, **options)
    # Then it names that way, valid only when nothing was broken
    assert result.diagnosis == code, result.detail
    assert result.valid is (code == "valid")
    assert result.detail.endswith(".") and "\n" not in result.detail


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_valid_delivery_is_valid_with_the_previous_secret_too_and_says_so(provider):
    # Given a delivery signed with the previous secret, during a rotation
    request = signed(provider, secret=other_secret(provider))
    # When the doctor verifies it as the ingest does (current and previous)
    result = doctor(provider, request, secrets=SigningSecrets(SECRETS[provider], other_secret(provider)))
    # Then it is valid, and the answer says the sender still uses the previous secret
    assert result.diagnosis == "valid"
    assert "previous" in result.detail


def test_every_provider_has_a_profile_for_each_of_its_schemes():
    # Given the catalog, Then the doctor knows every provider's schemes (a new provider without one fails here)
    for provider in PROVIDERS:
        assert profiles_for(provider, get_driver(provider)), provider


# ------------------------------------------------------------------------------------------- detail of answers


def test_a_stripe_secret_without_its_whsec_prefix_is_named():
    # Given a Stripe delivery, and the secret configured without its whsec_ prefix
    request = signed("stripe", secret="whsec_abcdefghijklmnop")
    result = doctor("stripe", request, secrets=SigningSecrets("abcdefghijklmnop"))
    # Then the doctor says the prefix is missing, without printing either spelling
    assert result.diagnosis == "wrong_secret"
    assert "`whsec_` prefix added" in result.detail
    assert "abcdefghijklmnop" not in result.detail


def test_stripe_hex_in_upper_case_and_a_missing_v1_prefix_are_encoding_mismatches():
    request = signed("stripe")
    header = request.headers["stripe-signature"]
    upper = re.sub(r"v1=([0-9a-f]+)", lambda m: "v1=" + m.group(1).upper(), header)
    assert doctor("stripe", replace(request, headers={"stripe-signature": upper})).diagnosis == "encoding_mismatch"
    bare = header.replace("v1=", "")
    result = doctor("stripe", replace(request, headers={"stripe-signature": bare}))
    assert result.diagnosis == "encoding_mismatch"
    assert "`v1=` prefix" in result.detail


def test_github_without_its_sha256_prefix_is_an_encoding_mismatch():
    request = signed("github")
    bare = request.headers["x-hub-signature-256"].removeprefix("sha256=")
    result = doctor("github", replace(request, headers={**request.headers, "x-hub-signature-256": bare}))
    assert result.diagnosis == "encoding_mismatch"
    assert "`sha256=` prefix" in result.detail


def test_a_stale_delivery_reports_its_skew_and_that_the_signature_is_otherwise_valid():
    result = doctor("stripe", signed("stripe", at=NOW - 1000))
    assert result.diagnosis == "timestamp_out_of_tolerance"
    assert "1000 s old" in result.detail and "otherwise valid" in result.detail
    ahead = doctor("stripe", signed("stripe", at=NOW + 400))
    assert "400 s in the future" in ahead.detail


def test_a_stale_delivery_with_a_bad_signature_says_both():
    request = signed("paddle", at=NOW - 5000)
    result = doctor("paddle", replace(request, body=b'{"changed": true}'))
    assert result.diagnosis == "timestamp_out_of_tolerance"
    assert "does not match either" in result.detail


def test_a_re_serialized_stale_delivery_is_re_serialized_and_mentions_the_skew():
    request = replace(signed("stripe", body=PRETTY, at=NOW - 900), body=COMPACT)
    result = doctor("stripe", request)
    assert result.diagnosis == "body_reserialized"
    assert "900 s old" in result.detail


def test_wrong_provider_names_the_provider_and_where_its_deliveries_belong():
    result = doctor("stripe", signed("github"))
    assert result.diagnosis == "wrong_provider"
    assert "GitHub" in result.detail and "/webhooks/github" in result.detail


def test_the_re_serializations_cover_the_usual_encoders():
    # Given a body with non-ASCII text and a slash
    variants = {body: how for how, body in body_variants(PRETTY, pretty_indent=2)}
    # Then what JSON.stringify, Python's json.dumps and PHP's json_encode write are all among the candidates
    assert COMPACT in variants  # JSON.stringify
    assert json.dumps(DOCUMENT).encode() in variants  # json.dumps defaults
    php = json.dumps(DOCUMENT, separators=(",", ":")).replace("/", "\\/").encode()
    assert php in variants
    assert PRETTY not in variants  # never the bytes given
    assert len(variants) <= 4 * 16 + 1  # a fixed, small set


# ------------------------------------------------------------------------ the schemes no sender signs: keys


def _v5(body: bytes) -> WebhookRequest:
    return pagarme_tests.sign_v5(body, pagarme_tests.KEY, "k1")


def _banking(body: bytes, at: int = NOW) -> WebhookRequest:
    return kiwify_tests.sign_banking(body, kiwify_tests.BANKING_KEY, timestamp_ms=at * 1000)


ASYMMETRIC: dict[str, tuple[Callable[[], ProviderDriver], Callable[[bytes], WebhookRequest], str]] = {
    "pagarme": (pagarme_tests.v5_driver, _v5, "x-webhook-asymmetric-signature"),
    "kiwify": (kiwify_tests.banking_driver, _banking, "x-kiwify-digital-signature"),
}


@pytest.mark.parametrize("provider", sorted(ASYMMETRIC))
def test_the_key_signed_schemes_get_their_diagnoses_too(provider):
    make_driver, sign, header = ASYMMETRIC[provider]
    driver = make_driver()
    good = sign(PRETTY)
    assert scheme(provider, good).kind == "asymmetric"
    # Given a genuine delivery, Then valid
    assert doctor(provider, good, driver=driver).diagnosis == "valid"
    # Given its body re-serialized, Then body_reserialized
    assert doctor(provider, replace(good, body=COMPACT), driver=driver).diagnosis == "body_reserialized"
    # Given its signature header mangled, Then malformed_header
    mangled = replace(good, headers={**good.headers, header: "not base64!"})
    assert doctor(provider, mangled, driver=driver).diagnosis == "malformed_header"
    # Given no proof at all, Then missing_header
    bare = replace(good, headers={n: v for n, v in good.headers.items() if not n.startswith("x-")})
    assert doctor(provider, bare, driver=driver).diagnosis == "missing_header"
    # Given a body changed after signing, Then unexplained
    changed = replace(good, body=PRETTY.replace(b"1990", b"9190"))
    assert doctor(provider, changed, driver=driver).diagnosis == "unexplained"


def test_a_stale_kiwify_banking_delivery_is_out_of_tolerance_with_its_skew_in_seconds():
    result = doctor("kiwify", _banking(PRETTY, at=NOW - 700), driver=kiwify_tests.banking_driver())
    assert result.diagnosis == "timestamp_out_of_tolerance"
    assert "700 s old" in result.detail


# ---------------------------------------------------------------------------------------- official libraries


def test_a_delivery_signed_by_stripe_python_and_re_serialized_is_diagnosed():
    secret = SECRETS["stripe"]
    # Given Stripe's own signature of the pretty-printed event (stripe-python's signer)
    signature = stripe.WebhookSignature._compute_signature(f"{NOW}.{PRETTY.decode()}", secret)
    request = WebhookRequest(body=PRETTY, headers={"stripe-signature": f"t={NOW},v1={signature}"})
    assert doctor("stripe", request).diagnosis == "valid"
    # When a framework re-serialized the body, Then the doctor says so
    result = doctor("stripe", replace(request, body=COMPACT))
    assert result.diagnosis == "body_reserialized"
    assert result.detail.startswith("The body was re-serialized before verification")


def test_a_delivery_signed_by_the_standard_webhooks_library_and_re_serialized_is_diagnosed():
    secret = SECRETS["standard"]
    when = datetime.fromtimestamp(NOW, tz=UTC)
    signature = webhooks.Webhook(secret).sign("msg_1", when, PRETTY.decode())
    headers = {"webhook-id": "msg_1", "webhook-timestamp": str(NOW), "webhook-signature": signature}
    request = WebhookRequest(body=PRETTY, headers=headers)
    assert doctor("standard", request).diagnosis == "valid"
    assert doctor("standard", replace(request, body=COMPACT)).diagnosis == "body_reserialized"
    # A hex spelling of the same MAC is an encoding mismatch
    mac = signature.partition(",")[2]
    hexed = {**headers, "webhook-signature": "v1," + base64.b64decode(mac).hex()}
    assert doctor("standard", replace(request, headers=hexed)).diagnosis == "encoding_mismatch"


# ------------------------------------------------------------------------------------------------------- docs


def test_docs_troubleshooting_shows_the_matrix_the_profiles_define():
    page = (ROOT / "docs" / "troubleshooting.md").read_text()
    assert matrix_markdown() in page, "docs/troubleshooting.md's matrix is not the profiles' (regenerate it)"


def test_docs_troubleshooting_shows_one_example_per_diagnosis():
    page = (ROOT / "docs" / "troubleshooting.md").read_text()
    for code in DIAGNOSES:
        assert f"### `{code}`" in page, code
