"""Confirming a payment from its signed payload when the source's refetches are behind; verifying it later.

The refetch is the truth (the webhook is a hint), but a source whose refetches are rate-limited far below its
webhooks (a sale's peak against a gateway's 25 reads a second) would leave a customer who paid waiting for hours.
A provider whose scheme binds the whole body, and whose body states the payment's status and a signed event time
(its catalog entry's `payload_status_from`), may instead have a payment confirmed from the payload, with the rules
the providers without an API use (event-time order, the state machine), and marked unverified. A verification item
written in the same transaction then refetches the payment in its FIFO group, within the source's rate limit
(shared/process/service.py); the sweeper verifies whatever stays unverified.

When (the source's `confirm_from_payload`, docs/sources.md):
- `never`: every event waits for its refetch (the only value for a provider that is not eligible);
- `always`: every eligible event is applied from its payload;
- `when_behind` (the default for an eligible provider): when the source is behind by `confirm_behind_seconds`:
  its next free refetch slot is further away than that (what its rate limiter saw last: its schedule, a 429's
  block, and an interval for each request it refused a slot and has not served since, the backlog its schedule,
  booked a second ahead, cannot show; read from memory, never written per event), or the event has already waited
  that long since receipt.

This module decides; it does no I/O of its own (the schedule is read from the limiter's memory).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple, Protocol

from shared.definitions import CONFIRM_ALWAYS, CONFIRM_NEVER, CONFIRM_WHEN_BEHIND, provider_entry
from shared.payments.status import PaymentStatus
from shared.process.decide import Observation
from shared.process.router import InboxEvent

# (event type, the status the stored event keeps) -> the canonical status value it states, or None.
PayloadStatus = Callable[[str, str | None], str | None]


class SlotSchedule(Protocol):
    """What a source's refetch rate limiter knows without asking the control table (shared/gateway/ratelimit.py)."""

    def next_free_at(self) -> float | None:
        """When the source's next refetch slot is free, as last seen (epoch seconds); None: never seen."""
        ...


class SourceConfirmation(NamedTuple):
    """One source's setting: when to confirm (CONFIRM_MODES), how far behind is behind, and its driver's reading of
    a payload (None: the provider is not eligible, nothing is confirmed from a payload)."""

    mode: str
    behind_seconds: float
    payload_status: PayloadStatus | None

    @property
    def confirms(self) -> bool:
        return self.mode != CONFIRM_NEVER and self.payload_status is not None


def is_behind(
    setting: SourceConfirmation, *, now: float, received_at: float | None, next_free_at: float | None
) -> bool:
    """Whether an event of this source is applied from its payload now (see the module's docstring)."""
    if not setting.confirms:
        return False
    if setting.mode == CONFIRM_ALWAYS:
        return True
    if setting.mode != CONFIRM_WHEN_BEHIND:
        return False
    if next_free_at is not None and next_free_at - now > setting.behind_seconds:
        return True
    return received_at is not None and now - received_at >= setting.behind_seconds


def payload_observation(event: InboxEvent, payload_status: PayloadStatus) -> Observation | None:
    """The payment as the event's signed payload states it, unverified and ordered by event time; None when the
    event states no status a payment may be confirmed with (its type, a thin event) or names no payment."""
    if not event.resource_id or not event.occurred_at:
        return None
    stated = payload_status(event.event_type, event.provider_status)
    if stated is None:
        return None
    return Observation(
        source=event.source,
        provider=event.provider,
        resource_id=event.resource_id,
        status=PaymentStatus(stated),
        provider_status=event.provider_status,
        amount=event.amount,
        currency=event.currency,
        amount_refunded=0,
        event_id=event.event_id,
        event_occurred_at=event.occurred_at,
        ordered_by_event_time=True,
        account=event.account,
        verified=False,
    )


def epoch_of(stamp: str | None) -> float | None:
    """An ISO-8601 UTC stamp of the inbox (`received_at`) as epoch seconds; None when absent or unreadable."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class PayloadConfirmation:
    """The processor's view of the sources' settings and rate limits: which events to apply from their payload."""

    def __init__(
        self,
        setting_of: Callable[[str], SourceConfirmation | None],
        schedule_of: Callable[[str], SlotSchedule | None] = lambda source: None,
    ) -> None:
        self._setting_of = setting_of
        self._schedule_of = schedule_of

    def _setting(self, event: InboxEvent) -> SourceConfirmation | None:
        setting = self._setting_of(event.source)
        return setting if setting is not None and setting.confirms else None

    def now(self, event: InboxEvent, *, now: float) -> Observation | None:
        """The event's payload observation when its source confirms from payloads and is behind; else None (the
        event is refetched as usual)."""
        setting = self._setting(event)
        if setting is None or setting.payload_status is None:
            return None
        schedule = self._schedule_of(event.source) if setting.mode == CONFIRM_WHEN_BEHIND else None
        behind = is_behind(
            setting,
            now=now,
            received_at=epoch_of(event.received_at),
            next_free_at=schedule.next_free_at() if schedule is not None else None,
        )
        return payload_observation(event, setting.payload_status) if behind else None

    def instead_of_waiting(self, event: InboxEvent, retry_after: float | None) -> Observation | None:
        """The event's payload observation when the source's rate limit just said its next slot is further away than
        the source's `confirm_behind_seconds` (a `when_behind` source: behind, by what the limiter holds)."""
        setting = self._setting(event)
        if setting is None or setting.payload_status is None or setting.mode != CONFIRM_WHEN_BEHIND:
            return None
        if retry_after is None or retry_after <= setting.behind_seconds:
            return None
        return payload_observation(event, setting.payload_status)


def declared_confirmation() -> PayloadConfirmation:
    """The deployment's: each declared source's setting (sources.json), its provider's payload reading (the catalog's
    `payload_status_from`: a function of its gateway module, imported with the first event of an eligible source)
    and its refetch rate limiter."""
    from shared.gateway.registry import gateway_client, payload_reader  # noqa: PLC0415 - the processor's, built
    from shared.sources import declared_sources  # noqa: PLC0415

    settings: dict[str, SourceConfirmation | None] = {}

    def setting_of(source: str) -> SourceConfirmation | None:
        if source not in settings:
            spec = declared_sources().by_name.get(source)
            entry = provider_entry(spec.provider) if spec is not None else None
            if spec is None or entry is None or entry.payload_status_from is None:
                settings[source] = None
            else:
                reader = payload_reader(entry.payload_status_from)
                settings[source] = SourceConfirmation(spec.confirm_mode, float(spec.behind_seconds), reader)
        return settings[source]

    def schedule_of(source: str) -> SlotSchedule | None:
        client = gateway_client(source)
        schedule = getattr(client, "rate_limiter", None)
        return schedule if schedule is not None and hasattr(schedule, "next_free_at") else None

    return PayloadConfirmation(setting_of, schedule_of)
