"""The rejected-delivery log through the real ingest handler, against moto: what is recorded, and the flood."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from functions.ingest.handler import lambda_handler
from inbox_local.config import DEV_FINGERPRINT_KEY
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.server import api_gateway_event
from shared import aws, definitions
from shared.inbox.store import InboxStore, from_attributes
from shared.rejections import Refusal, RejectionLog, RejectionLogSettings, fingerprint, is_rejection_id
from tests.integration.test_ingest_handler import signed_delivery


def post(provider: str, body: bytes, headers: dict[str, str], *, query: str = "") -> tuple[int, dict[str, Any]]:
    target = f"/webhooks/{provider}" + (f"?{query}" if query else "")
    event = api_gateway_event("POST", target, {"content-type": "application/json", **headers}, body, "198.51.100.7")
    if query:
        event["queryStringParameters"] = dict(part.split("=", 1) for part in query.split("&"))
    response = lambda_handler(event, LocalLambdaContext("ingest"))
    return response["statusCode"], json.loads(response["body"])


def recorded(aws_world) -> list[dict[str, Any]]:
    client = aws_world.session.client("dynamodb")
    items = client.scan(TableName=aws_world.names.rejected_table)["Items"]
    return [from_attributes(item) for item in items]


class TestRecording:
    def test_a_forged_stripe_delivery_is_answered_401_and_recorded(self, aws_world):
        # Given a Stripe delivery signed with a wrong secret
        request = signed_delivery("stripe", secret="whsec_wrong")
        # When it is posted
        status, answer = post("stripe", request.body, {**request.headers, "user-agent": "Stripe/1.0"})
        # Then the gateway gets 401 and the log holds one record of it, with the agreed fields
        assert (status, answer) == (401, {"error": "invalid signature"})
        [item] = recorded(aws_world)
        assert is_rejection_id(item["pk"])
        assert (item["source"], item["provider"], item["reason"]) == ("stripe", "stripe", "signature_invalid")
        assert item["detail"] == "no signature matches"
        assert (item["source_ip"], item["user_agent"]) == ("198.51.100.7", "Stripe/1.0")
        assert item["headers"]["stripe-signature"] == request.headers["stripe-signature"]
        assert item["body"] == request.body and item["body_size"] == len(request.body)
        # and nothing reached the inbox
        assert list(InboxStore(aws_world.names.inbox_table).scan()) == []

    def test_a_wrong_asaas_token_is_stored_as_its_fingerprint_only(self, aws_world):
        # Given an Asaas delivery presenting the wrong (maybe the previous) token
        status, _ = post("asaas", b'{"id": "evt_1"}', {"asaas-access-token": "the-previous-token"})
        # Then it is refused and recorded with the token's fingerprint, never the token
        assert status == 401
        [item] = recorded(aws_world)
        assert item["headers"]["asaas-access-token"] == {
            "fingerprint": fingerprint(DEV_FINGERPRINT_KEY.encode(), "the-previous-token")
        }
        assert "the-previous-token" not in repr(item)

    def test_a_body_that_cannot_be_decoded_is_answered_400_and_recorded(self, aws_world):
        # Given an event whose body API Gateway flags as base64 but is not
        event = api_gateway_event("POST", "/webhooks/stripe", {"content-type": "application/json"}, b"{}", "192.0.2.1")
        event.update(body="not base64!!", isBase64Encoded=True)
        # When the ingest receives it
        response = lambda_handler(event, LocalLambdaContext("ingest"))
        # Then 400, and the record keeps the body as it came
        assert response["statusCode"] == 400
        [item] = recorded(aws_world)
        assert item["reason"] == "body_undecodable" and item["body"] == b"not base64!!"

    def test_an_unknown_source_is_only_counted(self, aws_world):
        # Given a scanner posting to a source that does not exist
        status, _ = post("no-such-source", b"{}", {})
        # Then 404 and nothing is recorded
        assert status == 404
        assert recorded(aws_world) == []

    def test_the_log_unavailable_still_answers_401(self, aws_world):
        # Given the rejected table is gone
        aws_world.session.client("dynamodb").delete_table(TableName=aws_world.names.rejected_table)
        # When a forged delivery arrives
        status, answer = post("stripe", b"{}", {"stripe-signature": "t=1,v1=00"})
        # Then the gateway is told 401, as ever, not 5xx
        assert (status, answer) == (401, {"error": "invalid signature"})

    def test_the_fingerprint_key_unreadable_still_answers_401(self, aws_world, monkeypatch):
        # Given a deployed-style configuration whose fingerprint key secret does not exist
        monkeypatch.delenv(definitions.ENV_FINGERPRINT_KEY)
        monkeypatch.setenv(definitions.ENV_FINGERPRINT_KEY_SECRET, "arn:aws:secretsmanager:us-east-1:1:secret:none")
        # When a forged Asaas delivery arrives
        status, _ = post("asaas", b"{}", {"asaas-access-token": "guess"})
        # Then 401 and nothing recorded (nothing could be fingerprinted)
        assert status == 401
        assert recorded(aws_world) == []


class TestFlood:
    def test_ten_thousand_forged_posts_write_a_bounded_log_and_an_accepted_event_is_unaffected(self, aws_world, capsys):
        # Given the ingest, its PutItem calls on the rejected table counted
        puts: list[str] = []

        def count_put(params: dict[str, Any], **_: Any) -> None:
            if params.get("TableName") == aws_world.names.rejected_table:
                puts.append(params["Item"]["pk"]["S"])

        aws.dynamodb_best_effort().meta.events.register("provide-client-params.dynamodb.PutItem", count_put)
        budget = definitions.DEFAULT_REJECTED_PER_SOURCE_PER_MINUTE
        # When 10,000 forged Stripe posts arrive (distinct bodies), with one genuine event half-way
        answers: list[int] = []
        started = time.perf_counter()
        for number in range(10_000):
            if number == 5_000:
                genuine = signed_delivery("stripe", event_id="evt_genuine")
                status, answer = post("stripe", genuine.body, genuine.headers)
                assert (status, answer) == (200, {"received": True})
            body = json.dumps({"id": f"evt_forged_{number}", "type": "charge.succeeded"}).encode()
            answers.append(post("stripe", body, {"stripe-signature": f"t={int(time.time())},v1={'0' * 64}"})[0])
        elapsed = time.perf_counter() - started
        # Then every forged post was answered 401
        assert set(answers) == {401}
        # and the log wrote at most the budget (the minute may turn once during the run: two minutes' worth)
        items = recorded(aws_world)
        minutes = {item["pk"][4:14] for item in items}
        assert len(puts) <= budget * len(minutes) + budget * elapsed / 60
        assert 0 < len(items) <= budget * len(minutes)
        assert len(minutes) <= 2
        # and the genuine event is stored, pending, as if nothing happened
        [event] = list(InboxStore(aws_world.names.inbox_table).scan())
        assert (event["pk"], event["status"]) == ("stripe#evt_genuine", "pending")
        with capsys.disabled():
            print(
                f"\nflood: 10000 forged posts in {elapsed:.1f} s ({10_000 / elapsed:.0f}/s); "
                f"{len(puts)} PutItem on the log ({len(puts) / elapsed:.1f}/s), {len(items)} records"
            )

    def test_many_instances_cannot_write_more_than_the_slots_of_a_minute(self, aws_world):
        # Given 8 ingest instances (each its own budget), all in the same minute
        settings = RejectionLogSettings(table=aws_world.names.rejected_table, fingerprint_key="k", per_minute=20)
        instances = [RejectionLog(settings, clock=lambda: 1_780_000_010.0) for _ in range(8)]
        # When each records 50 distinct forged deliveries of one source
        outcomes = [
            log.note(
                Refusal("stripe", "stripe", "signature_invalid", "x", {}, {}, f"body {i} {n}".encode(), "ip", "ua"),
                None,
            )
            for i, log in enumerate(instances)
            for n in range(50)
        ]
        # Then each instance tried at most its budget, and at most 20 records exist for that source and minute
        assert outcomes.count("rate_limited") == 8 * (50 - 20)
        assert len(recorded(aws_world)) <= 20
        assert outcomes.count("recorded") == len(recorded(aws_world))
        assert outcomes.count("slot_taken") == 8 * 20 - outcomes.count("recorded")


def test_a_record_body_that_is_binary_is_kept_as_bytes(aws_world):
    # Given a forged delivery whose body is not UTF-8 (API Gateway base64-encodes it)
    event = api_gateway_event(
        "POST", "/webhooks/stripe", {"content-type": "application/octet-stream"}, b"\xff\x00", "ip"
    )
    assert event["isBase64Encoded"] and base64.b64decode(event["body"]) == b"\xff\x00"
    # When it is refused
    assert lambda_handler(event, LocalLambdaContext("ingest"))["statusCode"] == 401
    # Then the record holds the exact bytes
    [item] = recorded(aws_world)
    assert item["body"] == b"\xff\x00" and item["reason"] == "signature_missing"


@pytest.fixture
def _forget_declared_sources() -> Iterator[None]:
    from shared.sources import reset_declared_sources

    reset_declared_sources()
    yield
    reset_declared_sources()


@pytest.mark.usefixtures("_forget_declared_sources")
class TestNamedSources:
    @staticmethod
    def declare(monkeypatch, aws_world, sources: list[dict[str, Any]]) -> None:
        from shared.sources import reset_declared_sources

        monkeypatch.setenv(definitions.ENV_SOURCES, json.dumps(sources))
        aws_world.set_signing_secrets("stripe-br", "whsec_c3RyaXBlLWJyLXNlY3JldA==")
        reset_declared_sources()

    def test_a_named_sources_refusal_is_recorded_under_it_with_its_own_redaction(self, aws_world, monkeypatch):
        # Given a second Stripe account, whose deliveries carry a field it redacts
        self.declare(monkeypatch, aws_world, [{"name": "stripe-br", "provider": "stripe", "redact_fields": ["cpf"]}])
        # When a forged delivery to it arrives
        status, _ = post("stripe-br", b'{"id": "evt_1", "cpf": "123.456.789-00"}', {"stripe-signature": "t=1,v1=0"})
        # Then it is recorded under the source, verified as its provider, with the source's field redacted
        assert status == 401
        [item] = recorded(aws_world)
        assert (item["source"], item["provider"]) == ("stripe-br", "stripe")
        assert b"123.456.789-00" not in item["body"] and item["body_redacted"] is True

    def test_a_sender_outside_the_allowed_ranges_is_recorded_as_ip_not_allowed(self, aws_world, monkeypatch):
        # Given a source that only accepts its gateway's addresses
        ranged = {"name": "stripe-br", "provider": "stripe", "allowed_ip_ranges": ["10.0.0.0/8"]}
        self.declare(monkeypatch, aws_world, [ranged])
        # When someone else posts to it (198.51.100.7)
        status, _ = post("stripe-br", b'{"id": "evt_1"}', {"stripe-signature": "t=1,v1=0"})
        # Then 403, and the refusal is recorded with its reason and sender
        assert status == 403
        [item] = recorded(aws_world)
        assert (item["reason"], item["source"], item["source_ip"]) == ("ip_not_allowed", "stripe-br", "198.51.100.7")

    def test_a_delivery_to_a_mutual_tls_source_without_a_certificate_is_recorded_under_its_own_reason(
        self, aws_world, monkeypatch
    ):
        # Given a source that takes deliveries only through the mutual-TLS front door
        self.declare(monkeypatch, aws_world, [{"name": "stripe-br", "provider": "stripe", "mutual_tls": True}])
        # When someone posts to it on the plain endpoint (no verified client certificate in the event)
        status, _ = post("stripe-br", b'{"id": "evt_1"}', {"stripe-signature": "t=1,v1=0"})
        # Then 403, recorded as client_certificate_missing
        assert status == 403
        [item] = recorded(aws_world)
        assert (item["reason"], item["source"]) == ("client_certificate_missing", "stripe-br")
