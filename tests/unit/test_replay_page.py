"""The replay's page function (shared/replay.py): what it accepts, what it writes, what it reports. Against a
recording store; the writes themselves against moto are tests/integration/test_replay_workflow.py's."""

from __future__ import annotations

from typing import Any

import pytest

from shared.definitions import EventStatus
from shared.replay import MAX_PAGE_ITEMS, InvalidPage, entry, handle, parse_page

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:replay:run-1"


def _item(pk: str, event_type: str = "payment_intent.succeeded") -> dict[str, Any]:
    """An item as the workflow's Query returns it (DynamoDB's attribute-value form, the projection's attributes)."""
    return {
        "pk": {"S": pk},
        "event_type": {"S": event_type},
        "provider": {"S": "stripe"},
        "status": {"S": "failed"},
        "open_status": {"S": "failed#3"},
    }


class RecordingStore:
    """InboxStore.replay's contract: True when the event is pending by this execution's write."""

    def __init__(self, refused: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.refused = refused
        self.calls: list[tuple[str, EventStatus, str]] = []

    def replay(self, pk: str, *, selected: EventStatus, now: str, replayed_by: str) -> bool:
        assert now.endswith("Z")
        self.calls.append((pk, selected, replayed_by))
        return pk not in self.refused


def test_a_page_is_applied_in_order_and_each_event_reported_as_the_workflow_reports_it() -> None:
    # Given a page of three failed events, the second of which left the failed status since the Query read it
    store = RecordingStore(refused={"stripe#evt_2"})
    page = {"status": "failed", "execution": EXECUTION, "items": [_item(f"stripe#evt_{n}") for n in (1, 2, 3)]}
    # When the page function applies it
    entries = handle(page, store=store)  # type: ignore[arg-type]
    # Then each event got the replay write, in the page's order, for the selected status, as this execution
    assert store.calls == [(f"stripe#evt_{n}", EventStatus.FAILED, EXECUTION) for n in (1, 2, 3)]
    # And the outcomes are the workflow's entries: replayed, or skipped for the refused one
    assert entries == [
        {"pk": "stripe#evt_1", "event_type": "payment_intent.succeeded", "outcome": "replayed", "replayed": 1},
        {"pk": "stripe#evt_2", "event_type": "payment_intent.succeeded", "outcome": "skipped", "skipped": 1},
        {"pk": "stripe#evt_3", "event_type": "payment_intent.succeeded", "outcome": "replayed", "replayed": 1},
    ]
    assert entry("planned", "p", "t") == {"pk": "p", "event_type": "t", "outcome": "planned", "planned": 1}


def test_an_empty_page_writes_nothing() -> None:
    store = RecordingStore()
    assert handle({"status": "pending", "execution": EXECUTION, "items": []}, store=store) == []  # type: ignore[arg-type]
    assert store.calls == []


@pytest.mark.parametrize(
    ("page", "says"),
    [
        (None, "expected an object"),
        ({"status": "processed", "execution": EXECUTION, "items": []}, "status must be one of"),
        ({"status": "failed", "items": []}, "execution"),
        ({"status": "failed", "execution": EXECUTION, "items": "stripe#evt_1"}, "items must be a list"),
        ({"status": "failed", "execution": EXECUTION, "items": [_item("p")] * (MAX_PAGE_ITEMS + 1)}, "at most 100"),
        ({"status": "failed", "execution": EXECUTION, "items": [{"pk": {"S": "p"}}]}, "'event_type'"),
        ({"status": "failed", "execution": EXECUTION, "items": [{"pk": "p", "event_type": {"S": "t"}}]}, "'pk'"),
    ],
)
def test_what_is_not_a_page_is_refused_before_any_write(page: Any, says: str) -> None:
    # Given a payload that is not a page of the workflow, When it is handed to the function
    store = RecordingStore()
    # Then it is refused with an error that says what is wrong, and nothing was written
    with pytest.raises(InvalidPage, match=says):
        handle(page, store=store)  # type: ignore[arg-type]
    assert store.calls == []
    with pytest.raises(InvalidPage):
        parse_page(page)
