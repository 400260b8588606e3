"""What every provider driver promises the ingest, checked the same way for each provider the registry knows.

Parametrized over `provider_names()`, so a provider added to the registry is held to the contract without editing
this file: its sender (`inbox_local/providers/<provider>/sender.py`) signs each of its samples, the driver verifies and
parses them, the item the ingest would store re-verifies and holds no secret, and importing the driver loads
nothing heavy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox_local.config import signing_secret
from inbox_local.senders import sender_for
from shared.inbox.model import inline_body
from shared.inbox.store import PutOutcome
from shared.ingest import IngestService, IngestSettings
from shared.providers._schemes import TokenScheme
from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest, parse_events
from shared.providers.registry import get_driver, provider_names

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_718_221_503
TOLERANCE = 300
EVENT_ID = "evt_contract_7Qx2"
RESOURCE_ID = "res_contract_9Kp4"  # the same length as TAMPERED_RESOURCE_ID: a tampered body keeps its size
TAMPERED_RESOURCE_ID = "res_contract_9Kp5"
AMOUNT = 4990
# GitHub events are not payments (see shared/providers/github/driver.py): they name no resource.
NOT_ABOUT_A_PAYMENT = frozenset({"github"})

PROVIDERS = provider_names()
# The schemes whose signed content is not the raw body. Every other provider, unless it authenticates only the
# sender, is held to "any bytes verify as received, and any changed byte is refused".
SIGNED_CONTENT_IS_NOT_THE_BODY = {
    "mercadopago": "a manifest of the URL's data.id, x-request-id and ts (the body's data.id must match it)",
    "adyen": "the fields of each notification item, whatever their serialization",
}


def other_secret(secret: str) -> str:
    """A secret of the same shape (hex stays hex, base64 stays base64) that is not `secret`: one middle character
    changed, so a driver that decodes its key (Adyen's hex, Standard Webhooks' base64) still accepts it as a key."""
    middle = len(secret) // 2
    return secret[:middle] + ("a" if secret[middle] != "a" else "b") + secret[middle + 1 :]


# The providers whose deliveries are signed with the gateway's private key and verified with its public keys: the
# source's signing secret holds public keys to trust, so "another secret" is a key pair whose public half the driver
# trusts and whose private half the sender signs with (inbox_local/providers/woovi/sender.py `key_pair_secret`).
VERIFIED_WITH_PUBLIC_KEYS = frozenset({"woovi"})


def another_secret(provider: str) -> str:
    """A secret that is not the configured one: of the same shape, or for a public-key provider a fresh key pair."""
    if provider in VERIFIED_WITH_PUBLIC_KEYS:
        from inbox_local.providers.woovi.sender import key_pair_secret

        return key_pair_secret()
    return other_secret(signing_secret(provider))


def authenticates_only_the_sender(provider: str) -> bool:
    """A static token (Asaas, Hotmart, iugu): the body is not part of the proof, and nothing of it may be stored."""
    return isinstance(getattr(get_driver(provider), "authentication", None), TokenScheme)


def sample(provider: str, status: str, *, secret: str | None = None, now: int = NOW) -> WebhookRequest:
    sender = sender_for(provider)
    body = sender.sample_body(
        event_id=EVENT_ID, resource_id=RESOURCE_ID, status=status, amount=AMOUNT, occurred_at=NOW - 30
    )
    return sender.sign(body, secret or signing_secret(provider), now=now, event_id=EVENT_ID)


def verify(provider: str, request: WebhookRequest, secrets: SigningSecrets | None = None, *, now: int = NOW) -> None:
    secrets = secrets or SigningSecrets(signing_secret(provider))
    get_driver(provider).verify(request, secrets, now=now + 5, tolerance_seconds=TOLERANCE)


def samples() -> list[tuple[str, str]]:
    return [(provider, status) for provider in PROVIDERS for status in sender_for(provider).sample_statuses]


# ------------------------------------------------------------------------------------------------- round trip


@pytest.mark.parametrize(("provider", "status"), samples())
def test_every_sample_is_signed_verified_and_parsed(provider, status):
    # Given a sample notification as the provider's gateway signs it
    request = sample(provider, status)
    # When the driver verifies and parses it, Then it is accepted and reads as the payment it is about
    verify(provider, request)
    events = parse_events(get_driver(provider), request)  # one, or several (an Efí refund repeats its Pix)
    event = events[-1]
    assert event.event_id
    assert event.occurred_at.tzinfo is not None
    assert event.occurred_at.utcoffset() == UTC.utcoffset(None)
    if provider not in NOT_ABOUT_A_PAYMENT:
        assert {each.resource_id for each in events} == {RESOURCE_ID}
    # ...and a redelivery of the same notification (the same body, signed again later) has the same dedup keys
    again = sample(provider, status, now=NOW + 120)
    assert again.body == request.body
    assert [each.event_id for each in parse_events(get_driver(provider), again)] == [e.event_id for e in events]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_has_a_sender_with_a_paid_sample(provider):
    # Given the registry's provider, Then something can send it a paid notification (`inbox send`, the simulator)
    assert "paid" in sender_for(provider).sample_statuses
    assert get_driver(provider).name == provider


# ------------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_wrong_secret_is_refused_and_the_previous_one_verifies_during_a_rotation(provider):
    # Given a delivery signed with a secret (for a public-key provider: a key pair) that is not the configured one
    configured, other = signing_secret(provider), another_secret(provider)
    forged = sample(provider, "paid", secret=other)
    # Then it is refused
    with pytest.raises(SignatureInvalid):
        verify(provider, forged)
    # ...unless that secret is the previous one of a rotation in progress
    verify(provider, forged, SigningSecrets(configured, previous=other))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tampered_body_is_refused_unless_only_the_sender_is_authenticated(provider):
    # Given a genuine delivery whose body is changed in transit (another payment named in it)
    genuine = sample(provider, "paid")
    assert RESOURCE_ID.encode() in genuine.body
    tampered = WebhookRequest(
        body=genuine.body.replace(RESOURCE_ID.encode(), TAMPERED_RESOURCE_ID.encode()),
        headers=genuine.headers,
        query=genuine.query,
        path=genuine.path,
    )
    if authenticates_only_the_sender(provider):
        # Then a static token proves the sender, never the bytes: documented, and deduplication plus the state
        # machine are the defence (docs/providers-brazil.md)
        verify(provider, tampered)
    else:
        # Then every other scheme covers what names the payment
        with pytest.raises(SignatureInvalid):
            verify(provider, tampered)


@pytest.mark.parametrize(
    "provider",
    [p for p in PROVIDERS if p not in SIGNED_CONTENT_IS_NOT_THE_BODY and not authenticates_only_the_sender(p)],
)
@settings(max_examples=25, deadline=None)
@given(body=st.binary(max_size=512), position=st.integers(min_value=0))
def test_any_raw_body_verifies_as_received_and_any_changed_byte_is_refused(provider, body, position):
    # Given arbitrary bytes signed as the gateway signs (signatures cover bytes, never a re-serialization)
    request = sender_for(provider).sign(body, signing_secret(provider), now=NOW, event_id=EVENT_ID)
    # When verified as received, Then they pass
    verify(provider, request)
    # When any single byte is changed, Then they are refused
    if body:
        index = position % len(body)
        changed = body[:index] + bytes([body[index] ^ 0x01]) + body[index + 1 :]
        with pytest.raises(SignatureInvalid):
            verify(provider, WebhookRequest(body=changed, headers=request.headers, query=request.query))


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if get_driver(p).signs_timestamp])
def test_a_stale_or_early_timestamp_is_refused(provider):
    request = sample(provider, "paid")
    verify(provider, request)
    with pytest.raises(SignatureInvalid):
        verify(provider, request, now=NOW + TOLERANCE)
    with pytest.raises(SignatureInvalid):
        verify(provider, request, now=NOW - TOLERANCE - 10)


# -------------------------------------------------------------------------------------- what the ingest stores


class _CapturingStore:
    """Stands in for the inbox table: keeps the item the ingest writes (and any body sent to S3)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.bodies: dict[str, bytes] = {}

    def put_new(self, item: dict[str, Any]) -> PutOutcome:
        self.items.append(item)
        return PutOutcome.STORED

    def put_body(self, key: str, body: bytes) -> None:
        self.bodies[key] = body


class _Secrets:
    def __init__(self, secrets: SigningSecrets) -> None:
        self.secrets = secrets

    def signing_secrets(self, provider: str) -> SigningSecrets:
        return self.secrets


def stored_item(provider: str, request: WebhookRequest, secrets: SigningSecrets) -> dict[str, Any]:
    """The item the ingest writes for `request` (its real code path, `IngestService.receive`)."""
    store = _CapturingStore()
    settings = IngestSettings(inbox_table="inbox", body_bucket="bodies", secret_prefix="")
    service = IngestService(settings, store, _Secrets(secrets), clock=lambda: NOW + 5)  # type: ignore[arg-type]
    result = service.receive(get_driver(provider), request)
    assert result.status_code == 200, result
    assert not store.bodies, "the samples are small enough to be stored inline"
    (item,) = store.items
    return item


def with_secret_body_fields(provider: str, request: WebhookRequest, secret: str) -> WebhookRequest:
    """The delivery with the secret repeated in the body fields the driver says may carry it (Hotmart's hottok)."""
    fields = get_driver(provider).secret_body_fields
    if not fields:
        return request
    document = json.loads(request.body)
    document.update(dict.fromkeys(fields, secret))
    return sender_for(provider).sign(json.dumps(document).encode(), secret, now=NOW, event_id=EVENT_ID)


def stored_request(item: dict[str, Any]) -> WebhookRequest:
    """The delivery rebuilt from nothing but what is stored: the body, the kept headers and query parameters."""
    body = inline_body(item)  # stored compressed: the raw bytes come back through the one accessor
    assert body is not None
    return WebhookRequest(body=body, headers=dict(item["headers"]), query=dict(item.get("query", {})))


def _strings(value: object) -> list[str | bytes]:
    if isinstance(value, dict):
        return [*(s for k in value for s in _strings(k)), *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list | tuple | set):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, str | bytes):
        return [value]
    return [str(value)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_secret_is_in_any_stored_attribute(provider):
    # Given a genuine delivery (with the secret repeated in the body where the provider does that), verified with the
    # current and the previous secret configured
    current, previous = signing_secret(provider), other_secret(signing_secret(provider))
    request = with_secret_body_fields(provider, sample(provider, "paid"), current)
    # When the ingest stores it
    item = stored_item(provider, request, SigningSecrets(current, previous))
    # Then neither secret is in any attribute, name or value, as text or as bytes, nor in the body once decompressed
    for secret in (current, previous):
        for text in [*_strings(item), inline_body(item) or b""]:
            found = secret.encode() in text if isinstance(text, bytes) else secret in text
            assert not found, f"a {provider} secret is stored"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_stored_item_alone_reverifies(provider):
    # Given the item the ingest stored for a genuine delivery
    secrets = SigningSecrets(signing_secret(provider))
    item = stored_item(provider, sample(provider, "paid"), secrets)
    rebuilt = stored_request(item)
    if authenticates_only_the_sender(provider):
        # Then a token is the secret itself and is never stored: the stored copy proves nothing on its own
        assert item["headers"] == {}
        assert "query" not in item
        with pytest.raises(SignatureInvalid):
            get_driver(provider).verify(rebuilt, secrets, now=NOW + 5, tolerance_seconds=TOLERANCE)
    else:
        # Then what was kept (headers, query parameters, body) verifies again, tolerance aside
        get_driver(provider).verify(rebuilt, secrets, now=NOW + 5, tolerance_seconds=TOLERANCE)
        assert get_driver(provider).parse(rebuilt).event_id == item["event_id"]


# -------------------------------------------------------------------------------------------------- imports

# What a driver may load: the standard library, the drivers' own package, and the canonical statuses.
# shared.definitions: the provider catalog the registry reads (pure constants, standard library only).
ALLOWED_FIRST_PARTY = (
    "shared",
    "shared.definitions",
    "shared.providers",
    "shared.payments",
    "shared.payments.status",
    "shared.sub_account",  # NormalizedEvent.account: a stdlib-only value module
)
# Named so that a failure says what came along (the ingest's cold start is on the gateway's clock).
HEAVY = (
    "boto3",
    "botocore",
    "pydantic",
    "aws_lambda_powertools",
    "requests",
    "urllib3",
    "cryptography",
    "zoneinfo",
    "inbox_local",
    "inbox_cli",
    "infra",
    "shared.gateway",
    "shared.aws",
    "shared.observability",
)


def _new_modules_per_driver() -> dict[str, list[str]]:
    code = (
        "import json, sys\n"
        "from shared.providers.registry import get_driver, provider_names\n"
        "loaded = {}\n"
        "for name in provider_names():\n"
        "    before = set(sys.modules)\n"
        "    get_driver(name)\n"
        "    loaded[name] = sorted(set(sys.modules) - before)\n"
        "print(json.dumps({'registry': sorted(sys.modules), 'drivers': loaded}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    document = json.loads(result.stdout)
    drivers: dict[str, list[str]] = document["drivers"]
    drivers["(all of them, with the registry)"] = document["registry"]
    return drivers


def _allowed(module: str) -> bool:
    top = module.split(".", 1)[0]
    return (
        top in sys.stdlib_module_names
        or top.startswith("_")  # interpreter internals (_io, _sre...) and stdlib accelerators
        or module in ALLOWED_FIRST_PARTY
        # the drivers' package, not the gateway clients beside them in the provider folders (the processor's)
        or (module.startswith("shared.providers.") and not module.endswith(".client"))
        or module.startswith("shared.definitions.")  # the package's modules, pure
    )


def test_importing_a_driver_loads_only_the_standard_library_and_the_drivers_own_modules():
    # Given a fresh interpreter, When the registry loads each driver in turn (one process for all)
    loaded = _new_modules_per_driver()
    assert set(PROVIDERS) <= set(loaded)
    for driver, modules in loaded.items():
        # Then nothing heavy comes along: no AWS SDK, pydantic, tracer, HTTP client, crypto or tz database, and no
        # sender, simulator or CLI code (those are not in the Lambda asset)
        heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
        assert heavy == [], f"{driver} loads {heavy}"
        # ...and nothing at all beyond the standard library and the drivers' own package
        assert [m for m in modules if not _allowed(m)] == [], driver
