"""The item_sizes bench's own arithmetic (bench/item_sizes.py, bench/ingest_burst.py): how recorded writes are
billed, how a Stripe body is padded to the documented example's size, what a burst counts as absorbed."""

from __future__ import annotations

import json
import threading
import zlib
from typing import Any

from bench.ingest_burst import figures
from bench.item_size import IndexShape
from bench.item_sizes import STRIPE_DOCUMENTED_EVENT_BYTES, Recorder, WriteRecord, pad_stripe_body
from shared.process.app import GROUP_THREAD_PREFIX

OPEN = IndexShape(name="open", keys=("open_pk",), projection="INCLUDE", included=("provider",))


def _recorder(*writes: WriteRecord) -> Recorder:
    recorder = Recorder()
    recorder.tables["inbox"] = (("pk",), (OPEN,))
    recorder.writes.extend(writes)
    return recorder


def _item(**extra: Any) -> dict[str, Any]:
    return {"pk": {"S": "stripe#evt_1"}, "body": {"B": b"x" * 2500}, "provider": {"S": "stripe"}, **extra}


def _write(before: Any, after: Any, *, operation: str = "PutItem:Put", **kwargs: Any) -> WriteRecord:
    defaults: dict[str, Any] = {"function": "ingest", "table": "inbox", "transactional": False, "succeeded": True}
    return WriteRecord(operation=operation, before=before, after=after, **(defaults | kwargs))


def test_a_stored_delivery_is_billed_on_its_item_and_its_index_entry():
    # Given an ingest put of a 2.5 KB item that enters the open-events index
    (row,) = _recorder(_write(None, _item(open_pk={"S": "pending#1"}))).billed()
    # Then the table write is 3 units, the index entry (no body) 1, and the write makes a stream record
    assert row["table_write_units"] == 3
    assert row["indexes"]["open"]["write_units"] == 1
    assert row["stream_record"] is True


def test_a_failed_conditional_put_is_billed_on_the_existing_item_and_moves_no_index():
    existing = _item(open_pk={"S": "pending#1"})
    (row,) = _recorder(_write(existing, existing, succeeded=False)).billed()
    assert row["table_write_units"] == 3
    assert (row["indexes"]["open"]["writes"], row["indexes"]["open"]["write_units"]) == (0, 0)
    assert row["stream_record"] is False


def test_a_transactional_status_change_is_billed_twice_on_the_whole_item_and_leaves_the_index():
    before = _item(open_pk={"S": "pending#1"}, status={"S": "pending"})
    after = _item(status={"S": "processed"})
    (row,) = _recorder(
        _write(before, after, operation="TransactWriteItems:Update", function="processor", transactional=True)
    ).billed()
    assert row["table_write_units"] == 6  # a 2.5 KB item: 3 units, x2 in a transaction
    assert row["indexes"]["open"]["writes"] == 1  # the entry removed from the sparse index
    assert row["indexes"]["open"]["write_units"] == 1


def test_a_stripe_body_is_padded_to_the_documented_size_and_stays_the_same_event():
    body = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded", "data": {"object": {"id": "pi_1"}}})
    padded = pad_stripe_body(body.encode(), STRIPE_DOCUMENTED_EVENT_BYTES)
    assert len(padded) == STRIPE_DOCUMENTED_EVENT_BYTES
    document = json.loads(padded)
    assert (document["id"], document["type"], document["data"]["object"]["id"]) == (
        "evt_1",
        "payment_intent.succeeded",
        "pi_1",
    )
    assert set(document["data"]["object"]["metadata"]) == {"padding"}
    # grown with the documented PaymentIntent's fields, so it compresses like Stripe's JSON (its documented example:
    # 1,863 bytes -> 671 with zlib), not like a run of one letter
    assert document["data"]["object"]["client_secret"].startswith("pi_")
    assert 0.3 < len(zlib.compress(padded, 6)) / len(padded) < 0.5
    # a body already larger is kept (re-indented, not cut)
    large = pad_stripe_body(padded, 100)
    assert json.loads(large) == document


def test_a_burst_counts_only_stored_deliveries_and_says_when_something_is_missing():
    whole = figures(10, {"stored": 10}, 2.0, stored=10)
    assert (whole["absorbed_per_s"], whole["nothing_lost"]) == (5.0, True)
    throttled = figures(10, {"stored": 8, "http_429": 2}, 2.0, stored=8)
    assert (throttled["absorbed_per_s"], throttled["nothing_lost"]) == (4.0, False)
    unlisted = figures(10, {"stored": 10}, 2.0, stored=9)  # answered 200 but an item is missing
    assert unlisted["nothing_lost"] is False


def test_the_processors_group_threads_are_the_processor():
    # Given the recorder once the functions are installed (the processor's group threads named `group_{n}`)
    recorder = Recorder(processor_threads=(f"{GROUP_THREAD_PREFIX}_",))
    seen: dict[str, Any] = {}

    def in_thread() -> None:
        seen["function"], seen["handler"] = recorder.function(), recorder.handler()

    # When a batch's group thread and a plumbing thread make calls
    for name in (f"{GROUP_THREAD_PREFIX}_0", "local-pipe"):
        thread = threading.Thread(target=in_thread, name=name)
        thread.start()
        thread.join()
        seen[name] = (seen["function"], seen["handler"])
    # Then the group thread's writes and log lines are the processor's, the Pipe's its own (and logs none)
    assert seen[f"{GROUP_THREAD_PREFIX}_0"] == ("processor", "processor")
    assert seen["local-pipe"] == ("dispatch pipe", None)
