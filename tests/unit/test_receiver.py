"""`inbox receiver`'s core: verify with the official Standard Webhooks library, dedup by webhook-id, check order."""

from __future__ import annotations

import base64
import json
import time
import urllib.request
from typing import Any

import pytest

from inbox_cli.receiver import ACCEPTED, DUPLICATE, REJECTED, ReceiverCore, ReceiverServer
from shared.forwarding import Forwarder, event_body, signature_headers
from shared.payments.outbox import transition_id

SECRET = "whsec_" + base64.b64encode(b"receiver-unit-test-key-32-bytes!").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"some-other-secret-of-32-bytes!!!").decode()


def change(sequence: int, resource_id: str = "pi_1", new_status: str = "paid") -> dict[str, Any]:
    identifier = transition_id(f"stripe#{resource_id}", sequence)
    return {
        "id": identifier,
        "transition_id": identifier,
        "schema_version": "1",
        "type": "payment.status_changed",
        "provider": "stripe",
        "resource_id": resource_id,
        "previous_status": None if sequence == 1 else "pending",
        "new_status": new_status,
        "amount": 1000,
        "currency": "BRL",
        "amount_refunded": 0,
        "occurred_at": "2026-11-29T10:00:00.000000Z",
        "sequence": sequence,
        "source_event_id": f"evt_{sequence}",
        "created_at": "2026-11-29T10:00:01.000000Z",
    }


def signed(event: dict[str, Any], *secrets: str, timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
    """What the local forwarder sends: the body bytes and the three Standard Webhooks headers."""
    body = event_body(event)
    return body, signature_headers(str(event["id"]), body, secrets or (SECRET,), timestamp=timestamp)


def test_a_valid_event_is_accepted_and_stored() -> None:
    # Given a receiver holding the forwarding secret
    core = ReceiverCore([SECRET])
    # When a correctly signed first transition arrives
    verdict = core.receive(*signed(change(1, new_status="pending")))
    # Then it is answered 200, stored once, in order
    assert (verdict.status, verdict.outcome) == (200, ACCEPTED)
    assert verdict.stream == "stripe#pi_1" and verdict.sequence == 1 and verdict.problems == ()
    assert [event["id"] for event in core.events] == [transition_id("stripe#pi_1", 1)]
    assert core.summary()["in_order"] is True


def test_either_secret_verifies_during_a_rotation() -> None:
    # Given a receiver still configured with the previous secret only
    core = ReceiverCore([OTHER_SECRET])
    # When the forwarder signs with the current and the previous one (two signatures in the header)
    verdict = core.receive(*signed(change(1), SECRET, OTHER_SECRET))
    # Then it verifies
    assert verdict.outcome == ACCEPTED


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda body, headers: (body.replace(b'"paid"', b'"refunded"'), headers), id="body changed"),
        pytest.param(lambda body, headers: (body, {**headers, "webhook-id": "tr_other"}), id="id changed"),
        pytest.param(lambda body, headers: (body, {**headers, "webhook-signature": "v1,bm9wZQ=="}), id="signature"),
        pytest.param(lambda body, headers: (body, {**headers, "webhook-signature": "garbage"}), id="malformed"),
        pytest.param(lambda body, headers: (body, {k: v for k, v in headers.items() if k != "webhook-id"}), id="no id"),
    ],
)
def test_a_tampered_delivery_is_rejected_and_not_stored(tamper: Any) -> None:
    # Given a correctly signed event
    core = ReceiverCore([SECRET])
    body, headers = tamper(*signed(change(2)))
    # When it arrives altered
    verdict = core.receive(body, headers)
    # Then it is answered 401 and nothing is stored
    assert (verdict.status, verdict.outcome) == (401, REJECTED)
    assert core.events == [] and core.rejected == 1


def test_a_stale_timestamp_and_another_secret_are_rejected() -> None:
    # Given a receiver
    core = ReceiverCore([SECRET])
    # When an event signed an hour ago, and one signed with a secret the receiver does not hold, arrive
    stale = core.receive(*signed(change(1), timestamp=int(time.time()) - 3600))
    foreign = core.receive(*signed(change(1), OTHER_SECRET))
    # Then both are refused
    assert (stale.status, foreign.status) == (401, 401)
    assert "too old" in (stale.reason or "")
    assert core.summary()["rejected"] == 2 and core.summary()["accepted"] == 0


def test_a_repeated_webhook_id_is_answered_2xx_counted_and_stored_once() -> None:
    # Given an event already received
    core = ReceiverCore([SECRET])
    event = change(1)
    core.receive(*signed(event))
    # When the sender retries it twice (freshly signed each time, as after a lost answer)
    repeats = [core.receive(*signed(event, timestamp=int(time.time()) + n)) for n in (1, 2)]
    # Then the sender is told to stop (2xx), the repeats are counted, and the event is stored once
    assert [(v.status, v.outcome, v.seen) for v in repeats] == [(200, DUPLICATE, 2), (200, DUPLICATE, 3)]
    assert len(core.events) == 1 and core.duplicates == 2
    assert core.summary()["in_order"] is True  # a repeat is not a regression


def test_a_gap_and_a_regression_in_one_payments_sequence_are_reported() -> None:
    # Given transitions 1 of two payments
    core = ReceiverCore([SECRET])
    core.receive(*signed(change(1, "pi_1")))
    core.receive(*signed(change(1, "pi_2")))
    # When pi_1's #3 arrives before its #2, and pi_2's #2 in order
    ahead = core.receive(*signed(change(3, "pi_1")))
    late = core.receive(*signed(change(2, "pi_1")))
    fine = core.receive(*signed(change(2, "pi_2")))
    # Then #3 is a gap, #2 after #3 a regression, pi_2 is in order; all three are accepted (2xx) and stored
    assert [v.outcome for v in (ahead, late, fine)] == [ACCEPTED, ACCEPTED, ACCEPTED]
    assert ahead.problems == ("GAP: expected #2, got #3",)
    assert late.problems == ("REGRESSION: #2 after #3",)
    assert fine.problems == ()
    summary = core.summary()
    assert summary["gaps"] == [
        {"stream": "stripe#pi_1", "expected": 2, "got": 3, "webhook_id": transition_id("stripe#pi_1", 3)}
    ]
    assert [r["got"] for r in summary["regressions"]] == [2]
    assert summary["in_order"] is False
    assert summary["accepted"] == 5 and summary["streams"] == 2


def test_webhook_failed_events_have_their_own_sequence() -> None:
    # Given a failed event's first failure, then its second after a replay
    core = ReceiverCore([SECRET])
    failed = {
        "id": "wf_1",
        "type": "webhook.failed",
        "provider": "stripe",
        "event_id": "evt_9",
        "resource_id": "pi_9",
        "last_error": "ResourceNotFound: pi_9",
        "sequence": 1,
    }
    # When both arrive
    first = core.receive(*signed(failed))
    second = core.receive(*signed({**failed, "id": "wf_2", "sequence": 2}))
    # Then they are ordered on their own stream, apart from the payment's
    assert (first.stream, second.stream) == ("failed#stripe#evt_9", "failed#stripe#evt_9")
    assert core.summary()["in_order"] is True


def test_a_receiver_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="secret"):
        ReceiverCore([])


def test_the_server_fails_on_purpose_first_then_verifies_over_http() -> None:
    # Given the receiver served on a loopback port, told to answer 500 to its first two requests
    server = ReceiverServer(ReceiverCore([SECRET]), fail_first=2).start()
    try:
        sender = Forwarder(url=server.url, secrets=(SECRET,))
        impostor = Forwarder(url=server.url, secrets=(OTHER_SECRET,))
        # When the forwarder posts one event three times, then an impostor posts another
        statuses = [sender.post_once(change(1)) for _ in range(3)] + [impostor.post_once(change(2))]
        with urllib.request.urlopen(server.url, timeout=5) as response:  # the summary so far
            summary = json.loads(response.read())
    finally:
        server.stop()
    # Then two 500s, then the event is stored, and the impostor gets 401
    assert statuses == [500, 500, 200, 401]
    assert (server.requests, server.failed_on_purpose) == (4, 2)
    assert (summary["accepted"], summary["rejected"], summary["duplicates"]) == (1, 1, 0)
