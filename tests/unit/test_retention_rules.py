"""Archive lines and layout, without AWS: redaction, body encodings, key names, the TTL filter."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from moto.events.models import EventPattern

from shared import definitions
from shared.redaction import REDACTED, parse_redact_fields, redact
from shared.retention import (
    archive_key,
    archived_body,
    batch_id,
    item_from_image,
    partition_of,
)

PII = frozenset({"email", "cpf", "name"})


def test_redaction_replaces_matching_keys_at_any_depth_and_counts_them():
    # Given a body with personal data at several depths, inside objects and arrays
    document: dict[str, Any] = {
        "id": "evt_1",
        "customer": {"Email": "a@b.c", "name": "Ana", "address": {"city": "Recife"}},
        "payers": [{"cpf": "123"}, {"cpf": "456", "note": {"name": "x"}}],
        "name": None,
    }
    # When it is redacted for email, cpf and name
    redacted, count = redact(document, PII)
    # Then each value under those keys (case-insensitively) is replaced, everything else is kept
    assert redacted == {
        "id": "evt_1",
        "customer": {"Email": REDACTED, "name": REDACTED, "address": {"city": "Recife"}},
        "payers": [{"cpf": REDACTED}, {"cpf": REDACTED, "note": {"name": REDACTED}}],
        "name": REDACTED,
    }
    assert count == 6
    assert document["customer"]["name"] == "Ana"  # the input is not changed


def test_redact_fields_are_parsed_from_a_comma_separated_list():
    assert parse_redact_fields(" email, CPF ,,name ") == frozenset({"email", "cpf", "name"})
    assert parse_redact_fields("") == frozenset()
    assert parse_redact_fields(None) == frozenset()


def test_a_json_body_is_archived_redacted():
    body = json.dumps({"payment": {"id": "pay_1", "customer": {"email": "a@b.c"}}}, indent=2).encode()
    archived = archived_body(body, PII)
    assert json.loads(archived["body"]) == {"payment": {"id": "pay_1", "customer": {"email": REDACTED}}}
    assert archived["body_encoding"] == "utf-8"
    assert archived["redacted_values"] == 1


def test_a_body_with_nothing_to_redact_keeps_its_exact_bytes():
    body = b'{"id":  "evt_1",\n "amount": 10}'
    archived = archived_body(body, PII)
    assert archived["body"].encode() == body
    assert archived["redacted_values"] == 0


def test_without_redaction_the_body_is_archived_exactly():
    body = b'{"email": "a@b.c"}'
    assert archived_body(body, frozenset()) == {
        "body": '{"email": "a@b.c"}',
        "body_encoding": "utf-8",
        "body_sha256": hashlib.sha256(body).hexdigest(),  # the raw body's: the item no longer carries it
    }


def test_a_non_json_body_is_archived_as_it_is_and_says_why_it_was_not_redacted():
    archived = archived_body(b"email=a@b.c&name=Ana", PII)
    assert archived["body"] == "email=a@b.c&name=Ana"
    assert archived["redaction"] == "skipped: body is not JSON"


def test_a_body_that_is_not_utf8_is_archived_as_base64():
    raw = b"\xff\xfe\x00binary"
    archived = archived_body(raw, PII)
    assert archived["body_encoding"] == "base64"
    assert base64.b64decode(archived["body"]) == raw
    assert archived["redaction"] == "skipped: body is not UTF-8"


def test_the_archive_key_is_partitioned_by_provider_and_received_day():
    item = {"provider": "asaas", "received_at": "2026-11-29T23:59:59.999999Z"}
    assert partition_of(item) == ("asaas", "2026-11-29")
    assert archive_key("asaas", "2026-11-29", "11-19") == "archive/provider=asaas/date=2026-11-29/11-19.jsonl.gz"
    assert partition_of({"provider": "../x y"}) == ("x_y", "unknown")  # nothing escapes its prefix


def test_the_batch_id_comes_from_the_first_and_last_sequence_numbers():
    records = [{"dynamodb": {"SequenceNumber": n}} for n in ("1100000000000000000019", "1100000000000000000003")]
    assert batch_id(records) == "1100000000000000000003-1100000000000000000019"
    assert batch_id(list(reversed(records))) == batch_id(records)  # the same batch, retried: the same object
    with pytest.raises(ValueError):
        batch_id([])


def test_a_lambda_stream_image_is_decoded_with_its_binary_body():
    image = {
        "pk": {"S": "stripe#evt_1"},
        "attempts": {"N": "2"},
        "body": {"B": base64.b64encode(b'{"a": 1}').decode()},
        "headers": {"M": {"stripe-signature": {"S": "t=1,v1=x"}}},
    }
    item = item_from_image(image)
    assert item == {
        "pk": "stripe#evt_1",
        "attempts": 2,
        "body": b'{"a": 1}',
        "headers": {"stripe-signature": "t=1,v1=x"},
    }


def passes_archive_filter(record: Any) -> bool:
    """The stack's filter, evaluated as the local mapping does (moto's EventBridge pattern matcher)."""
    return bool(EventPattern.load(json.dumps(definitions.ARCHIVE_FILTER_PATTERN)).matches_event(record))


def test_the_archive_filter_passes_ttl_deletions_only():
    ttl_removal = {
        "eventName": "REMOVE",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {"OldImage": {}},
    }
    assert passes_archive_filter(ttl_removal)
    assert not passes_archive_filter({**ttl_removal, "userIdentity": {"type": "IAMUser", "principalId": "ops"}})
    assert not passes_archive_filter({"eventName": "REMOVE", "dynamodb": {"OldImage": {}}})  # an operator's delete
    assert not passes_archive_filter({**ttl_removal, "eventName": "MODIFY"})


# ------------------------------------------------------------------------ how long an inbox item is kept


@pytest.mark.parametrize(
    ("retention_days", "redelivery_days", "kept"),
    [
        (14, 0, 14),  # no documented window: the deployment's retention
        (14, 3, 14),  # Stripe's 3 days of retries fit in it
        (14, 14, 15),  # Asaas's 14 days: one day more, so its last retry is still a duplicate
        (14, 30, 31),  # Adyen's 30 days of retries outlast the retention
        (60, 30, 60),  # a longer retention stays as set
    ],
)
def test_a_provider_is_kept_at_least_its_retry_window_and_a_day(retention_days, redelivery_days, kept):
    # Given a retention and a provider's documented retry window  When an event's lifetime is decided
    # Then it is the retention, or the window and a day where that is longer
    assert definitions.retained_days(retention_days, redelivery_days) == kept


def test_large_bodies_outlive_the_longest_kept_provider_of_the_declaration():
    # Given the default declaration (Adyen among it) and a Stripe-only one
    # When the stack asks how long the longest-kept item lives  Then Adyen's window sets it only where declared
    assert definitions.longest_retention_days(14, definitions.declared_providers(definitions.default_sources())) == 31
    assert definitions.longest_retention_days(14, ("stripe",)) == 14


@pytest.mark.parametrize("days", [-1, 91, 2.5, True])
def test_the_catalog_refuses_a_retry_window_that_is_not_whole_days(days):
    # Given a catalog entry whose retry window is negative, implausibly long or not a whole number of days
    entry = definitions.provider_entry("stripe")._replace(redelivery_days=days)
    # When the catalog is checked  Then it says what is wrong
    assert "stripe: redelivery_days must be whole days, 0 to 90" in definitions.catalog_problems((entry,))
