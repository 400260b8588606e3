"""The forwarding log against moto: the forwarder Lambda and the local publisher record every attempt; `inbox outbox
attempts` lists them, `inbox outbox list --undelivered` shows what has not reached the endpoint, `inbox outbox
resend --since/--until/--force` re-forwards a period through the checkpoints; a broken log changes no delivery."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner

from functions.forwarder import handler as forwarder_handler
from inbox_cli.main import cli
from inbox_cli.outbox import outbox_records, resend
from inbox_cli.target import Target
from inbox_local.forward_secret import ENV_FORWARD_SECRET
from inbox_local.lambda_context import LocalLambdaContext
from inbox_local.outbox_publisher import local_forward_max_retry_attempts
from shared import definitions, forwarding
from shared.forwarding import DeliveryFailed, ForwardCheckpoints, Forwarder
from shared.forwarding_log import SENDER_RESEND, Answer, ForwardLog
from shared.payments.outbox import transition_id
from shared.payments.status import PaymentStatus as S
from shared.roots import AwsClients
from tests.integration.processing_support import FakeGateway
from tests.integration.test_downstream_functions import stream_records
from tests.integration.test_outbox import (
    PREVIOUS_SECRET,
    SECRET,
    forwarding_root,
    lifecycle,
    publisher,
    three_payments,
)
from tests.outage_endpoint import OUTAGE_BODY, OutageEndpoint


@pytest.fixture
def endpoint() -> Iterator[OutageEndpoint]:
    server = OutageEndpoint().start()
    yield server
    server.stop()


def dynamodb(world: Any) -> Any:
    return world.session.client("dynamodb")


def log_table(world: Any) -> str:
    return str(world.names.forward_log_table)


def forward_log(world: Any, **options: Any) -> ForwardLog:
    return ForwardLog(dynamodb(world), log_table(world), **options)


def checkpoints(world: Any) -> ForwardCheckpoints:
    return ForwardCheckpoints(dynamodb(world), world.names.control_table)


def forwarder(url: str, log: ForwardLog | None, *, max_attempts: int = 2) -> Forwarder:
    return Forwarder(
        url=url,
        secrets=(SECRET, PREVIOUS_SECRET),
        max_attempts=max_attempts,
        timeout_seconds=5,
        sleep=lambda _: None,
        record=log.record if log else None,
    )


def local_target(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    names = world.names
    target = Target(
        "http://127.0.0.1:1",
        names.inbox_table,
        names.payments_table,
        names.body_bucket,
        local=True,
        outbox_table=names.outbox_table,
        control_table=names.control_table,
        forward_log_table=names.forward_log_table,
    )
    monkeypatch.setattr("inbox_cli.main.resolve", lambda _stack: target)


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def one_payment(world: Any, resource_id: str = "pi_1", statuses: tuple[S, ...] = (S.PENDING, S.PAID)) -> list[str]:
    lifecycle(world, FakeGateway(), resource_id, list(statuses))
    return [transition_id(f"stripe#{resource_id}", n) for n in range(1, len(statuses) + 1)]


# ------------------------------------------------------------------------------------------------ recording
def test_the_forwarder_lambda_records_each_attempt_and_the_cli_lists_them(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the forwarder Lambda configured like the stack does it, and an endpoint refusing its first two POSTs
    ids = one_payment(aws_world, statuses=(S.PAID,))
    aws_world.session.client("secretsmanager").create_secret(
        Name="stack/forward-signing", SecretString=json.dumps({"current": SECRET, "previous": ""})
    )
    monkeypatch.setenv(definitions.ENV_FORWARD_URL, endpoint.url)
    monkeypatch.setenv(definitions.ENV_FORWARD_SECRET_NAME, "stack/forward-signing")
    monkeypatch.setenv(definitions.ENV_FORWARD_LOG_RETENTION_DAYS, "3")
    forwarding.default_forwarder_root.install(
        forwarding.build_forwarder(
            forwarding.ForwarderSettings.from_environ(),
            forwarding.LogSettings.from_environ(),
            clients=AwsClients(dynamodb=dynamodb(aws_world), dynamodb_best_effort=dynamodb(aws_world)),
        )
    )
    monkeypatch.setattr("shared.forwarding.Forwarder.sleep", staticmethod(lambda _seconds: None), raising=False)
    endpoint.fail_first = 2
    # When the Pipe hands the batch over
    answer = forwarder_handler.lambda_handler(stream_records(aws_world), LocalLambdaContext("fwd", timeout_seconds=120))
    # Then the event went on its third attempt, and each attempt is listed, oldest first
    assert answer == {"forwarded": 1} and endpoint.accepted == ids
    local_target(aws_world, monkeypatch)
    attempts = json.loads(invoke("outbox", "attempts", ids[0], "--json").output)
    assert [a["status"] for a in attempts] == [500, 500, 204]
    assert attempts == sorted(attempts, key=lambda a: a["attempted_at"])
    first = attempts[0]
    assert first["response_body"] == OUTAGE_BODY.decode() and first["response_headers"]["x-outage"] == "planned"
    assert first["endpoint"] == endpoint.logged_url  # the query token is never stored
    assert first["payment"] == "stripe#pi_1" and first["sequence"] == 1 and first["sender"] == "forwarder"
    assert first["error"] is None and isinstance(first["latency_ms"], int)
    assert "s3cret-token" not in json.dumps(attempts)
    # And the TTL is the configured retention
    raw = dynamodb(aws_world).scan(TableName=aws_world.names.forward_log_table)["Items"][0]
    assert int(raw["expires_at"]["N"]) - datetime.fromisoformat(raw["attempted_at"]["S"]).timestamp() == (
        pytest.approx(3 * 86_400, abs=1)
    )
    # And the table's text view shows the answers too
    table = invoke("outbox", "attempts", ids[0]).output
    assert "500" in table and "down for maintenance" in table


def test_a_connection_error_is_recorded_with_status_zero(aws_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = one_payment(aws_world, statuses=(S.PAID,))
    closed = "http://127.0.0.1:9/closed"
    local = publisher(aws_world, forwarding_root(aws_world, closed, max_attempts=1, log_table=log_table(aws_world)))
    with pytest.raises(DeliveryFailed):
        local.drain()
    [attempt] = forward_log(aws_world).attempts(ids[0])
    assert attempt["status"] == 0 and attempt["error"]


def test_an_unavailable_log_changes_no_delivery_and_no_checkpoint(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a forwarding log whose table does not exist (deleted, or a permission missing)
    ids = one_payment(aws_world)
    root = forwarding_root(aws_world, endpoint.url, max_attempts=2, log_table="no-such-table")
    assert root.log is not None
    warnings: list[str] = []
    monkeypatch.setattr(root.log, "warn", warnings.append)
    local = publisher(aws_world, root)
    endpoint.fail_first = 1
    # When the publisher forwards
    local.drain()
    # Then both events went, in order, and the checkpoint moved as without a log; each attempt only warned
    assert endpoint.accepted == ids
    assert checkpoints(aws_world).delivered("stripe#pi_1") == 2
    assert root.log.write_failures == 3 and len(warnings) == 3
    assert all("ResourceNotFoundException" in w for w in warnings)


# ------------------------------------------------------------------------------------------------ undelivered
def test_undelivered_lists_what_has_not_reached_the_endpoint(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two payments forwarded by the local publisher while the endpoint is down: it gives the batch up
    ids = one_payment(aws_world, "pi_1") + one_payment(aws_world, "pi_2")
    log = forward_log(aws_world)
    local = publisher(
        aws_world,
        forwarding_root(aws_world, endpoint.url, max_attempts=2, log_table=log_table(aws_world)),
        max_retry_attempts=1,
    )
    endpoint.down = True
    with pytest.raises(DeliveryFailed):
        local.drain()  # the first round fails; the publisher will retry once
    local.drain()  # the retry fails too: given up, like the Pipe after its retries
    assert {event["id"] for event in local.given_up} == set(ids)
    local_target(aws_world, monkeypatch)
    monkeypatch.setenv(ENV_FORWARD_SECRET, SECRET)
    # When the operator asks what has not reached the endpoint
    rows = json.loads(invoke("outbox", "list", "--undelivered", "--json").output)
    # Then all four, each with its attempts and last answer (only the first was tried: nothing after it goes first)
    assert {row["id"] for row in rows} == set(ids)
    by_id = {row["id"]: row for row in rows}
    assert by_id[ids[0]]["attempts"] == 4 and by_id[ids[0]]["last_status"] == 500
    assert by_id[ids[1]]["attempts"] == 0
    assert "(none" not in invoke("outbox", "list", "--undelivered").output
    # And once resent to the recovered endpoint, nothing is undelivered
    endpoint.down = False
    assert "sent 4 of 4" in invoke("outbox", "resend", "--url", endpoint.url).output
    assert json.loads(invoke("outbox", "list", "--undelivered", "--json").output) == []
    assert "(none: every published event reached the endpoint)" in invoke("outbox", "list", "--undelivered").output
    # And the resend's attempts are in the log as the resend's
    assert [a["sender"] for a in log.attempts(ids[0])][-1] == SENDER_RESEND


def test_a_record_the_checkpoint_passed_without_it_is_undelivered_and_resent_without_moving_the_checkpoint_back(
    aws_world: Any, endpoint: OutageEndpoint
) -> None:
    # Given a payment whose first event was refused until given up, and whose second was delivered afterwards
    # (the Pipe dead-letters a batch and moves on: the checkpoint is past the first event)
    ids = one_payment(aws_world)
    log = forward_log(aws_world)
    records = outbox_records(aws_world.names.outbox_table)
    endpoint.down = True
    with pytest.raises(DeliveryFailed):
        forwarder(endpoint.url, log).deliver({k: v for k, v in records[0].items() if k != "pk"})
    endpoint.down = False
    forwarder(endpoint.url, log).deliver({k: v for k, v in records[1].items() if k != "pk"})
    checkpoints(aws_world).save("stripe#pi_1", 2)
    # When resend runs
    sent = resend(records, forwarder(endpoint.url, log), checkpoints(aws_world), log=log)
    # Then only the first event goes, and the checkpoint stays at 2
    assert [event["id"] for event in sent] == [ids[0]]
    assert checkpoints(aws_world).delivered("stripe#pi_1") == 2
    assert resend(records, forwarder(endpoint.url, log), checkpoints(aws_world), log=log) == []


# ------------------------------------------------------------------------------------------------ resend
def test_resend_since_sends_the_period_once_and_force_sends_it_again(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three payments of four transitions, none delivered
    three_payments(aws_world)
    monkeypatch.setenv(ENV_FORWARD_SECRET, SECRET)
    local_target(aws_world, monkeypatch)
    # When the last hour is resent, then resent again
    first = invoke("outbox", "resend", "--url", endpoint.url, "--since", "1h").output
    second = invoke("outbox", "resend", "--url", endpoint.url, "--since", "1h").output
    # Then the twelve went once, in order per payment; the second sent nothing
    assert "sent 12 of 12" in first and "sent 0 of 12" in second
    assert len(endpoint.accepted) == 12 == len(set(endpoint.accepted))
    # When forced, the period goes again (same webhook-ids: the receiver dedups)
    assert "sent 12 of 12" in invoke("outbox", "resend", "--url", endpoint.url, "--since", "1h", "--force").output
    assert len(endpoint.accepted) == 24 and set(endpoint.accepted[12:]) == set(endpoint.accepted[:12])
    # And a period in the future holds nothing
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert "sent 0 of 12" in invoke("outbox", "resend", "--url", endpoint.url, "--since", later, "--force").output
    # And one that ended before the events were published holds nothing either
    assert "sent 0 of 12" in invoke("outbox", "resend", "--url", endpoint.url, "--until", "1h", "--force").output


def test_resend_refuses_a_bad_period(aws_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    local_target(aws_world, monkeypatch)
    monkeypatch.setenv(ENV_FORWARD_SECRET, SECRET)
    for args in (["--since", "yesterday"], ["--until", "1w"], ["--since", "1h", "--until", "2h"]):
        result = CliRunner().invoke(cli, ["outbox", "resend", "--url", "http://127.0.0.1:9/", *args])
        assert result.exit_code == 2, result.output
        assert "--since" in result.output or "--until" in result.output


def test_resend_stops_at_the_first_refusal_and_records_it(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = one_payment(aws_world)
    monkeypatch.setenv(ENV_FORWARD_SECRET, SECRET)
    local_target(aws_world, monkeypatch)
    endpoint.down = True
    result = CliRunner().invoke(cli, ["outbox", "resend", "--url", endpoint.url, "--since", "1h"])
    assert result.exit_code == 1 and "sent 0, then the endpoint refused" in result.output
    attempts = json.loads(invoke("outbox", "attempts", ids[0], "--json").output)
    assert attempts and {a["status"] for a in attempts} == {500} and {a["sender"] for a in attempts} == {"resend"}
    assert json.loads(invoke("outbox", "attempts", ids[1], "--json").output) == []  # nothing after it went


def test_expired_attempts_are_not_listed_though_ttl_has_not_deleted_them_yet(aws_world: Any) -> None:
    # Given an attempt recorded with a one-day retention
    log = forward_log(aws_world, retention_days=1)
    ids = one_payment(aws_world, statuses=(S.PAID,))
    event = {k: v for k, v in outbox_records(aws_world.names.outbox_table)[0].items() if k != "pk"}
    log.record(event, "http://h/", Answer(status=500, latency_ms=1), datetime.now(UTC).timestamp())
    assert len(log.attempts(ids[0])) == 1 and log.statuses(ids[0]) == [500]
    # When two days have passed (TTL deletes in the background, days later; moto never does)
    later = forward_log(aws_world, clock=lambda: datetime.now(UTC).timestamp() + 2 * 86_400)
    # Then the expired attempt is no longer listed, though still stored
    assert later.attempts(ids[0]) == [] and later.statuses(ids[0]) == []
    assert dynamodb(aws_world).scan(TableName=aws_world.names.forward_log_table)["Count"] == 1


def test_attempts_of_an_unknown_event_is_an_empty_list(aws_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    local_target(aws_world, monkeypatch)
    assert json.loads(invoke("outbox", "attempts", "tr_unknown", "--json").output) == []
    assert "(no attempt recorded)" in invoke("outbox", "attempts", "tr_unknown").output


# ------------------------------------------------------------------------------------- the local publisher
def test_the_local_publisher_gives_a_refused_batch_up_and_goes_on_with_the_next(
    aws_world: Any, endpoint: OutageEndpoint
) -> None:
    # Given twelve events (two batches of ten and two) and an endpoint refusing the first POST only... for longer
    three_payments(aws_world)
    local = publisher(
        aws_world,
        forwarding_root(aws_world, endpoint.url, max_attempts=1, log_table=log_table(aws_world)),
        max_retry_attempts=2,
    )
    endpoint.fail_first = 3  # the first batch's first event: refused by the round and its two retries
    for _ in range(2):
        with pytest.raises(DeliveryFailed):
            local.drain()
    # When the third round fails too
    local.drain()
    # Then the first batch was given up and the second delivered
    assert len(local.given_up) == definitions.FORWARD_PIPE_BATCH_SIZE
    assert len(local.published) == 12 - definitions.FORWARD_PIPE_BATCH_SIZE
    assert {e["id"] for e in local.given_up}.isdisjoint(e["id"] for e in local.published)


def test_the_local_give_up_count_is_the_pipes_unless_set() -> None:
    assert local_forward_max_retry_attempts({}) == definitions.FORWARD_PIPE_MAXIMUM_RETRY_ATTEMPTS
    assert local_forward_max_retry_attempts({definitions.ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS: "0"}) == 0
    with pytest.raises(ValueError, match=definitions.ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS):
        local_forward_max_retry_attempts({definitions.ENV_LOCAL_FORWARD_MAX_RETRY_ATTEMPTS: "-1"})


# ------------------------------------------------------------------------------------------------ the console
def test_the_payment_timeline_shows_each_published_events_forwarding(
    aws_world: Any, endpoint: OutageEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a payment whose first event went on its second attempt and whose second was never forwarded
    from inbox_cli import operations
    from inbox_cli.console.app import create_app

    ids = one_payment(aws_world)
    log = forward_log(aws_world)
    first = {k: v for k, v in outbox_records(aws_world.names.outbox_table)[0].items() if k != "pk"}
    endpoint.fail_first = 1
    forwarder(endpoint.url, log).deliver(first)
    local_target(aws_world, monkeypatch)
    target = Target(
        "http://127.0.0.1:1",
        aws_world.names.inbox_table,
        aws_world.names.payments_table,
        aws_world.names.body_bucket,
        local=True,
        outbox_table=aws_world.names.outbox_table,
        control_table=aws_world.names.control_table,
        forward_log_table=aws_world.names.forward_log_table,
    )
    # When its timeline is read, and its console page
    published = {r["id"]: r for r in operations.payment_timeline(target, "stripe", "pi_1")["published"]}
    app = create_app(target, port=8791, token="t")
    app.config["SERVER_NAME"] = "127.0.0.1:8791"
    page = app.test_client().get("/payments/stripe/pi_1").get_data(as_text=True)
    # Then each published event says how its forwarding went
    assert (published[ids[0]]["forward_attempts"], published[ids[0]]["forward_last_status"]) == (2, 204)
    assert (published[ids[1]]["forward_attempts"], published[ids[1]]["forward_last_status"]) == (0, None)
    assert f"204 after 2 attempts (<code>inbox outbox attempts {ids[0]}</code>)" in page
