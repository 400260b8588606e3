"""Sources against moto (docs/sources.md): two Stripe accounts and an Asaas one side by side. Each delivery is
verified with its own source's secret, stored under its own source's keys, refetched with its own source's API
key, and the payments of two sources never collide."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from inbox_local.gateway_simulator import GatewaySimulator, running_simulator
from inbox_local.senders import sender_for
from inbox_local.server import api_gateway_event
from shared.definitions import ENV_SOURCES, parse_sources, source_of, sources_json
from shared.gateway.base import ResourceNotFound
from shared.gateway.registry import gateway_client, reset_gateway_clients
from shared.inbox.store import InboxStore
from shared.ingest import IngestService, IngestSettings, handle_api_event
from shared.payments.status import PaymentStatus
from shared.payments.store import ProcessingStore
from shared.process.app import build_router
from shared.process.service import EventProcessor, Outcome
from shared.secrets import SigningSecretSource
from shared.sources import Sources, declared_sources
from tests.integration.processing_support import RecordingQueue, message_for

SECRETS = {
    "stripe-br": "whsec_brazil_account",
    "stripe-us": "whsec_us_account",
    "asaas": "asaas-token-prod",
    "stripe-mtls": "whsec_mutual_tls_account",
}
GATEWAY_IP = "3.18.12.63"  # inside the ranges stripe-us declares
DECLARATION = [
    {"name": "stripe-br", "provider": "stripe"},
    {
        "name": "stripe-us",
        "provider": "stripe",
        "allowed_ip_ranges": ["3.18.12.0/24", "2600:1f16::/32"],
        "signature_tolerance_seconds": 10,
    },
    {"name": "asaas", "provider": "asaas"},
    {"name": "stripe-mtls", "provider": "stripe", "mutual_tls": True},
]
# What the mutual-TLS front door writes into the event once its handshake verified the sender's certificate
# (API Gateway's custom domain; locally inbox_local/mtls.py).
VERIFIED_CERTIFICATE: dict[str, Any] = {
    "clientCertPem": "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n",
    "subjectDN": "C=BR,O=Gateway,CN=webhooks.gateway.example",
    "issuerDN": "C=BR,O=Gateway,CN=Gateway CA",
    "serialNumber": "1a:2b:3c",
    "validity": {"notBefore": "Dec  1 00:00:00 2026 GMT", "notAfter": "Dec  1 00:00:00 2027 GMT"},
}


@pytest.fixture
def sources(aws_world, monkeypatch) -> Iterator[Sources]:
    monkeypatch.setenv(ENV_SOURCES, sources_json(parse_sources(DECLARATION)))
    for name, secret in SECRETS.items():
        aws_world.set_signing_secrets(name, secret)
    reset_gateway_clients()  # and the cached declaration
    yield declared_sources()
    monkeypatch.delenv(ENV_SOURCES)
    reset_gateway_clients()


def ingest(sources: Sources) -> IngestService:
    settings = IngestSettings.from_environ()
    store = InboxStore(settings.inbox_table, settings.body_bucket)
    return IngestService(settings, store, SigningSecretSource(settings.secret_prefix), sources=sources)


def post(
    service: IngestService,
    source: str,
    body: bytes,
    *,
    signed_for: str,
    ip: str = GATEWAY_IP,
    headers: dict[str, str] | None = None,
    signed_at: int | None = None,
    event_id: str | None = "evt_1",
    client_cert: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """POST `body` to /webhooks/{source}, signed as the gateway signs for the source `signed_for`; `client_cert`:
    through the mutual-TLS front door, which verified that certificate."""
    provider = service.sources.get(signed_for).provider
    now = int(time.time()) if signed_at is None else signed_at
    signed = sender_for(provider).sign(body, SECRETS[signed_for], now=now, event_id=event_id)
    all_headers = {"content-type": "application/json", **signed.headers, **(headers or {})}
    event = api_gateway_event("POST", f"/webhooks/{source}", all_headers, body, ip, client_cert=client_cert)
    response = handle_api_event(event, lambda: service)
    return response["statusCode"], json.loads(response["body"])


def stripe_body(event_id: str = "evt_1", resource_id: str = "pi_1", amount: int = 1990) -> bytes:
    return sender_for("stripe").sample_body(
        event_id=event_id, resource_id=resource_id, status="paid", amount=amount, occurred_at=int(time.time())
    )


def stored(aws_world) -> dict[str, dict[str, Any]]:
    return {item["pk"]: item for item in InboxStore(aws_world.names.inbox_table).scan()}


class TestIngestBySource:
    def test_a_delivery_signed_for_one_source_is_refused_on_the_others_url(self, aws_world, sources):
        # Given two Stripe sources with different signing secrets
        service = ingest(sources)
        # When a delivery signed with stripe-br's secret is posted to stripe-us's URL, and to its own
        refused = post(service, "stripe-us", stripe_body(), signed_for="stripe-br")
        accepted = post(service, "stripe-br", stripe_body(), signed_for="stripe-br")
        # Then the other source refuses it (401) and its own accepts it; only that one is stored
        assert refused == (401, {"error": "invalid signature"})
        assert accepted == (200, {"received": True})
        assert list(stored(aws_world)) == ["stripe-br#evt_1"]

    def test_the_same_event_id_on_two_sources_is_two_items(self, aws_world, sources):
        # Given the same event id and payment id delivered by both Stripe accounts, each signed with its own secret
        service = ingest(sources)
        assert post(service, "stripe-br", stripe_body(), signed_for="stripe-br")[0] == 200
        assert post(service, "stripe-us", stripe_body(), signed_for="stripe-us")[0] == 200
        # Then there are two items, neither a duplicate of the other, each with its source, its provider, and its
        # own payment key and FIFO group
        items = stored(aws_world)
        assert set(items) == {"stripe-br#evt_1", "stripe-us#evt_1"}
        for source in ("stripe-br", "stripe-us"):
            item = items[f"{source}#evt_1"]
            assert (source_of(item), item["provider"]) == (source, "stripe")  # the source: the key's first part
            assert item["group_id"] == f"{source}#pi_1"

    def test_an_unknown_or_invalid_source_is_404_and_stores_nothing(self, aws_world, sources):
        # Given the declaration has no "stripe" source (only stripe-br and stripe-us)
        service = ingest(sources)
        # When deliveries name an undeclared source, or something that is no source name at all
        unknown = post(service, "stripe", stripe_body(), signed_for="stripe-br")
        invalid = post(service, "Stripe_BR", stripe_body(), signed_for="stripe-br")
        # Then both are 404 with a clear reason, and nothing is stored
        assert unknown == (404, {"error": "unknown source 'stripe': it is not declared in sources.json"})
        assert invalid[0] == 404 and "lower-case letters" in invalid[1]["error"]
        assert stored(aws_world) == {}

    def test_a_sender_outside_the_sources_ip_ranges_is_refused_before_verification(
        self, aws_world, sources, monkeypatch
    ):
        # Given stripe-us accepts deliveries only from its gateway's ranges, and its secret cannot even be read
        service = ingest(sources)
        aws_world.delete_signing_secrets("stripe-us")
        body = stripe_body()
        # When a correctly signed delivery comes from elsewhere, claiming a gateway address in X-Forwarded-For
        status, answer = post(
            service,
            "stripe-us",
            body,
            signed_for="stripe-us",
            ip="198.51.100.7",
            headers={"x-forwarded-for": GATEWAY_IP},
        )
        # Then it is refused 403 (not 503: no secret was asked for, no signature checked), and nothing is stored
        assert (status, answer) == (403, {"error": "sender not allowed for this source"})
        assert stored(aws_world) == {}

    def test_a_sender_inside_the_ranges_is_verified_ipv4_and_ipv6(self, aws_world, sources):
        service = ingest(sources)
        assert post(service, "stripe-us", stripe_body("evt_4"), signed_for="stripe-us", event_id="evt_4")[0] == 200
        v6 = post(
            service, "stripe-us", stripe_body("evt_6"), signed_for="stripe-us", ip="2600:1f16::9", event_id="evt_6"
        )
        assert v6[0] == 200
        assert set(stored(aws_world)) == {"stripe-us#evt_4", "stripe-us#evt_6"}

    def test_a_sources_own_signature_tolerance_applies(self, aws_world, sources):
        # Given stripe-br keeps the deployment's 300 s tolerance, stripe-us declares 10 s
        service = ingest(sources)
        a_minute_ago = int(time.time()) - 60
        # When each gets a delivery signed a minute ago
        br = post(service, "stripe-br", stripe_body(), signed_for="stripe-br", signed_at=a_minute_ago)
        us = post(service, "stripe-us", stripe_body(), signed_for="stripe-us", signed_at=a_minute_ago)
        # Then stripe-br accepts it and stripe-us refuses it as too old
        assert (br[0], us) == (200, (401, {"error": "invalid signature"}))


class TestMutualTlsSource:
    def test_a_delivery_without_a_verified_certificate_is_refused_before_its_secret_is_read(
        self, aws_world, sources, monkeypatch
    ):
        # Given a source declared mutual_tls, whose secret cannot even be read
        service = ingest(sources)
        aws_world.delete_signing_secrets("stripe-mtls")
        # When a correctly signed delivery reaches it through the plain endpoint, its headers claiming a certificate
        status, answer = post(
            service,
            "stripe-mtls",
            stripe_body(),
            signed_for="stripe-mtls",
            headers={"x-amzn-mtls-clientcert": "forged", "x-client-cert": VERIFIED_CERTIFICATE["clientCertPem"]},
        )
        # Then it is refused 403 (not 503: no secret was asked for, no signature checked), and nothing is stored
        assert (status, answer) == (403, {"error": "a verified client certificate is required for this source"})
        assert stored(aws_world) == {}

    def test_a_delivery_through_the_mutual_tls_front_door_is_verified_and_stored(self, aws_world, sources):
        # Given the same source, When its gateway delivers through the mutual-TLS domain (a verified certificate)
        service = ingest(sources)
        accepted = post(
            service, "stripe-mtls", stripe_body(), signed_for="stripe-mtls", client_cert=VERIFIED_CERTIFICATE
        )
        forged = post(
            service, "stripe-mtls", stripe_body("evt_2"), signed_for="stripe-br", client_cert=VERIFIED_CERTIFICATE
        )
        # Then the certificate lets the delivery reach verification: its signature decides, as for any source
        assert accepted == (200, {"received": True})
        assert forged == (401, {"error": "invalid signature"})
        assert list(stored(aws_world)) == ["stripe-mtls#evt_1"]

    def test_a_source_without_mutual_tls_takes_deliveries_with_or_without_a_certificate(self, aws_world, sources):
        service = ingest(sources)
        plain = post(service, "stripe-br", stripe_body("evt_3"), signed_for="stripe-br", event_id="evt_3")
        through_tls = post(
            service,
            "stripe-br",
            stripe_body("evt_4"),
            signed_for="stripe-br",
            event_id="evt_4",
            client_cert=VERIFIED_CERTIFICATE,
        )
        assert (plain[0], through_tls[0]) == (200, 200)


@pytest.fixture
def accounts(aws_world, sources, monkeypatch) -> Iterator[GatewaySimulator]:
    """The gateway simulator with one account per declared source, the functions' environment pointing at it and
    each account's key in Secrets Manager."""
    with running_simulator(seed=11, accounts={name: s.provider for name, s in sources.by_name.items()}) as simulator:
        for name, value in simulator.environment().items():
            monkeypatch.setenv(name, value)
        aws_world.store_api_keys(simulator.api_keys)
        reset_gateway_clients()
        yield simulator
        reset_gateway_clients()


def test_payments_of_two_sources_never_collide_and_each_is_refetched_with_its_own_key(aws_world, sources, accounts):
    # Given the same payment id in both Stripe accounts (different amounts, different fates) and an Asaas payment
    br = accounts.create_payment("stripe-br", 1000, "BRL", resource_id="pi_shared")
    us = accounts.create_payment("stripe-us", 2500, "USD", resource_id="pi_shared")
    webhooks = {
        "stripe-br": accounts.creation_webhooks("stripe-br", br) + accounts.advance_to("stripe-br", br, "paid"),
        "stripe-us": accounts.creation_webhooks("stripe-us", us) + accounts.advance_to("stripe-us", us, "canceled"),
    }
    asaas = accounts.create_payment("asaas", 4200)
    webhooks["asaas"] = accounts.creation_webhooks("asaas", asaas) + accounts.advance_to("asaas", asaas, "paid")
    assert accounts.api_keys["stripe-br"] != accounts.api_keys["stripe-us"]
    # When the gateway delivers every webhook to its source's URL, signed with its source's secret
    service = ingest(sources)
    for source, sent in webhooks.items():
        for webhook in sent:
            assert post(service, source, webhook.body, signed_for=source, event_id=None)[0] == 200
    # And the processor handles every stored event (its own client per source: gateway_client)
    processor = EventProcessor(
        ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table),
        build_router(gateway_client),
        RecordingQueue(),
        max_attempts=3,
        retry_base_seconds=1,
    )
    items = sorted(InboxStore(aws_world.names.inbox_table).scan(), key=lambda item: item["received_at"])
    outcomes = {processor.handle(*message_for(item["pk"])) for item in items}
    assert Outcome.FAILED not in outcomes
    # Then each source has its own payment, matching its own account's truth at the gateway
    payments = ProcessingStore(aws_world.names.inbox_table, aws_world.names.payments_table)
    for source, resource_id in (("stripe-br", br), ("stripe-us", us), ("asaas", asaas)):
        payment = payments.load_payment(f"{source}#{resource_id}")
        truth = accounts.snapshot(source, resource_id)
        assert payment is not None, source
        assert (payment.source, payment.status, payment.amount) == (source, truth.status, truth.amount)
    assert accounts.snapshot("stripe-br", br).status is PaymentStatus.PAID
    assert accounts.snapshot("stripe-us", us).status is PaymentStatus.CANCELED


def test_a_source_refetching_with_another_accounts_key_does_not_see_its_payments(aws_world, sources, accounts):
    # Given a payment that exists only in the stripe-br account
    only_br = accounts.create_payment("stripe-br", 1000, "BRL")
    # When each Stripe source's client asks for it
    br_client, us_client = gateway_client("stripe-br"), gateway_client("stripe-us")
    assert br_client is not None and us_client is not None
    # Then stripe-br's key finds it and stripe-us's key does not (404: each key sees only its own account)
    assert br_client.fetch_payment(only_br).amount == 1000
    with pytest.raises(ResourceNotFound):
        us_client.fetch_payment(only_br)
