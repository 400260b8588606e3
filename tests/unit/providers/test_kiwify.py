"""Kiwify driver: sales webhooks (HMAC-SHA1 `?signature=`) and Kiwify Banking (Ed25519, prehashed, timestamped)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from inbox_local.providers.kiwify.sender import SAMPLE_STATUSES, compute_signature, sender
from shared.providers._public_keys import KeysUnavailable, StaticKeySource, b64url_encode, parse_ed25519_keys
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.kiwify.driver import KiwifyDriver, banking_status, default_banking_keys, driver, sale_status

TOKEN = "kiwify-token-current-0123456789"
PREVIOUS = "kiwify-token-previous-0123456789"
NOW = 1_718_221_503
PATH = "/webhooks/kiwify"

# The sales webhook shape Kiwify documents (trimmed): times are Sao Paulo local, money in centavos
SALE: dict[str, Any] = {
    "order_id": "b6ba3959-30b5-44fc-a3e5-2c61e3d68ee5",
    "order_ref": "Kqr5Bxu",
    "order_status": "paid",
    "product_type": "membership",
    "payment_method": "credit_card",
    "created_at": "2024-06-12 16:40",
    "updated_at": "2024-06-12 16:45",
    "approved_date": "2024-06-12 16:45",
    "refunded_at": None,
    "webhook_event_type": "order_approved",
    "Product": {"product_id": "p1", "product_name": "Curso"},
    "Customer": {"full_name": "John Doe", "email": "johndoe@example.com"},
    "Commissions": {"charge_amount": 5073, "currency": "BRL"},
}

BANKING_KEY = ed25519.Ed25519PrivateKey.generate()
OTHER_BANKING_KEY = ed25519.Ed25519PrivateKey.generate()


def raw_public(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def banking_driver(*keys: ed25519.Ed25519PrivateKey) -> KiwifyDriver:
    text = ",".join(base64.b64encode(raw_public(key)).decode() for key in (keys or (BANKING_KEY,)))
    return KiwifyDriver(StaticKeySource(parse_ed25519_keys(text)))


def sign_banking(body: bytes, key: ed25519.Ed25519PrivateKey, *, timestamp_ms: int, path: str = PATH) -> WebhookRequest:
    """A Banking delivery as Kiwify documents it: Ed25519 over SHA-256(`{path}:POST:{body}:{ts}`), base64url."""
    digest = hashlib.sha256(f"{path}:POST:".encode() + body + f":{timestamp_ms}".encode()).digest()
    signature = b64url_encode(key.sign(digest))
    headers = {"x-kiwify-digital-signature": signature, "x-kiwify-timestamp": str(timestamp_ms)}
    return WebhookRequest(body=body, headers=headers, path=PATH)


def banking_body(event_type: str = "CASHIN.PIX.QRCODES.PAID", envelope_id: str = "550e8400", **data) -> bytes:
    payload = {"qrcode_id": "qr_123", "status": "paid", "amount": 1990, **data}
    return json.dumps(
        {"id": envelope_id, "type": event_type, "version": "1.0", "data": payload, "created_at": "2024-06-12T19:45:03Z"}
    ).encode()


def _sale(body: bytes | dict[str, Any], signature: str | None = None, token: str = TOKEN) -> WebhookRequest:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    query = {} if signature == "" else {"signature": signature or compute_signature(raw, token)}
    return WebhookRequest(body=raw, headers={"content-type": "application/json"}, query=query)


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None, on: KiwifyDriver | None = None, now=NOW):
    (on or driver).verify(request, secrets or SigningSecrets(TOKEN), now=now, tolerance_seconds=300)


class TestSalesSignature:
    def test_hmac_sha1_of_the_raw_body_with_the_token(self):
        raw = json.dumps(SALE).encode()
        assert compute_signature(raw, TOKEN) == hmac.new(TOKEN.encode(), raw, hashlib.sha1).hexdigest()
        assert len(compute_signature(raw, TOKEN)) == 40
        _verify(_sale(raw))

    def test_previous_token_verifies_during_a_rotation(self):
        _verify(_sale(SALE, token=PREVIOUS), SigningSecrets(TOKEN, PREVIOUS))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_sale(SALE, token=PREVIOUS))

    def test_tampered_body_fails(self):
        request = _sale(SALE)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=request.body.replace(b"5073", b"1"), headers={}, query=request.query))

    def test_missing_signature(self):
        with pytest.raises(SignatureInvalid, match="missing signature query parameter"):
            _verify(_sale(SALE, signature=""))

    def test_hex_case_is_not_significant(self):
        raw = json.dumps(SALE).encode()
        _verify(_sale(raw, signature=compute_signature(raw, TOKEN).upper()))

    def test_an_unconfigured_token_is_a_configuration_error(self):
        # Kiwify signs with an empty key when the webhook has no token: such a signature proves nothing
        raw = json.dumps(SALE).encode()
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_sale(raw, signature=compute_signature(raw, "")), SigningSecrets(""))

    def test_the_signature_is_kept_but_the_token_never_is(self):
        request = sender.sign(b"{}", TOKEN, now=NOW)
        assert KiwifyDriver.replay_query == ("signature",)
        assert TOKEN not in request.query.values() and TOKEN not in request.headers.values()


class TestParseSale:
    def test_fields(self):
        event = driver.parse(_sale(SALE))
        assert event.event_type == "order_approved"
        assert event.resource_id == "b6ba3959-30b5-44fc-a3e5-2c61e3d68ee5"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (5073, "BRL")
        # "2024-06-12 16:45" in Sao Paulo (UTC-3) is 19:45 UTC; minute precision kept
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, tzinfo=UTC)

    def test_a_redelivery_derives_the_same_id(self):
        redelivered = dict(reversed(list(SALE.items())))
        redelivered["Customer"] = {"full_name": "John Doe"}
        assert driver.parse(_sale(redelivered)).event_id == driver.parse(_sale(SALE)).event_id

    def test_another_fact_is_another_id(self):
        paid = driver.parse(_sale(SALE))
        refunded = {
            **SALE,
            "order_status": "refunded",
            "webhook_event_type": "order_refunded",
            "refunded_at": "2024-06-20 10:00:00",
        }
        event = driver.parse(_sale(refunded))
        assert event.event_id != paid.event_id
        assert event.provider_status == "refunded"
        assert event.occurred_at == datetime(2024, 6, 20, 13, 0, tzinfo=UTC)  # refunded_at dates a refund

    def test_times_with_seconds_and_iso_and_zones(self):
        assert driver.parse(_sale({**SALE, "approved_date": "2024-06-12T16:45:30"})).occurred_at == datetime(
            2024, 6, 12, 19, 45, 30, tzinfo=UTC
        )
        assert driver.parse(_sale({**SALE, "approved_date": "2024-06-12T16:45:30Z"})).occurred_at == datetime(
            2024, 6, 12, 16, 45, 30, tzinfo=UTC
        )

    def test_amount_as_a_digit_string(self):
        body = {**SALE, "Commissions": {"charge_amount": "9700"}}
        assert driver.parse(_sale(body)).amount == 9700

    @pytest.mark.parametrize(
        ("status", "canonical"),
        [
            ("waiting_payment", "pending"),
            ("processing", "pending"),
            ("authorized", "authorized"),
            ("paid", "paid"),
            ("approved", "paid"),
            ("pending_refund", "paid"),
            ("refused", "failed"),
            ("expired", "failed"),
            ("canceled", "canceled"),
            ("refunded", "refunded"),
            ("chargedback", "charged_back"),
            ("something_new", None),
        ],
    )
    def test_order_statuses_map_to_canonical(self, status, canonical):
        assert driver.parse(_sale({**SALE, "order_status": status})).provider_status == canonical
        found = sale_status(status)
        assert (found.value if found else None) == canonical

    def test_an_event_without_an_order_is_not_a_payment(self):
        cart = {"id": "cart_1", "webhook_event_type": "carrinho_abandonado", "created_at": "2024-06-12 10:00:00"}
        event = driver.parse(_sale(cart))
        assert (event.resource_id, event.provider_status) == (None, None)

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"webhook_event_type": None}, "missing field webhook_event_type"),
            ({"order_status": None}, "missing field order_status"),
            ({"approved_date": None, "updated_at": None, "created_at": None}, "missing field created_at"),
            ({"approved_date": "12/06/2024"}, "field approved_date is not"),
            ({"Commissions": {"charge_amount": 50.73}}, "charge_amount must be an amount in centavos"),
        ],
    )
    def test_invalid_sales(self, change, reason):
        body = {key: value for key, value in {**SALE, **change}.items() if value is not None}
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_sale(body))


class TestBankingSignature:
    def test_a_kiwify_signed_delivery_verifies(self):
        on = banking_driver()
        _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000 + 250), on=on)

    def test_the_token_plays_no_part(self):
        on = banking_driver()
        _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000), SigningSecrets(""), on=on)

    @pytest.mark.parametrize("offset", [-300, 0, 300])
    def test_within_five_minutes_passes(self, offset):
        _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=(NOW + offset) * 1000), on=banking_driver())

    @pytest.mark.parametrize("offset", [-301, 301, -86_400])
    def test_stale_and_future_deliveries_fail(self, offset):
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=(NOW + offset) * 1000), on=banking_driver())

    def test_signed_for_another_path_another_body_or_another_key_fails(self):
        on = banking_driver()
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000, path="/other"), on=on)
        request = sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=request.body + b" ", headers=request.headers, path=PATH), on=on)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sign_banking(banking_body(), OTHER_BANKING_KEY, timestamp_ms=NOW * 1000), on=on)

    def test_the_timestamp_is_signed(self):
        request = sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000)
        moved = {**request.headers, "x-kiwify-timestamp": str(NOW * 1000 + 1)}
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=request.body, headers=moved, path=PATH), on=banking_driver())

    def test_not_the_plain_message_but_its_sha256_is_signed(self):
        body = banking_body()
        plain = BANKING_KEY.sign(f"{PATH}:POST:".encode() + body + f":{NOW * 1000}".encode())
        headers = {"x-kiwify-digital-signature": b64url_encode(plain), "x-kiwify-timestamp": str(NOW * 1000)}
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=body, headers=headers, path=PATH), on=banking_driver())

    def test_two_keys_during_a_rotation(self):
        on = banking_driver(BANKING_KEY, OTHER_BANKING_KEY)
        _verify(sign_banking(banking_body(), OTHER_BANKING_KEY, timestamp_ms=NOW * 1000), on=on)

    @pytest.mark.parametrize(
        "headers",
        [
            {"x-kiwify-digital-signature": "abc"},
            {"x-kiwify-digital-signature": "", "x-kiwify-timestamp": "1"},
            {"x-kiwify-digital-signature": "abc", "x-kiwify-timestamp": "17e11"},
            {"x-kiwify-digital-signature": "a+b/", "x-kiwify-timestamp": "1718221503000"},
        ],
    )
    def test_malformed_headers(self, headers):
        with pytest.raises(SignatureInvalid):
            _verify(WebhookRequest(body=banking_body(), headers=headers, path=PATH), on=banking_driver())

    def test_unconfigured_keys_are_a_configuration_error(self):
        with pytest.raises(ValueError, match="no Ed25519 public key configured"):
            _verify(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000), on=KiwifyDriver(None))

    def test_keys_in_every_written_form(self):
        raw = raw_public(BANKING_KEY)
        pem = BANKING_KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        der_b64 = base64.b64encode(
            BANKING_KEY.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        ).decode()
        jwks = json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(raw), "kid": "k"}]})
        for text in (raw.hex(), base64.b64encode(raw).decode(), b64url_encode(raw), pem.decode(), der_b64, jwks):
            keys = default_banking_keys({"INBOX_KIWIFY_BANKING_PUBLIC_KEYS": text}).current()
            assert [key.material for key in keys] == [raw]
        with pytest.raises(KeysUnavailable):
            parse_ed25519_keys("not-a-key!")


class TestParseBanking:
    def test_fields(self):
        event = driver.parse(sign_banking(banking_body(), BANKING_KEY, timestamp_ms=NOW * 1000))
        assert event.event_type == "CASHIN.PIX.QRCODES.PAID"
        assert event.resource_id == "qr_123"
        assert event.provider_status == "paid"
        assert event.amount == 1990
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)

    def test_the_envelope_id_changes_per_retry_but_the_event_id_does_not(self):
        first = driver.parse(sign_banking(banking_body(envelope_id="a"), BANKING_KEY, timestamp_ms=NOW * 1000))
        retry = driver.parse(sign_banking(banking_body(envelope_id="b"), BANKING_KEY, timestamp_ms=NOW * 1000 + 9))
        assert first.event_id == retry.event_id
        assert first.event_id.startswith("d_")

    @pytest.mark.parametrize(
        ("event_type", "data", "resource", "canonical"),
        [
            ("CASHIN.PIX.QRCODES.CREATED", {"qrcode_id": "qr_9"}, "qr_9", "pending"),
            ("CASHIN.PIX.QRCODES.PAID", {"qrcode_id": "qr_9"}, "qr_9", "paid"),
            ("CASHIN.DEPOSITS.RECEIVED", {"transaction_id": 77}, "77", "paid"),
            ("CASHOUT.PIX.TRANSFERS.SCHEDULED", {"transfer_id": "t1"}, "t1", "pending"),
            ("CASHOUT.PIX.TRANSFERS.COMPLETED", {"transfer_id": "t1"}, "t1", "paid"),
            ("CASHOUT.PIX.TRANSFERS.FAILED", {"transfer_id": "t1"}, "t1", "failed"),
            ("CASHOUT.PIX.TRANSFERS.SCHEDULED.FAILED", {"transfer_id": "t1"}, "t1", "failed"),
            ("CASHOUT.PIX.REFUNDS.COMPLETED", {"refund_id": 5}, "5", "refunded"),
            ("CASHOUT.BOLETO.PAYMENTS.COMPLETED", {"id": "b1"}, "b1", "paid"),
        ],
    )
    def test_resource_and_status_per_type(self, event_type, data, resource, canonical):
        body = json.dumps(
            {"id": "x", "type": event_type, "version": "1.0", "data": data, "created_at": "2024-06-12T19:45:03Z"}
        ).encode()
        event = driver.parse(sign_banking(body, BANKING_KEY, timestamp_ms=NOW * 1000))
        assert (event.resource_id, event.provider_status) == (resource, canonical)
        found = banking_status(event_type)
        assert found is not None and found.value == canonical

    def test_a_missing_resource_id_is_invalid(self):
        body = json.dumps(
            {"id": "x", "type": "CASHOUT.PIX.TRANSFERS.COMPLETED", "data": {}, "created_at": "2024-06-12T19:45:03Z"}
        )
        with pytest.raises(PayloadInvalid, match=r"missing field data\.transfer_id"):
            driver.parse(sign_banking(body.encode(), BANKING_KEY, timestamp_ms=NOW * 1000))


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_round_trip(self, status):
        body = sender.sample_body(event_id="e", resource_id="ord_1", status=status, amount=4990, occurred_at=NOW)
        request = sender.sign(body, TOKEN, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status, event.amount) == ("ord_1", status, 4990)
        assert event.occurred_at.timestamp() == NOW

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Kiwify sample for status 'authorized'"):
            sender.sample_body(event_id="e", resource_id="o", status="authorized", amount=1, occurred_at=NOW)


def test_sale_and_banking_payment_events_are_ordered_by_event_time():
    from shared.process.handlers import EventTimeOrderedHandler, default_router

    router = default_router(lambda provider: None)
    for event_type in ("order_approved", "order_refunded", "chargeback", "pix_created", "CASHIN.PIX.QRCODES.PAID"):
        assert isinstance(router.resolve("kiwify", event_type), EventTimeOrderedHandler)
    assert router.resolve("kiwify", "carrinho_abandonado") is None


@pytest.mark.parametrize(("amount", "expected"), [(1990, 1990), (19.9, None), ({"value": 1990}, None), ("1990", None)])
def test_banking_amounts_are_taken_only_when_they_are_centavos(amount, expected):
    body = banking_body(amount=amount)
    assert driver.parse(sign_banking(body, BANKING_KEY, timestamp_ms=NOW * 1000)).amount == expected
