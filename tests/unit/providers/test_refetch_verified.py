"""Refetch-verified providers (Cielo, Zoop): the catalog refuses one without an API, and the ingest stores every
delivery under its own key with no state from the body, refusing a wrong header secret with 403."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared import definitions
from shared.definitions import (
    HANDLER_OCCURRED_AT,
    HANDLER_REFETCH,
    REFETCH_VERIFIED_PROVIDERS,
    TRUST_NONE,
    CatalogInvalid,
    ProviderEntry,
    ProviderFacts,
    Route,
    catalog_problems,
    check_catalog,
    provider_entry,
)
from shared.ingest import IngestService, IngestSettings, delivery_event_id
from shared.providers.base import SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver
from tests.ingest_fakes import UniqueKeyStore

SECRET = "the-header-secret-the-merchant-registered"
PAYMENT_ID = "6b1a5e2c-0d1f-4c3e-9a7b-2f8e4d6c1a90"
NOW = 1_718_221_503.25


class _Secrets:
    def signing_secrets(self, source: str) -> SigningSecrets:
        return SigningSecrets(SECRET)


class _Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


def service(store: UniqueKeyStore) -> IngestService:
    settings = IngestSettings(inbox_table="inbox", body_bucket="bodies", secret_prefix="")
    return IngestService(settings, store, _Secrets(), clock=_Clock(NOW))  # type: ignore[arg-type]


def cielo_delivery(secret: str | None = SECRET, **headers: str) -> WebhookRequest:
    body = json.dumps({"PaymentId": PAYMENT_ID, "ChangeType": 1}).encode()
    carried = {"x-inbox-secret": secret} if secret is not None else {}
    return WebhookRequest(body=body, headers={"content-type": "application/json", **carried, **headers})


def zoop_delivery(status: str = "succeeded") -> WebhookRequest:
    body = {
        "id": "evt_1",
        "type": "transaction.succeeded",
        "payload": {"object": {"id": "a" * 32, "status": status, "amount": "19.90"}},
    }
    return WebhookRequest(body=json.dumps(body).encode(), headers={"authorization": f"Basic {SECRET}"})


# ------------------------------------------------------------------------------------------------ the catalog


def _entry(**changes: Any) -> ProviderEntry:
    entry = ProviderEntry(
        id="unsigned",
        driver="shared.providers.cielo.driver:driver",
        refetch_client="shared.providers.cielo.client:CieloClient",
        routes=(Route(HANDLER_REFETCH, ("*",)),),
        facts=ProviderFacts("Unsigned", "none", "inferred", "none", None),
        trust=TRUST_NONE,
    )
    return entry._replace(**changes)


def test_the_catalog_declares_cielo_and_zoop_refetch_verified():
    # Given the provider catalog, Then Cielo and Zoop are refetch-verified and nothing in it is refused
    assert {"cielo", "zoop"} <= REFETCH_VERIFIED_PROVIDERS
    assert catalog_problems(definitions.PROVIDER_CATALOG) == []
    assert all(provider_entry(p).refetch_client for p in REFETCH_VERIFIED_PROVIDERS)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"refetch_client": None}, "no refetch_client"),
        ({"routes": (Route(HANDLER_OCCURRED_AT, ("*",)),)}, "every route must refetch"),
        ({"routes": ()}, "every route must refetch"),
        ({"trust": "trust-me"}, "is not one of body, signed_fields, secret_prefix, token, none"),
        ({"signed_fields": ("PaymentId",)}, "signed_fields are named by, and only by, a signed_fields trust class"),
    ],
)
def test_a_refetch_verified_provider_without_an_api_is_refused_when_the_catalog_loads(changes, problem):
    # Given a catalog whose refetch-verified entry cannot refetch (no API, a route that believes the body)
    catalog = (*definitions.PROVIDER_CATALOG, _entry(**changes))
    # When the catalog is checked (as shared/definitions/catalog.py does on import), Then it is refused, saying why
    assert any(problem in found for found in catalog_problems(catalog))
    with pytest.raises(CatalogInvalid, match="unsigned"):
        check_catalog(catalog)


# ------------------------------------------------------------------------------------------------- the ingest


def test_each_delivery_is_stored_under_its_own_key_with_no_state_from_the_body():
    # Given the same Cielo notification delivered twice (Cielo's retry, or the next change of the same payment)
    store = UniqueKeyStore()
    ingest = service(store)
    first = ingest.receive(get_driver("cielo"), cielo_delivery())
    second = ingest.receive(get_driver("cielo"), cielo_delivery())
    # Then both are stored, each under its own key, and the answers name it
    assert (first.status_code, second.status_code) == (200, 200)
    assert (first.outcome, second.outcome) == ("stored", "stored")
    assert first.event_id != second.event_id
    assert first.body["delivery"] == first.event_id
    assert set(store.items) == {f"cielo#{first.event_id}", f"cielo#{second.event_id}"}
    # And each names the payment to refetch, and nothing the body could claim
    for item in store.items.values():
        assert item["resource_id"] == PAYMENT_ID
        assert item["event_type"] == "payment_status_changed"
        assert not {"provider_status", "amount", "currency"} & set(item)
        assert item["headers"] == {}  # the header secret is never stored


def test_a_body_that_states_a_status_is_not_believed():
    # Given a Zoop event whose unsigned body says the transaction succeeded
    store = UniqueKeyStore()
    result = service(store).receive(get_driver("zoop"), zoop_delivery("succeeded"))
    # Then it is stored as a hint only: no status, no amount, the receive time as its time
    (item,) = store.items.values()
    assert result.status_code == 200
    assert "provider_status" not in item and "amount" not in item
    assert item["occurred_at"].startswith("2024-06-12T19:45:03")


@pytest.mark.parametrize("secret", [None, "not-the-secret", SECRET + "x"])
def test_a_wrong_or_missing_header_secret_is_forbidden_and_nothing_is_stored(secret):
    # Given a delivery without the source's header secret
    store = UniqueKeyStore()
    result = service(store).receive(get_driver("cielo"), cielo_delivery(secret))
    # Then it is refused with 403, as a refused signature (recorded under its reason), and nothing is stored
    assert result.status_code == 403
    assert result.outcome == "signature_rejected"
    assert store.items == {}


def test_a_signed_provider_still_answers_401():
    # Given a signed provider's delivery with a wrong signature, Then the answer stays 401 (only hints get 403)
    request = WebhookRequest(body=b"{}", headers={"asaas-access-token": "wrong"})
    assert service(UniqueKeyStore()).receive(get_driver("asaas"), request).status_code == 401


def test_the_delivery_key_is_the_receive_time_and_a_digest_of_the_body():
    # Given one receive time, Then the key sorts by time, and tells two bodies apart
    from datetime import UTC, datetime

    at = datetime(2024, 6, 12, 19, 45, 3, 123456, tzinfo=UTC)
    key = delivery_event_id(at, b"{}")
    assert key.startswith("n_20240612T194503123456Z_") and len(key) == len("n_20240612T194503123456Z_") + 16
    assert delivery_event_id(at, b"{}") == key  # a retried write of one delivery finds its own item
    assert delivery_event_id(at, b"[]") != key
