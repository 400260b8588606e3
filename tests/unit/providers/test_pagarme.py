"""Pagar.me driver: the official library's published postback vector, v5 RS256 signatures, both body formats."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from pagarme import postback as pagarme_postback

from inbox_local.providers.pagarme.sender import SAMPLE_STATUSES, compute_hub_signature, sender
from shared.providers import _public_keys
from shared.providers._public_keys import CachedKeySource, KeysUnavailable, StaticKeySource, b64url_encode, parse_jwks
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.pagarme.driver import PagarmeDriver, default_key_source, driver

NOW = 1_718_221_503
ROOT = Path(__file__).resolve().parents[3]

# Published by Pagar.me's official Python library (pagarme/pagarme-python, tests/postback_test.py)
VECTOR_API_KEY = "ak_test_21eI4THNDJx7vkJRuAmXYlFACIaxnS"
VECTOR_SIGNATURE = "sha1=1b66c265fdac6a903d2aecd01290a26a17c246fd"
VECTOR_PAYLOAD = (
    b"id=2727403&fingerprint=bbf609f80b08e14b706cfdcb0d07948d5fafe42e&event=transaction_status_changed"
    b"&old_status=processing&desired_status=waiting_payment&current_status=waiting_payment&object=transaction"
    b"&transaction%5Bobject%5D=transaction&transaction%5Bstatus%5D=waiting_payment&transaction%5Brefuse_reason%5D="
    b"&transaction%5Bstatus_reason%5D=acquirer&transaction%5Bacquirer_response_code%5D="
    b"&transaction%5Bacquirer_name%5D=pagarme&transaction%5Bacquirer_id%5D=5a54a9e61aac296c19e4c838"
    b"&transaction%5Bauthorization_code%5D=&transaction%5Bsoft_descriptor%5D=&transaction%5Btid%5D=2727403"
    b"&transaction%5Bnsu%5D=2727403&transaction%5Bdate_created%5D=2018-01-09T11%3A41%3A26.624Z"
    b"&transaction%5Bdate_updated%5D=2018-01-09T11%3A41%3A27.216Z&transaction%5Bamount%5D=1000"
    b"&transaction%5Bauthorized_amount%5D=1000&transaction%5Bpaid_amount%5D=0&transaction%5Brefunded_amount%5D=0"
    b"&transaction%5Binstallments%5D=1&transaction%5Bid%5D=2727403&transaction%5Bcost%5D=0"
    b"&transaction%5Bcard_holder_name%5D=&transaction%5Bcard_last_digits%5D=&transaction%5Bcard_first_digits%5D="
    b"&transaction%5Bcard_brand%5D=&transaction%5Bcard_pin_mode%5D="
    b"&transaction%5Bpostback_url%5D=https%3A%2F%2Frequestb.in%2F1234&transaction%5Bpayment_method%5D=boleto"
    b"&transaction%5Bcapture_method%5D=ecommerce&transaction%5Bantifraud_score%5D="
    b"&transaction%5Bboleto_url%5D=https%3A%2F%2Fpagar.me&transaction%5Bboleto_barcode%5D=1234%205678"
    b"&transaction%5Bboleto_expiration_date%5D=2018-01-16T02%3A00%3A00.000Z&transaction%5Breferer%5D=api_key"
    b"&transaction%5Bip%5D=179.191.121.66&transaction%5Bsubscription_id%5D=&transaction%5Bphone%5D="
    b"&transaction%5Baddress%5D=&transaction%5Bcustomer%5D%5Bobject%5D=customer"
    b"&transaction%5Bcustomer%5D%5Bid%5D=442866&transaction%5Bcustomer%5D%5Bexternal_id%5D="
    b"&transaction%5Bcustomer%5D%5Btype%5D=&transaction%5Bcustomer%5D%5Bcountry%5D="
    b"&transaction%5Bcustomer%5D%5Bdocument_number%5D=11111111111&transaction%5Bcustomer%5D%5Bdocument_type%5D=cpf"
    b"&transaction%5Bcustomer%5D%5Bname%5D=Leonardim%20de%20Deos&transaction%5Bcustomer%5D%5Bemail%5D="
    b"&transaction%5Bcustomer%5D%5Bphone_numbers%5D=&transaction%5Bcustomer%5D%5Bborn_at%5D="
    b"&transaction%5Bcustomer%5D%5Bbirthday%5D=&transaction%5Bcustomer%5D%5Bgender%5D="
    b"&transaction%5Bcustomer%5D%5Bdate_created%5D=2018-01-09T11%3A41%3A26.583Z&transaction%5Bbilling%5D="
    b"&transaction%5Bshipping%5D=&transaction%5Bcard%5D=&transaction%5Bsplit_rules%5D="
    b"&transaction%5Breference_key%5D=&transaction%5Bdevice%5D=&transaction%5Blocal_transaction_id%5D="
    b"&transaction%5Blocal_time%5D=&transaction%5Bfraud_covered%5D=false"
)

API_KEY = "ak_live_current_0123456789abcdef"
PREVIOUS = "ak_live_previous_0123456789abcdef"

# The v5 example Pagar.me documents ("Exemplo de webhook", order.paid), trimmed
V5_ORDER_PAID: dict[str, Any] = {
    "id": "hook_RyEKQO789TRpZjv5",
    "account": {"id": "acc_jZkdN857et650oNv", "name": "Lojinha"},
    "type": "order.paid",
    "created_at": "2017-06-29T20:23:47",
    "data": {
        "id": "or_ZdnB5BBCmYhk534R",
        "code": "1303724",
        "amount": 12356,
        "currency": "BRL",
        "closed": True,
        "status": "paid",
        "created_at": "2022-06-29T20:23:42",
        "updated_at": "2022-06-29T20:23:47",
        "charges": [
            {
                "id": "ch_d22356Jf4WuGr8no",
                "code": "1303624",
                "amount": 12356,
                "paid_amount": 12356,
                "status": "paid",
                "currency": "BRL",
                "payment_method": "credit_card",
                "paid_at": "2022-06-29T20:23:47",
            }
        ],
    },
}


def _rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


KEY = _rsa_key()
OTHER_KEY = _rsa_key()


def jwk(private_key: rsa.RSAPrivateKey, kid: str) -> dict[str, str]:
    numbers = private_key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "use": "sig",
        "alg": "RS256",
        "kid": kid,
        "n": b64url_encode(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
        "e": b64url_encode(numbers.e.to_bytes(3, "big")),
    }


def sign_v5(body: bytes, private_key: rsa.RSAPrivateKey, kid: str, alg: str = "RS256") -> WebhookRequest:
    """A v5 delivery as Pagar.me signs it (ecommerce-module-core's verifier is the reference)."""
    signature = private_key.sign(body, padding.PKCS1v15(), hashes.SHA256())
    header = f"alg={alg}; kid={kid}; signature={b64url_encode(signature)}"
    return WebhookRequest(body=body, headers={"x-webhook-asymmetric-signature": header})


def v5_driver(*keys: dict[str, str]) -> PagarmeDriver:
    return PagarmeDriver(StaticKeySource(parse_jwks({"keys": list(keys) or [jwk(KEY, "k1")]})))


def _legacy(body: bytes, signature: str | None) -> WebhookRequest:
    return WebhookRequest(body=body, headers={} if signature is None else {"x-hub-signature": signature})


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None, on: PagarmeDriver | None = None) -> None:
    (on or driver).verify(request, secrets or SigningSecrets(API_KEY), now=NOW, tolerance_seconds=300)


class TestLegacyPostbackSignature:
    def test_the_published_vector_verifies(self):
        # Given the official library's payload, signature and API key, Then our verifier accepts it
        _verify(_legacy(VECTOR_PAYLOAD, VECTOR_SIGNATURE), SigningSecrets(VECTOR_API_KEY))
        assert compute_hub_signature(VECTOR_PAYLOAD, VECTOR_API_KEY) == VECTOR_SIGNATURE.removeprefix("sha1=")

    def test_our_sign_reproduces_the_vector_and_the_official_library_accepts_it(self):
        request = sender.sign(VECTOR_PAYLOAD, VECTOR_API_KEY, now=NOW)
        assert request.header("x-hub-signature") == VECTOR_SIGNATURE
        assert pagarme_postback.validate(request.header("x-hub-signature"), VECTOR_PAYLOAD.decode(), VECTOR_API_KEY)

    def test_the_official_library_rejects_what_we_reject(self):
        tampered = VECTOR_PAYLOAD.replace(b"amount%5D=1000", b"amount%5D=1")
        assert not pagarme_postback.validate(VECTOR_SIGNATURE, tampered.decode(), VECTOR_API_KEY)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(_legacy(tampered, VECTOR_SIGNATURE), SigningSecrets(VECTOR_API_KEY))

    def test_previous_key_verifies_during_a_rotation(self):
        request = sender.sign(b"id=1&event=transaction_status_changed", PREVIOUS, now=NOW)
        _verify(request, SigningSecrets(API_KEY, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(API_KEY))

    @pytest.mark.parametrize("header", [None, ""])
    def test_missing_header(self, header):
        with pytest.raises(SignatureInvalid, match="missing X-Webhook-Asymmetric-Signature or X-Hub-Signature"):
            _verify(_legacy(VECTOR_PAYLOAD, header))

    @pytest.mark.parametrize(
        "header",
        ["1b66c265fdac6a903d2aecd01290a26a17c246fd", "sha1=", "sha256=1b66c265fdac6a903d2aecd01290a26a17c246fd"],
    )
    def test_malformed_or_other_schemes_are_refused(self, header):
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(_legacy(VECTOR_PAYLOAD, header), SigningSecrets(VECTOR_API_KEY))

    def test_hex_case_is_not_significant(self):
        _verify(
            _legacy(VECTOR_PAYLOAD, VECTOR_SIGNATURE.upper().replace("SHA1=", "sha1=")), SigningSecrets(VECTOR_API_KEY)
        )

    def test_a_missing_api_key_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret configured for provider 'pagarme'"):
            _verify(_legacy(VECTOR_PAYLOAD, VECTOR_SIGNATURE), SigningSecrets(""))


class TestV5Signature:
    def test_a_pagarme_signed_hook_verifies(self):
        body = json.dumps(V5_ORDER_PAID).encode()
        # No shared secret is involved on this path: even an unconfigured secret does not matter
        _verify(sign_v5(body, KEY, "k1"), SigningSecrets(""), on=v5_driver())

    def test_tampered_body_or_wrong_key_fails(self):
        body = json.dumps(V5_ORDER_PAID).encode()
        request = sign_v5(body, KEY, "k1")
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=body + b" ", headers=request.headers), on=v5_driver())
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(sign_v5(body, OTHER_KEY, "k1"), on=v5_driver())

    def test_an_unknown_key_id_refetches_the_key_set_once(self):
        calls: list[int] = []
        key_sets = [[jwk(KEY, "k1")], [jwk(KEY, "k1"), jwk(OTHER_KEY, "k2")]]

        def fetch():
            calls.append(1)
            return parse_jwks({"keys": key_sets[min(len(calls), 2) - 1]})

        clock = [0.0]
        on = PagarmeDriver(CachedKeySource(fetch, min_refresh=300, clock=lambda: clock[0]))
        body = b'{"id": "hook_1"}'
        _verify(sign_v5(body, KEY, "k1"), on=on)
        assert len(calls) == 1
        # Given a hook signed with a key Pagar.me rotated in, When it arrives, Then the set is refetched and it passes
        clock[0] = 400
        _verify(sign_v5(body, OTHER_KEY, "k2"), on=on)
        assert len(calls) == 2
        # A forged key id right after does not refetch again (min_refresh), and fails
        with pytest.raises(SignatureInvalid, match="unknown signing key"):
            _verify(sign_v5(body, OTHER_KEY, "k9"), on=on)
        assert len(calls) == 2

    @pytest.mark.parametrize(
        "header",
        [
            "alg=RS256; kid=k1",
            "kid=k1; signature=abc",
            "alg=RS256; kid=k1; signature=***",
            "alg=RS256; alg=RS256; kid=k1; signature=abcd",
        ],
    )
    def test_malformed_headers(self, header):
        with pytest.raises(SignatureInvalid, match="malformed header"):
            _verify(WebhookRequest(body=b"{}", headers={"x-webhook-asymmetric-signature": header}), on=v5_driver())

    def test_other_algorithms_are_refused(self):
        with pytest.raises(SignatureInvalid, match="unsupported signature algorithm"):
            _verify(sign_v5(b"{}", KEY, "k1", alg="HS256"), on=v5_driver())

    def test_without_cryptography_it_is_a_configuration_error(self, monkeypatch):
        def missing():
            raise _public_keys.CryptoUnavailable("no cryptography")

        monkeypatch.setattr(_public_keys, "_crypto", missing)
        with pytest.raises(ValueError, match="no cryptography"):
            _verify(sign_v5(b"{}", KEY, "k1"), on=v5_driver())

    def test_key_source_from_the_environment(self):
        inline = default_key_source({"INBOX_PAGARME_JWKS": json.dumps({"keys": [jwk(KEY, "local")]})})
        assert [key.kid for key in inline.current()] == ["local"]
        fetched = default_key_source({"INBOX_PAGARME_JWKS_URL": "http://insecure.example"})
        with pytest.raises(KeysUnavailable, match="https"):
            fetched.current()

    def test_weak_or_foreign_keys_are_not_trusted(self):
        small = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - the point
        with pytest.raises(KeysUnavailable, match="no usable signature key"):
            parse_jwks({"keys": [jwk(small, "small"), {**jwk(KEY, "enc"), "use": "enc"}]})

    def test_stored_headers_reverify(self):
        body = json.dumps(V5_ORDER_PAID).encode()
        request = sign_v5(body, KEY, "k1")
        stored = {name: request.headers[name] for name in driver.replay_headers if name in request.headers}
        _verify(WebhookRequest(body=body, headers=stored), on=v5_driver())


class TestParseV5:
    def test_the_documented_order_paid_hook(self):
        event = driver.parse(WebhookRequest(body=json.dumps(V5_ORDER_PAID).encode(), headers={}))
        assert event.event_id == "hook_RyEKQO789TRpZjv5"
        assert event.event_type == "order.paid"
        assert event.resource_id == "ch_d22356Jf4WuGr8no"  # the order's charge is the payment
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (12356, "BRL")
        # A naive time is UTC (see the module notes)
        assert event.occurred_at == datetime(2017, 6, 29, 20, 23, 47, tzinfo=UTC)

    def test_a_charge_hook_with_seven_fraction_digits(self):
        hook = {
            "id": "hook_9GRgv6LhjuNJgxkv",
            "type": "charge.paid",
            "created_at": "2024-11-28T16:37:11.6500000Z",
            "data": {"id": "ch_1", "status": "paid", "amount": 990, "currency": "BRL"},
        }
        event = driver.parse(WebhookRequest(body=json.dumps(hook).encode(), headers={}))
        assert (event.resource_id, event.provider_status, event.amount) == ("ch_1", "paid", 990)
        assert event.occurred_at == datetime(2024, 11, 28, 16, 37, 11, 650000, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("status", "canonical"),
        [
            ("pending", "pending"),
            ("processing", "pending"),
            ("underpaid", "pending"),
            ("paid", "paid"),
            ("overpaid", "paid"),
            ("canceled", "canceled"),
            ("refunded", "refunded"),
            ("failed", "failed"),
            ("chargedback", "charged_back"),
            ("something_new", None),
        ],
    )
    def test_charge_statuses_map_to_canonical(self, status, canonical):
        hook = {
            "id": "hook_2",
            "type": "charge.updated",
            "created_at": "2024-01-01T00:00:00Z",
            "data": {"id": "ch_2", "status": status},
        }
        assert driver.parse(WebhookRequest(body=json.dumps(hook).encode(), headers={})).provider_status == canonical

    def test_a_redelivery_has_the_same_hook_id(self):
        body = json.dumps(V5_ORDER_PAID).encode()
        reordered = json.dumps(dict(reversed(list(V5_ORDER_PAID.items())))).encode()
        a = driver.parse(WebhookRequest(body=body, headers={}))
        b = driver.parse(WebhookRequest(body=reordered, headers={}))
        assert a.event_id == b.event_id == "hook_RyEKQO789TRpZjv5"

    def test_an_order_without_charges_stands_for_its_payment(self):
        hook = {**V5_ORDER_PAID, "type": "order.created", "data": {**V5_ORDER_PAID["data"], "status": "pending"}}
        del hook["data"]["charges"]
        event = driver.parse(WebhookRequest(body=json.dumps(hook).encode(), headers={}))
        assert (event.resource_id, event.provider_status) == ("or_ZdnB5BBCmYhk534R", "pending")

    def test_other_objects_have_no_resource(self):
        hook = {
            "id": "hook_3",
            "type": "customer.created",
            "created_at": "2024-01-01T00:00:00Z",
            "data": {"id": "cus_1"},
        }
        event = driver.parse(WebhookRequest(body=json.dumps(hook).encode(), headers={}))
        assert (event.resource_id, event.provider_status, event.amount) == (None, None, None)

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"id": None}, "missing field id"),
            ({"type": None}, "missing field type"),
            ({"created_at": "yesterday"}, "not an ISO-8601"),
            ({"data": None}, "missing field data"),
        ],
    )
    def test_invalid_hooks(self, change, reason):
        hook = {**V5_ORDER_PAID, **change}
        hook = {key: value for key, value in hook.items() if value is not None}
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(WebhookRequest(body=json.dumps(hook).encode(), headers={}))


class TestParseLegacy:
    def test_the_published_postback(self):
        event = driver.parse(WebhookRequest(body=VECTOR_PAYLOAD, headers={}))
        assert event.event_type == "transaction_status_changed"
        assert event.resource_id == "2727403"
        assert event.provider_status == "pending"  # waiting_payment
        assert (event.amount, event.currency) == (1000, "BRL")
        assert event.occurred_at == datetime(2018, 1, 9, 11, 41, 27, 216000, tzinfo=UTC)
        assert event.event_id.startswith("d_")

    def test_a_redelivery_derives_the_same_id_and_a_new_status_another(self):
        fields = parse_qsl(VECTOR_PAYLOAD.decode(), keep_blank_values=True)
        redelivered = urlencode(list(reversed(fields))).encode()  # other order, other encoding of spaces
        assert (
            driver.parse(WebhookRequest(body=redelivered, headers={})).event_id
            == driver.parse(WebhookRequest(body=VECTOR_PAYLOAD, headers={})).event_id
        )
        paid = VECTOR_PAYLOAD.replace(b"current_status=waiting_payment", b"current_status=paid").replace(
            b"27.216Z", b"59.000Z"
        )
        assert (
            driver.parse(WebhookRequest(body=paid, headers={})).event_id
            != driver.parse(WebhookRequest(body=VECTOR_PAYLOAD, headers={})).event_id
        )

    def test_a_minimal_postback_without_dates_is_keyed_on_its_transition(self):
        on = PagarmeDriver(clock=lambda: NOW)
        body = (
            b"old_status=processing&object=transaction&current_status=paid&desired_status=paid"
            b"&event=transaction_status_changed&id=194330"
        )
        event = on.parse(WebhookRequest(body=body, headers={}))
        again = PagarmeDriver(clock=lambda: NOW + 3600).parse(WebhookRequest(body=body, headers={}))
        assert event.event_id == again.event_id
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        assert (event.resource_id, event.provider_status) == ("194330", "paid")

    def test_subscription_postbacks_are_not_payments(self):
        body = b"id=99&object=subscription&event=subscription_status_changed&current_status=paid&old_status=unpaid"
        event = driver.parse(WebhookRequest(body=body, headers={}))
        assert (event.resource_id, event.amount) == (None, None)

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"event=transaction_status_changed&current_status=paid", "missing field id"),
            (b"id=1&current_status=paid", "missing field event"),
            (b"id=1&event=x&current_status=paid&transaction%5Bamount%5D=1.5", "must be an integer"),
            (b"\xff\xfe", "not valid UTF-8"),
            (b"just text", "not form-encoded"),
        ],
    )
    def test_invalid_postbacks(self, body, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(WebhookRequest(body=body, headers={}))

    def test_fallback_event_id_is_the_body_digest(self):
        assert driver.fallback_event_id(WebhookRequest(body=b"\xff", headers={})) == body_digest_id(b"\xff")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_each_sample_is_a_signed_postback_of_that_status(self, status):
        body = sender.sample_body(event_id="e", resource_id="2727403", status=status, amount=1990, occurred_at=NOW)
        request = sender.sign(body, API_KEY, now=NOW)
        assert pagarme_postback.validate(request.header("x-hub-signature"), body.decode(), API_KEY)
        _verify(request)
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status, event.amount) == ("2727403", status, 1990)
        assert event.occurred_at.timestamp() == NOW
        assert request.header("content-type") == "application/x-www-form-urlencoded"

    def test_unknown_status(self):
        with pytest.raises(ValueError, match=r"no Pagar\.me sample for status 'disputed'"):
            sender.sample_body(event_id="e", resource_id="1", status="disputed", amount=1, occurred_at=NOW)


def test_the_brazilian_drivers_import_nothing_heavy():
    # Given a fresh interpreter, When the five drivers are imported, Then neither `cryptography` nor an HTTP stack
    # comes along: only a delivery that needs a public-key check (or a key fetch) pays for them
    code = (
        "import sys\n"
        "import shared.providers.pagarme.driver, shared.providers.kiwify.driver, shared.providers.hotmart.driver\n"
        "import shared.providers.pagbank.driver, shared.providers.iugu.driver\n"
        "heavy = {'boto3', 'botocore', 'pydantic', 'requests', 'urllib3', 'urllib.request', 'http.client',"
        " 'cryptography', 'aws_lambda_powertools', 'zoneinfo'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("event_type", "routed"),
    [("charge.paid", True), ("order.paid", True), ("transaction_status_changed", True), ("customer.created", False)],
)
def test_the_processor_refetches_pagarme_payments(event_type, routed):
    from shared.process.handlers import RefetchPaymentHandler, default_router

    handler = default_router(lambda provider: None).resolve("pagarme", event_type)
    assert isinstance(handler, RefetchPaymentHandler) is routed
