"""Shopify driver: the published vector, both header families, rotation, and order/transaction/dispute mapping."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from inbox_local.providers.shopify.sender import SAMPLE_STATUSES, compute_signature, sender
from shared.providers.base import (
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    body_digest_id,
    derive_event_id,
)
from shared.providers.shopify.driver import FINANCIAL_STATUS, PAYMENT_TOPICS, driver, transaction_status

SECRET = "shpss_current_client_secret_0123456789"
PREVIOUS = "shpss_previous_client_secret_0123456789"
NOW = 1_718_221_503
ORDER = {
    "id": 450789469,
    "admin_graphql_api_id": "gid://shopify/Order/450789469",
    "currency": "USD",
    "financial_status": "paid",
    "total_price": "598.94",
    "created_at": "2024-06-12T15:44:00-04:00",
    "updated_at": "2024-06-12T15:45:03-04:00",
}
TRIGGERED_AT = "2024-06-12T19:45:03.123456789Z"


def _headers(topic: str = "orders/updated", **extra: str) -> dict[str, str]:
    headers = {
        "x-shopify-topic": topic,
        "x-shopify-event-id": "98880550-7158-44d4-b7cd-2c97c8a091b5",
        "x-shopify-webhook-id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
        "x-shopify-triggered-at": TRIGGERED_AT,
        "x-shopify-shop-domain": "shop1.myshopify.io",
        "x-shopify-api-version": "2025-01",
    }
    headers.update({k.replace("_", "-"): v for k, v in extra.items()})
    return {k: v for k, v in headers.items() if v != ""}


def _request(payload: dict[str, Any] | bytes, topic: str = "orders/updated", secret: str = SECRET, **extra: str):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {**_headers(topic, **extra), "x-shopify-hmac-sha256": compute_signature(body, secret)}
    return WebhookRequest(body=body, headers=headers)


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(SECRET), now=NOW, tolerance_seconds=300)


class TestPublishedVector:
    def test_vector_5_shopify_app_js(self):
        # Given shopify-app-js' test vector: secret test_secret_key, body {"foo": "bar"}
        body, secret, expected = b'{"foo": "bar"}', "test_secret_key", "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
        assert compute_signature(body, secret) == expected
        # When a delivery carries it, Then it verifies, and one changed character does not
        _verify(WebhookRequest(body=body, headers={"x-shopify-hmac-sha256": expected}), SigningSecrets(secret))
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(
                WebhookRequest(body=body, headers={"x-shopify-hmac-sha256": expected.replace("B23", "B24")}),
                SigningSecrets(secret),
            )

    def test_non_canonical_base64_spelling_fails(self):
        # Given the vector's MAC with only the unused low bits of its last character changed (same 32 bytes),
        # Then it is refused: signatures are compared as canonical base64 text
        expected = "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g="
        mutated = expected[:-2] + "h="
        assert base64.b64decode(mutated) == base64.b64decode(expected)
        with pytest.raises(SignatureInvalid):
            _verify(
                WebhookRequest(body=b'{"foo": "bar"}', headers={"x-shopify-hmac-sha256": mutated}),
                SigningSecrets("test_secret_key"),
            )


class TestVerify:
    def test_round_trip(self):
        _verify(sender.sign(json.dumps(ORDER).encode(), SECRET, now=NOW))

    def test_tampered_body_fails(self):
        request = _request(ORDER)
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=request.body.replace(b"598.94", b"598.95"), headers=request.headers))

    def test_previous_secret_verifies_for_the_hour_after_a_rotation(self):
        request = _request(ORDER, secret=PREVIOUS)
        _verify(request, SigningSecrets(SECRET, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(request, SigningSecrets(SECRET))

    def test_events_deliveries_use_the_shopify_header_family(self):
        # Given an "events" delivery: shopify-* headers only
        body = json.dumps(ORDER).encode()
        headers = {
            "shopify-hmac-sha256": compute_signature(body, SECRET),
            "shopify-topic": "orders/updated",
            "shopify-event-id": "evt-events-1",
            "shopify-triggered-at": TRIGGERED_AT,
        }
        request = WebhookRequest(body=body, headers=headers)
        # Then it verifies and parses like the classic family
        _verify(request)
        event = driver.parse(request)
        assert (event.event_type, event.resource_id) == ("orders/updated", "450789469")
        assert event.event_id == driver.parse(_request(ORDER)).event_id

    @pytest.mark.parametrize("value", [None, ""])
    def test_missing_hmac(self, value):
        headers = _headers()
        if value is not None:
            headers["x-shopify-hmac-sha256"] = value
        with pytest.raises(SignatureInvalid, match="missing X-Shopify-Hmac-Sha256 header"):
            _verify(WebhookRequest(body=b"{}", headers=headers))

    def test_hex_digest_instead_of_base64_fails(self):
        import hashlib
        import hmac

        hex_digest = hmac.new(SECRET.encode(), b"{}", hashlib.sha256).hexdigest()
        with pytest.raises(SignatureInvalid, match="no signature matches"):
            _verify(WebhookRequest(body=b"{}", headers={"x-shopify-hmac-sha256": hex_digest}))

    def test_no_timestamp_is_enforced(self):
        driver.verify(_request(ORDER), SigningSecrets(SECRET), now=NOW + 10**7, tolerance_seconds=0)
        assert driver.signs_timestamp is False

    def test_no_configured_secret_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(ORDER), SigningSecrets(" "))


class TestParse:
    def test_order_event(self):
        # Given an orders/updated delivery
        event = driver.parse(_request(ORDER))
        # Then the event id is derived from the signed body (order, kind, status, updated_at), the order is the
        # resource, the status canonical, money exact
        assert event.event_id == derive_event_id("450789469", "order", "paid", "2024-06-12T19:45:03+00:00")
        assert event.event_type == "orders/updated"
        assert event.resource_id == "450789469"
        assert event.provider_status == "paid"
        assert (event.amount, event.currency) == (59894, "USD")
        # occurred_at is the order's updated_at (signed), in UTC: not X-Shopify-Triggered-At (unsigned)
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)

    @pytest.mark.parametrize(("financial", "canonical"), sorted(FINANCIAL_STATUS.items()))
    def test_financial_status_table(self, financial, canonical):
        event = driver.parse(_request({**ORDER, "financial_status": financial}))
        assert event.provider_status == canonical

    def test_unknown_financial_status_has_no_canonical_status(self):
        assert driver.parse(_request({**ORDER, "financial_status": "something_new"})).provider_status is None

    @pytest.mark.parametrize(
        ("price", "currency", "minor"),
        [("598.94", "USD", 59894), ("1000", "JPY", 1000), ("0.005", "USD", 1), ("12.345", "KWD", 12345)],
    )
    def test_amounts_are_exact_minor_units_of_the_currency(self, price, currency, minor):
        event = driver.parse(_request({**ORDER, "total_price": price, "currency": currency}))
        assert event.amount == minor

    @pytest.mark.parametrize("price", [598.94, "abc", True])
    def test_invalid_amounts(self, price):
        with pytest.raises(PayloadInvalid, match="total_price is not a decimal amount"):
            driver.parse(_request({**ORDER, "total_price": price}))

    @pytest.mark.parametrize(
        ("kind", "status", "canonical"),
        [
            ("sale", "success", "paid"),
            ("capture", "success", "paid"),
            ("authorization", "success", "authorized"),
            ("void", "success", "canceled"),
            ("sale", "failure", "failed"),
            ("authorization", "error", "failed"),
            ("refund", "success", None),  # partial or full? the order's financial_status says
            ("sale", "pending", None),
            ("capture", "failure", None),
        ],
    )
    def test_transaction_events_belong_to_their_order(self, kind, status, canonical):
        transaction = {
            "id": 389404469,
            "order_id": 450789469,
            "kind": kind,
            "status": status,
            "amount": "10.00",
            "created_at": "2024-06-12T15:45:03-04:00",
        }
        event = driver.parse(_request(transaction, topic="order_transactions/create"))
        assert event.resource_id == "450789469"
        assert event.provider_status == canonical == transaction_status(kind, status)
        assert event.amount is None

    @pytest.mark.parametrize(
        ("dispute_status", "canonical"),
        [
            ("needs_response", "disputed"),
            ("under_review", "disputed"),
            ("won", "paid"),
            ("lost", "charged_back"),
            ("accepted", "charged_back"),
            ("charge_refunded", "refunded"),
        ],
    )
    def test_dispute_events(self, dispute_status, canonical):
        dispute = {
            "id": 1,
            "order_id": 450789469,
            "amount": "11.50",
            "currency": "USD",
            "reason": "fraudulent",
            "status": dispute_status,
            "initiated_at": "2024-06-12T15:45:03-04:00",
        }
        event = driver.parse(_request(dispute, topic="disputes/update"))
        assert (event.resource_id, event.provider_status, event.amount) == ("450789469", canonical, None)

    def test_other_topics_name_no_payment(self):
        event = driver.parse(_request({"id": 632910392, "title": "IPod Nano"}, topic="products/update"))
        assert (event.resource_id, event.provider_status) == (None, None)

    def test_no_unsigned_header_is_the_identity_or_the_time(self):
        # Given a signed order, and the same body posted with every unsigned header changed (the replay of a
        # captured delivery: another event id and webhook id, a triggered-at in 2099, another topic)
        original = driver.parse(_request(ORDER))
        replayed = driver.parse(
            _request(
                ORDER,
                topic="orders/paid",
                x_shopify_event_id="forged-event-id",
                x_shopify_webhook_id="forged-webhook-id",
                x_shopify_triggered_at="2099-01-01T00:00:00Z",
            )
        )
        # Then it is the same event (a duplicate) at the same time
        assert (replayed.event_id, replayed.occurred_at) == (original.event_id, original.occurred_at)

    def test_without_a_topic_the_body_is_the_same_event_routed_nowhere(self):
        event = driver.parse(_request(ORDER, x_shopify_topic=""))
        assert (event.event_id, event.event_type) == (driver.parse(_request(ORDER)).event_id, "unknown")
        assert event.event_type not in PAYMENT_TOPICS

    def test_a_body_read_under_another_topic_is_still_what_it_is(self):
        # Given an order body posted under a dispute topic: its kind is the body's, so it reads as the order
        event = driver.parse(_request(ORDER, topic="disputes/create"))
        assert (event.event_id, event.resource_id, event.provider_status) == (
            driver.parse(_request(ORDER)).event_id,
            "450789469",
            "paid",
        )

    def test_the_id_is_derived_from_the_business_fact_of_the_body(self):
        # Given two copies, keys re-ordered and an unrelated field changed
        a = driver.parse(_request(ORDER))
        reordered = dict(reversed(list({**ORDER, "note": "changed"}.items())))
        b = driver.parse(_request(reordered))
        # Then they share a derived id; another status or another time is another fact
        assert a.event_id == b.event_id
        assert a.event_id.startswith("d_")
        refunded = {**ORDER, "financial_status": "refunded"}
        assert driver.parse(_request(refunded)).event_id != a.event_id
        later = {**ORDER, "updated_at": "2024-06-12T16:00:00-04:00"}
        assert driver.parse(_request(later)).event_id != a.event_id

    def test_a_dispute_is_dated_by_its_latest_change(self):
        dispute = {
            "id": 1,
            "order_id": 450789469,
            "reason": "fraudulent",
            "status": "won",
            "initiated_at": "2024-06-01T10:00:00Z",
            "evidence_sent_on": "2024-06-03T10:00:00Z",
            "finalized_on": "2024-06-20T10:00:00Z",
        }
        assert driver.parse(_request(dispute, topic="disputes/update")).occurred_at == datetime(
            2024, 6, 20, 10, tzinfo=UTC
        )

    def test_a_body_about_no_payment_is_keyed_by_its_digest(self):
        body = json.dumps({"shop_id": 954889, "shop_domain": "shop1.myshopify.io"}).encode()
        event = driver.parse(_request(body, topic="shop/redact"))
        assert event.event_id == body_digest_id(body)
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, 123456, tzinfo=UTC)  # its triggered-at

    @pytest.mark.parametrize(
        ("payload", "extra", "reason"),
        [
            ({"id": 1}, {"x_shopify_triggered_at": ""}, "no event time"),
            ({"id": 1}, {"x_shopify_triggered_at": "yesterday"}, "X-Shopify-Triggered-At is not an ISO-8601"),
            ({"id": 1}, {"x_shopify_triggered_at": "2024-06-12T19:45:03"}, "X-Shopify-Triggered-At has no time zone"),
            ({**ORDER, "updated_at": None, "created_at": None}, {}, "no event time"),
            ({**ORDER, "updated_at": "2024-06-12T19:45:03"}, {}, "updated_at has no time zone"),
            ({**ORDER, "financial_status": 1}, {}, "field financial_status must be a string"),
            ({**ORDER, "id": [1]}, {}, "field id must be a string"),
        ],
    )
    def test_invalid_deliveries(self, payload, extra, reason):
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(payload, **extra))

    def test_fallback_event_id_is_the_body_digest_whatever_the_headers(self):
        assert driver.fallback_event_id(_request(b"not json")) == body_digest_id(b"not json")
        assert driver.fallback_event_id(WebhookRequest(body=b"x", headers={})) == body_digest_id(b"x")


class TestSamples:
    @pytest.mark.parametrize("status", SAMPLE_STATUSES)
    def test_sample_for_each_canonical_status(self, status):
        # Given a sample, When signed, verified and parsed, Then it states that canonical status for the order
        body = sender.sample_body(
            event_id="ev-9", resource_id="820982911946154508", status=status, amount=1990, occurred_at=NOW
        )
        request = sender.sign(body, SECRET, now=NOW, event_id="ev-9")
        _verify(request)
        event = driver.parse(request)
        assert (event.resource_id, event.provider_status) == ("820982911946154508", status)
        assert event.event_id.startswith("d_")
        assert event.event_type in PAYMENT_TOPICS
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)
        if event.event_type.startswith("orders/"):
            assert event.amount == 1990

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Shopify sample for status 'bogus'"):
            sender.sample_body(event_id="e", resource_id="1", status="bogus", amount=1, occurred_at=NOW)

    def test_replay_headers_reverify_and_hold_no_secret(self):
        request = sender.sign(json.dumps(ORDER).encode(), SECRET, now=NOW, event_id="ev-1")
        stored = {h: request.headers[h] for h in driver.replay_headers if h in request.headers}
        assert SECRET not in stored.values()
        assert all(h == h.lower() for h in driver.replay_headers)
        _verify(WebhookRequest(body=request.body, headers=stored))
        assert (
            driver.parse(WebhookRequest(body=request.body, headers=stored)).event_id == driver.parse(request).event_id
        )
