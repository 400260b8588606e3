"""Fuzzing the ingest handler (hypothesis), for every registered provider, against moto in-process.

Random headers, bodies (bytes, invalid UTF-8, text, JSON-ish, provider-shaped, above the inline limit), query
strings and encodings (API Gateway's base64 flag on or off), through the real Lambda handler. What must hold:

- the handler always answers a dict with an integer statusCode and a JSON object body (no unhandled exception);
- no 5xx unless storage fails (checked separately with a store whose PutItem is throttled: then 503, nothing kept);
- nothing is stored without a valid signature: unsigned and forged deliveries leave the table empty;
- a validly signed delivery is stored exactly once, its raw body intact, and a repeat is a 200 duplicate.

`INBOX_FUZZ_EXAMPLES` sets the examples per test and provider (default small, so `make test` stays fast;
`make chaos` runs many more).
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from functions.ingest.handler import lambda_handler
from inbox_local.config import LocalNames, function_environment, signing_secret
from inbox_local.dev_secrets import store_signing_secrets
from inbox_local.faults import FaultInjector
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.providers.woovi.sender import key_pair_secret
from inbox_local.resources import provision
from inbox_local.senders import sender_for
from inbox_local.server import api_gateway_event
from shared import aws
from shared.definitions import REFETCH_VERIFIED_PROVIDERS, SourceSpec
from shared.inbox.store import InboxStore
from shared.ingest import default_ingest_service, ingest_service_from_environ, trust_of
from shared.payments.status import PaymentStatus
from shared.providers.base import (
    PayloadInvalid,
    SignatureInvalid,
    SigningSecrets,
    WebhookRequest,
    accept_fields,
    parse_events,
)
from shared.providers.registry import get_driver, provider_names
from tests.integration.conftest import AwsWorld
from tests.unit.providers.test_driver_contract import VERIFIED_WITH_PUBLIC_KEYS

PROVIDERS = provider_names()
FUZZ_EXAMPLES = int(os.environ.get("INBOX_FUZZ_EXAMPLES", "10"))
TOLERANCE_SECONDS = 300  # the default signature tolerance the handler runs with
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


def secret_of(provider: str) -> str:
    return signing_secret(provider)  # what the local stack uses: INBOX_SECRET_<P>, else the development value


def _sample_request(provider: str) -> WebhookRequest:
    sender = sender_for(provider)
    try:
        body = sender.sample_body(event_id="evt_x", resource_id="res_x", status="paid", amount=100, occurred_at=0)
    except ValueError:
        body = b"{}"
    return sender.sign(body, secret_of(provider), now=int(time.time()), event_id="evt_x")


# The names gateways put signatures, tokens and ids in, so that random values land where verification looks.
_SAMPLES = {provider: _sample_request(provider) for provider in PROVIDERS}
SIGNATURE_HEADERS = sorted(
    {name for request in _SAMPLES.values() for name in request.headers}
    | {name for provider in PROVIDERS for name in get_driver(provider).replay_headers}
    | {"svix-id", "svix-timestamp", "svix-signature", "x-signature", "authorization"}
)
QUERY_NAMES = sorted({name for request in _SAMPLES.values() for name in request.query} | {"token", "signature"})
JSON_KEYS = [
    "id",
    "type",
    "event",
    "data",
    "object",
    "payment",
    "status",
    "amount",
    "currency",
    "created",
    "dateCreated",
    "payment_intent",
    "occurred_at",
    "notificationItems",
    "NotificationRequestItem",
    "additionalData",
    "hmacSignature",
    "pspReference",
    "eventCode",
    "value",
]
STATUSES = [status.value for status in PaymentStatus]

header_names = st.sampled_from(SIGNATURE_HEADERS) | st.from_regex(r"[a-z][a-z0-9-]{0,24}", fullmatch=True)
header_values = st.text(max_size=120) | st.from_regex(r"t=[0-9]{1,12},v1=[0-9a-f]{0,64}", fullmatch=True)
random_headers = st.dictionaries(header_names, header_values, max_size=6)
random_query = st.dictionaries(st.sampled_from(QUERY_NAMES) | st.text(min_size=1, max_size=10), st.text(max_size=40))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(JSON_KEYS) | st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=15,
)


def _big(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


raw_bodies = st.one_of(
    st.binary(max_size=1024),
    st.text(max_size=400).map(lambda text: text.encode("utf-8")),
    st.binary(min_size=1, max_size=128).map(lambda tail: b"\xc3\x28" + tail),  # invalid UTF-8
    json_values.map(lambda value: json.dumps(value).encode("utf-8")),
    st.builds(_big, st.integers(min_value=0, max_value=2**32), st.sampled_from([256 * 1024 + 1, 300_000])),
)


@st.composite
def provider_shaped(draw: st.DrawFn, provider: str) -> bytes:
    """The provider's own sample notification with random values, sometimes with a random field changed."""
    sender = sender_for(provider)
    identifiers = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=24)
    fields: dict[str, Any] = {
        "event_id": draw(identifiers),
        "resource_id": draw(identifiers),
        "amount": draw(st.integers(min_value=1, max_value=10**9)),
        "occurred_at": draw(st.integers(min_value=1_500_000_000, max_value=2_000_000_000)),
    }
    try:
        body = sender.sample_body(status=draw(st.sampled_from(STATUSES)), **fields)
    except ValueError:  # no sample for that status: this driver's paid one
        body = sender.sample_body(status="paid", **fields)
    if draw(st.booleans()):
        key, value = draw(st.sampled_from(JSON_KEYS)), draw(json_values)
        try:
            document = json.loads(body)
        except ValueError:  # a form-encoded notification: one more (or a repeated) field
            return body + b"&" + urlencode({key: json.dumps(value)}).encode("ascii")
        if isinstance(document, dict):
            document[key] = value
            body = json.dumps(document).encode("utf-8")
    return body


def bodies_for(provider: str) -> st.SearchStrategy[bytes]:
    return raw_bodies | provider_shaped(provider)


# ------------------------------------------------------------------------------------------------ harness


def api_event(provider: str, request: WebhookRequest, *, as_base64: bool) -> dict[str, Any]:
    """The HTTP API event for a delivery: base64 when asked (or when the bytes are not UTF-8), else text."""
    target = f"/webhooks/{provider}" + (f"?{urlencode(request.query)}" if request.query else "")
    event_ = api_gateway_event("POST", target, dict(request.headers), request.body, "203.0.113.9")
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        as_base64 = True
    event_["isBase64Encoded"] = as_base64
    event_["body"] = base64.b64encode(request.body).decode("ascii") if as_base64 else text
    if not request.body and not as_base64:
        del event_["body"]  # API Gateway sends no body at all for an empty one
    return event_


def invoke(event_: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The real handler; it must answer, never raise."""
    context: Any = LocalLambdaContext("ingest")  # what the local stack passes for a Lambda context
    response = lambda_handler(event_, context)
    assert isinstance(response, dict), response
    status = response.get("statusCode")
    assert isinstance(status, int), response
    answer = json.loads(response["body"])
    assert isinstance(answer, dict), response
    return status, answer


def verifies(provider: str, request: WebhookRequest) -> bool:
    try:
        get_driver(provider).verify(
            request, SigningSecrets(secret_of(provider)), now=time.time(), tolerance_seconds=TOLERANCE_SECONDS
        )
    except SignatureInvalid:
        return False
    return True


class Inbox:
    def __init__(self, table: str, bucket: str) -> None:
        self.store = InboxStore(table, bucket)

    def items(self) -> list[dict[str, Any]]:
        return list(self.store.scan())

    def is_empty(self) -> bool:
        return aws.dynamodb().scan(TableName=self.store.table_name, Limit=1)["Count"] == 0

    def clear(self) -> None:
        for item in self.items():
            aws.dynamodb().delete_item(TableName=self.store.table_name, Key={"pk": {"S": item["pk"]}})


@pytest.fixture(scope="module")
def fuzz_world() -> Iterator[AwsWorld]:
    """`aws_world` (tests/integration/conftest.py) once per module: provisioning per test would cost more than the
    fuzzing itself. Each example starts from an empty table."""
    names = LocalNames()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in function_environment(names).items():
            patch.setenv(name, value)
        with mock_aws():
            session = boto3.session.Session()
            resources = provision(session, names)
            # Every provider verifies with the secret its deliveries are signed with (secret_of), as the local
            # stack stores it
            sources = [SourceSpec(provider, provider) for provider in PROVIDERS]
            store_signing_secrets(session.client("secretsmanager"), names.secret_prefix, sources)
            yield AwsWorld(names, resources, session)


@pytest.fixture
def inbox(fuzz_world) -> Iterator[Inbox]:
    inbox = Inbox(fuzz_world.names.inbox_table, fuzz_world.names.body_bucket)
    inbox.clear()
    yield inbox
    inbox.clear()


def assert_rejected_and_nothing_stored(inbox: Inbox, status: int) -> None:
    stored = [] if inbox.is_empty() else inbox.items()
    inbox.clear()  # (only when something was stored) so that the next example starts empty, even after a failure
    assert stored == [], stored
    assert 400 <= status < 500, status


def assert_stored_exactly_once(inbox: Inbox, provider: str, request: WebhookRequest, as_base64: bool) -> None:
    """Delivered twice: each event of it stored once with the raw bytes, the repeat absorbed. A refetch-verified
    provider's notification has no identity of its own (docs/providers.md): each delivery is stored, under a key
    of its own that the answer names, and the refetch makes the repeat harmless."""
    driver = get_driver(provider)
    first = invoke(api_event(provider, request, as_base64=as_base64))
    again = invoke(api_event(provider, request, as_base64=as_base64))
    items = inbox.items()
    for item in items:  # the next example starts empty, even after a failure here
        aws.dynamodb().delete_item(TableName=inbox.store.table_name, Key={"pk": {"S": item["pk"]}})
    accepted = {"received": True, **accept_fields(driver)}
    try:  # a delivery of several events (Efí's pix[], Adyen's notificationItems) is one item per event
        expected = len({event.event_id for event in parse_events(driver, request)})
    except PayloadInvalid:
        expected = 0  # authentic but unparseable
    if not expected and not trust_of(provider).binds_body:
        # An unparseable body its scheme does not bind proves nothing: one item, ignored, in its hour slot, and the
        # repeat (the same body, the same slot) is a duplicate
        assert first[0] == 200 and first[1].get("duplicate") is None, first
        assert again == (200, {**accepted, "duplicate": True}), again
        assert [item["status"] for item in items] == ["ignored"], items
    elif provider in REFETCH_VERIFIED_PROVIDERS:
        assert first == (200, {**accepted, "delivery": first[1].get("delivery")}), first
        assert again == (200, {**accepted, "delivery": again[1].get("delivery")}), again
        assert first[1]["delivery"] != again[1]["delivery"]
        assert sorted(item["event_id"] for item in items) == sorted([first[1]["delivery"], again[1]["delivery"]])
    else:
        assert first == (200, accepted), first
        assert again == (200, {**accepted, "duplicate": True}), again
        assert len(items) == (expected or 1), items  # unparseable: one item, failed with its reason
    for item in items:
        assert item["provider"] == provider
        # failed: authentic but unparseable, kept with its reason; ignored: unparseable and not bound by the scheme
        assert item["status"] in {"pending", "failed", "ignored"}
        assert inbox.store.read_body(item) == request.body


# ----------------------------------------------------------------------------------------------- properties


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_an_unsigned_delivery_is_rejected_and_never_stored(inbox, provider, data):
    # Given anything at all, with signature headers and query parameters holding random values
    request = WebhookRequest(
        body=data.draw(bodies_for(provider)), headers=data.draw(random_headers), query=data.draw(random_query)
    )
    # When it is delivered, Then it is rejected with a 4xx and nothing is stored
    status, _ = invoke(api_event(provider, request, as_base64=data.draw(st.booleans())))
    assert_rejected_and_nothing_stored(inbox, status)


def _wrong_secret(provider: str, secret: str, body: bytes) -> WebhookRequest:
    """Signed with a secret that differs from the configured one (in a digit when it has one: keeps its format)."""
    if provider in VERIFIED_WITH_PUBLIC_KEYS:  # the secret only adds trusted public keys: another key pair signs
        return sender_for(provider).sign(body, key_pair_secret(), now=int(time.time()))
    digits = [index for index, char in enumerate(secret) if char.isdigit()]
    candidates = [
        *(secret[:i] + str((int(secret[i]) + 1) % 10) + secret[i + 1 :] for i in digits[:1]),
        secret + "x",
        "x" + secret,
    ]
    for candidate in candidates:
        try:
            return sender_for(provider).sign(body, candidate, now=int(time.time()))
        except ValueError:
            continue
    raise AssertionError(f"no wrong secret of the right format for {provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_forged_delivery_is_never_stored(inbox, provider, data):
    sender = sender_for(provider)
    secret, now = secret_of(provider), int(time.time())
    body = data.draw(bodies_for(provider))
    kind = data.draw(st.sampled_from(["wrong secret", "other provider", "stale", "tampered", "stripped"]))
    event(kind)
    # Given a delivery forged one way or another
    if kind == "wrong secret":
        request = _wrong_secret(provider, secret, body)
    elif kind == "other provider":
        other = data.draw(st.sampled_from([p for p in PROVIDERS if p != provider]))
        request = sender_for(other).sign(body, secret_of(other), now=now)
    elif kind == "stale":  # signed, but too long ago or too far ahead
        skew = data.draw(st.integers(min_value=TOLERANCE_SECONDS + 60, max_value=10**7)) * data.draw(
            st.sampled_from([-1, 1])
        )
        request = sender.sign(body, secret, now=now + skew)
    elif kind == "tampered":  # signed, then the body changed
        signed = sender.sign(body, secret, now=now)
        position = data.draw(st.integers(min_value=0, max_value=max(0, len(signed.body) - 1)))
        changed = (
            signed.body[:position] + bytes([signed.body[position] ^ 0x01]) + signed.body[position + 1 :]
            if signed.body
            else b"x"
        )
        request = WebhookRequest(body=changed, headers=signed.headers, query=signed.query)
    else:  # signed, then one of the signing headers or query parameters removed
        signed = sender.sign(body, secret, now=now)
        names = sorted(name for name in signed.headers if name not in {"content-type", "user-agent"})
        params = sorted(signed.query)
        if not names and not params:
            request = WebhookRequest(body=signed.body, headers={"content-type": "application/json"})
        elif params and (not names or data.draw(st.booleans())):
            drop = data.draw(st.sampled_from(params))
            request = WebhookRequest(signed.body, signed.headers, {k: v for k, v in signed.query.items() if k != drop})
        else:
            drop = data.draw(st.sampled_from(names))
            request = WebhookRequest(signed.body, {k: v for k, v in signed.headers.items() if k != drop}, signed.query)
    as_base64 = data.draw(st.booleans())

    if kind in {"wrong secret", "other provider"}:
        assert not verifies(provider, request), f"{provider} accepts a delivery signed by {kind}"
    if verifies(provider, request):
        # Not a forgery after all for this provider (a static token does not cover the body or the time, and a body
        # Adyen cannot sign has nothing removed): then it is a valid delivery, stored exactly once
        event(f"{kind}: valid for {provider}")
        assert_stored_exactly_once(inbox, provider, request, as_base64)
        return
    # When it is delivered, Then it is rejected with a 4xx and nothing is stored
    status, _ = invoke(api_event(provider, request, as_base64=as_base64))
    assert_rejected_and_nothing_stored(inbox, status)


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_a_validly_signed_delivery_is_stored_exactly_once(inbox, provider, data):
    # Given any body, signed by the provider's own scheme with the configured secret
    body = data.draw(bodies_for(provider))
    request = sender_for(provider).sign(body, secret_of(provider), now=int(time.time()))
    as_base64 = data.draw(st.booleans())
    if not verifies(provider, request):
        # A body this provider cannot sign (Adyen signs inside a notification): it is not signed, so not stored
        event("unsignable body")
        status, _ = invoke(api_event(provider, request, as_base64=as_base64))
        assert_rejected_and_nothing_stored(inbox, status)
        return
    event("signed")
    # When it is delivered twice, Then it is acknowledged, stored once with its raw bytes, and the repeat absorbed
    assert_stored_exactly_once(inbox, provider, request, as_base64)


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_only_a_storage_failure_answers_5xx_and_then_nothing_is_kept(inbox, provider, data):
    # Given DynamoDB throttling every PutItem of the ingest (the local stack's own fault injection)
    injector = FaultInjector()
    default_ingest_service.install(ingest_service_from_environ(wrap=injector.wrap_ingest))
    injector.configure({"ingest_throttle_rate": 1.0})
    body = data.draw(bodies_for(provider))
    signed = data.draw(st.booleans())
    request = (
        sender_for(provider).sign(body, secret_of(provider), now=int(time.time()))
        if signed
        else WebhookRequest(body=body, headers=data.draw(random_headers), query=data.draw(random_query))
    )
    # When it is delivered
    status, answer = invoke(api_event(provider, request, as_base64=data.draw(st.booleans())))
    # Then an authentic delivery is answered 503 (the gateway retries) and a forged one 4xx; nothing is stored
    if verifies(provider, request):
        event("authentic")
        assert (status, answer) == (503, {"error": "temporarily unavailable, retry"})
        assert injector.counters()["ingest_throttle"] == 1
    else:
        event("not authentic")
        assert 400 <= status < 500, status
    assert inbox.is_empty()


@settings(max_examples=FUZZ_EXAMPLES * 3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    provider=st.sampled_from(PROVIDERS),
    text=st.text(max_size=200),
    headers=random_headers,
)
def test_a_body_flagged_base64_that_is_not_base64_is_a_400(inbox, provider, text, headers):
    # Given API Gateway's base64 flag on a body that is not base64 (a character outside its alphabet)
    event_ = api_event(provider, WebhookRequest(body=b"", headers=headers), as_base64=True)
    event_["body"] = text + "!"
    # When it is delivered, Then it is a 400 and nothing is stored
    status, answer = invoke(event_)
    assert (status, answer) == (400, {"error": "body could not be decoded"})
    assert inbox.is_empty()


# Found by this fuzzing (the handler crashed with ValueError); fixed in shared/ingest.py request_from_api_event.
def test_a_body_flagged_base64_with_non_ascii_text_is_a_400_not_a_crash(inbox):
    event_ = api_event("stripe", WebhookRequest(body=b"", headers={}), as_base64=True)
    event_["body"] = "\u00e7a"
    status, answer = invoke(event_)
    assert (status, answer) == (400, {"error": "body could not be decoded"})
