"""What a captured delivery is worth, per trust class, for every provider of the catalog (a new provider is covered
by being declared): each part of a genuine delivery is changed in turn, the changed delivery is posted again, and
the outcome rule must hold (docs/architecture.md, "Trust classes").

- body, signed_fields, secret_prefix (the forger holds a delivery, not the secret): a changed part is refused, or a
  duplicate, or a new event that settles `ignored` without touching the payment or its watermark; at most a
  bounded number of new events per source.
- token, none (the delivery carries the secret itself, which the inbox never stores): a delivery rebuilt from what
  the inbox keeps is refused; whoever holds the token can send any body, so what the body states is not applied
  where the payment can be read back (the refetch decides); the token providers without an API are the residual
  risk docs/providers.md names.

The ingest is the real IngestService over an in-memory key (the inbox's unique key), and the processing is the
real router, handlers and state machine with a gateway that reports the genuine payment. Times are a fixed clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from inbox_local.config import signing_secret
from inbox_local.senders import sender_for
from shared.definitions import (
    PROVIDER_CATALOG,
    TRUST_BODY,
    TRUST_NONE,
    TRUST_SIGNED_FIELDS,
    TRUST_TOKEN,
    UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR,
    ProviderEntry,
)
from shared.gateway.base import PaymentSnapshot
from shared.inbox.model import inline_body, iso_utc
from shared.ingest import IngestService, IngestSettings, Trust, trusted_events, unbound_unparseable_event_id
from shared.payments.model import Payment
from shared.payments.status import PaymentStatus
from shared.process.decide import Apply, Ignore, Touch
from shared.process.handlers import default_router
from shared.process.router import InboxEvent
from shared.providers.base import NormalizedEvent, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver
from shared.sub_account import SubAccount
from tests.ingest_fakes import UniqueKeyStore

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_767_225_600  # when the captured delivery is posted again: a fixed clock, never the wall clock
SENT = NOW - 3600  # when the genuine delivery was sent and received
RESOURCE_ID = "res_trust_7Qx2"
EVENT_ID = "evt_trust_1"
AMOUNT = 4990
FAR_FUTURE = "2099-01-01T00:00:00Z"
FAR_FUTURE_EPOCH = 4_070_908_800


class _Secrets:
    def signing_secrets(self, source: str) -> SigningSecrets:
        return SigningSecrets(signing_secret(source))


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class _Gateway:
    """The gateway's API: every payment is the genuine one, as the genuine event stated it."""

    def __init__(self, provider: str, snapshot: PaymentSnapshot) -> None:
        self.provider = provider
        self.snapshot = snapshot

    def fetch_payment(self, resource_id: str, *, account: SubAccount | None = None) -> PaymentSnapshot:
        return PaymentSnapshot(
            resource_id,
            self.snapshot.status,
            self.snapshot.provider_status,
            self.snapshot.amount,
            self.snapshot.currency,
        )


def genuine_delivery(provider: str) -> WebhookRequest:
    sender = sender_for(provider)
    body = sender.sample_body(
        event_id=EVENT_ID, resource_id=RESOURCE_ID, status="paid", amount=AMOUNT, occurred_at=SENT - 30
    )
    return sender.sign(body, signing_secret(provider), now=SENT, event_id=EVENT_ID)


def _changed_text(value: str) -> list[str]:
    """Other values a forger would try: a far-future time for a time, another id or word for the rest."""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        pass
    else:
        return [FAR_FUTURE]
    if value.isdigit():
        return [str(FAR_FUTURE_EPOCH * (1000 if len(value) >= 13 else 1)), str(int(value) + 1)]
    return [value + "9", "forged-" + value[:8]]


def _leaf_changes(document: Any) -> Iterator[Any]:
    """Every copy of `document` with one leaf changed (strings, numbers, booleans, nulls at any depth)."""
    if isinstance(document, dict):
        for key, value in document.items():
            for changed in _leaf_changes(value):
                yield {**document, key: changed}
    elif isinstance(document, list):
        for index, value in enumerate(document):
            for changed in _leaf_changes(value):
                yield [*document[:index], changed, *document[index + 1 :]]
    elif isinstance(document, bool):
        yield not document
    elif isinstance(document, int | float):
        yield document + 1
        yield FAR_FUTURE_EPOCH * 1000
    elif isinstance(document, str):
        yield from _changed_text(document)
    elif document is None:
        yield "forged"


def mutations(request: WebhookRequest) -> Iterator[tuple[str, WebhookRequest]]:
    """The genuine delivery with one part changed: each header, each query parameter, each body leaf, the body."""
    for name, value in request.headers.items():
        for changed in _changed_text(value):
            yield f"header {name}", WebhookRequest(request.body, {**request.headers, name: changed}, request.query)
        others = {key: kept for key, kept in request.headers.items() if key != name}
        yield f"header {name} removed", WebhookRequest(request.body, others, request.query)
    for name, value in request.query.items():
        for changed in _changed_text(value):
            yield f"query {name}", WebhookRequest(request.body, request.headers, {**request.query, name: changed})
    try:
        document = json.loads(request.body)
    except ValueError:
        document = None
    if document is not None:
        for index, changed in enumerate(_leaf_changes(document)):
            body = json.dumps(changed).encode()
            yield f"body leaf {index}", WebhookRequest(body, request.headers, request.query)
    yield "body not parseable", WebhookRequest(request.body + b"\x00garbage", request.headers, request.query)


class World:
    """One provider's default source: the ingest, the processor's router, and the payment as applied."""

    def __init__(self, entry: ProviderEntry) -> None:
        self.entry = entry
        self.driver = get_driver(entry.id)
        self.store = UniqueKeyStore()
        self.clock = _Clock(SENT)
        settings = IngestSettings(inbox_table="inbox", body_bucket="bodies", secret_prefix="")
        self.ingest = IngestService(settings, self.store, _Secrets(), clock=self.clock)  # type: ignore[arg-type]
        self.gateway: _Gateway | None = None
        self.router = default_router(lambda source: self.gateway)
        self.payment: Payment | None = None

    def receive(self, request: WebhookRequest) -> tuple[int, str, list[dict[str, Any]]]:
        before = set(self.store.items)
        result = self.ingest.receive(self.driver, request)
        return result.status_code, result.outcome, [self.store.items[pk] for pk in self.store.items if pk not in before]

    def decide(self, item: dict[str, Any]) -> Apply | Touch | Ignore | str:
        """What processing the stored item does to the payment: the decision, or why it was settled otherwise."""
        if item["status"] != "pending":
            return f"settled at receipt: {item['status']}"
        event = InboxEvent.from_item(item)
        handler = self.router.resolve(event.provider, event.event_type)
        if handler is None:
            return "ignored: no handler"
        current = self.payment if self.payment and self.payment.resource_id == event.resource_id else None
        return handler.apply(current, handler.prepare(event), now=iso_utc(datetime.fromtimestamp(NOW, UTC)))


def _start(entry: ProviderEntry) -> tuple[World, WebhookRequest]:
    """The genuine delivery, received and applied: the payment the captured copy will be posted against."""
    world = World(entry)
    request = genuine_delivery(entry.id)
    code, outcome, items = world.receive(request)
    assert (code, outcome) == (200, "stored"), f"{entry.id}: the genuine delivery is not stored ({outcome})"
    first = InboxEvent.from_item(items[-1])  # the sample is the paid one: the gateway reports it paid
    paid = PaymentSnapshot(RESOURCE_ID, PaymentStatus.PAID, "paid", first.amount, first.currency)
    world.gateway = _Gateway(entry.id, paid)
    for item in items:
        decision = world.decide(item)
        if isinstance(decision, Apply | Touch):
            world.payment = decision.payment
    world.clock.now = NOW
    return world, request


ATTACKER_WITHOUT_THE_SECRET = [e for e in PROVIDER_CATALOG if e.trust not in (TRUST_TOKEN, TRUST_NONE)]
SECRET_IN_THE_DELIVERY = [e for e in PROVIDER_CATALOG if e.trust in (TRUST_TOKEN, TRUST_NONE)]


def test_every_provider_is_covered():
    # Given the catalog, Then every provider is in exactly one of the two threat models below
    assert {e.id for e in ATTACKER_WITHOUT_THE_SECRET} | {e.id for e in SECRET_IN_THE_DELIVERY} == {
        e.id for e in PROVIDER_CATALOG
    }


@pytest.mark.parametrize("entry", ATTACKER_WITHOUT_THE_SECRET, ids=lambda entry: entry.id)
def test_a_changed_part_of_a_captured_delivery_is_at_most_a_bounded_ignored_event(entry):
    # Given a genuine delivery, received and applied to its payment
    world, genuine = _start(entry)
    payment_before = world.payment
    new_events: list[dict[str, Any]] = []
    tried = 0
    # When every part of it is changed in turn and posted again
    for part, forged in mutations(genuine):
        tried += 1
        code, _outcome, items = world.receive(forged)
        # Then it is refused, or a duplicate, or new events that settle ignored without touching the payment
        assert code in (200, 401, 403), f"{entry.id}, {part}: answered {code}"
        if code != 200:
            assert not items, f"{entry.id}, {part}: a refused delivery stored something"
            continue
        for item in items:
            # A changed part never makes a new parsed event (its key comes from authenticated parts): only an
            # unparseable body its class does not bind adds one, in its hour slot
            assert item["event_id"].startswith("x_"), f"{entry.id}, {part}: a new event {item['event_id']}"
            decision = world.decide(item)
            assert isinstance(decision, Ignore) or str(decision) in (
                "settled at receipt: ignored",
                "ignored: no handler",
            ), f"{entry.id}, {part}: {decision}"
            assert item.get("occurred_at", "") <= iso_utc(datetime.fromtimestamp(NOW + 300, UTC)), f"{entry.id}, {part}"
        new_events.extend(items)
    assert tried > 0
    assert world.payment == payment_before  # nothing applied: neither its state nor its last_event_at moved
    # And what all those changes added to the source is bounded (the unparseable bodies' hour slots)
    assert len(new_events) <= UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR, [item["pk"] for item in new_events]


@pytest.mark.parametrize("entry", PROVIDER_CATALOG, ids=lambda entry: entry.id)
def test_a_delivery_rebuilt_from_what_the_inbox_keeps_adds_nothing(entry):
    # Given a genuine delivery, stored
    world, _genuine = _start(entry)
    (item, *_) = [i for i in world.store.items.values() if i["status"] == "pending"] or list(world.store.items.values())
    body = inline_body(item)
    assert body is not None
    # When what the inbox keeps of it (the body, the headers and query values kept for re-verification) is posted
    rebuilt = WebhookRequest(body, dict(item.get("headers") or {}), dict(item.get("query") or {}))
    code, outcome, items = world.receive(rebuilt)
    # Then a token's or a header secret's delivery is refused (the secret is never kept); any other is refused (a
    # signed timestamp out of tolerance) or a duplicate
    if entry.trust in (TRUST_TOKEN, TRUST_NONE):
        assert code in (401, 403) and not items, f"{entry.id}: {outcome}"
    else:
        assert (code, outcome, items) in ((200, "duplicate", []), (401, "signature_rejected", [])), entry.id


@pytest.mark.parametrize("entry", SECRET_IN_THE_DELIVERY, ids=lambda entry: entry.id)
def test_an_unbound_body_states_nothing_where_the_payment_is_read_back(entry):
    # Given a genuine delivery of a provider whose scheme does not bind the body, received and applied
    world, genuine = _start(entry)
    if entry.ordering != "refetch":
        # A token provider without an API (Hotmart): the body's state is applied, ordered by its time; the
        # residual risk (whoever holds the token can state a payment's status) is written where users read it
        providers_doc = (ROOT / "docs" / "providers.md").read_text()
        assert f"`{entry.id}`" in providers_doc.split("## Trust classes", 1)[1].split("\n## ", 1)[0]
        assert "residual" in providers_doc.split("## Trust classes", 1)[1].split("\n## ", 1)[0]
        return
    payment_before = world.payment
    # When the holder of the secret posts bodies stating other statuses, amounts, times and payments
    for part, forged in mutations(genuine):
        _code, _outcome, items = world.receive(forged)
        for item in items:
            # Then the stored event states nothing of the body, and its time is never after the receipt + tolerance
            assert {"provider_status", "amount", "currency"}.isdisjoint(item), f"{entry.id}, {part}"
            assert item.get("occurred_at", "") <= iso_utc(datetime.fromtimestamp(NOW + 300, UTC)), f"{entry.id}, {part}"
            decision = world.decide(item)
            # And what is applied is the gateway's truth: the payment is unchanged, another one is read back
            if isinstance(decision, Apply | Touch) and decision.payment.resource_id == RESOURCE_ID:
                raise AssertionError(f"{entry.id}, {part}: the body moved the payment ({decision.reason})")
    assert world.payment == payment_before


# ------------------------------------------------------------------------------ the ingest's rules, one by one

RECEIVED = datetime.fromtimestamp(NOW, UTC)


def _event(at: datetime) -> NormalizedEvent:
    return NormalizedEvent("e1", "t", "r1", at, provider_status="paid", amount=100, currency="BRL")


@pytest.mark.parametrize(
    ("trust", "sent", "stored"),
    [
        # a signed time within the tolerance is kept (a gateway whose clock runs a little ahead)
        (Trust(TRUST_BODY, refetches=False), RECEIVED + timedelta(seconds=299), RECEIVED + timedelta(seconds=299)),
        # later than the receipt plus the tolerance: the receipt time (2099 is no watermark)
        (Trust(TRUST_BODY, refetches=False), datetime(2099, 1, 1, tzinfo=UTC), RECEIVED),
        (Trust(TRUST_BODY, refetches=False), RECEIVED + timedelta(seconds=301), RECEIVED),
        # a time nobody signed (Adyen's eventDate) is capped the same way
        (Trust(TRUST_SIGNED_FIELDS, refetches=False), datetime(2099, 1, 1, tzinfo=UTC), RECEIVED),
        (Trust(TRUST_SIGNED_FIELDS, refetches=False), RECEIVED - timedelta(days=1), RECEIVED - timedelta(days=1)),
    ],
)
def test_an_event_time_is_capped_by_what_its_class_signs(trust, sent, stored):
    (event,) = trusted_events((_event(sent),), trust, RECEIVED, 300)
    assert event.occurred_at == stored


def test_an_unbound_body_read_back_from_an_api_states_nothing():
    (token,) = trusted_events((_event(RECEIVED),), Trust(TRUST_TOKEN, refetches=True), RECEIVED, 300)
    assert (token.provider_status, token.amount, token.currency) == (None, None, None)
    assert token.resource_id == "r1"  # what the refetch reads
    # a body the class binds, or one with no API to read back from (the residual), keeps its state
    for trust in (Trust(TRUST_BODY, refetches=True), Trust(TRUST_TOKEN, refetches=False)):
        (kept,) = trusted_events((_event(RECEIVED),), trust, RECEIVED, 300)
        assert (kept.provider_status, kept.amount, kept.currency) == ("paid", 100, "BRL")


def test_unparseable_unbound_bodies_fill_a_bounded_number_of_slots_per_hour():
    # Given many different bodies received within one hour
    keys = {unbound_unparseable_event_id(RECEIVED + timedelta(seconds=n), f"junk {n}".encode()) for n in range(500)}
    # Then they share at most the hour's slots, and the same body is always the same slot
    assert len(keys) <= UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR
    assert unbound_unparseable_event_id(RECEIVED, b"x") == unbound_unparseable_event_id(RECEIVED, b"x")
    assert unbound_unparseable_event_id(RECEIVED + timedelta(hours=1), b"x") != unbound_unparseable_event_id(
        RECEIVED, b"x"
    )


def test_an_unparseable_body_is_failed_when_bound_and_ignored_when_not():
    # Given an unparseable body, verified by a body-signing scheme (Stripe) and by a token (Asaas)
    results = {}
    for provider in ("stripe", "asaas"):
        world = World(next(entry for entry in PROVIDER_CATALOG if entry.id == provider))
        world.clock.now = NOW
        request = sender_for(provider).sign(b"not json", signing_secret(provider), now=NOW)
        code, outcome, items = world.receive(request)
        results[provider] = (code, outcome, [(item["status"], item["event_id"][:2]) for item in items])
    # Then the signed one is kept failed (a signed event is never dropped, and counted as unparseable: an alarm),
    # the token's ignored in a slot (no alarm: it proves nothing); both answered 2xx
    assert results["stripe"] == (200, "stored_unparseable", [("failed", "b_")])
    assert results["asaas"] == (200, "stored_ignored", [("ignored", "x_")])


def test_the_docs_state_the_slots_and_every_providers_class_as_the_catalog_does():
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    providers = (ROOT / "docs" / "providers.md").read_text()
    assert f"at most {UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR} such bodies per source and hour" in architecture
    assert f"at most {UNBOUND_UNPARSEABLE_SLOTS_PER_HOUR} per source" in providers.replace("\n", " ")
    table = providers.split("## Trust classes", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[2].strip()
        for line in table.splitlines()[1:]
        if line.startswith("| `")
    }
    assert {provider: cell.split(":")[0] for provider, cell in rows.items()} == {
        entry.id: entry.trust for entry in PROVIDER_CATALOG
    }
    for entry in PROVIDER_CATALOG:  # a signed_fields class names its fields, as the catalog does
        assert all(f"`{field}`" in rows[entry.id] for field in entry.signed_fields), entry.id
