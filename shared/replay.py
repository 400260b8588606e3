"""One page of a replay, applied: what the replay workflow's page task (functions/replay) does.

The workflow (infra/replay_definition.py) selects a page of events from the open-events index and hands it here
whole, so that Step Functions bills one state for the page instead of one per event. Each event gets the inbox
lifecycle's replay write (`InboxStore.replay`: back to pending with a fresh dispatch id, conditioned on the event
still being in the selected status and not already replayed by this execution), one at a time in the page's
order, as the workflow's per-event Map did. The result is the page's outcome entries, in the workflow's shape:
``{"pk", "event_type", "outcome": "replayed" | "skipped", "<outcome>": 1}``.

Safe to apply again: a page task that fails halfway (a crash, a timeout, DynamoDB throttling past the SDK's
retries) is retried whole by the state machine. The events its first attempt set back to pending carry this
execution's ``replayed_by``, so the lifecycle's condition refuses them this time (nothing is written or
dispatched twice) and they are reported ``replayed``, as the first attempt did; an event that left the selected
status otherwise is ``skipped``.

The input is what the workflow sends (``status``, ``execution``, ``items`` as the Query returned them, in
DynamoDB's attribute-value form); anything else is refused with `InvalidPage` before a write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from shared.definitions import ENV_INBOX_TABLE, REPLAYABLE_STATUSES, EventStatus
from shared.inbox.model import iso_utc
from shared.inbox.store import InboxStore
from shared.observability import logger
from shared.roots import SHARED_CLIENTS, AwsClients, Root, Wrap, unwrapped
from shared.settings import EnvironmentSettings, text

# The page bound of the workflow (infra/replay_definition.MAX_PAGE_SIZE), held here too: a page is work an
# operator's input sizes, and the function does not trust it to be small.
MAX_PAGE_ITEMS: Final = 100


class InvalidPage(ValueError):
    """The payload is not a page of the replay workflow."""


def _text(item: Any, name: str) -> str:
    value = item.get(name) if isinstance(item, dict) else None
    text = value.get("S") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text:
        raise InvalidPage(f"each item needs a string attribute {name!r}")
    return text


def parse_page(event: Any) -> tuple[EventStatus, str, list[tuple[str, str]]]:
    """The selected status, the execution's ARN and the page's (pk, event_type) pairs, or InvalidPage."""
    if not isinstance(event, dict):
        raise InvalidPage("expected an object {status, execution, items}")
    status, execution, items = event.get("status"), event.get("execution"), event.get("items")
    if status not in {selectable.value for selectable in REPLAYABLE_STATUSES}:
        raise InvalidPage(f"status must be one of {sorted(s.value for s in REPLAYABLE_STATUSES)}")
    if not isinstance(execution, str) or not execution:
        raise InvalidPage("execution must be the execution's ARN")
    if not isinstance(items, list) or len(items) > MAX_PAGE_ITEMS:
        raise InvalidPage(f"items must be a list of at most {MAX_PAGE_ITEMS}")
    return EventStatus(status), execution, [(_text(item, "pk"), _text(item, "event_type")) for item in items]


def entry(outcome: str, pk: str, event_type: str) -> dict[str, Any]:
    """An outcome entry as the workflow reports it (a marker key named after the outcome, which its counts read)."""
    return {"pk": pk, "event_type": event_type, "outcome": outcome, outcome: 1}


def replay_page(event: Any, *, store: InboxStore, now: Callable[[], str]) -> list[dict[str, Any]]:
    """Apply the replay write to each event of the page, in order; their outcome entries, in the same order."""
    status, execution, items = parse_page(event)
    entries = []
    for pk, event_type in items:
        replayed = store.replay(pk, selected=status, now=now(), replayed_by=execution)
        entries.append(entry("replayed" if replayed else "skipped", pk, event_type))
    return entries


@dataclass(frozen=True, slots=True)
class ReplaySettings(EnvironmentSettings):
    inbox_table: str = text(ENV_INBOX_TABLE)


def utc_now() -> str:
    return iso_utc(datetime.now(UTC))


def build_replay_store(
    settings: ReplaySettings, *, clients: AwsClients = SHARED_CLIENTS, wrap: Wrap = unwrapped
) -> InboxStore:
    """The replay page task's composition root: the inbox store on the table of `settings`, which `wrap` is
    applied to. Its only collaborator: the page's writes are the inbox lifecycle's (`InboxStore.replay`)."""
    return wrap(InboxStore(settings.inbox_table, dynamodb=clients.dynamodb))


def replay_store_from_environ(wrap: Wrap = unwrapped) -> InboxStore:
    """The page task's root as the Lambda builds it: its settings from the environment, the shared AWS clients."""
    return build_replay_store(ReplaySettings.from_environ(), wrap=wrap)


# The handler's: built once per Lambda instance, at the first page.
default_replay_store: Root[InboxStore] = Root(replay_store_from_environ)


def handle(event: Any, store: InboxStore | None = None) -> list[dict[str, Any]]:
    """The page task's entry point: the page applied to the inbox table of the function's settings."""
    store = store or default_replay_store()
    entries = replay_page(event, store=store, now=utc_now)
    replayed = sum(1 for entry in entries if entry["outcome"] == "replayed")
    # Which events were replayed is in the execution's history (the task's output); the log says how many.
    logger.debug("replay page", extra={"replayed": replayed, "skipped": len(entries) - replayed})
    return entries
