"""The data-configured `generic` HMAC driver: configuration, published vectors re-expressed as configs, parsing."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pytest

from inbox_local.providers.generic.sender import GenericSender
from shared.providers._schemes import signed_bytes
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id
from shared.providers.generic import driver as generic
from shared.providers.generic.driver import (
    ENV_CONFIG,
    GenericConfig,
    GenericConfigError,
    GenericHmacDriver,
)
from shared.providers.registry import get_driver

SECRET = "generic-current-secret"
PREVIOUS = "generic-previous-secret"
NOW = 1_718_221_503
DEFAULT = GenericHmacDriver(GenericConfig())
BODY = json.dumps(
    {
        "id": "evt_body_1",
        "type": "payment.paid",
        "created_at": "2024-06-12T16:45:03-03:00",
        "data": {"id": "pay_1", "status": "paid", "amount": 2599, "currency": "brl"},
    }
).encode()


def _verify(
    driver: GenericHmacDriver,
    request: WebhookRequest,
    secrets: SigningSecrets | None = None,
    *,
    now: float = NOW,
    tolerance: int = 300,
) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=now, tolerance_seconds=tolerance)


class TestPublishedVectorsAsConfigs:
    def test_github_vector_1(self):
        # Given GitHub's scheme expressed as a configuration
        github = GenericHmacDriver(
            GenericConfig(
                signature_header="X-Hub-Signature-256",
                prefix="sha256=",
                signed_content="{body}",
                timestamp_header=None,
                id_header="X-GitHub-Delivery",
            )
        )
        headers = {
            "x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
            "x-github-delivery": "d-1",
        }
        # Then GitHub's documented example verifies, and signs_timestamp is off
        _verify(
            github, WebhookRequest(body=b"Hello, World!", headers=headers), SigningSecrets("It's a Secret to Everybody")
        )
        assert github.signs_timestamp is False

    def test_shopify_vector_5(self):
        shopify = GenericHmacDriver(
            GenericConfig(
                signature_header="x-shopify-hmac-sha256",
                encoding="base64",
                prefix="",
                signed_content="{body}",
                timestamp_header=None,
                id_header=None,
            )
        )
        request = WebhookRequest(
            body=b'{"foo": "bar"}', headers={"x-shopify-hmac-sha256": "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="}
        )
        _verify(shopify, request, SigningSecrets("test_secret_key"))

    def test_paddle_vector_6_signed_content(self):
        # Paddle's signed content is `{ts}:{body}`; the header format differs, so only the content is checked here
        config = GenericConfig(signature_header="x-sig", prefix="", signed_content="{timestamp}:{body}")
        paddle_like = GenericHmacDriver(config)
        signature = paddle_like.compute_signature(b'{"data": ["1", "2"]}', "VALID_SECRET", timestamp="1698796800")
        assert signature == "a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9"


class TestVerify:
    def test_round_trip_with_the_defaults(self):
        request = GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW, event_id="msg_1")
        assert (
            request.header("x-webhook-signature")
            == "sha256=" + hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
        )
        _verify(DEFAULT, request)

    def test_tampered_body_timestamp_or_id_fails(self):
        config = GenericConfig(signed_content="{id}.{timestamp}.{body}")
        driver = GenericHmacDriver(config)
        request = GenericSender(driver).sign(BODY, SECRET, now=NOW, event_id="msg_1")
        for altered in (
            WebhookRequest(body=BODY + b" ", headers=request.headers),
            WebhookRequest(body=BODY, headers={**request.headers, "x-webhook-timestamp": str(NOW + 1)}),
            WebhookRequest(body=BODY, headers={**request.headers, "x-webhook-id": "msg_2"}),
        ):
            with pytest.raises(SignatureInvalid, match="no signature matches"):
                _verify(driver, altered)

    @pytest.mark.parametrize("algorithm", ["sha1", "sha256", "sha512"])
    @pytest.mark.parametrize("encoding", ["hex", "base64"])
    def test_algorithms_and_encodings(self, algorithm, encoding):
        driver = GenericHmacDriver(GenericConfig(algorithm=algorithm, encoding=encoding, prefix="v1="))
        request = GenericSender(driver).sign(BODY, SECRET, now=NOW)
        _verify(driver, request)
        digest = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, getattr(hashlib, algorithm)).digest()
        value = (request.header("x-webhook-signature") or "").removeprefix("v1=")
        assert value == (digest.hex() if encoding == "hex" else __import__("base64").b64encode(digest).decode())

    def test_hex_is_compared_case_insensitively_base64_exactly(self):
        request = GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW)
        upper = "sha256=" + (request.header("x-webhook-signature") or "").removeprefix("sha256=").upper()
        _verify(DEFAULT, WebhookRequest(body=BODY, headers={**request.headers, "x-webhook-signature": upper}))

    def test_a_signature_without_the_prefix_is_not_read(self):
        request = GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW)
        bare = (request.header("x-webhook-signature") or "").removeprefix("sha256=")
        with pytest.raises(SignatureInvalid, match="no signature in header"):
            _verify(DEFAULT, WebhookRequest(body=BODY, headers={**request.headers, "x-webhook-signature": bare}))

    def test_several_signatures_and_the_previous_secret(self):
        driver = GenericHmacDriver(GenericConfig(signature_separator=" ", prefix="v1,", encoding="base64"))
        ours = GenericSender(driver).sign(BODY, PREVIOUS, now=NOW).header("x-webhook-signature")
        theirs = GenericSender(driver).sign(BODY, "somebody-else", now=NOW).header("x-webhook-signature")
        request = GenericSender(driver).sign(BODY, PREVIOUS, now=NOW)
        headers = {**request.headers, "x-webhook-signature": f"{theirs} v2,ignored {ours}"}
        _verify(driver, WebhookRequest(body=BODY, headers=headers), SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(driver, WebhookRequest(body=BODY, headers=headers), SigningSecrets(SECRET))

    @pytest.mark.parametrize(("encoding", "secret"), [("hex", "6b6579"), ("base64", "a2V5")])
    def test_encoded_secrets_are_decoded(self, encoding, secret):
        driver = GenericHmacDriver(
            GenericConfig(secret_encoding=encoding, signed_content="{body}", timestamp_header=None)
        )
        expected = hmac.new(b"key", BODY, hashlib.sha256).hexdigest()
        request = WebhookRequest(body=BODY, headers={"x-webhook-signature": f"sha256={expected}"})
        _verify(driver, request, SigningSecrets(secret))

    def test_an_undecodable_secret_is_a_configuration_error(self):
        driver = GenericHmacDriver(GenericConfig(secret_encoding="hex"))
        with pytest.raises(ValueError, match="is not hex"):
            _verify(driver, GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW), SigningSecrets("not-hex"))

    def test_tolerance_defaults_to_the_systems_and_can_be_configured(self):
        request = GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW)
        _verify(DEFAULT, request, now=NOW + 300)
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(DEFAULT, request, now=NOW + 301)
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(DEFAULT, GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW + 301))
        strict = GenericHmacDriver(GenericConfig(tolerance_seconds=5))
        with pytest.raises(SignatureInvalid, match="timestamp outside tolerance"):
            _verify(strict, GenericSender(strict).sign(BODY, SECRET, now=NOW), now=NOW + 6)

    @pytest.mark.parametrize(
        ("drop", "value", "reason"),
        [
            ("x-webhook-signature", None, "missing x-webhook-signature header"),
            ("x-webhook-timestamp", None, "missing x-webhook-timestamp header"),
            ("x-webhook-timestamp", "12.5", "malformed header"),
        ],
    )
    def test_missing_or_malformed_headers(self, drop, value, reason):
        headers = dict(GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW).headers)
        headers.pop(drop)
        if value is not None:
            headers[drop] = value
        with pytest.raises(SignatureInvalid, match=reason):
            _verify(DEFAULT, WebhookRequest(body=BODY, headers=headers))

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(DEFAULT, GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW), SigningSecrets(""))


class TestConfiguration:
    def test_signed_content_splices_the_raw_body(self):
        assert signed_bytes("{timestamp}.{body}", b'{"a":1}', timestamp="12") == b'12.{"a":1}'
        assert signed_bytes("{{body}}:{body}:{id}", b"X", event_id="i") == b"{body}:X:i"

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"algorithm": "md5"}, "algorithm must be one of"),
            ({"encoding": "base32"}, "encoding must be one of"),
            ({"secret_encoding": "rot13"}, "secret_encoding must be one of"),
            ({"signed_content": "{timestamp}"}, "must contain {body} exactly once"),
            ({"signed_content": "{body}{body}"}, "must contain {body} exactly once"),
            ({"signed_content": "{body}.{secret}"}, "may only use {body}, {timestamp} and {id}"),
            ({"signed_content": "{body!r}"}, "may only use"),
            ({"signed_content": "{body"}, "not a valid template"),
            ({"timestamp_header": None}, "uses {timestamp} but timestamp_header is not set"),
            ({"signed_content": "{id}{body}", "id_header": None}, "uses {id} but id_header is not set"),
            ({"signature_header": " "}, "signature_header is empty"),
            ({"signature_separator": ""}, "signature_separator is empty"),
            ({"tolerance_seconds": -1}, "cannot be negative"),
            ({"type_path": ""}, "type_path is empty"),
        ],
    )
    def test_invalid_configurations(self, changes, reason):
        with pytest.raises(GenericConfigError, match=reason):
            GenericConfig(**changes)

    def test_from_json(self):
        config = GenericConfig.from_json(
            json.dumps(
                {
                    "signature_header": "X-Sig",
                    "algorithm": "sha512",
                    "timestamp_header": None,
                    "signed_content": "{body}",
                    "payment_event_types": ["charge.*", "refund"],
                    "status_map": {"SUCCEEDED": "paid"},
                    "tolerance_seconds": 60,
                }
            )
        )
        assert config.algorithm == "sha512"
        assert config.timestamp_header is None
        assert config.payment_event_types == ("charge.*", "refund")
        assert config.status_map == {"SUCCEEDED": "paid"}

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            ("{not json", "not valid JSON"),
            ("[]", "must be a JSON object"),
            ('{"colour": "blue"}', "unknown configuration keys: colour"),
            ('{"algorithm": 256}', "algorithm must be a string"),
            ('{"signature_header": null}', "signature_header must be a string"),
            ('{"tolerance_seconds": "60"}', "tolerance_seconds must be an integer"),
            ('{"payment_event_types": "payment.*"}', "payment_event_types must be a list of strings"),
            ('{"status_map": []}', "status_map must be an object"),
            ('{"status_map": {"a": 1}}', "status_map must map strings to strings"),
        ],
    )
    def test_invalid_json_configurations(self, text, reason):
        with pytest.raises(GenericConfigError, match=reason):
            GenericConfig.from_json(text)

    def test_from_environ(self):
        assert GenericConfig.from_environ({}) == GenericConfig()
        assert GenericConfig.from_environ({ENV_CONFIG: '{"prefix": ""}'}).prefix == ""

    def test_an_unusable_environment_configuration_fails_loudly_at_use_not_at_import(self, monkeypatch):
        # Given a broken INBOX_GENERIC_CONFIG, When the driver is built, Then nothing raises yet (the registry and
        # the router stay usable); verify raises a configuration error (503, the sender retries), never a 401
        monkeypatch.setenv(ENV_CONFIG, '{"algorithm": "md5"}')
        broken = GenericHmacDriver()
        with pytest.raises(ValueError, match="algorithm must be one of") as caught:
            _verify(broken, GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW))
        assert not isinstance(caught.value, SignatureInvalid)
        with pytest.raises(ValueError):
            broken.parse(WebhookRequest(body=BODY, headers={}))
        assert broken.payment_event_patterns() == ("payment.*",)

    def test_the_registered_driver_and_its_routes(self):
        driver = get_driver("generic")
        assert driver.name == "generic"
        assert generic.payment_event_patterns() == ("payment.*",)
        assert set(driver.replay_headers) == {"x-webhook-signature", "x-webhook-timestamp", "x-webhook-id"}
        assert driver.signs_timestamp is True

    def test_a_users_own_named_driver(self):
        mine = GenericHmacDriver(GenericConfig(), name="acme")
        assert mine.name == "acme"
        with pytest.raises(ValueError, match="no signing secret configured for provider 'acme'"):
            _verify(mine, GenericSender(mine).sign(BODY, SECRET, now=NOW), SigningSecrets(""))


class TestParse:
    def test_defaults(self):
        event = DEFAULT.parse(GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW, event_id="msg_1"))
        # the id header is not in the default template ({timestamp}.{body}): unsigned, so the body's id is the key
        assert event.event_id == "evt_body_1"
        assert event.event_type == "payment.paid"
        assert event.resource_id == "pay_1"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (2599, "BRL")
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)

    def test_a_signed_id_header_wins_over_the_body_id(self):
        config = GenericConfig(signed_content="{id}.{timestamp}.{body}")
        driver = GenericHmacDriver(config)
        event = driver.parse(GenericSender(driver).sign(BODY, SECRET, now=NOW, event_id="msg_1"))
        assert event.event_id == "msg_1"
        assert driver.fallback_event_id(WebhookRequest(body=b"x", headers={"x-webhook-id": "m"})) == "m"

    def test_an_unsigned_timestamp_header_is_not_an_event_time(self):
        # Given a configuration with no body time and a timestamp header the template does not sign
        driver = GenericHmacDriver(GenericConfig(occurred_at_path=None, signed_content="{body}"))
        headers = {"x-webhook-timestamp": str(NOW)}
        # Then the body has no time the scheme vouches for
        with pytest.raises(PayloadInvalid, match="no event time"):
            driver.parse(WebhookRequest(body=BODY, headers=headers))
        signed = GenericHmacDriver(GenericConfig(occurred_at_path=None))
        assert signed.parse(WebhookRequest(body=BODY, headers=headers)).occurred_at == datetime.fromtimestamp(NOW, UTC)

    def test_the_body_id_when_there_is_no_id_header(self):
        assert DEFAULT.parse(WebhookRequest(body=BODY, headers={})).event_id == "evt_body_1"

    def test_derived_id_when_there_is_no_id_at_all(self):
        driver = GenericHmacDriver(GenericConfig(id_header=None, id_path=None))
        first = driver.parse(WebhookRequest(body=BODY, headers={}))
        reordered = json.dumps(dict(reversed(list(json.loads(BODY).items())))).encode()
        assert driver.parse(WebhookRequest(body=reordered, headers={})).event_id == first.event_id
        assert first.event_id.startswith("d_")

    def test_status_map_and_nested_paths_with_indices(self):
        config = GenericConfig(
            type_path="event",
            resource_path="payload.charges.0.payment",
            status_path="payload.charges.0.state",
            amount_path=None,
            currency_path=None,
            occurred_at_path="payload.at",
            id_path=None,
            id_header=None,
            status_map={"SUCCEEDED": "paid", "DECLINED": "failed"},
        )
        body = json.dumps(
            {
                "event": "charge.updated",
                "payload": {"at": 1718221503, "charges": [{"payment": 42, "state": "DECLINED"}]},
            }
        ).encode()
        event = GenericHmacDriver(config).parse(WebhookRequest(body=body, headers={}))
        assert (event.event_type, event.resource_id, event.provider_status) == ("charge.updated", "42", "failed")
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    @pytest.mark.parametrize("value", [NOW, NOW * 1000, "2024-06-12T19:45:03Z"])
    def test_occurred_at_as_iso_seconds_or_milliseconds(self, value):
        body = json.dumps({**json.loads(BODY), "created_at": value}).encode()
        assert DEFAULT.parse(WebhookRequest(body=body, headers={})).occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_occurred_at_falls_back_to_the_timestamp_header(self):
        body = json.dumps({k: v for k, v in json.loads(BODY).items() if k != "created_at"}).encode()
        event = DEFAULT.parse(WebhookRequest(body=body, headers={"x-webhook-timestamp": str(NOW)}))
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    @pytest.mark.parametrize(
        ("changes", "headers", "reason"),
        [
            ({"type": None}, {}, "missing field type"),
            ({"type": ["x"]}, {}, "field type must be a string or an integer"),
            ({"created_at": None}, {}, "no event time"),
            ({"created_at": True}, {}, "must be an ISO-8601 string or epoch seconds"),
            ({"created_at": "2024-06-12 19:45:03"}, {}, "created_at has no time zone"),
            ({"data": {"id": "p", "amount": "25.99"}}, {}, "must be an integer"),
        ],
    )
    def test_invalid_bodies(self, changes, headers, reason):
        body = json.dumps({k: v for k, v in {**json.loads(BODY), **changes}.items() if v is not None}).encode()
        with pytest.raises(PayloadInvalid, match=reason):
            DEFAULT.parse(WebhookRequest(body=body, headers=headers))

    def test_fallback_event_id(self):
        # the default template does not sign the id header: the body's digest, whatever the header says
        assert DEFAULT.fallback_event_id(WebhookRequest(body=b"x", headers={"x-webhook-id": "m"})) == body_digest_id(
            b"x"
        )
        assert DEFAULT.fallback_event_id(WebhookRequest(body=b"x", headers={})) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", ["pending", "paid", "refunded", "charged_back"])
    def test_samples_round_trip_with_the_defaults(self, status):
        body = GenericSender(DEFAULT).sample_body(
            event_id="evt_9", resource_id="pay_9", status=status, amount=1990, occurred_at=NOW
        )
        request = GenericSender(DEFAULT).sign(body, SECRET, now=NOW, event_id="evt_9")
        _verify(DEFAULT, request)
        event = DEFAULT.parse(request)
        assert (event.event_id, event.resource_id, event.provider_status, event.amount) == (
            "evt_9",
            "pay_9",
            status,
            1990,
        )
        assert event.event_type == f"payment.{status}"

    def test_samples_follow_a_custom_configuration(self):
        config = GenericConfig(
            type_path="kind",
            resource_path="obj.ref",
            status_path="obj.state",
            id_header=None,
            id_path="event.id",
            occurred_at_path="event.at",
            status_map={"OK": "paid"},
            amount_path=None,
            currency_path=None,
            timestamp_header=None,
            signed_content="{body}",
        )
        driver = GenericHmacDriver(config)
        body = GenericSender(driver).sample_body(
            event_id="e-1", resource_id="r-1", status="paid", amount=5, occurred_at=NOW
        )
        assert json.loads(body)["obj"]["state"] == "OK"
        event = driver.parse(GenericSender(driver).sign(body, SECRET, now=NOW))
        assert (event.event_id, event.resource_id, event.provider_status) == ("e-1", "r-1", "paid")

    def test_stored_headers_reverify(self):
        request = GenericSender(DEFAULT).sign(BODY, SECRET, now=NOW, event_id="msg_1")
        stored = {h: request.headers[h] for h in DEFAULT.replay_headers if h in request.headers}
        assert SECRET not in stored.values()
        _verify(DEFAULT, WebhookRequest(body=BODY, headers=stored))


def test_the_international_drivers_import_nothing_heavy():
    # Given a fresh interpreter, When the six drivers are imported, Then no AWS SDK, HTTP client or provider SDK
    # comes along (verify runs on the gateway's clock, in the ingest's cold start)
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "import shared.providers.github.driver, shared.providers.shopify.driver, shared.providers.paddle.driver\n"
        "import shared.providers.mercadopago.driver, shared.providers.adyen.driver, shared.providers.generic.driver\n"
        "heavy = {'boto3', 'botocore', 'pydantic', 'requests', 'urllib3', 'mercadopago', 'Adyen', 'paddle_billing',"
        " 'aws_lambda_powertools', 'zoneinfo'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("provider", "event_type", "handler"),
    [
        ("github", "issues.opened", None),
        ("github", "marketplace_purchase.purchased", None),
        ("shopify", "orders/updated", "EventTimeOrderedHandler"),
        ("shopify", "disputes/create", "EventTimeOrderedHandler"),
        ("shopify", "order_transactions/create", None),
        ("shopify", "products/update", None),
        ("paddle", "transaction.completed", "RefetchPaymentHandler"),
        ("paddle", "adjustment.created", "RefetchPaymentHandler"),
        ("paddle", "subscription.created", None),
        ("mercadopago", "payment.updated", "RefetchPaymentHandler"),
        ("mercadopago", "payment", "RefetchPaymentHandler"),
        ("mercadopago", "merchant_order", None),
        ("adyen", "AUTHORISATION", "EventTimeOrderedHandler"),
        ("adyen", "CHARGEBACK", "EventTimeOrderedHandler"),
        ("adyen", "REPORT_AVAILABLE", None),
        ("generic", "payment.paid", "EventTimeOrderedHandler"),
        ("generic", "customer.created", None),
    ],
)
def test_the_processor_routes_each_international_provider(provider, event_type, handler):
    from shared.process.handlers import default_router

    resolved = default_router(lambda _: None).resolve(provider, event_type)
    assert (type(resolved).__name__ if resolved is not None else None) == handler
