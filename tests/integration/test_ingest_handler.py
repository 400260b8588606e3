"""The ingest Lambda against moto: what a gateway sees, and what ends up stored."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import pytest
from botocore.exceptions import ClientError

from functions.ingest.handler import lambda_handler
from inbox_local.dev_secrets import DEV_SECRETS
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.senders import sender_for
from inbox_local.server import (
    LAMBDA_MAX_SYNC_REQUEST_BYTES,
    api_gateway_event,
    invoke_like_api_gateway,
    invoke_payload_bytes,
)
from shared import definitions
from shared.inbox.model import BODY_ZLIB_ATTRIBUTE, INLINE_BODY_BREAK_EVEN_BYTES, inline_body
from shared.inbox.store import InboxStore, to_attributes
from shared.ingest import build_ingest_service, default_ingest_service, handle_api_event
from shared.providers.base import WebhookRequest
from shared.providers.registry import get_driver
from shared.roots import AwsClients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def signed_delivery(
    provider: str,
    *,
    event_id: str = "evt_1",
    resource_id: str = "pi_1",
    status: str = "paid",
    body: bytes | None = None,
    now: int | None = None,
    secret: str | None = None,
) -> WebhookRequest:
    sender = sender_for(provider)
    now = int(time.time()) if now is None else now
    if body is None:
        body = sender.sample_body(
            event_id=event_id, resource_id=resource_id, status=status, amount=1990, occurred_at=now
        )
    return sender.sign(body, secret or DEV_SECRETS[provider], now=now, event_id=event_id)


def deliver(provider: str, request: WebhookRequest, *, method: str = "POST") -> tuple[int, dict[str, Any]]:
    headers = {"content-type": "application/json", **request.headers}
    event = api_gateway_event(method, f"/webhooks/{provider}", headers, request.body, "203.0.113.9")
    # Through API Gateway's Lambda integration, as in AWS: an event over the invoke limit never reaches the function.
    response = invoke_like_api_gateway(lambda_handler, event, LocalLambdaContext("ingest"))
    return response["statusCode"], json.loads(response["body"])


def stored_items(aws_world) -> list[dict[str, Any]]:
    return list(InboxStore(aws_world.names.inbox_table).scan())


class TestStoringEvents:
    def test_a_signed_stripe_event_is_stored_pending_with_its_raw_body(self, aws_world):
        # Given a correctly signed Stripe delivery
        request = signed_delivery("stripe", event_id="evt_abc", resource_id="pi_42")
        # When the gateway posts it
        status, answer = deliver("stripe", request)
        # Then it is acknowledged and stored once, pending, with what the processor and a re-verification need
        assert (status, answer) == (200, {"received": True})
        [item] = stored_items(aws_world)
        assert item["pk"] == "stripe#evt_abc"
        assert item["status"] == "pending"
        assert item["resource_id"] == "pi_42"
        assert item["group_id"] == "stripe#pi_42"  # the payment's key: its FIFO group and its events-by-group key
        # And nothing derivable from the rest is stored: each byte is paid by every write of the item
        assert not {"source", "resource_key", "body_sha256", "dispatched_at"} & set(item)
        assert inline_body(item) == request.body  # kept compressed, read back as the raw bytes
        assert item["headers"] == {"stripe-signature": request.headers["stripe-signature"]}
        assert item["dispatch_reason"] == "received"
        assert item["open_status"].startswith("pending#")
        # And it lives the deployment's retention (Stripe retries for 3 days, well within it)
        assert item["expires_at"] - int(time.time()) == pytest.approx(
            definitions.DEFAULT_RETENTION_DAYS * 86_400, abs=5
        )

    def test_a_provider_that_retries_longer_than_the_retention_keeps_its_events_longer(self, aws_world):
        # Given Adyen, which retries an unaccepted notification for up to 30 days, beyond the default retention
        assert definitions.provider_entry("adyen").redelivery_days == 30 > definitions.DEFAULT_RETENTION_DAYS
        # When one of its notifications is stored
        assert deliver("adyen", signed_delivery("adyen", event_id="psp_1", resource_id="psp_1"))[0] == 200
        # Then its item outlives Adyen's last retry by a day, so that retry is still a duplicate
        [item] = stored_items(aws_world)
        assert item["expires_at"] - int(time.time()) == pytest.approx(31 * 86_400, abs=5)

    def test_a_repeat_is_answered_as_a_duplicate_and_stored_once(self, aws_world):
        # Given an event already received
        request = signed_delivery("stripe", event_id="evt_dup")
        assert deliver("stripe", request)[0] == 200
        # When the gateway delivers it again (a redelivery carries a new signature timestamp)
        again = signed_delivery("stripe", event_id="evt_dup", body=request.body, now=int(time.time()) + 1)
        status, answer = deliver("stripe", again)
        # Then it is a 200 duplicate and the first copy is untouched
        assert (status, answer) == (200, {"received": True, "duplicate": True})
        [item] = stored_items(aws_world)
        assert item["headers"]["stripe-signature"] == request.headers["stripe-signature"]

    def test_asaas_token_header_is_never_stored(self, aws_world):
        # Given an Asaas delivery, authenticated by a static token header
        request = signed_delivery("asaas", event_id="evt_asaas_1", resource_id="pay_1")
        # When it is stored
        assert deliver("asaas", request) == (200, {"received": True})
        # Then the token (the secret itself) is not part of the stored item
        [item] = stored_items(aws_world)
        assert item["headers"] == {}
        assert DEV_SECRETS["asaas"] not in json.dumps(item, default=str)

    def test_a_signed_body_that_cannot_be_parsed_is_stored_failed_and_acknowledged(self, aws_world):
        # Given a validly signed Stripe delivery whose body is not JSON
        request = signed_delivery("stripe", body=b"this is not json")
        # When it arrives
        status, answer = deliver("stripe", request)
        # Then it is kept (a signed event is never dropped), failed with the reason, and acknowledged
        assert (status, answer) == (200, {"received": True})
        [item] = stored_items(aws_world)
        assert item["status"] == "failed"
        assert item["open_status"].startswith("failed#")
        assert "JSON" in item["last_error"] or "json" in item["last_error"]
        assert "dispatch_reason" not in item  # failed events are not dispatched until replayed

    def test_a_base64_encoded_body_is_verified_on_its_decoded_bytes(self, aws_world):
        # Given API Gateway base64-encodes the body (non-text content type)
        request = signed_delivery("standard", event_id="msg_b64")
        headers = {**request.headers, "content-type": "application/octet-stream"}
        event = api_gateway_event("POST", "/webhooks/standard", headers, request.body, "203.0.113.9")
        assert event["isBase64Encoded"] is True
        # When it is handled
        response = lambda_handler(event, LocalLambdaContext("ingest"))
        # Then the signature verifies on the raw bytes and the raw bytes are stored
        assert response["statusCode"] == 200
        assert inline_body(stored_items(aws_world)[0]) == request.body

    def test_a_body_too_large_for_an_item_goes_to_s3_and_is_referenced(self, aws_world):
        # Given a 5 MB signed body (over an item's 400 KB, under Lambda's 6 MB invoke payload)
        driver = get_driver("standard")
        payload = {
            "type": "payment.updated",
            "timestamp": "2026-11-29T10:00:00Z",
            "data": {"id": "pay_big", "status": "paid", "blob": "x" * (5 * 1024 * 1024)},
        }
        request = signed_delivery("standard", event_id="msg_big", body=json.dumps(payload).encode())
        # When it is delivered
        assert deliver("standard", request)[0] == 200
        # Then the item references S3 and the body reads back byte for byte
        store = InboxStore(aws_world.names.inbox_table, aws_world.names.body_bucket)
        [item] = list(store.scan())
        assert "body" not in item
        assert item["body_s3_key"].startswith("bodies/standard/")
        assert store.read_body(item) == request.body
        assert item["body_size"] == len(request.body)
        assert driver.name == "standard"


class TestWhereTheBodyIsKept:
    """Inline bodies are kept zlib-compressed when that is smaller; a body whose kept bytes pass the break-even
    of an S3 object goes to the body bucket; items written before compression still read back."""

    @staticmethod
    def _standard(event_id: str, blob: str) -> WebhookRequest:
        payload = {"type": "payment.updated", "timestamp": "2026-11-29T10:00:00Z", "data": {"id": "p", "blob": blob}}
        return signed_delivery("standard", event_id=event_id, body=json.dumps(payload).encode())

    def test_a_json_body_is_kept_compressed_and_reads_back_byte_for_byte(self, aws_world):
        # Given a signed JSON delivery of a few KB (JSON compresses well)
        request = self._standard("msg_json", "paid " * 400)
        # When it is delivered
        assert deliver("standard", request)[0] == 200
        # Then the item keeps the compressed bytes, not the raw ones, and every reader gets the raw bytes back
        store = InboxStore(aws_world.names.inbox_table, aws_world.names.body_bucket)
        [item] = list(store.scan())
        assert "body" not in item and "body_s3_key" not in item
        assert len(item[BODY_ZLIB_ATTRIBUTE]) < len(request.body) // 4
        assert store.read_body(item) == request.body
        assert item["body_size"] == len(request.body)

    def test_a_body_that_does_not_compress_is_kept_as_it_is(self, aws_world):
        # Given a tiny body (zlib's header and checksum make it longer)
        request = signed_delivery("standard", event_id="msg_tiny", body=b'{"type":"a","data":{"id":"p"}}')
        # When it is delivered, then the item keeps the raw bytes under `body`
        assert deliver("standard", request)[0] == 200
        [item] = stored_items(aws_world)
        assert item["body"] == request.body and BODY_ZLIB_ATTRIBUTE not in item

    def test_a_body_past_the_break_even_goes_to_s3_even_though_an_item_could_hold_it(self, aws_world):
        # Given a body that compresses to more than the break-even (random text), far under an item's 400 KB
        request = self._standard("msg_random", incompressible_text(8 * 1024))
        assert len(zlib.compress(request.body, 6)) > INLINE_BODY_BREAK_EVEN_BYTES
        # When it is delivered, then it is in the body bucket, raw, and the item references it
        assert deliver("standard", request)[0] == 200
        store = InboxStore(aws_world.names.inbox_table, aws_world.names.body_bucket)
        [item] = list(store.scan())
        assert "body" not in item and BODY_ZLIB_ATTRIBUTE not in item
        assert store.read_body(item) == request.body

    def test_an_item_written_before_compression_still_reads_back(self, aws_world):
        # Given an item as the ingest stored it before compression: the raw body under `body`
        store = InboxStore(aws_world.names.inbox_table, aws_world.names.body_bucket)
        request = self._standard("msg_old", "paid " * 400)
        assert deliver("standard", request)[0] == 200
        [item] = list(store.scan())
        old = {name: value for name, value in item.items() if name != BODY_ZLIB_ATTRIBUTE} | {"body": request.body}
        client: DynamoDBClient = aws_world.session.client("dynamodb")
        client.put_item(TableName=aws_world.names.inbox_table, Item=to_attributes(old))
        # When it is read, then the raw body comes back as it was stored
        [stored] = list(store.scan())
        assert BODY_ZLIB_ATTRIBUTE not in stored and store.read_body(stored) == request.body


def incompressible_text(size: int) -> str:
    """`size` characters of deterministic text that compresses about by half (hexadecimal digests)."""
    digests = (hashlib.sha256(str(counter).encode()).hexdigest() for counter in range(size // 64 + 1))
    return "".join(digests)[:size]


def _api_event(provider: str, body: bytes, headers: dict[str, str], method: str = "POST") -> dict[str, Any]:
    return api_gateway_event(
        method, f"/webhooks/{provider}", {"content-type": "application/json", **headers}, body, "1.2.3.4"
    )


def _stripe_headers(body: bytes, *, now: int, secret: str = DEV_SECRETS["stripe"]) -> dict[str, str]:
    return sender_for("stripe").sign(body, secret, now=now).headers


def _stripe_body(now: int) -> bytes:
    return sender_for("stripe").sample_body(
        event_id="evt_t", resource_id="pi_t", status="paid", amount=100, occurred_at=now
    )


def _signed(now: int, *, signed_at: int | None = None, secret: str = DEV_SECRETS["stripe"], extra: bytes = b""):
    body = _stripe_body(now)
    return _api_event(
        "stripe", body + extra, _stripe_headers(body, now=now if signed_at is None else signed_at, secret=secret)
    )


# Each case is built when its test runs, from the clock at that moment: a delivery signed at collection time would
# be stale by the time a long suite reaches it, and refused for that instead of for what the case is about.
BAD_INPUTS: list[tuple[str, Callable[[int], dict[str, Any]], int]] = [
    ("empty body, no signature", lambda now: _api_event("stripe", b"", {}), 401),
    ("non-JSON, no signature", lambda now: _api_event("stripe", b"hello", {}), 401),
    ("invalid UTF-8, no signature", lambda now: _api_event("stripe", b"\xff\xfe\x00", {}), 401),
    ("missing signature header", lambda now: _api_event("stripe", _stripe_body(now), {}), 401),
    (
        "malformed signature header",
        lambda now: _api_event("stripe", _stripe_body(now), {"stripe-signature": "garbage"}),
        401,
    ),
    (
        "signature without v1",
        lambda now: _api_event("stripe", _stripe_body(now), {"stripe-signature": f"t={now}"}),
        401,
    ),
    ("wrong secret", lambda now: _signed(now, secret="whsec_wrong"), 401),
    ("stale timestamp", lambda now: _signed(now, signed_at=now - 900), 401),
    ("future timestamp", lambda now: _signed(now, signed_at=now + 900), 401),
    ("body altered after signing", lambda now: _signed(now, extra=b" "), 401),
    ("asaas wrong token", lambda now: _api_event("asaas", b"{}", {"asaas-access-token": "nope"}), 401),
    ("standard missing headers", lambda now: _api_event("standard", b"{}", {}), 401),
    ("unknown provider", lambda now: _api_event("paypal-ish", _stripe_body(now), {}), 404),
    (
        "wrong method",
        lambda now: _api_event("stripe", _stripe_body(now), _stripe_headers(_stripe_body(now), now=now), method="GET"),
        405,
    ),
    ("unknown route", lambda now: api_gateway_event("POST", "/hooks", {}, b"", "1.2.3.4"), 404),
    (
        "undecodable base64",
        lambda now: {**_api_event("stripe", _stripe_body(now), {}), "isBase64Encoded": True, "body": "%%%"},
        400,
    ),
]


@pytest.mark.parametrize(("case", "build", "expected"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gets_a_clear_answer_and_stores_nothing(aws_world, case, build, expected):
    # Given a delivery that is not a valid signed webhook, built now
    event = build(int(time.time()))
    # When it reaches the ingest
    response = lambda_handler(event, LocalLambdaContext("ingest"))
    # Then the answer says why, and nothing is stored
    assert response["statusCode"] == expected, case
    assert json.loads(response["body"])["error"]
    assert stored_items(aws_world) == []


def test_the_previous_secret_still_verifies_during_a_rotation(aws_world):
    # Given the Stripe secret was rotated: a new current one, the old one kept as previous
    aws_world.set_signing_secrets("stripe", "whsec_new_secret", DEV_SECRETS["stripe"])
    # When a delivery still signed with the old secret arrives
    status, _ = deliver("stripe", signed_delivery("stripe", event_id="evt_rot"))
    # Then it verifies; a delivery signed with neither is refused
    assert status == 200
    assert deliver("stripe", signed_delivery("stripe", event_id="evt_x", secret="whsec_other"))[0] == 401


def _standard_body_of_size(size: int) -> bytes:
    """A Standard Webhooks body of exactly `size` bytes (the padding is a field the driver ignores)."""

    def body(blob: str) -> bytes:
        data = {"id": "pay_big", "status": "paid", "blob": blob}
        return json.dumps({"type": "payment.updated", "timestamp": "2026-11-29T10:00:00Z", "data": data}).encode()

    padded = body("y" * (size - len(body(""))))
    assert len(padded) == size
    return padded


def test_the_largest_text_body_lambda_accepts_is_stored(aws_world):
    # Given a signed JSON body as large as still fits Lambda's 6 MB synchronous invoke, with the event's envelope
    probe = signed_delivery("standard", event_id="msg_edge", body=_standard_body_of_size(1000))
    envelope = (
        invoke_payload_bytes(
            api_gateway_event(
                "POST",
                "/webhooks/standard",
                {"content-type": "application/json", **probe.headers},
                probe.body,
                "203.0.113.9",
            )
        )
        - 1000
    )
    request = signed_delivery(
        "standard", event_id="msg_edge", body=_standard_body_of_size(LAMBDA_MAX_SYNC_REQUEST_BYTES - envelope - 64)
    )
    # When it is delivered, then it is stored, byte for byte
    assert deliver("standard", request)[0] == 200
    [item] = stored_items(aws_world)
    assert item["body_size"] == len(request.body)


def test_a_body_over_the_invoke_limit_is_refused_before_the_function_like_api_gateway_does(aws_world):
    # Given a 9.5 MB signed body: under the HTTP API's 10 MB payload quota, but over Lambda's 6 MB invoke payload
    request = signed_delivery("standard", event_id="msg_huge", body=_standard_body_of_size(9_500_000))
    # When it is delivered through the front door
    status, answer = deliver("standard", request)
    # Then API Gateway answers 413 itself, the function never runs, and nothing is stored
    assert status == 413
    assert answer == {"message": "Request Too Long"}
    assert stored_items(aws_world) == []


def test_a_binary_body_counts_at_its_base64_size(aws_world):
    # Given a 4.8 MB body that API Gateway must base64-encode (a non-text content type): 6.4 MB of event JSON
    request = signed_delivery("standard", event_id="msg_bin", body=_standard_body_of_size(4_800_000))
    headers = {**request.headers, "content-type": "application/octet-stream"}
    event = api_gateway_event("POST", "/webhooks/standard", headers, request.body, "203.0.113.9")
    assert event["isBase64Encoded"] is True
    # When it reaches the Lambda integration
    response = invoke_like_api_gateway(lambda_handler, event, LocalLambdaContext("ingest"))
    # Then it is refused as too long (the same body sent as JSON text would fit), and nothing is stored
    assert response["statusCode"] == 413
    assert stored_items(aws_world) == []
    assert deliver("standard", request)[0] == 200


def test_duplicate_storm_stores_exactly_one_item_and_answers_every_delivery_2xx(aws_world):
    # Given 20 gateway workers holding the same event
    request = signed_delivery("stripe", event_id="evt_storm", resource_id="pi_storm")
    barrier = threading.Barrier(20)
    answers: list[tuple[int, dict[str, Any]]] = []
    lock = threading.Lock()

    def deliver_once() -> None:
        barrier.wait()
        result = deliver("stripe", request)
        with lock:
            answers.append(result)

    # When they all deliver at once
    workers = [threading.Thread(target=deliver_once) for _ in range(20)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # Then every delivery gets a 2xx, exactly one was stored as new, and there is one item
    assert len(answers) == 20
    assert all(status == 200 for status, _ in answers)
    assert sum(1 for _, body in answers if not body.get("duplicate")) == 1
    assert len(stored_items(aws_world)) == 1


class _FailingDynamoDB:
    """A DynamoDB client whose writes fail the way DynamoDB fails under load."""

    def __init__(self, real: Any, code: str = "ProvisionedThroughputExceededException") -> None:
        self.real, self.code = real, code

    def put_item(self, **_: Any) -> None:
        raise ClientError({"Error": {"Code": self.code, "Message": "throttled"}}, "PutItem")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"]
)
def test_storage_failure_answers_5xx_writes_nothing_and_the_retry_is_stored_once(aws_world, code):
    # Given DynamoDB refuses writes
    real = default_ingest_service()
    refusing = cast("DynamoDBClient", _FailingDynamoDB(aws_world.session.client("dynamodb"), code))
    failing = build_ingest_service(real.settings, clients=AwsClients(dynamodb=refusing))
    request = signed_delivery("stripe", event_id="evt_throttled")
    event = _api_event("stripe", request.body, request.headers)
    # When a delivery arrives
    response = handle_api_event(event, lambda: failing)
    # Then the gateway is told to retry, and nothing was written
    assert response["statusCode"] == 503
    assert stored_items(aws_world) == []
    # When the gateway retries after DynamoDB recovers
    assert handle_api_event(event, lambda: real)["statusCode"] == 200
    assert handle_api_event(event, lambda: real)["statusCode"] == 200  # and once more: a duplicate
    # Then the event is stored exactly once
    [item] = stored_items(aws_world)
    assert item["pk"] == "stripe#evt_throttled"


def test_a_secret_that_cannot_be_read_answers_5xx(aws_world):
    # Given no Secrets Manager secret for Stripe
    aws_world.delete_signing_secrets("stripe")
    request = signed_delivery("stripe", event_id="evt_nosecret")
    # When a delivery arrives, then the gateway is asked to retry (not told the signature is wrong)
    assert deliver("stripe", request)[0] == 503
    assert stored_items(aws_world) == []


def test_secrets_manager_secret_with_current_and_previous_verifies(aws_world):
    # Given the Stripe secret in Secrets Manager holds current and previous (as deployed)
    aws_world.set_signing_secrets("stripe", "whsec_current", "whsec_previous")
    # When deliveries signed by either arrive, then both verify
    assert deliver("stripe", signed_delivery("stripe", event_id="evt_c", secret="whsec_current"))[0] == 200
    assert deliver("stripe", signed_delivery("stripe", event_id="evt_p", secret="whsec_previous"))[0] == 200
    assert deliver("stripe", signed_delivery("stripe", event_id="evt_n", secret="whsec_nope"))[0] == 401


def test_health_answers_once_configured(aws_world):
    response = lambda_handler(api_gateway_event("GET", "/health", {}, b"", "1.2.3.4"), LocalLambdaContext("ingest"))
    assert (response["statusCode"], json.loads(response["body"])) == (200, {"status": "ok"})


def test_logs_never_carry_the_body_or_the_secret(aws_world, caplog):
    # Given a delivery whose body carries personal data
    sender = sender_for("standard")
    body = json.dumps(
        {
            "type": "payment.updated",
            "timestamp": "2026-11-29T10:00:00Z",
            "data": {"id": "pay_pii", "status": "paid", "email": "maria@example.com"},
        }
    ).encode()
    request = sender.sign(body, DEV_SECRETS["standard"], now=int(time.time()), event_id="msg_pii")
    from shared.observability import logger

    # When it is received and logged (at DEBUG, every line: a stored event's line is DEBUG)
    caplog.set_level("DEBUG", logger=logger.name)
    deliver("standard", request)
    deliver(
        "standard",
        signed_delivery(
            "standard", event_id="msg_bad", body=body, secret="whsec_" + base64.b64encode(b"k" * 32).decode()
        ),
    )
    # Then the log has the outcome but neither the body's data nor any secret or signature
    out = "\n".join(logger.registered_formatter.format(record) for record in caplog.records)
    assert '"outcome":"stored"' in out.replace(" ", "")
    assert "maria@example.com" not in out
    assert DEV_SECRETS["standard"] not in out
    assert request.headers["webhook-signature"] not in out


def test_a_malformed_configured_secret_answers_5xx_not_401(aws_world):
    # Given the Standard Webhooks secret was configured with something that is not base64
    aws_world.set_signing_secrets("standard", "whsec_***not base64***")
    request = signed_delivery("standard", event_id="msg_misconfigured")
    # When a genuine delivery arrives, then the gateway is asked to retry: it is our fault, not a forgery
    assert deliver("standard", request)[0] == 503
    assert stored_items(aws_world) == []


def test_query_parameters_the_driver_does_not_name_are_never_stored(aws_world):
    # Given a delivery whose URL carries a secret-looking parameter the driver does not keep
    request = signed_delivery("stripe", event_id="evt_query")
    headers = {"content-type": "application/json", **request.headers}
    event = api_gateway_event("POST", "/webhooks/stripe?token=s3cr3t&x=1", headers, request.body, "1.2.3.4")
    # When it is stored
    assert lambda_handler(event, LocalLambdaContext("ingest"))["statusCode"] == 200
    # Then no query parameter was kept
    [item] = stored_items(aws_world)
    assert "query" not in item
    assert "s3cr3t" not in json.dumps(item, default=str)


def test_a_secret_repeated_in_the_body_is_redacted_from_what_is_stored(aws_world):
    # Given a Hotmart delivery whose body repeats the account's token, as Hotmart's 2.0.0 bodies do
    sample = json.loads(
        sender_for("hotmart").sample_body(
            event_id="evt_hot", resource_id="HP123", status="paid", amount=1990, occurred_at=int(time.time())
        )
    )
    token = DEV_SECRETS["hotmart"]
    body = json.dumps({**sample, "hottok": token}).encode()
    # When it is delivered and stored
    status, _ = deliver("hotmart", signed_delivery("hotmart", body=body))
    # Then it was accepted and parsed, and the token is nowhere in the stored item; the other bytes are as received
    assert status == 200
    [item] = stored_items(aws_world)
    assert item["status"] == "pending" and item["resource_id"] == "HP123"
    stored = inline_body(item) or b""
    assert token not in json.dumps(item, default=str) and token.encode() not in stored
    assert stored == body.replace(json.dumps(token).encode(), b'"[redacted]"')


def test_a_refetch_verified_header_secret_is_never_stored_or_logged_and_a_wrong_one_is_forbidden(aws_world, caplog):
    # Given Cielo notifications (unsigned: the merchant's registered header carries the source's secret), one of
    # them delivered twice, and one carrying a wrong secret
    request = signed_delivery("cielo", resource_id="24bc8366-fc31-4d6c-8555-17049a836a07")
    wrong = signed_delivery("cielo", resource_id="24bc8366-fc31-4d6c-8555-17049a836a07", secret="not-the-secret")
    # When the gateway posts them through the Lambda handler
    first, second = deliver("cielo", request), deliver("cielo", request)
    refused = deliver("cielo", wrong)
    # Then both genuine deliveries are stored (each under the key its answer names), the wrong one is 403
    assert [code for code, _ in (first, second)] == [200, 200]
    assert refused == (403, {"error": "forbidden"})
    items = {item["pk"]: item for item in stored_items(aws_world)}
    assert set(items) == {f"cielo#{first[1]['delivery']}", f"cielo#{second[1]['delivery']}"}
    # And neither the secret nor the header is in a stored item or in the log
    for item in items.values():
        assert item["headers"] == {} and "provider_status" not in item
        assert DEV_SECRETS["cielo"] not in json.dumps(item, default=str)
    from shared.observability import logger

    out = "\n".join(logger.registered_formatter.format(record) for record in caplog.records)
    assert DEV_SECRETS["cielo"] not in out and "not-the-secret" not in out
    assert "x-inbox-secret" not in out.lower()
