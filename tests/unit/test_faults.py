"""The local stack's fault injection (inbox_local/faults.py) and the chaos schedule (inbox_cli/chaos/), without a
stack: the draws, the wrappers, the admin route, the schedule's reproducibility, the report."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from inbox_cli.chaos.deliveries import DeliveryLog
from inbox_cli.chaos.invariants import Invariant
from inbox_cli.chaos.report import ChaosReport, ProviderFigures, render_chaos
from inbox_cli.chaos.schedule import UNKNOWN_UNTIL_REVEALED, build_schedule
from inbox_cli.simulate import Delivery
from inbox_local.faults import ADMIN_PATH, FaultInjector, FaultKind, InjectedCrash, keyed_draw
from inbox_local.gateway_simulator import GatewaySimulator
from shared.inbox.lifecycle import IgnoredReason
from shared.inbox.model import EventStatus
from shared.inbox.store import InboxStore, PutOutcome, StorageUnavailable
from shared.payments.store import ProcessingStore


class FakePipe:
    def __init__(self) -> None:
        self.paused = False
        self.pauses = 0

    def pause(self) -> None:
        self.paused = True
        self.pauses += 1

    def resume(self) -> None:
        self.paused = False


class RecordingDynamoDB:
    def __init__(self) -> None:
        self.puts: list[dict[str, Any]] = []

    def put_item(self, **kwargs: Any) -> dict[str, Any]:
        self.puts.append(kwargs)
        return {}


class RecordingProcessingStore(ProcessingStore):
    def __init__(self) -> None:
        super().__init__("inbox", "payments")
        self.settled: list[str] = []
        self.reasons: list[Any] = []

    def settle(
        self, event_pk, outcome, *, now, note, payment=None, expected_version=None, ignored_reason=None, **_
    ) -> None:
        self.settled.append(event_pk)
        self.reasons.append(ignored_reason)


class RecordingSqs:
    def __init__(self) -> None:
        self.visibility: list[tuple[str, int]] = []

    def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> None:
        self.visibility.append((ReceiptHandle, VisibilityTimeout))


def settle(store: ProcessingStore, pk: str) -> None:
    store.settle(pk, EventStatus.PROCESSED, now="2026-01-01T00:00:00Z", note="test")


# ------------------------------------------------------------------------------------------------ the draws


def test_a_keyed_draw_depends_only_on_its_arguments():
    first = keyed_draw(7, "ingest_throttle", "stripe#evt_1", 1)
    assert first == keyed_draw(7, "ingest_throttle", "stripe#evt_1", 1)
    assert 0.0 <= first < 1.0
    assert len({keyed_draw(7, "ingest_throttle", "stripe#evt_1", n) for n in range(1, 50)}) == 49
    assert first != keyed_draw(8, "ingest_throttle", "stripe#evt_1", 1)


def test_the_same_seed_takes_the_same_decisions_whatever_order_the_keys_come_in():
    # Given two injectors with the same seed and rate
    keys = [f"stripe#evt_{i}" for i in range(200)]
    decisions = []
    for order in (keys, list(reversed(keys))):
        injector = FaultInjector(seed=3)
        injector.configure({"ingest_throttle_rate": 0.3})
        # When the same keys are drawn for (twice each) in opposite orders
        taken = {(key, n): injector.should_inject(FaultKind.INGEST_THROTTLE, key) for n in (1, 2) for key in order}
        decisions.append((taken, injector.counters()["ingest_throttle"]))
    # Then each (key, occurrence) gets the same decision, and about the asked share is injected and counted
    assert decisions[0] == decisions[1]
    injected = decisions[0][1]
    assert injected == sum(decisions[0][0].values())
    assert 80 <= injected <= 160


def test_a_rate_of_zero_never_injects_and_one_always_does():
    injector = FaultInjector()
    assert not any(injector.should_inject(FaultKind.CRASH_AFTER_COMMIT, f"k{i}") for i in range(100))
    injector.configure({"crash_after_commit_rate": 1})
    assert all(injector.should_inject(FaultKind.CRASH_AFTER_COMMIT, f"k{i}") for i in range(100))
    assert injector.counters()["crash_after_commit"] == 100


# ---------------------------------------------------------------------------------------------- the wrappers


def test_a_throttled_put_reaches_the_real_store_as_a_dynamodb_throttling_error():
    # Given the ingest's store behind the injector, throttling every PutItem
    client = RecordingDynamoDB()
    injector = FaultInjector()
    store = injector.throttled_inbox_store(InboxStore("inbox", "bodies", dynamodb=client))  # type: ignore[arg-type]
    injector.configure({"ingest_throttle_rate": 1.0})
    # When an item is put, Then the real store maps DynamoDB's throttling to StorageUnavailable (the handler's 503)
    with pytest.raises(StorageUnavailable, match="ProvisionedThroughputExceededException"):
        store.put_new({"pk": "stripe#evt_1", "status": "pending"})
    assert client.puts == []
    # And once the fault is off, the put goes through to DynamoDB
    injector.configure({"ingest_throttle_rate": 0})
    assert store.put_new({"pk": "stripe#evt_1", "status": "pending"}) is PutOutcome.STORED
    assert client.puts[0]["Item"]["pk"] == {"S": "stripe#evt_1"}
    assert client.puts[0]["ConditionExpression"] == "attribute_not_exists(pk)"


def test_a_crash_before_the_transaction_commits_nothing_and_one_after_it_commits():
    inner = RecordingProcessingStore()
    injector = FaultInjector()
    store = injector.crashing_store(inner)
    assert all(getattr(store, name) == value for name, value in vars(inner).items())  # the same configuration
    # Given a crash before every transaction: the transaction never runs
    injector.configure({"crash_before_commit_rate": 1})
    with pytest.raises(InjectedCrash):
        settle(store, "stripe#evt_1")
    assert inner.settled == []
    # Given a crash after every transaction: it committed, then the invocation died
    injector.configure({"crash_before_commit_rate": 0, "crash_after_commit_rate": 1})
    with pytest.raises(InjectedCrash):
        settle(store, "stripe#evt_1")
    assert inner.settled == ["stripe#evt_1"]
    counters = injector.counters()
    assert (counters["crash_before_commit"], counters["crash_after_commit"]) == (1, 1)


def test_the_crashing_store_settles_an_ignored_event_with_its_reason():
    # Given the local stack's processor store behind the injector, injecting nothing
    inner = RecordingProcessingStore()
    store = FaultInjector().crashing_store(inner)
    # When an ignored event is settled with its reason
    store.settle(
        "stripe#evt_1",
        EventStatus.IGNORED,
        now="t",
        note="event names no payment",
        ignored_reason=IgnoredReason.NO_PAYMENT,
    )
    # Then the real store receives the reason (the local stack stores what AWS would)
    assert (inner.settled, inner.reasons) == (["stripe#evt_1"], ["no_payment"])


def test_an_injected_crash_is_not_an_exception_the_function_could_handle():
    # The processor's crash accounting and the batch utility catch Exception: a dying invocation must pass them
    assert not issubclass(InjectedCrash, Exception)
    with pytest.raises(InjectedCrash):
        try:
            raise InjectedCrash("boom")
        except Exception:  # what the function's handlers do
            pytest.fail("caught as an ordinary exception")


def test_a_crashed_invocation_fails_as_a_whole_and_its_batch_comes_back_soon():
    sqs = RecordingSqs()
    injector = FaultInjector(sqs=sqs, queue_url="https://queue")
    injector.configure({"crash_redelivery_seconds": 2})

    def dying_handler(event: dict[str, Any], context: Any) -> Any:
        raise InjectedCrash("mid-batch")

    handler = injector.wrap_processor_handler(dying_handler)
    event = {"Records": [{"receiptHandle": "r1"}, {"receiptHandle": "r2"}]}
    # When the invocation dies, Then the mapping sees an invocation error and every message is made visible soon
    with pytest.raises(RuntimeError, match="injected crash"):
        handler(event, None)
    assert sqs.visibility == [("r1", 2), ("r2", 2)]
    # And a healthy invocation's answer passes through untouched
    assert injector.wrap_processor_handler(lambda e, c: {"batchItemFailures": []})(event, None) == {
        "batchItemFailures": []
    }


def test_a_pipe_pause_ends_by_itself_and_is_counted():
    pipe = FakePipe()
    injector = FaultInjector(pipe=pipe)  # type: ignore[arg-type]
    injector.configure({"pipe_pause_seconds": 0.1})
    assert pipe.paused
    deadline = time.monotonic() + 5
    while pipe.paused and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pipe.paused
    described = injector.describe()
    assert described["counters"]["pipe_pause"] == 1
    assert described["pipe_paused_seconds"] >= 0.1


# ------------------------------------------------------------------------------------------- the admin route


def admin(injector: FaultInjector, method: str, payload: Any = None) -> tuple[int, dict[str, Any]]:
    body = b"" if payload is None else json.dumps(payload).encode()
    return injector.admin_route(method, ADMIN_PATH, body)


def test_the_admin_route_sets_the_gateway_simulators_faults_and_turns_everything_off():
    simulator = GatewaySimulator()  # not started: its knobs are enough
    pipe = FakePipe()
    injector = FaultInjector(simulator=simulator, pipe=pipe, max_attempts=3)  # type: ignore[arg-type]
    # When the knobs are set through the route
    status, described = admin(
        injector,
        "POST",
        {"seed": 5, "ingest_throttle_rate": 0.2, "pipe_pause_seconds": 30, "gateway": {"error_rate": 0.1}},
    )
    # Then they are in place, the gateway's among them
    assert status == 200
    assert described["seed"] == 5 and described["ingest_throttle_rate"] == 0.2
    assert simulator.faults.error_rate == 0.1 and pipe.paused
    assert described["processor"]["max_attempts"] == 3
    assert set(described["counters"]) == {str(kind) for kind in FaultKind}
    # When everything is turned off, Then the rates are zero, the gateway is healthy and the Pipe pumps again
    status, described = admin(injector, "DELETE")
    assert status == 200
    assert described["ingest_throttle_rate"] == 0 and simulator.faults.error_rate == 0 and not pipe.paused
    assert described["counters"]["pipe_pause"] == 1  # counters are kept


@pytest.mark.parametrize(
    "payload",
    [
        {"ingest_throttle_rate": 0.5, "crash_before_commit_rate": 1.5},
        {"ingest_throttle_rate": 0.5, "gateway": {"error_rate": 0.9, "throttle_rate": 0.9}},
        {"ingest_throttle_rate": 0.5, "gateway": {"no_such_knob": 1}},
        {"ingest_throttle_rate": 0.5, "seed": "seven"},
        {"ingest_throttle_rate": 0.5, "pipe_pause_seconds": -1},
        {"ingest_throttle_rate": 0.5, "no_such_setting": 1},
        [1, 2],
    ],
)
def test_an_invalid_change_is_refused_and_changes_nothing(payload):
    simulator = GatewaySimulator()
    injector = FaultInjector(simulator=simulator, pipe=FakePipe())  # type: ignore[arg-type]
    status, answer = admin(injector, "POST", payload)
    assert status == 400 and answer["error"]
    assert injector.rates.ingest_throttle_rate == 0
    assert simulator.faults.error_rate == 0


def test_the_admin_route_answers_only_its_own_path_and_methods():
    injector = FaultInjector()
    assert injector.admin_route("GET", "/_local/other", b"")[0] == 404
    assert injector.admin_route("PUT", ADMIN_PATH, b"{}")[0] == 405
    assert injector.admin_route("POST", ADMIN_PATH, b"\xff")[0] == 400


# ---------------------------------------------------------------------------------------- the chaos schedule


def test_the_schedule_follows_from_the_seed_alone():
    first = build_schedule(11, payments=30, rounds=13, max_attempts=3)
    assert first == build_schedule(11, payments=30, rounds=13, max_attempts=3)
    assert first.fingerprint() == build_schedule(11, payments=30, rounds=13, max_attempts=3).fingerprint()
    assert first.fingerprint() != build_schedule(12, payments=30, rounds=13, max_attempts=3).fingerprint()
    # Every round has its rates, some rounds pause the Pipe, and the slow answers outlast the read timeout
    assert len(first.rounds) == 13
    assert any(r.pipe_pause_seconds > 0 for r in first.rounds)
    assert all(0 < r.ingest_throttle_rate <= 0.5 and 0 < r.gateway_slow_rate <= 0.5 for r in first.rounds)
    assert first.slow_seconds > 5.0


def test_only_payments_of_a_provider_with_an_api_are_unknown_to_it():
    # Given a run whose even payments are of providers ordered by event time (no API to be unknown to)
    refetched = [index % 2 == 1 for index in range(40)]
    # When its schedule is built
    schedule = build_schedule(3, payments=40, rounds=5, max_attempts=3, refetched=refetched)
    # Then no payment without an API is unknown, and one with an API stays unknown until revealed
    assert all(schedule.unknown_fetches[index] == 0 for index in range(0, 40, 2))
    assert UNKNOWN_UNTIL_REVEALED in schedule.unknown_fetches[1::2]
    with pytest.raises(ValueError, match="names 3 payments"):
        build_schedule(3, payments=40, rounds=5, max_attempts=3, refetched=[True] * 3)


def test_payments_outlasting_every_attempt_only_when_the_stack_gives_up_quickly():
    quick = build_schedule(1, payments=10, rounds=5, max_attempts=3)
    # (at least one, unknown until the harness reveals it: the replay path is always taken)
    assert quick.exhausting and UNKNOWN_UNTIL_REVEALED in quick.unknown_fetches
    patient = build_schedule(1, payments=10, rounds=5, max_attempts=8)
    assert not patient.exhausting and set(patient.unknown_fetches) <= {0, 1}


def test_the_delivery_log_counts_concurrent_pairs_once_and_knows_what_was_acknowledged():
    log = DeliveryLog()
    pair = Delivery("stripe", "pi_1", "payment_intent.created", b'{"id": "evt_1"}', 0, copies=2, concurrent=True)
    lost = Delivery("asaas", "pay_1", "PAYMENT_CREATED", b'{"id": "evt_2"}', 0, copies=1, concurrent=False)
    log.delivered(pair, [200])
    log.delivered(pair, [503, 503, 201])
    log.delivered(lost, [503] * 5)
    assert log.concurrent_pairs == 1 and log.sends == 3
    # And every attempt the ingest refused is counted for its provider
    assert log.refused_by_provider == {"stripe": 2, "asaas": 5}
    assert log.sends_by_provider == {"stripe": 2, "asaas": 1}
    assert [sent.resource_id for sent in log.acknowledged()] == ["pi_1"]
    assert [sent.resource_id for sent in log.unacknowledged()] == ["pay_1"]
    assert log.resource_ids() == {("stripe", "pi_1"), ("asaas", "pay_1")}


def test_the_report_fits_one_screen_and_says_how_to_reproduce_it():
    report = ChaosReport(
        seed=42,
        payments=300,
        providers=["stripe", "asaas"],
        schedule_fingerprint="abc",
        faults={"ingest_throttle": 10, "pipe_pause": 2},
        delivery={"webhooks": 10, "sends": 20, "repeat_sends": 10, "concurrent_pairs": 3},
        recovery={
            "pipe_paused_seconds": 5.0,
            "redelivered": 0,
            "failed_before_replay": 1,
            "replayed": 1,
            "recovered_by_replay": 1,
            "dead_lettered": 1,
            "dlq_left": 0,
            "dlq_other": 0,
            "delivery_seconds": 1.0,
            "processing_under_faults_seconds": 1.0,
            "recovery_seconds": 1.0,
        },
        statuses={"processed": 4, "ignored": 6},
        invariants=[Invariant("holds", True, "1/1"), Invariant("breaks", False, "0/1", [{"pk": "stripe#evt_9"}])],
        elapsed_seconds=3.0,
        by_provider={
            "stripe": ProviderFigures(payments=2, webhooks=6, sends=9, refused=1, gateway_faults={"gateway_error": 3}),
            "kiwify": ProviderFigures(payments=1, webhooks=2, sends=2, failed_before_replay=1, recovered_by_replay=1),
        },
    )
    text = render_chaos(report)
    # (one line per provider, with its gateway faults and what failed and was replayed)
    stripe = next(line for line in text.splitlines() if line.strip().startswith("stripe"))
    assert stripe.split()[:5] == ["stripe", "2", "6", "9", "1"] and "3/0/0/0" in stripe
    kiwify = next(line for line in text.splitlines() if line.strip().startswith("kiwify"))
    assert "1->1" in kiwify
    assert len(text.splitlines()) <= 40
    assert "PASS  holds" in text and "FAIL  breaks" in text and "stripe#evt_9" in text
    assert text.splitlines()[-1].startswith("Verdict: FAIL") and "--seed 42 --payments 300" in text
    assert not report.ok and report.to_json()["ok"] is False
