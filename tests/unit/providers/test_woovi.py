"""Woovi / OpenPix: Woovi's published signature vector, the pinned keys, keys added through the source's secret, the
development key that only the local stack trusts, and the derived dedup key of Woovi's published bodies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from inbox_local.dev_secrets import DEV_SECRETS, dev_signing_secret
from inbox_local.providers.woovi.sender import DEV_KEY_FINGERPRINT, DEV_PRIVATE_KEY, compute_signature, sender
from shared.definitions import SourcesInvalid, SourceSpec, parse_sources
from shared.inbox.store import PutOutcome
from shared.ingest import IngestService, IngestSettings
from shared.providers._public_keys import KeysUnavailable
from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.woovi.driver import (
    LEGACY_HMAC_HEADER,
    PINNED_KEYS,
    SIGNATURE_HEADER,
    driver,
    pinned_public_keys,
    trusted_keys,
)

# Woovi's own example (woovibr/woovi-developers docs/webhook/seguranca/webhook-signature-validation.mdx, the
# JavaScript tab, read at commit 100e3cd): a body and its x-webhook-signature by Woovi's production key.
PUBLISHED_BODY = (
    '{ "pixQrCode": null, "charge": { "status": "COMPLETED", "customer": { "name": "Antonio Victor", "tax'
    'ID": { "taxID": "12345678976", "type": "BR:CPF" }, "email": "antoniocliente@example.com", "correlati'
    'onID": "4979ceba-2132-4292-bd90-bee7fb2125e4" }, "value": 1000, "comment": "Pagamento OpenPix", "tra'
    'nsactionID": "ea83401ed4834b3ea6f1f283b389af29", "correlationID": "417bae21-3d08-4cdb-9c2d-fee63c89e'
    '9e4", "paymentLinkID": "34697ed2-3790-4b60-8512-e7465b142d84", "createdAt": "2021-03-12T12:43:54.528'
    'Z", "updatedAt": "2021-03-12T12:44:09.360Z", "brCode": "https://api.openpix.com.br/openpix/openpix/t'
    'esting?transactionID=ea83401ed4834b3ea6f1f283b389af29" }, "pix": { "charge": { "status": "COMPLETED"'
    ', "customer": { "name": "Antonio Victor", "taxID": { "taxID": "12345678976", "type": "BR:CPF" }, "em'
    'ail": "antoniocliente@example.com", "correlationID": "4979ceba-2132-4292-bd90-bee7fb2125e4" }, "valu'
    'e": 1000, "comment": "Pagamento OpenPix", "transactionID": "ea83401ed4834b3ea6f1f283b389af29", "corr'
    'elationID": "417bae21-3d08-4cdb-9c2d-fee63c89e9e4", "paymentLinkID": "34697ed2-3790-4b60-8512-e7465b'
    '142d84", "createdAt": "2021-03-12T12:43:54.528Z", "updatedAt": "2021-03-12T12:44:09.360Z" }, "custom'
    'er": { "correlationID": "9134e286-6f71-427a-bf00-241681624586", "email": "email1@example.com", "name'
    '": "Loma", "phone": "+5511999999999", "taxID": { "taxID": "47043622050", "type": "BR:CPF" } }, "paye'
    'r": { "correlationID": "9134e286-6f71-427a-bf00-241681624586", "email": "email1@example.com", "name"'
    ': "Loma", "phone": "+5511999999999", "taxID": { "taxID": "47043622050", "type": "BR:CPF" } }, "time"'
    ': "2021-03-12T12:44:09.269Z", "value": 1, "transactionID": "ea83401ed4834b3ea6f1f283b389af29", "info'
    'Pagador": "OpenPix testing" }, "company": { "id": "624f46f9e93f9f521c8308d7", "name": "Pizzaria do J'
    'os\u00e9", "taxID": "4722767300014" }, "account": { "clientId": "ZOJ64B9B-ZM1W-89MI-4UCI-OP2LVIU6NY75" } '
    "}"
).encode("utf-8")
PUBLISHED_SIGNATURE = (
    "lL2nnXgmLFGgxJ8+jCDguqouU4ucrIxYJcU5SPrJFaNcJajTJHYVldqc/z4YFIjAjtPEALe699WosgPY08W7CLpidvtm06Qwa4YMB0l/DcTS93O91"
    "NdSH/adjugEKiOb76Zj/0jB8mqOmWCFYbweOBa17bssuEkd5Lw7Q5L314Y="
)
# What a deployed stack's signing secret holds until an operator stores a value (infra/constructs/signing_secrets.py:
# 48 generated letters and digits).
PLACEHOLDER = SigningSecrets("Zq8RkT2mW9xLpV4nB7cY1sD6fH3jK0gA5eU8iO2rT7wQ9zXv")
NOW = 1_758_726_493


def delivery(body: bytes, signature: str | None, **extra: str) -> WebhookRequest:
    headers = {"content-type": "application/json", **extra}
    if signature is not None:
        headers[SIGNATURE_HEADER] = signature
    return WebhookRequest(body=body, headers=headers)


def verify(request: WebhookRequest, secrets: SigningSecrets = PLACEHOLDER) -> None:
    driver.verify(request, secrets, now=NOW, tolerance_seconds=300)


def key_pair(bits: int = 2048) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


# ------------------------------------------------------------------------------------------------ verification


def test_woovis_published_vector_verifies_with_the_pinned_production_key():
    # Given Woovi's published body and signature, When verified with a stack's untouched placeholder secret
    # Then the pinned production key accepts it
    verify(delivery(PUBLISHED_BODY, PUBLISHED_SIGNATURE))
    # ...and a changed byte, or the body re-serialized, is refused
    with pytest.raises(SignatureInvalid):
        verify(delivery(PUBLISHED_BODY.replace(b"1000", b"9000"), PUBLISHED_SIGNATURE))
    with pytest.raises(SignatureInvalid):
        verify(delivery(json.dumps(json.loads(PUBLISHED_BODY)).encode(), PUBLISHED_SIGNATURE))


def test_the_pinned_keys_are_woovis_by_their_published_key_identifiers():
    # Given the pinned PEMs, Then the SHA-256 of each DER is the key_identifier Woovi publishes for it, and their
    # sizes are what the docs say (production RSA-1024: the documented exception to the 2048-bit floor)
    sizes = {}
    for pinned in PINNED_KEYS:
        key = serialization.load_pem_public_key(pinned.pem.encode())
        assert isinstance(key, rsa.RSAPublicKey)
        der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        assert hashlib.sha256(der).hexdigest() == pinned.fingerprint
        assert pinned.source.startswith("https://developers.woovi.com/")
        sizes[pinned.environment] = key.key_size
    assert sizes == {"production": 1024, "sandbox": 2048}
    assert len(pinned_public_keys()) == 2


def test_a_delivery_without_the_header_or_with_only_the_deprecated_hmac_is_refused():
    # Given deliveries with no x-webhook-signature (one with only the deprecated X-OpenPix-Signature HMAC-SHA1)
    for request in (
        delivery(PUBLISHED_BODY, None),
        delivery(PUBLISHED_BODY, None, **{LEGACY_HMAC_HEADER: "jgR2XF0PKDiAwHP1s+TryvxMySQ="}),
    ):
        # Then they are refused: the HMAC is never a way in
        with pytest.raises(SignatureInvalid, match="missing"):
            verify(request)


@pytest.mark.parametrize("signature", ["not base64!", "A" * 2000, "lL2nnXgm", " "])
def test_a_malformed_or_unbounded_signature_is_refused(signature):
    with pytest.raises(SignatureInvalid):
        verify(delivery(PUBLISHED_BODY, signature))


# ------------------------------------------------------------------------------------- keys in the source's secret


def test_a_production_stack_never_trusts_the_development_key():
    # Given a delivery signed with the repository's development key (its private half is public: anyone can sign)
    body = sender.sample_body(event_id="evt_1", resource_id="c-1", status="paid", amount=100, occurred_at=NOW)
    forged = sender.sign(body, "", now=NOW)
    # Then neither the pinned keys nor a deployed stack's placeholder secret trust it
    with pytest.raises(SignatureInvalid):
        verify(forged)
    assert DEV_KEY_FINGERPRINT not in {pinned.fingerprint for pinned in PINNED_KEYS}
    # ...the development key is trusted only where it is the source's secret: the local stack's dev_secret
    verify(forged, SigningSecrets(DEV_SECRETS["woovi"]))


def test_keys_in_the_secret_are_trusted_as_pem_as_base64_of_the_pem_or_as_json_escaped_pem():
    # Given a key Woovi rotated to, not pinned yet
    private, public = key_pair()
    request = delivery(PUBLISHED_BODY, compute_signature(PUBLISHED_BODY, private))
    with pytest.raises(SignatureInvalid):
        verify(request)
    # When the operator stores its public key in the source's signing secret, in any of the forms Woovi shows it
    for form in (public, base64.b64encode(public.encode()).decode(), public.replace("\n", "\\n")):
        # Then it verifies, as current or as previous; and the pinned key keeps verifying Woovi's own deliveries
        verify(request, SigningSecrets(form))
        verify(request, SigningSecrets("placeholder", previous=form))
        verify(delivery(PUBLISHED_BODY, PUBLISHED_SIGNATURE), SigningSecrets(form))


def test_a_short_key_in_the_secret_is_a_configuration_error_not_a_trusted_key():
    # Given an operator's 1024-bit key (only Woovi's pinned production key is trusted under 2048 bits)
    _private, public = key_pair(1024)
    # Then verification is a configuration error (the ingest answers 5xx, Woovi retries), never a trusted key
    with pytest.raises(KeysUnavailable):
        trusted_keys(SigningSecrets(public))


def test_a_named_local_source_still_trusts_the_development_key():
    # Given a second local Woovi source, whose dev secret is the provider's followed by "-<source>"
    secret = dev_signing_secret(SourceSpec(name="woovi-br", provider="woovi"))
    # Then the key is still read from it (Woovi signs every account with the same key: so does the local one)
    assert len(trusted_keys(SigningSecrets(secret))) == len(pinned_public_keys()) + 1
    assert DEV_PRIVATE_KEY.startswith("-----BEGIN PRIVATE KEY-----")


# --------------------------------------------------------------------------------------------------- parsing


def test_woovis_published_charge_completed_reads_as_a_paid_charge_with_a_derived_key():
    event = driver.parse(delivery(PUBLISHED_BODY, PUBLISHED_SIGNATURE))
    assert event.resource_id == "417bae21-3d08-4cdb-9c2d-fee63c89e9e4"  # the charge's correlationID
    assert (event.provider_status, event.amount, event.currency) == ("paid", 1000, "BRL")
    assert event.event_id.startswith("d_")


def test_the_key_is_the_pix_for_a_payment_and_stable_across_retries():
    # Given a paid charge's notification and the same fact with another delivery's JSON spelling
    body = json.loads(sender.sample_body(event_id="e1", resource_id="c-9", status="paid", amount=5, occurred_at=NOW))
    first = driver.parse(delivery(json.dumps(body).encode(), "x"))
    again = driver.parse(delivery(json.dumps(body, indent=2).encode(), "x"))
    # Then the key is the same (it is the business fact, not the bytes)
    assert first.event_id == again.event_id
    # ...and another Pix paying the same charge is another fact
    body["pix"]["endToEndId"] = "E00000000202509241544OTHERPIX001"
    assert driver.parse(delivery(json.dumps(body).encode(), "x")).event_id != first.event_id


def test_a_pix_without_a_charge_and_an_event_naming_no_charge_are_stored_about_no_payment():
    # Given a Pix to a static QR code (no charge), and a refund (no charge named)
    static = {
        "event": "OPENPIX:TRANSACTION_RECEIVED",
        "charge": None,
        "pix": {"endToEndId": "E254ec6e165394", "time": "2025-09-24T15:44:42.317Z", "status": "CONFIRMED"},
    }
    event = driver.parse(delivery(json.dumps(static).encode(), "x"))
    # Then neither is about a payment; the Pix keys by its endToEndId, the refund by its body's digest
    assert event.resource_id is None
    assert event.event_id.startswith("d_")
    refund = {"event": "PIX_TRANSACTION_REFUND_SENT_CONFIRMED", "refundTransaction": {"time": "2025-08-14T21:31:49Z"}}
    body = json.dumps(refund).encode()
    event = driver.parse(delivery(body, "x"))
    assert (event.resource_id, event.event_id) == (None, driver.fallback_event_id(delivery(body, "x")))
    assert event.occurred_at.isoformat() == "2025-08-14T21:31:49+00:00"


# ---------------------------------------------------------------------------- the deprecated HMAC, per source


HMAC_KEY = "hmac-secret-key-of-the-webhook"


def hmac_delivery(body: bytes, key: str = HMAC_KEY) -> WebhookRequest:
    mac = base64.b64encode(hmac.new(key.encode(), body, hashlib.sha1).digest()).decode()
    return delivery(body, None, **{LEGACY_HMAC_HEADER: mac})


def test_the_deprecated_hmac_verifies_only_for_a_source_that_enables_it():
    # Given a delivery carrying only X-OpenPix-Signature (base64 HMAC-SHA1 of the body, Woovi's documented code)
    request = hmac_delivery(PUBLISHED_BODY)
    secrets = SigningSecrets(HMAC_KEY)
    # Then the default driver refuses it, and the driver of a source with legacy_signature accepts it
    with pytest.raises(SignatureInvalid, match="missing"):
        verify(request, secrets)
    legacy = driver.with_legacy_signature()  # type: ignore[attr-defined]
    legacy.verify(request, secrets, now=NOW, tolerance_seconds=300)
    assert LEGACY_HMAC_HEADER in legacy.replay_headers
    # ...with its key, not another one
    with pytest.raises(SignatureInvalid):
        legacy.verify(hmac_delivery(PUBLISHED_BODY, "another key"), secrets, now=NOW, tolerance_seconds=300)


def test_the_rsa_header_alone_decides_when_present_and_a_public_key_is_never_an_hmac_key():
    legacy = driver.with_legacy_signature()  # type: ignore[attr-defined]
    # Given a valid HMAC next to a wrong RSA signature: Then it is refused (no downgrade to the weaker scheme)
    request = hmac_delivery(PUBLISHED_BODY)
    downgraded = delivery(PUBLISHED_BODY, PUBLISHED_SIGNATURE[:-8] + "AAAAAAA=", **request.headers)
    with pytest.raises(SignatureInvalid):
        legacy.verify(downgraded, SigningSecrets(HMAC_KEY), now=NOW, tolerance_seconds=300)
    # Given a secret holding only a public key (anyone can read it): Then it keys no HMAC (a configuration error)
    public_only = SigningSecrets(DEV_SECRETS["woovi"])
    forged = hmac_delivery(PUBLISHED_BODY, DEV_SECRETS["woovi"])
    with pytest.raises(ValueError, match="no HMAC key"):
        legacy.verify(forged, public_only, now=NOW, tolerance_seconds=300)
    # ...and next to an HMAC key, the public key is still not one
    with pytest.raises(SignatureInvalid):
        legacy.verify(forged, SigningSecrets(HMAC_KEY, previous=public_only.current), now=NOW, tolerance_seconds=300)


def test_legacy_signature_is_a_source_option_only_for_a_provider_that_has_one():
    # Given sources.json entries
    (woovi,) = parse_sources([{"name": "woovi-br", "provider": "woovi", "legacy_signature": True}])
    assert woovi.legacy_signature is True
    assert woovi.document()["legacy_signature"] is True
    assert parse_sources([{"name": "woovi", "provider": "woovi", "legacy_signature": False}])[0].document() == {
        "name": "woovi",
        "provider": "woovi",
    }
    # Then a provider without a legacy scheme, or a value that is not a boolean, is refused with its reason
    with pytest.raises(SourcesInvalid, match="has no legacy signature"):
        parse_sources([{"name": "stripe", "provider": "stripe", "legacy_signature": True}])
    with pytest.raises(SourcesInvalid, match="true or false"):
        parse_sources([{"name": "woovi", "provider": "woovi", "legacy_signature": "yes"}])


def test_the_ingest_applies_the_sources_option():
    # Given the ingest, and a delivery carrying only the deprecated HMAC
    class Secrets:
        def signing_secrets(self, source: str) -> SigningSecrets:
            return SigningSecrets(HMAC_KEY)

    class Store:
        def put_new(self, item):
            return PutOutcome.STORED

    settings = IngestSettings(inbox_table="inbox", body_bucket="bodies", secret_prefix="")
    service = IngestService(settings, Store(), Secrets(), clock=lambda: NOW)  # type: ignore[arg-type]
    request = hmac_delivery(PUBLISHED_BODY)
    # When it reaches a source without the option, Then 401; with it, stored
    plain, enabled = parse_sources(
        [{"name": "woovi", "provider": "woovi"}, {"name": "woovi-old", "provider": "woovi", "legacy_signature": True}]
    )
    assert service.receive(driver, request, plain).status_code == 401
    assert service.receive(driver, request, enabled).status_code == 200


@pytest.mark.parametrize(
    ("event_type", "charge_status", "canonical", "value"),
    [
        # woovibr/woovi-developers docs/webhook/examples/charge-created-payload.mdx (trimmed): a charge awaiting its Pix
        ("OPENPIX:CHARGE_CREATED", "ACTIVE", "pending", 100),
        # docs/webhook/examples/charge-expired-payload.mdx (trimmed): the charge expired unpaid
        ("OPENPIX:CHARGE_EXPIRED", "EXPIRED", "failed", 1),
    ],
)
def test_woovis_published_charge_created_and_expired_examples_read_as_their_charge(
    event_type, charge_status, canonical, value
):
    # Given the documented example's shape: the event, the charge (no Pix yet), the company and the account
    correlation = "9134e286-6f71-427a-bf00-100000000004"
    body = {
        "event": event_type,
        "charge": {
            "customer": None,
            "value": value,
            "comment": "",
            "identifier": "9134e2866f71427abf0010000",
            "correlationID": correlation,
            "transactionID": "9134e2866f71427abf00100000000006",
            "status": charge_status,
            "additionalInfo": [],
            "discount": 0,
            "valueWithDiscount": value,
            "expiresDate": None,
            "type": "DYNAMIC",
            "createdAt": "2025-09-30T15:35:13.607Z",
            "updatedAt": "2025-09-30T15:35:13.607Z",
            "brCode": "000201...",
            "expiresIn": 86400,
        },
        "company": {"id": "624e3c0d1f4a1d4c1bba7e1f", "name": "Empresa", "taxID": "00000000000000"},
        "account": {"clientId": "Q2xpZW50X0lk"},
    }
    event = driver.parse(delivery(json.dumps(body).encode(), "x"))
    # Then it is about the charge (its correlationID), in the status the charge states, with a derived key
    assert event.resource_id == correlation
    assert (event.event_type, event.provider_status, event.amount) == (event_type, canonical, value)
    assert event.event_id.startswith("d_")
