"""The six invariants of a chaos run, as pure functions: each takes what the run collected and returns a verdict.

1. every event acknowledged with a 2xx is processed or ignored (a failed one only after the replay recovered it);
   an event is stored once under the key its body derives, except for a refetch-verified provider (Cielo, Zoop:
   docs/providers.md), whose body has no identity: each delivery is its own item, so there "stored once" reads
   "stored at least once" (its `hinted` payments), and every stored delivery must settle;
2. no payment transition was applied twice: a payment's `transitions` equals the number of its processed webhook
   events (plus the corrections its verifications applied), and every other write is accounted for (see
   `no_transition_applied_twice`);
3. every payment equals its gateway's truth;
4. the dead-letter queue holds nothing of this run after the replay;
5. every webhook the gateway sent was acknowledged in the end;
6. every applied transition is in the transactional outbox exactly once (sequences 1..transitions per payment).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox_cli.chaos.deliveries import SentWebhook
from inbox_cli.simulate import Truth, mismatches
from shared.payments.model import Payment

SETTLED = frozenset({"processed", "ignored"})


@dataclass
class Invariant:
    name: str
    ok: bool
    detail: str
    examples: list[Any] = field(default_factory=list)


def acknowledged_events_settled(
    acknowledged: Collection[str],
    statuses: Mapping[str, str],
    failed_before_replay: Collection[str],
    *,
    hinted: Collection[tuple[str, str]] = (),
    stored: Collection[tuple[str, str]] = (),
) -> Invariant:
    """`acknowledged`: the inbox keys of the webhooks answered 2xx; `statuses`: every inbox item's status now.

    A refetch-verified provider's notification has no key its body derives (each delivery is stored under its own):
    `hinted` is the (provider, payment) of each such notification answered 2xx, `stored` the (provider, payment) of
    every inbox item, and each hinted payment needs at least one stored delivery ("stored once" reads "at least
    once"); the caller puts every stored delivery of those payments in `acknowledged`, so each must settle. A repeat
    settles `ignored` (the refetch finds nothing new), so `no_transition_applied_twice` still holds for them."""
    unsettled = [
        {"pk": pk, "status": statuses.get(pk, "missing")}
        for pk in sorted(acknowledged)
        if statuses.get(pk) not in SETTLED
    ]
    unstored = [
        {"provider": provider, "resource_id": resource_id, "status": "no delivery stored"}
        for provider, resource_id in sorted(set(hinted) - set(stored))
    ]
    recovered = len(set(acknowledged) & set(failed_before_replay))
    return Invariant(
        "every acknowledged event is processed or ignored",
        not unsettled and not unstored,
        f"{len(acknowledged) - len(unsettled)}/{len(acknowledged)}"
        + (f" ({recovered} after the replay)" if recovered else "")
        + (f"; {len(unstored)} refetch-verified payments with no stored delivery" if unstored else ""),
        [*unsettled, *unstored],
    )


def no_transition_applied_twice(
    payments: Mapping[str, Payment | None],
    processed: Mapping[str, int],
    ignored: Mapping[str, int],
    ordered_by_event_time: Collection[str],
    verifications: Mapping[str, int] | None = None,
) -> Invariant:
    """Per payment key: its processed and ignored webhook events, whether its provider is ordered by event time, and
    the inbox's own verification items of it that settled (a payment confirmed from its signed payload).

    A payment's `transitions` must equal its processed webhook events. A refetched payment is written only by
    transitions, so its `version` equals them too. A payment ordered by event time (a provider without an API, or
    a payment a signed payload may confirm: a payload is applied by the event-time rules) is also written, without
    a transition, when an event newer than the last one states the status it already has (its watermark moves; the
    event is ignored): its `version` is at least its transitions and at most its transitions plus its ignored
    events. A payment confirmed from a payload is verified later: each verification item may apply the gateway's
    truth as one more transition (a correction), and the verification, by that item or by a later webhook's
    refetch, writes `verified` without a transition: at most one more transition per verification item, and at
    most one more write per verification item or ignored event."""
    verifications = verifications or {}
    doubled = []
    for key, payment in sorted(payments.items()):
        count = processed.get(key, 0)
        if payment is None:
            if count:
                doubled.append({"payment": key, "processed_events": count, "stored": None})
            continue
        verified_by = verifications.get(key, 0)
        extra_writes = payment.version - payment.transitions
        allowed = ignored.get(key, 0) if key in ordered_by_event_time or verified_by else 0
        if not count <= payment.transitions <= count + verified_by or not 0 <= extra_writes <= allowed + verified_by:
            doubled.append(
                {
                    "payment": key,
                    "processed_events": count,
                    "transitions": payment.transitions,
                    "version": payment.version,
                }
            )
    return Invariant(
        "no transition applied twice (transitions = processed)",
        not doubled,
        f"{len(payments) - len(doubled)}/{len(payments)} payments",
        doubled,
    )


def matches_the_gateway(truths: Iterable[Truth], payments: Mapping[str, Payment | None]) -> Invariant:
    found = mismatches(truths, payments)
    return Invariant(
        "every payment equals the gateway's truth",
        not found,
        f"{len(payments) - len(found)}/{len(payments)}",
        found,
    )


def dead_letter_queue_empty(drained: int, unrecovered: Sequence[dict[str, Any]]) -> Invariant:
    """`unrecovered`: the dead-lettered messages of this run whose event is still not settled."""
    return Invariant(
        "the dead-letter queue is empty after the replay",
        not unrecovered,
        f"{drained} drained, {len(unrecovered)} left",
        list(unrecovered),
    )


def every_webhook_acknowledged(webhooks: Sequence[SentWebhook]) -> Invariant:
    never = [
        {"provider": sent.provider, "resource_id": sent.resource_id, "statuses": sent.statuses}
        for sent in webhooks
        if not sent.acknowledged
    ]
    return Invariant(
        "every webhook sent was acknowledged in the end",
        not never,
        f"{len(webhooks) - len(never)}/{len(webhooks)}",
        never,
    )


def every_transition_in_the_outbox_once(
    payments: Mapping[str, Payment | None], outbox: Mapping[str, Sequence[int]]
) -> Invariant:
    """`outbox`: the sorted `payment.status_changed` sequences of each payment key."""
    unpublished = []
    for key, payment in sorted(payments.items()):
        expected = list(range(1, payment.transitions + 1)) if payment is not None else []
        if list(outbox.get(key, [])) != expected:
            unpublished.append({"payment": key, "outbox_sequences": list(outbox.get(key, [])), "expected": expected})
    return Invariant(
        "every transition in the outbox once (sequences 1..transitions)",
        not unpublished,
        f"{len(payments) - len(unpublished)}/{len(payments)} payments",
        unpublished,
    )
