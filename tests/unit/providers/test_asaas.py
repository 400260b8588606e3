"""Asaas driver: static token, Sao Paulo local times, decimal amounts, derived ids."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inbox_local.providers.asaas.sender import sender
from shared.providers.asaas.driver import driver, value_to_minor_units
from shared.providers.base import PayloadInvalid, SignatureInvalid, SigningSecrets, WebhookRequest, body_digest_id

ROOT = Path(__file__).resolve().parents[3]


def _run_python(code: str, *arguments: str) -> Any:
    """Run `code` in a fresh interpreter of this venv at the repository root; its last line of output, as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", code, *arguments], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


TOKEN = "$aact_current-token-0123456789"
PREVIOUS = "$aact_previous-token-0123456789"
NOW = 1_718_221_503

# The shape Asaas documents for a payment webhook (trimmed)
RAW = """{
  "id": "evt_05b708f961d739ea7eba7e4db318f621&368604920",
  "event": "PAYMENT_RECEIVED",
  "dateCreated": "2024-06-12 16:45:03",
  "payment": {
    "object": "payment",
    "id": "pay_080225913252",
    "dateCreated": "2024-06-12",
    "customer": "cus_G7Dvo4iphUNk",
    "value": 100.0,
    "netValue": 94.51,
    "billingType": "PIX",
    "status": "RECEIVED",
    "dueDate": "2024-06-12",
    "deleted": false
  }
}"""


def _request(body: bytes | str, token: str | None = TOKEN) -> WebhookRequest:
    raw = body.encode() if isinstance(body, str) else body
    return WebhookRequest(body=raw, headers={} if token is None else {"asaas-access-token": token})


def _payload(**changes) -> bytes:
    payload = json.loads(RAW)
    payment_changes = changes.pop("payment", {})
    payload.update(changes)
    payload["payment"].update(payment_changes)
    for key in [k for k, v in payload.items() if v is None]:
        del payload[key]
    return json.dumps(payload).encode()


def _verify(request: WebhookRequest, secrets: SigningSecrets | None = None) -> None:
    driver.verify(request, secrets or SigningSecrets(TOKEN), now=NOW, tolerance_seconds=300)


class TestVerify:
    def test_current_token_passes(self):
        _verify(_request(RAW))

    def test_previous_token_passes_during_rotation(self):
        _verify(_request(RAW, token=PREVIOUS), SigningSecrets(TOKEN, PREVIOUS))
        with pytest.raises(SignatureInvalid):
            _verify(_request(RAW, token=PREVIOUS), SigningSecrets(TOKEN))

    @pytest.mark.parametrize("token", ["$aact_unrelated", TOKEN + " ", TOKEN[:-1], TOKEN.upper(), "ç\udcff"])
    def test_other_tokens_fail(self, token):
        with pytest.raises(SignatureInvalid, match="access token does not match") as caught:
            _verify(_request(RAW, token=token), SigningSecrets(TOKEN, PREVIOUS))
        assert TOKEN not in str(caught.value)

    @pytest.mark.parametrize("token", [None, ""])
    def test_missing_token(self, token):
        with pytest.raises(SignatureInvalid, match="missing asaas-access-token header"):
            _verify(_request(RAW, token=token))

    def test_no_timestamp_is_checked(self):
        # Given a delivery verified at any time, Then only the token matters (Asaas signs no timestamp)
        driver.verify(_request(RAW), SigningSecrets(TOKEN), now=0, tolerance_seconds=0)
        assert driver.signs_timestamp is False

    def test_empty_configured_token_never_matches_an_empty_header(self):
        # Given no configured token, Then it is a configuration error, never "an empty token matches"
        with pytest.raises(ValueError, match="no signing secret"):
            _verify(_request(RAW, token=""), SigningSecrets(""))

    def test_the_token_header_is_never_stored(self):
        assert driver.replay_headers == ()
        assert "asaas-access-token" in sender.sign(b"{}", TOKEN, now=NOW).headers


class TestParse:
    def test_fields(self):
        # Given the documented payment webhook
        event = driver.parse(_request(RAW))
        # Then the event id is the body id, the payment is the resource, and the time is UTC
        assert event.event_id == "evt_05b708f961d739ea7eba7e4db318f621&368604920"
        assert event.event_type == "PAYMENT_RECEIVED"
        assert event.resource_id == "pay_080225913252"
        assert event.provider_status == "RECEIVED"
        assert event.amount == 10000
        assert event.currency == "BRL"

    def test_sao_paulo_local_time_becomes_utc(self):
        # Given "2024-06-12 16:45:03" (Sao Paulo, UTC-3 since Brazil dropped DST in 2019), Then 19:45:03 UTC
        event = driver.parse(_request(RAW))
        assert event.occurred_at == datetime(2024, 6, 12, 19, 45, 3, tzinfo=UTC)
        assert event.occurred_at.tzinfo is not None

    def test_historic_daylight_saving_time_is_honoured(self):
        # Given a time in Sao Paulo's last DST summer (UTC-2 until February 2019), Then the zone database is used
        event = driver.parse(_request(_payload(dateCreated="2018-12-01 12:00:00")))
        assert event.occurred_at == datetime(2018, 12, 1, 14, 0, 0, tzinfo=UTC)

    def test_the_tzdata_package_alone_is_enough(self):
        # Given an interpreter whose zoneinfo has no system tz database to read (an empty search path, as on a
        # runtime image without /usr/share/zoneinfo)
        code = (
            "import json, sys, zoneinfo\n"
            "zoneinfo.reset_tzpath([])\n"
            "from shared.providers.asaas.driver import parse_asaas_time\n"
            "times = [parse_asaas_time(t, 'dateCreated').isoformat() for t in sys.argv[1:]]\n"
            "import tzdata\n"
            "print(json.dumps({'times': times, 'tzdata': tzdata.__file__, 'tzpath': list(zoneinfo.TZPATH)}))\n"
        )
        # When Asaas times from before and after Brazil dropped DST are parsed
        result = _run_python(code, "2018-12-01 12:00:00", "2024-06-12 16:45:03")
        # Then the zone's history comes from the tzdata package: UTC-2 in the 2018 summer, UTC-3 in 2024
        assert result["tzpath"] == []
        assert "site-packages" in result["tzdata"]
        assert result["times"] == ["2018-12-01T14:00:00+00:00", "2024-06-12T19:45:03+00:00"]

    def test_without_any_time_zone_database_parsing_fails_loudly(self):
        # Given no system tz database and no tzdata package
        code = (
            "import sys, zoneinfo\n"
            "zoneinfo.reset_tzpath([])\n"
            "sys.modules['tzdata'] = None\n"
            "from shared.providers.asaas.driver import parse_asaas_time\n"
            "try:\n"
            "    parse_asaas_time('2024-06-12 16:45:03', 'dateCreated')\n"
            "except zoneinfo.ZoneInfoNotFoundError:\n"
            '    print(\'{"raised": "ZoneInfoNotFoundError"}\')\n'
        )
        # When an Asaas time is parsed, Then it raises (a configuration error, 5xx, retried) rather than guess
        assert _run_python(code) == {"raised": "ZoneInfoNotFoundError"}

    def test_explicit_offset_and_iso_separator_are_respected(self):
        event = driver.parse(_request(_payload(dateCreated="2024-06-12T16:45:03Z")))
        assert event.occurred_at == datetime(2024, 6, 12, 16, 45, 3, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("raw_value", "cents"),
        [
            ("10.1", 1010),
            ("100.0", 10000),
            ("100", 10000),
            ("0.29", 29),
            ("1.15", 115),
            ("4.35", 435),
            ("19.99", 1999),
            ("1.005", 101),  # half-up, not float noise (1.005 is 1.00499999... as a float)
            ("0", 0),
            ("1e2", 10000),
            ("1e-999999999", 0),  # beyond the decimal context: underflows to zero, no exception
        ],
    )
    def test_amount_is_exact_centavos(self, raw_value, cents):
        # Given the JSON number exactly as Asaas wrote it (float math gets 10.1 * 100 = 1009.99...)
        body = RAW.replace('"value": 100.0', f'"value": {raw_value}')
        # Then the amount is exact integer centavos
        assert driver.parse(_request(body)).amount == cents

    @given(st.integers(min_value=0, max_value=10**11))
    def test_amount_round_trips_through_sample_bodies(self, cents):
        # Given any amount in centavos, When written as Asaas does (a JSON number in reais) and parsed back,
        # Then the same centavos come out
        body = sender.sample_body(event_id="evt", resource_id="pay", status="paid", amount=cents, occurred_at=NOW)
        assert driver.parse(_request(body)).amount == cents

    @pytest.mark.parametrize(
        ("raw_value", "reason"),
        [
            ('"10.10"', "must be a number"),
            ("true", "must be a number"),
            ("1e20", "is out of range"),
            ("-1e999999999", "is out of range"),
        ],
    )
    def test_invalid_amounts(self, raw_value, reason):
        body = RAW.replace('"value": 100.0', f'"value": {raw_value}')
        with pytest.raises(PayloadInvalid, match=f"payment.value {reason}"):
            driver.parse(_request(body))

    def test_missing_value_means_unknown_amount(self):
        body = RAW.replace('"value": 100.0,', "")
        assert driver.parse(_request(body)).amount is None

    def test_value_helper_rejects_non_numbers(self):
        assert value_to_minor_units(Decimal("2.50"), "v") == 250
        with pytest.raises(PayloadInvalid):
            value_to_minor_units(2.5, "v")  # a float never reaches it: bodies are parsed with Decimal

    def test_missing_id_derives_a_stable_id_from_the_business_fact(self):
        # Given two redeliveries of an envelope without an id, with keys re-ordered and extra fields changed
        first = _payload(id=None)
        reordered = json.loads(first)
        reordered["payment"]["netValue"] = 1.0
        second = json.dumps(dict(reversed(list(reordered.items())))).encode()
        a, b = driver.parse(_request(first)), driver.parse(_request(second))
        # Then both get the same derived id
        assert a.event_id == b.event_id
        assert a.event_id.startswith("d_")
        # ...and a different status, event or time is a different fact
        assert driver.parse(_request(_payload(id=None, payment={"status": "REFUNDED"}))).event_id != a.event_id
        assert driver.parse(_request(_payload(id=None, event="PAYMENT_CONFIRMED"))).event_id != a.event_id
        assert driver.parse(_request(_payload(id=None, dateCreated="2024-06-12 16:45:04"))).event_id != a.event_id

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"event": None}, "missing field event"),
            ({"event": 3}, "field event must be a string"),
            ({"payment": None}, "missing field payment"),
            ({"payment": "pay_1"}, "field payment must be an object"),
            ({"dateCreated": "12/06/2024 16:45"}, "field dateCreated is not"),
            ({"id": 5}, "field id must be a string"),
        ],
    )
    def test_invalid_payloads(self, changes, reason):
        payload = json.loads(RAW)
        for key, value in changes.items():
            if value is None:
                del payload[key]
            else:
                payload[key] = value
        with pytest.raises(PayloadInvalid, match=reason):
            driver.parse(_request(json.dumps(payload)))

    def test_missing_payment_id(self):
        with pytest.raises(PayloadInvalid, match=r"missing field payment\.id"):
            driver.parse(_request(RAW.replace('"id": "pay_080225913252",', "")))

    def test_not_json(self):
        with pytest.raises(PayloadInvalid, match="not valid JSON"):
            driver.parse(_request("event=PAYMENT_RECEIVED"))

    def test_fallback_event_id_is_the_body_digest(self):
        assert driver.fallback_event_id(_request(b"\xff")) == body_digest_id(b"\xff")


class TestSamples:
    @pytest.mark.parametrize(
        ("status", "event_type", "asaas_status"),
        [
            ("pending", "PAYMENT_CREATED", "PENDING"),
            ("paid", "PAYMENT_RECEIVED", "RECEIVED"),
            ("refunded", "PAYMENT_REFUNDED", "REFUNDED"),
            ("disputed", "PAYMENT_CHARGEBACK_REQUESTED", "CHARGEBACK_REQUESTED"),
        ],
    )
    def test_sample_round_trip(self, status, event_type, asaas_status):
        # Given a sample, When signed (token header), verified and parsed, Then it describes the payment, and its
        # local Sao Paulo dateCreated converts back to the instant it was made for
        body = sender.sample_body(event_id="evt_9", resource_id="pay_9", status=status, amount=1010, occurred_at=NOW)
        assert json.loads(body)["dateCreated"] == "2024-06-12 16:45:03"
        request = sender.sign(body, TOKEN, now=NOW)
        _verify(request)
        event = driver.parse(request)
        assert (event.event_id, event.event_type, event.resource_id, event.provider_status) == (
            "evt_9",
            event_type,
            "pay_9",
            asaas_status,
        )
        assert event.amount == 1010
        assert event.occurred_at == datetime.fromtimestamp(NOW, tz=UTC)

    def test_unknown_status(self):
        with pytest.raises(ValueError, match="no Asaas sample for status 'authorized'"):
            sender.sample_body(event_id="e", resource_id="p", status="authorized", amount=1, occurred_at=NOW)


# The example of Asaas's "Webhook para cobrancas" page (https://docs.asaas.com/docs/webhook-para-cobrancas, the
# version before event ids; trimmed): no event `id`, no event `dateCreated`, the payment with its day dates.
DOCS_EXAMPLE = """{
  "event": "PAYMENT_RECEIVED",
  "payment": {
    "object": "payment",
    "id": "pay_080225913252",
    "dateCreated": "2021-01-01",
    "customer": "cus_G7Dvo4iphUNk",
    "dueDate": "2021-01-01",
    "value": 100,
    "netValue": 94.51,
    "billingType": "CREDIT_CARD",
    "status": "RECEIVED",
    "confirmedDate": "2021-01-01",
    "paymentDate": "2021-01-02",
    "clientPaymentDate": "2021-01-01",
    "creditDate": "2021-02-01",
    "estimatedCreditDate": "2021-02-01",
    "deleted": false
  }
}"""


class TestDocumentationShapeWithoutEventIdOrTime:
    def test_it_is_about_its_payment_at_the_latest_past_date_of_the_payment(self):
        # Given the documented example: no event id, no dateCreated, day dates on the payment
        event = driver.parse(_request(DOCS_EXAMPLE))
        # Then it names its payment, with its status and amount
        assert (event.resource_id, event.provider_status, event.amount) == ("pay_080225913252", "RECEIVED", 10000)
        # And its time is the latest past date (paymentDate), at midnight Sao Paulo (03:00 UTC), never the future
        # credit dates
        assert event.occurred_at == datetime(2021, 1, 2, 3, 0, tzinfo=UTC)
        # And its id is derived from the business fact: the same on a redelivery
        assert event.event_id.startswith("d_")
        assert driver.parse(_request(DOCS_EXAMPLE)).event_id == event.event_id

    def test_the_id_differs_for_another_status_or_event_of_the_same_payment(self):
        base = driver.parse(_request(DOCS_EXAMPLE)).event_id
        refunded = json.loads(DOCS_EXAMPLE)
        refunded["event"], refunded["payment"]["status"] = "PAYMENT_REFUNDED", "REFUNDED"
        assert driver.parse(_request(json.dumps(refunded))).event_id != base

    def test_an_event_date_still_wins_over_the_payments_days(self):
        body = json.loads(DOCS_EXAMPLE)
        body["dateCreated"] = "2021-01-05 10:00:00"
        assert driver.parse(_request(json.dumps(body))).occurred_at == datetime(2021, 1, 5, 13, 0, tzinfo=UTC)

    def test_a_body_with_no_date_at_all_is_invalid(self):
        body = json.loads(DOCS_EXAMPLE)
        for name in ("dateCreated", "confirmedDate", "paymentDate", "clientPaymentDate"):
            del body["payment"][name]
        with pytest.raises(PayloadInvalid, match="missing field dateCreated"):
            driver.parse(_request(json.dumps(body)))
