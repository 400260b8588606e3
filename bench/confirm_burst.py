"""Confirm from the payload, verify from the API: how long a payment waits for its correct status when the gateway
allows one read per second, with the source's `confirm_from_payload` set to `never` and then to `when_behind`.

- Each mode runs on a local stack of its own (bench/end_to_end.py's `own_stack`), one after the other, with the same
  seed: its `stripe` source declared with `refetch_rate_per_second: LIMIT` (a sources.json of its own,
  INBOX_SOURCES_FILE) and the mode, its gateway simulator answering 429 above LIMIT requests per second
  (`POST /_sim/faults {"rate_limit_per_second"}`).
- PAYMENTS Stripe payments, each created then succeeded at the simulator (`payment_intent.created`, then
  `payment_intent.succeeded` in a later second of event time, so that the two never share a second), their webhooks
  in the simulator's own shapes, each signed as it is sent and all posted at once by SENDERS connections through
  the stack's front door, a payment's webhooks one after the other.
- The simulator moves some payments on (SHARES of them), so that the payload and the API disagree:
  - `refunded_after` (10%): refunded in full right after its `payment_intent.succeeded` is answered, its
    `charge.refunded` delivered next, as Stripe sends it (paid -> refunded: a forward transition);
  - `refunded_unannounced` (1%): refunded before its webhooks arrive, and no webhook says so (a delivery lost):
    only the API knows; the payload's `paid` is behind it, and a refetch must correct it;
  - `refunded_first` (4%): refunded before its webhooks arrive, its `charge.refunded` delivered first: the
    `created` and `succeeded` payloads that follow would be regressions (pending, paid after refunded) and must not
    be applied.
- The truth is the simulator's final state of each payment (`GET /_sim/payments` after the run). A payment's
  correct status is that truth: the figures count from the payment's first webhook POST to the first moment from
  which the payments table shows it for good (`to_correct`), and the same with the payment not marked unverified
  (`verified` not false: `to_verified`); also to the first status other than pending or authorized, right or wrong
  (`to_confirmed`: what a consumer first acts on). A poller reads every payment (BatchGetItem, consistent) every
  POLL_SECONDS, recording when each one's (status, verified) changes; the times are those of the reads, so each is
  late by up to a poll's period.
- Also per mode: the gateway's requests in each one-second window (the simulator's count, its 429s included: the
  maximum and the windows above the limit plus the limiter's burst, which must be none), the corrections (payments
  whose status changed after it was first confirmed), and the payments whose final state differs from the gateway's
  truth (must be none).
- The figure: `when_behind`'s p99 to the correct status over `never`'s (at most 1/5 is the target). Until the
  source option exists (the sources.json parser refuses it), `when_behind` is reported not available and `never` is
  measured alone.

`python -m bench confirm_burst` runs it alone (about 6 minutes a mode at the defaults: 240 payments at 1 read per
second is at least 240 s of refetching); `python -m bench --quick confirm_burst` runs a smoke-test size.
"""

from __future__ import annotations

import http.client
import json
import queue
import random
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from bench.end_to_end import Stack, own_stack
from bench.refetch_burst import _call, inbox_items, limiter_item, post_one
from bench.stats import percentile

PROVIDER = "stripe"
PAYMENTS = 240
QUICK_PAYMENTS = 24
LIMIT = 1.0
SENDERS = 8
SEED = 29
POLL_SECONDS = 0.25
SETTLED_CHECK_SECONDS = 2.0  # the inbox's items (are all events settled?) are read this often, not every poll
MODE_TIMEOUT_SECONDS = 900  # a mode that never settles reports what it saw, it does not hang the bench
BEHIND_SECONDS = 30  # the source's `confirm_behind_seconds` when the mode is not `never` (the option's default)
# How many payments the simulator moves on, by kind (see the module's docstring).
SHARES = {"refunded_after": 0.10, "refunded_unannounced": 0.01, "refunded_first": 0.04}
MODES = ("never", "when_behind")
TARGET_RATIO = 0.2  # when_behind's p99 to the correct status at most a fifth of never's
AMOUNTS = (990, 4990, 25050)
PERCENTILES = (50, 99)
# Statuses a consumer does not act on (shared/payments/status.py INTERMEDIATE_STATUSES, spelled out to keep this
# module's pure part importable without the project's runtime).
NOT_CONFIRMED = frozenset({"pending", "authorized"})


# ------------------------------------------------------------------------------------------- the pure figures


class Seen(NamedTuple):
    """One change the poller saw in a payment's row: when (epoch s), its status (None: no row yet), and its
    `verified` flag (None: absent, which counts as verified)."""

    at: float
    status: str | None
    verified: bool | None


def settled_since(timeline: Sequence[Seen], good: Callable[[Seen], bool]) -> float | None:
    """The first moment from which every observation is `good` (the timeline in time order); None when the last
    one is not."""
    since: float | None = None
    for seen in timeline:
        if not good(seen):
            since = None
        elif since is None:
            since = seen.at
    return since


def to_correct(timeline: Sequence[Seen], truth: str) -> float | None:
    """When the payment showed its correct status for good."""
    return settled_since(timeline, lambda seen: seen.status == truth)


def to_verified(timeline: Sequence[Seen], truth: str) -> float | None:
    """When the payment showed its correct status for good, not marked unverified."""
    return settled_since(timeline, lambda seen: seen.status == truth and seen.verified is not False)


def first_confirmed(timeline: Sequence[Seen]) -> Seen | None:
    """The first observation of a status a consumer acts on (neither absent, pending nor authorized)."""
    return next((seen for seen in timeline if seen.status is not None and seen.status not in NOT_CONFIRMED), None)


def corrected(timeline: Sequence[Seen]) -> bool:
    """Whether the status changed after it was first confirmed."""
    first = first_confirmed(timeline)
    return first is not None and any(seen.status != first.status for seen in timeline if seen.at > first.at)


def latencies(
    timelines: Mapping[str, Sequence[Seen]],
    started: Mapping[str, float],
    truths: Mapping[str, str],
    moment: Callable[[Sequence[Seen], str], float | None],
) -> tuple[list[float], int]:
    """Seconds from each payment's first POST to `moment` (to_correct, to_verified); and how many payments never
    reached it."""
    seconds, missing = [], 0
    for payment, truth in truths.items():
        at = moment(timelines.get(payment, ()), truth)
        if at is None or payment not in started:
            missing += 1
        else:
            seconds.append(at - started[payment])
    return seconds, missing


def summary(seconds: Sequence[float], missing: int = 0) -> dict[str, Any]:
    """p50, p99 and max in seconds (None when nothing reached it), and how many never did."""
    figures: dict[str, Any] = {f"p{q}_s": round(percentile(seconds, q), 2) if seconds else None for q in PERCENTILES}
    return figures | {"max_s": round(max(seconds), 2) if seconds else None, "count": len(seconds), "missing": missing}


def gateway_windows(
    per_second: Iterable[Mapping[str, Any]], *, provider: str, limit: float, burst: int
) -> dict[str, Any]:
    """The gateway's requests per one-second window (its own counts, 429s included): the busiest, and the windows
    above the limit plus the limiter's burst (the most a GCRA admits in one second)."""
    counts = [(int(s["requests"]), int(s["throttled"])) for s in per_second if s["provider"] == provider]
    bound = limit + burst
    return {
        "requests": sum(requests for requests, _ in counts),
        "throttled_429": sum(throttled for _, throttled in counts),
        "windows": len(counts),
        "per_second_max": max((requests for requests, _ in counts), default=0),
        "bound_per_second": bound,
        "windows_over_bound": sum(1 for requests, _ in counts if requests > bound),
    }


def mismatches(final: Mapping[str, Mapping[str, Any] | None], truths: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The payments whose row (status, amount, amount refunded) differs from the gateway's truth, or is missing."""
    wrong = []
    for payment, truth in truths.items():
        row = final.get(payment)
        expected = (truth["status"], int(truth["amount"]), int(truth.get("amount_refunded", 0)))
        if row is None or (row["status"], int(row["amount"]), int(row.get("amount_refunded", 0))) != expected:
            wrong.append(payment)
    return sorted(wrong)


def mode_figures(
    timelines: Mapping[str, Sequence[Seen]],
    started: Mapping[str, float],
    truths: Mapping[str, Mapping[str, Any]],
    kinds: Mapping[str, str],
) -> dict[str, Any]:
    """A mode's latency figures and corrections from the recorded timelines (payment -> its changes in time order),
    the first POST of each payment, the gateway's truths and each payment's kind (`agreed` or how it was moved)."""
    statuses = {payment: str(truth["status"]) for payment, truth in truths.items()}
    confirmed: dict[str, float] = {}
    for payment in statuses:
        first = first_confirmed(timelines.get(payment, ()))
        if first is not None and payment in started:
            confirmed[payment] = first.at - started[payment]
    by_kind: dict[str, Any] = {}
    for kind in sorted(set(kinds.values())):
        members = {payment: status for payment, status in statuses.items() if kinds.get(payment) == kind}
        by_kind[kind] = {
            "payments": len(members),
            "to_correct": summary(*latencies(timelines, started, members, to_correct)),
        }
    wrong_first = [
        payment
        for payment, status in statuses.items()
        if (first := first_confirmed(timelines.get(payment, ()))) is not None and first.status != status
    ]
    return {
        "to_correct": summary(*latencies(timelines, started, statuses, to_correct)),
        "to_verified": summary(*latencies(timelines, started, statuses, to_verified)),
        "to_confirmed": summary(list(confirmed.values()), len(statuses) - len(confirmed)),
        "to_correct_by_kind": by_kind,
        "corrections": sum(1 for payment in statuses if corrected(timelines.get(payment, ()))),
        "first_confirmed_wrong": len(wrong_first),
    }


def p99_ratio(when_behind: Mapping[str, Any] | None, never: Mapping[str, Any]) -> float | None:
    """when_behind's p99 to the correct status over never's; None when either is missing."""
    if not when_behind or not when_behind.get("available"):
        return None
    behind, base = when_behind["to_correct"]["p99_s"], never["to_correct"]["p99_s"]
    return round(behind / base, 3) if behind is not None and base else None


# --------------------------------------------------------------------------------------------------- the run


def source_entry(mode: str, limit: float) -> dict[str, Any]:
    """The stack's `stripe` source. The mode is written whenever sources.json takes the options (`never` too: once
    they exist, an eligible provider's default is `when_behind`); without them, the behaviour is `never`'s."""
    entry: dict[str, Any] = {"name": PROVIDER, "provider": PROVIDER, "refetch_rate_per_second": limit}
    with_mode = entry | {"confirm_from_payload": mode, "confirm_behind_seconds": BEHIND_SECONDS}
    return with_mode if _parses(with_mode) else entry


def supports_confirm_from_payload() -> bool:
    """Whether sources.json takes `confirm_from_payload` and `confirm_behind_seconds` (its parser refuses options
    it does not know)."""
    return "confirm_from_payload" in source_entry("when_behind", LIMIT)


def _parses(entry: dict[str, Any]) -> bool:
    from shared.definitions import SourcesInvalid, parse_sources  # noqa: PLC0415

    try:
        parse_sources([entry])
    except SourcesInvalid:
        return False
    return True


@dataclass
class Payment:
    resource_id: str
    kind: str  # agreed, refunded_after, refunded_unannounced, refunded_first
    webhooks: list[tuple[bytes, int]]  # (body, event time) in delivery order


def choose_kinds(count: int, rng: random.Random) -> list[str]:
    """Each payment's kind, drawn once from the seed (the same for both modes)."""
    shares = SHARES
    kinds = ["agreed"] * count
    order = rng.sample(range(count), count)
    for kind, share in shares.items():
        for _ in range(max(1, round(count * share)) if share else 0):
            if order:
                kinds[order.pop()] = kind
    return kinds


def _next_second() -> None:
    """Sleep into the next second of the clock, so that the following events' times are a second later."""
    time.sleep(int(time.time()) + 1.05 - time.time())


def create_payments(stack: Stack, kinds: Sequence[str], rng: random.Random) -> list[Payment]:
    """Each payment created, then succeeded a second later in event time (the refunded_first and unannounced ones
    refunded a second after that), with the webhooks the simulator rendered for each step."""
    port, payments = stack.gateway_port, []
    for kind in kinds:
        created = _call(port, "POST", "/_sim/payments", {"provider": PROVIDER, "amount": rng.choice(AMOUNTS)})
        payments.append(Payment(created["id"], kind, [_webhook(w) for w in created["webhooks"]]))
    _next_second()
    for payment in payments:
        payment.webhooks += _transition(stack, payment.resource_id, "paid")
    _next_second()
    for payment in payments:
        if payment.kind == "refunded_first":
            payment.webhooks = _transition(stack, payment.resource_id, "refunded") + payment.webhooks
        elif payment.kind == "refunded_unannounced":
            _transition(stack, payment.resource_id, "refunded")  # a webhook that never arrives
    return payments


def _webhook(rendered: Mapping[str, Any]) -> tuple[bytes, int]:
    return str(rendered["body"]).encode(), int(rendered["occurred_at"])


def _transition(stack: Stack, resource_id: str, status: str) -> list[tuple[bytes, int]]:
    answer = _call(
        stack.gateway_port, "POST", f"/_sim/payments/{PROVIDER}/{resource_id}/transition", {"status": status}
    )
    return [_webhook(w) for w in answer["webhooks"]]


@dataclass
class Deliveries:
    started: dict[str, float] = field(default_factory=dict)  # payment -> its first POST (epoch s)
    answers: Counter[int] = field(default_factory=Counter)
    event_ids: list[str] = field(default_factory=list)


def deliver(stack: Stack, payments: Sequence[Payment], senders: int) -> Deliveries:
    """Every payment's webhooks posted one after the other on one of `senders` connections, each signed as it is
    sent; a refunded_after payment refunded at the simulator once its `succeeded` is answered, and that refund's
    webhook posted next."""
    from inbox_cli.simulate import wire  # noqa: PLC0415
    from inbox_local.config import signing_secret  # noqa: PLC0415

    secret, result, lock = signing_secret(PROVIDER), Deliveries(), threading.Lock()
    jobs: queue.Queue[Payment | None] = queue.Queue()
    for payment in payments:
        jobs.put(payment)
    for _ in range(senders):
        jobs.put(None)

    def send() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", stack.api_port, timeout=60)
        while (payment := jobs.get()) is not None:
            webhooks = list(payment.webhooks)
            while webhooks:
                body, event_time = webhooks.pop(0)
                request = wire.signed(PROVIDER, body, secret, event_time=event_time, ordered_by_event_time=False)
                sent = time.time()
                status, connection = post_one(stack, connection, request.body, request.headers)
                with lock:
                    result.started.setdefault(payment.resource_id, sent)
                    result.answers[status] += 1
                    result.event_ids.append(json.loads(body)["id"])
                if payment.kind == "refunded_after" and json.loads(body)["type"] == "payment_intent.succeeded":
                    webhooks += _transition(stack, payment.resource_id, "refunded")
        connection.close()

    threads = [threading.Thread(target=send, name=f"confirm-burst-send-{n}") for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return result


class Poller:
    """Reads every payment's row every `period` seconds (BatchGetItem, consistent) and records its changes."""

    def __init__(self, stack: Stack, resource_ids: Sequence[str], period: float) -> None:
        from inbox_local.config import LocalNames  # noqa: PLC0415

        self.dynamodb, self.table = stack.dynamodb(), LocalNames().payments_table
        self.keys = [{"pk": {"S": f"{PROVIDER}#{resource_id}"}} for resource_id in resource_ids]
        self.period = period
        self.timelines: dict[str, list[Seen]] = {resource_id: [] for resource_id in resource_ids}
        self.rows: dict[str, dict[str, Any]] = {}
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="confirm-burst-poll", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.poll()  # one last look, after everything settled

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.period)

    def poll(self) -> None:
        rows: dict[str, dict[str, Any]] = {}
        for start in range(0, len(self.keys), 100):
            request: dict[str, Any] = {self.table: {"Keys": self.keys[start : start + 100], "ConsistentRead": True}}
            while request:
                response = self.dynamodb.batch_get_item(RequestItems=request)
                for item in response["Responses"].get(self.table, []):
                    rows[item["pk"]["S"].split("#", 1)[1]] = item
                request = dict(response.get("UnprocessedKeys") or {})
        seen_at = time.time()
        self.reads += 1
        for resource_id, timeline in self.timelines.items():
            row = rows.get(resource_id)
            status = row["status"]["S"] if row else None
            verified = row["verified"]["BOOL"] if row and "verified" in row else None
            if not timeline or (timeline[-1].status, timeline[-1].verified) != (status, verified):
                timeline.append(Seen(seen_at, status, verified))
        self.rows = {
            resource_id: {
                "status": item["status"]["S"],
                "amount": int(item["amount"]["N"]),
                "amount_refunded": int(item.get("amount_refunded", {}).get("N", 0)),
            }
            for resource_id, item in rows.items()
        }


def _done(poller: Poller, truths: Mapping[str, str]) -> bool:
    """Every payment shows its truth, not marked unverified."""
    return all(
        bool(timeline) and timeline[-1].status == truths[payment] and timeline[-1].verified is not False
        for payment, timeline in poller.timelines.items()
    )


def run_mode(mode: str, payments: int, *, limit: float = LIMIT, seed: int = SEED) -> dict[str, Any]:
    """One mode on a stack of its own; `{"available": False, ...}` when the source option does not exist yet."""
    from shared.gateway.ratelimit import burst_size  # noqa: PLC0415

    if mode != "never" and not supports_confirm_from_payload():
        return {"available": False, "reason": "sources.json does not take confirm_from_payload in this version"}
    rng = random.Random(seed)
    kinds = choose_kinds(payments, rng)
    with tempfile.TemporaryDirectory(prefix="inbox-confirm-burst-") as folder:
        sources = Path(folder) / "sources.json"
        sources.write_text(json.dumps([source_entry(mode, limit)]))
        with own_stack({"INBOX_SOURCES_FILE": str(sources)}) as stack:
            _call(stack.gateway_port, "POST", "/_sim/faults", {"rate_limit_per_second": limit})
            created = create_payments(stack, kinds, rng)
            poller = Poller(stack, [p.resource_id for p in created], POLL_SECONDS)
            _next_second()  # a refund after a succeeded webhook falls in a later second of event time
            _call(stack.gateway_port, "POST", "/_sim/stats/rate/reset")
            poller.start()
            began = time.time()
            delivered = deliver(stack, created, SENDERS)
            posted = time.time()
            truths = _truths(stack, created)
            statuses = {payment: truth["status"] for payment, truth in truths.items()}
            deadline, settled, next_check = time.monotonic() + MODE_TIMEOUT_SECONDS, False, 0.0
            while time.monotonic() < deadline:
                if _done(poller, statuses) and time.monotonic() >= next_check:
                    items = inbox_items(stack, PROVIDER, delivered.event_ids)
                    settled = len(items) == len(delivered.event_ids) and all(
                        item["status"]["S"] != "pending" for item in items
                    )
                    if settled:
                        break
                    next_check = time.monotonic() + SETTLED_CHECK_SECONDS
                time.sleep(POLL_SECONDS)
            finished = time.time()
            poller.stop()
            truths = _truths(stack, created)
            per_second = _call(stack.gateway_port, "GET", "/_sim/stats/rate")["seconds"]
            limiter = limiter_item(stack)
            events = inbox_items(stack, PROVIDER, delivered.event_ids)
    wrong = mismatches(poller.rows, truths)
    kind_of = {p.resource_id: p.kind for p in created}
    return {
        "available": True,
        "mode": mode,
        "option_written": "confirm_from_payload" in source_entry(mode, limit),
        **mode_figures(poller.timelines, delivered.started, truths, kind_of),
        "gateway": gateway_windows(per_second, provider=PROVIDER, limit=limit, burst=burst_size(limit)),
        "mismatched_payments": len(wrong),
        "mismatched_examples": [{"payment": p, "kind": kind_of[p], "truth": truths[p]["status"]} for p in wrong[:5]],
        "settled": settled,
        "events": len(delivered.event_ids),
        "event_statuses": dict(Counter(item["status"]["S"] for item in events)),
        "answers": {str(k): v for k, v in sorted(delivered.answers.items())},
        "post_seconds": round(posted - began, 1),
        "seconds": round(finished - began, 1),
        "poll_reads": poller.reads,
        "poll_period_s": round((finished - began) / max(1, poller.reads), 2),  # a read's own time included
        "limiter": limiter,
    }


def _truths(stack: Stack, created: Sequence[Payment]) -> dict[str, dict[str, Any]]:
    ids = {p.resource_id for p in created}
    return {
        truth["resource_id"]: truth
        for truth in _call(stack.gateway_port, "GET", "/_sim/payments")
        if truth["provider"] == PROVIDER and truth["resource_id"] in ids
    }


def measure(payments: int = PAYMENTS, limit: float = LIMIT, modes: Sequence[str] = MODES) -> dict[str, Any]:
    """Each mode in turn, the same seed; the ratio of their p99s to the correct status."""
    results: dict[str, Any] = {
        "payments": payments,
        "limit_per_second": limit,
        "senders": SENDERS,
        "seed": SEED,
        "poll_seconds": POLL_SECONDS,
        "shares": SHARES,
    }
    for mode in modes:
        print(f"  confirm_from_payload {mode}: {payments} payments, gateway at {limit:g} read/s...", flush=True)
        results[mode] = run_mode(mode, payments, limit=limit)
    never = results.get("never")
    ratio = p99_ratio(results.get("when_behind"), never) if never else None
    modes_run = [results[mode] for mode in modes if results[mode].get("available")]
    results |= {
        "p99_to_correct_when_behind_vs_never": ratio,
        "target_ratio": TARGET_RATIO,
        "target_met": None if ratio is None else ratio <= TARGET_RATIO,
        "ok": bool(modes_run)
        and all(
            run["mismatched_payments"] == 0 and run["gateway"]["windows_over_bound"] == 0 and run["settled"]
            for run in modes_run
        ),
    }
    return results
