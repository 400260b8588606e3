"""docs/cli.md (the commands README sends readers to) and its "Receiving them locally", run as written on one stack: the
receiver block (its `export` evaluated by bash, `inbox receiver`, `INBOX_FORWARD_URL=... make run`, `inbox simulate
... --settle-rounds`), then the table's commands in the forms no other test runs, the hand-tried scenarios, and
retention last (it empties the inbox). Filled in: port 8790 -> a free port (the page's fixed port may be taken on a
shared machine), `$GATEWAY` -> the simulator URL `make run` printed, PROVIDER/EVENT_ID/RESOURCE_ID/P/URL -> ids and
URLs of this run.

The stack runs with INBOX_MAX_ATTEMPTS=1 so that scenario 2's events fail at their first refused refetch instead of
after eight backoffs (minutes), and with INBOX_BREAKER_COOLDOWN_SECONDS=2: once the failing API has opened the circuit,
the events still pending wait out one cooldown per probe (30 s by default, minutes in all). The scenario's commands are
the page's, only the waits are shorter."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from inbox_local.config import LocalNames
from tests.e2e.conftest import free_port, wait_until
from tests.e2e.readme_support import ROOT, MakeRun, Shell, clean_environment, split_assignments, start_make_run
from tests.readme_commands import section_commands

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group(__name__)]

RECEIVER_SECTION = "Receiving them locally: `inbox receiver`"
EXPORT = (
    "export INBOX_FORWARD_SECRET=\"whsec_$(python3 -c 'import base64, os; "
    "print(base64.b64encode(os.urandom(32)).decode())')\""
)
RECEIVER = ".venv/bin/inbox receiver --port 8790"
MAKE_RUN = "INBOX_FORWARD_URL=http://127.0.0.1:8790/ make run"
SIMULATE = ".venv/bin/inbox simulate --payments 20 --settle-rounds"


@dataclass
class Operated:
    stack: MakeRun
    shell: Shell
    receiver: subprocess.Popen[str]
    receiver_log: Path
    receiver_port: int
    secret: str
    simulated: subprocess.CompletedProcess[str]

    def inbox(self, command: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """A README `inbox ...` command (as a reader types it after `make setup`: .venv/bin/inbox)."""
        assert command.startswith("inbox "), command
        return self.shell.run(".venv/bin/" + command, timeout=timeout)

    def ok(self, command: str, *, timeout: float = 120) -> str:
        result = self.inbox(command, timeout=timeout)
        assert result.returncode == 0, f"`{command}`: {result.stdout}\n{result.stderr}"
        return result.stdout

    def json(self, command: str) -> Any:
        return json.loads(self.ok(command))

    def stop_receiver(self) -> str:
        if self.receiver.poll() is None:
            os.killpg(self.receiver.pid, signal.SIGINT)
            self.receiver.wait(timeout=30)
        return self.receiver_log.read_text()


def port_filled(command: str, port: int) -> str:
    return command.replace("8790", str(port))


@pytest.fixture(scope="module")
def operated() -> Iterator[Operated]:
    block = [command.text for command in section_commands(RECEIVER_SECTION)]
    assert block == [EXPORT, RECEIVER, MAKE_RUN, SIMULATE], block
    # `export INBOX_FORWARD_SECRET="whsec_$(python3 -c ...)"`, evaluated by bash as written
    exported = subprocess.run(
        ["bash", "-c", f'{EXPORT}\nprintf %s "$INBOX_FORWARD_SECRET"'], capture_output=True, text=True, check=True
    )
    secret = exported.stdout
    port = free_port()
    env = clean_environment(INBOX_FORWARD_SECRET=secret, INBOX_MAX_ATTEMPTS="1", INBOX_BREAKER_COOLDOWN_SECONDS="2")
    # terminal 1: `.venv/bin/inbox receiver --port 8790` (reads INBOX_FORWARD_SECRET)
    log = tempfile.NamedTemporaryFile(prefix="readme-receiver-", suffix=".log", delete=False)  # noqa: SIM115
    _, argv = split_assignments(port_filled(RECEIVER, port))
    receiver = subprocess.Popen(
        [str(ROOT / argv[0]), *argv[1:]],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    log.close()
    # terminal 2: `INBOX_FORWARD_URL=http://127.0.0.1:8790/ make run`, the same secret exported
    stack = start_make_run(port_filled(MAKE_RUN, port), env)
    try:
        shell = Shell(stack.env)
        # terminal 3: `.venv/bin/inbox simulate --payments 20 --settle-rounds`
        simulated = shell.run(SIMULATE, timeout=240)
        yield Operated(stack, shell, receiver, Path(log.name), port, secret, simulated)
    finally:
        stack.interrupt()
        if receiver.poll() is None:
            os.killpg(receiver.pid, signal.SIGKILL)


def stored_statuses(operated: Operated, stripe_event_ids: list[str]) -> dict[str, Any]:
    """Each Stripe event's status as the stack's inbox table holds it, read in this process."""
    return {event_id: operated.stack.stored_event("stripe", event_id).get("status") for event_id in stripe_event_ids}


def outbox_records(operated: Operated) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = operated.json("inbox outbox list --json")
    return records


def wait_until_forwarded(operated: Operated) -> tuple[list[str], list[dict[str, Any]]]:
    """The receiver's accepted lines once they are as many as the outbox's records (bounded wait), and the records."""
    records = outbox_records(operated)
    deadline = time.monotonic() + 45
    while True:
        accepted = [line for line in operated.receiver_log.read_text().splitlines() if " accepted " in line]
        if len(accepted) >= len(records) or time.monotonic() > deadline:
            return accepted, records
        time.sleep(0.5)


def test_the_receiver_block_prints_one_verified_line_per_transition(operated):
    # Given the receiver block run as written (simulate with --settle-rounds)
    assert operated.simulated.returncode == 0, operated.simulated.stdout + operated.simulated.stderr
    assert re.search(r"verdict\s+OK$", operated.simulated.stdout, re.MULTILINE)
    # When the forwarding has delivered what the outbox holds
    accepted, records = wait_until_forwarded(operated)
    # Then the receiver printed one accepted line per outbox record, each a transition in its payment's stream
    assert records, "the simulation published nothing"
    assert len(accepted) == len(records), operated.receiver_log.read_text()[-3000:]
    assert all(re.search(r" #\d+ \S+ -> \S+  ", line) for line in accepted), accepted[:5]
    assert len(accepted) > 20  # --settle-rounds: intermediate states applied too, not one transition per payment


def test_outbox_list_shows_the_published_events_in_both_forms(operated):
    # When `inbox outbox list` and `inbox outbox list --json` run
    table = operated.ok("inbox outbox list")
    records = outbox_records(operated)
    # Then the table shows each record the JSON lists
    some = records[0]
    assert str(some["resource_id"]) in table and "payment.status_changed" in table


def test_outbox_resend_with_a_provider_sends_nothing_already_delivered(operated):
    # Given everything forwarded already
    accepted, records = wait_until_forwarded(operated)
    assert len(accepted) == len(records)
    url = f"http://127.0.0.1:{operated.receiver_port}/"
    # When `inbox outbox resend --url URL --provider P` runs
    output = operated.ok(f"inbox outbox resend --url {url} --provider stripe")
    # Then nothing is sent twice: every record is past the forwarding checkpoint
    assert re.match(r"sent 0 of \d+ outbox records", output), output


def test_events_show_and_payments_show_print_readable_tables_without_json(operated):
    # Given an event of the simulation
    [row] = operated.json("inbox events list --json --status processed --provider stripe --limit 1")
    # When `inbox events show PROVIDER EVENT_ID` and `inbox payments show PROVIDER RESOURCE_ID` run without --json
    shown = operated.ok(f"inbox events show stripe {row['event_id']}")
    payment = operated.ok(f"inbox payments show stripe {row['resource_id']}")
    # Then they print name: value lines, the event with its raw body
    assert re.search(rf"^\s+event_id: {row['event_id']}$", shown, re.MULTILINE), shown
    assert re.search(r"^\s+body:$", shown, re.MULTILINE) and f'"id": "{row["event_id"]}"' in shown
    assert re.search(rf"^\s+pk: stripe#{row['resource_id']}$", payment, re.MULTILINE), payment
    assert (
        operated.json(f"inbox payments show stripe {row['resource_id']} --json")["pk"] == f"stripe#{row['resource_id']}"
    )


def test_send_with_status_and_resource_id(operated):
    # When `inbox send PROVIDER --status paid --resource-id ...` runs (an Asaas payment id of our choosing)
    output = operated.ok("inbox send asaas --status paid --resource-id pay_readme0operate1")
    # Then it is accepted, and the event is about that payment
    assert "-> 200" in output
    listed = operated.json("inbox events list --json --provider asaas")
    assert "pay_readme0operate1" in {row["resource_id"] for row in listed}


def test_a_receiver_with_secret_and_json_prints_a_json_summary_on_ctrl_c(operated, tmp_path):
    # When `inbox receiver --port P --secret whsec_... --json` runs, then Ctrl-C once it listens
    port = free_port()
    argv = [str(ROOT / ".venv/bin/inbox"), "receiver", "--port", str(port), "--secret", operated.secret, "--json"]
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with out_path.open("w") as out_file, err_path.open("w") as err_file:
        process = subprocess.Popen(argv, env=operated.stack.env, cwd=ROOT, stdout=out_file, stderr=err_file, text=True)
    try:
        deadline = time.monotonic() + 60
        while "Ctrl-C prints the summary" not in err_path.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, err_path.read_text()
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    out, err = out_path.read_text(), err_path.read_text()
    # Then it said where it listens (stderr, with --json) and printed its summary as one JSON line, exit 0
    assert f"127.0.0.1:{port}" in err
    assert process.returncode == 0, out + err
    summary = json.loads(out.strip().splitlines()[-1])["summary"]
    assert summary["rejected"] == 0 and summary["requests"] == 0
    assert operated.secret not in out + err  # never a secret


def test_replay_with_every_option_plans_without_changing_anything(operated):
    # When `inbox replay --provider P --status failed --since T --until T --dry-run` runs
    output = operated.ok(
        "inbox replay --provider stripe --status failed --since 2020-01-01T00:00:00Z "
        "--until 2099-01-01T00:00:00Z --dry-run"
    )
    # Then it prints the plan and the Step Functions execution it ran
    assert re.search(r"^execution: arn:aws:states:", output, re.MULTILINE), output


def test_scenario_a_provider_api_fails_for_a_while(operated):
    gateway = re.search(r"Gateway sim:\s+(\S+)", operated.stack.output())
    assert gateway, operated.stack.output()
    curl = "curl -X POST $GATEWAY/_sim/faults -d '{\"error_rate\": 1}'"

    def faults(rate: str) -> dict[str, Any]:
        command = curl.replace("$GATEWAY", gateway.group(1)).replace('{"error_rate": 1}', rate)
        answered = operated.shell.run(command)
        assert answered.returncode == 0, answered.stderr
        knobs: dict[str, Any] = json.loads(answered.stdout)
        return knobs

    # Given the provider API failing: `curl -X POST $GATEWAY/_sim/faults -d '{"error_rate": 1}'`
    assert faults('{"error_rate": 1}')["error_rate"] == 1
    try:
        # When Stripe events are sent (`inbox simulate --payments 5 --provider stripe`), Then they fail and the
        # simulation says so
        simulated = operated.inbox("inbox simulate --payments 5 --provider stripe", timeout=240)
        assert simulated.returncode == 1 and re.search(r"verdict\s+NOT OK", simulated.stdout), simulated.stdout
        # And `inbox events list --status failed` shows them
        failed = operated.ok("inbox events list --status failed")
        assert " failed " in failed and "stripe" in failed, failed
        failed_stripe = [
            row["event_id"]
            for row in operated.json("inbox events list --status failed --json")
            if row["provider"] == "stripe"
        ]
        assert failed_stripe
    finally:  # the module's other tests share this stack: never leave its gateway failing
        # When the API is restored (`'{"error_rate": 0}'`) and `inbox replay --provider stripe` runs
        assert faults('{"error_rate": 0}')["error_rate"] == 0
    replayed = operated.ok("inbox replay --provider stripe", timeout=240)
    assert "execution:" in replayed
    # Then the stripe events that failed are processed or ignored: waited for by reading the stack in this process
    # (bounded), then shown once by `inbox events list`
    settled = {"processed", "ignored"}
    wait_until(lambda: stored_statuses(operated, failed_stripe), lambda statuses: set(statuses.values()) <= settled)
    listed = {
        row["event_id"]: row["status"]
        for row in operated.json("inbox events list --json --provider stripe --limit 100000")
        if row["event_id"] in failed_stripe
    }
    assert set(listed) == set(failed_stripe) and set(listed.values()) <= settled, listed


def test_stats_counts_what_the_inbox_holds(operated):
    # When `inbox stats` and `inbox stats --json` run
    table = operated.ok("inbox stats")
    stats = operated.json("inbox stats --json")
    # Then both count the same events
    total = stats["events"]["totals"]["total"]
    assert total == len(operated.json("inbox events list --json --limit 100000"))
    assert "stripe" in table


def test_retention_last_run_now_keeps_everything_then_2099_archives_everything(operated):
    # When `inbox retention run` runs (now): nothing is past its retention yet
    before = len(operated.json("inbox events list --json --limit 100000"))
    kept = operated.ok("inbox retention run")
    assert re.search(r"^expired as of \S+: 0 deleted", kept), kept
    assert len(operated.json("inbox events list --json --limit 100000")) == before > 0
    # When `inbox retention run --now 2099-01-01T00:00:00Z` runs
    expired = operated.ok("inbox retention run --now 2099-01-01T00:00:00Z")
    # Then every event is deleted and archived ("then look in the archive bucket")
    assert f": {before} deleted, 0 kept" in expired, expired
    assert f"archived in s3://{LocalNames().archive_bucket}/: {before} of {before}" in expired, expired
    s3 = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{operated.stack.env['INBOX_AWS_PORT']}",
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    listed = s3.list_objects_v2(Bucket=LocalNames().archive_bucket)
    assert listed.get("KeyCount", 0) >= 1
    assert operated.json("inbox events list --json") == []


def test_simulate_100_payments_prints_its_throughput_and_latency(operated):
    # When `.venv/bin/inbox simulate --payments 100` runs, as docs/benchmarks.md shows it
    simulated = operated.shell.run(".venv/bin/inbox simulate --payments 100", timeout=600)
    # Then every payment matches the gateway, and it prints the throughput and latency docs/benchmarks.md says it prints
    assert simulated.returncode == 0, simulated.stdout + simulated.stderr
    assert re.search(r"payments matching truth\s+100/100", simulated.stdout), simulated.stdout
    assert re.search(r"throughput\s+[\d.]+ events/s", simulated.stdout), simulated.stdout
    assert re.search(r"receipt -> processed\s+p50 [\d.]+ ms, p99 [\d.]+ ms", simulated.stdout), simulated.stdout
