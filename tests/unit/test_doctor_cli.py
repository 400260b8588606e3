"""`inbox doctor` on the command line: text and JSON answers, exit codes, the source's secrets found as the ingest
finds them, never a secret in the output, and README's example run as written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from inbox_cli.doctor import command
from inbox_cli.main import cli
from inbox_cli.operations import NotFound
from inbox_local.dev_secrets import dev_signing_secret
from inbox_local.senders import sender_for
from infra.sources_file import load_sources
from tests.readme_commands import readme_commands

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_764_590_400
DEV_SECRET = "whsec_local_development_only"
BR_SECRET = "whsec_stripe_br_source_secret_0123"
PRETTY = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded", "amount": 10, "note": "ação"}, indent=2)
COMPACT = json.dumps(json.loads(PRETTY), separators=(",", ":"), ensure_ascii=False)
README_EXAMPLE = (
    ".venv/bin/inbox doctor stripe --body docs/examples/stripe-reserialized.json"  # ... --header --at 1764590400
)


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    # Two Stripe sources; no secret in the environment but the second source's
    sources = tmp_path / "sources.json"
    sources.write_text(
        json.dumps([{"name": "stripe", "provider": "stripe"}, {"name": "stripe-br", "provider": "stripe"}])
    )
    monkeypatch.setenv("INBOX_SOURCES_FILE", str(sources))
    for name in list(os.environ):
        if name.startswith("INBOX_SECRET_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("INBOX_SECRET_STRIPE_BR", BR_SECRET)


@pytest.fixture(autouse=True)
def _local_target_environment_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`inbox doctor` resolves the local target, which points this process's boto3 at `make run`'s embedded AWS
    (os.environ.setdefault): undone after each test, or the tests that follow in this worker reach for it."""
    from inbox_cli import target
    from inbox_local.config import aws_environment as real

    def recorded(endpoints: object) -> dict[str, str]:
        values = real(endpoints)  # type: ignore[arg-type]  # the LocalEndpoints resolve() passes
        for name, value in values.items():
            monkeypatch.setenv(name, os.environ.get(name, value))
        return {}

    monkeypatch.setattr(target, "aws_environment", recorded)


def _run(tmp_path: Path, body: str, secret: str, *extra: str, at: int = NOW, body_sent: str | None = None):
    request = sender_for("stripe").sign(body.encode(), secret, now=at)
    path = tmp_path / "body.json"
    path.write_text(body_sent if body_sent is not None else body)
    args = ["doctor", "stripe", "--body", str(path), "--at", str(NOW)]
    for name, value in request.headers.items():
        args += ["--header", f"{name}: {value}"]
    result = CliRunner().invoke(cli, [*args, *extra])
    for known in (DEV_SECRET, BR_SECRET):
        assert known not in result.output, "the doctor printed a secret"
    return result


def test_a_valid_delivery_answers_valid_with_exit_0(tmp_path):
    # Given a delivery signed with the source's configured (local development) secret
    result = _run(tmp_path, PRETTY, DEV_SECRET, "--json")
    # Then the JSON answer says valid, and the exit status is 0
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "valid": True,
        "diagnosis": "valid",
        "detail": "The delivery verifies with the source's configured secret: the ingest would accept it.",
    }


def test_a_re_serialized_body_is_one_sentence_and_exit_1(tmp_path):
    # Given the body a framework re-encoded compactly
    result = _run(tmp_path, PRETTY, DEV_SECRET, body_sent=COMPACT)
    # Then one sentence says so, and the exit status is 1
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("The body was re-serialized before verification")
    assert lines[0].endswith("[body_reserialized]")


def test_another_sources_secret_is_named_by_source_never_by_value(tmp_path):
    # Given a delivery of source stripe-br posted to source stripe
    result = _run(tmp_path, PRETTY, BR_SECRET, "--json")
    answer = json.loads(result.output)
    # Then the doctor says it is stripe-br's secret, without printing it
    assert result.exit_code == 1
    assert answer["diagnosis"] == "wrong_secret"
    assert "'stripe-br'" in answer["detail"]


def test_secret_given_on_the_command_line_is_checked_against_the_configured_one(tmp_path):
    # Given --secret with a wrong value while the delivery is signed with the configured secret
    given = "whsec_a_secret_typed_by_hand_000"
    result = _run(tmp_path, PRETTY, DEV_SECRET, "--secret", given, "--json")
    answer = json.loads(result.output)
    # Then the configured secret is named as the one that signs, and neither value is printed
    assert answer["diagnosis"] == "wrong_secret"
    assert "the source's configured secret" in answer["detail"]
    assert given not in result.output


def test_a_declared_test_mode_secret_is_a_candidate(tmp_path, monkeypatch):
    # Given the source's test-mode secret declared beside its live one, and a delivery signed in test mode
    test_secret = "whsec_stripe_test_mode_secret_0000"
    monkeypatch.setenv("INBOX_SECRET_STRIPE_TEST", test_secret)
    result = _run(tmp_path, PRETTY, test_secret, "--json")
    answer = json.loads(result.output)
    # Then the doctor names it as the test-mode secret, without its value
    assert answer["diagnosis"] == "wrong_secret" and "test-mode secret" in answer["detail"]
    assert test_secret not in result.output


def test_a_stale_delivery_gives_its_skew(tmp_path):
    result = _run(tmp_path, PRETTY, DEV_SECRET, "--json", at=NOW - 3600)
    answer = json.loads(result.output)
    assert answer["diagnosis"] == "timestamp_out_of_tolerance"
    assert "3600 s old" in answer["detail"]


def test_a_signature_in_the_query_is_given_with_query(tmp_path, monkeypatch):
    # Given a Kiwify sales webhook (its signature is the ?signature= parameter); kiwify, a provider id, is its
    # default source
    secret = "kiwify-token-for-the-doctor-test"
    monkeypatch.setenv("INBOX_SECRET_KIWIFY", secret)
    request = sender_for("kiwify").sign(PRETTY.encode(), secret, now=NOW)
    body = tmp_path / "body.json"
    body.write_text(PRETTY)
    args = ["doctor", "kiwify", "--body", str(body), "--json"]
    good = CliRunner().invoke(cli, [*args, "--query", f"signature={request.query['signature']}"])
    # Then it verifies, in upper case too (the scheme compares hex case-insensitively)
    assert good.exit_code == 0, good.output
    upper = CliRunner().invoke(cli, [*args, "--query", f"signature={request.query['signature'].upper()}"])
    assert json.loads(upper.output)["valid"] is True
    # Without it, the answer names the missing parameter
    missing = CliRunner().invoke(cli, args)
    assert json.loads(missing.output)["diagnosis"] == "missing_header"
    assert "signature query parameter" in json.loads(missing.output)["detail"]
    assert secret not in good.output + upper.output + missing.output


def test_bad_input_is_a_clear_error(tmp_path):
    body = tmp_path / "body.json"
    body.write_text("{}")
    runner = CliRunner()
    # An unknown source names the declared ones
    unknown = runner.invoke(cli, ["doctor", "nowhere", "--body", str(body)])
    assert unknown.exit_code == 1 and "no source 'nowhere'" in unknown.output and "stripe-br" in unknown.output
    # A header without a colon
    bad = runner.invoke(cli, ["doctor", "stripe", "--body", str(body), "--header", "Stripe-Signature"])
    assert bad.exit_code == 2 and "'Name: value'" in bad.output
    # No body
    assert runner.invoke(cli, ["doctor", "stripe"]).exit_code == 2
    # --rejected with a delivery
    both = runner.invoke(cli, ["doctor", "stripe", "--body", str(body), "--rejected", "rej_1"])
    assert both.exit_code == 2


def test_a_body_larger_than_any_delivery_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(command, "MAX_BODY_BYTES", 10)
    body = tmp_path / "body.json"
    body.write_text('{"a": "more than ten bytes"}')
    result = CliRunner().invoke(cli, ["doctor", "stripe", "--body", str(body)])
    assert result.exit_code == 2 and "over 10 bytes" in result.output


def test_rejected_with_an_unknown_id_says_so(monkeypatch):
    # Given a log that holds no such record (inbox_cli/rejected.py's NotFound)
    def load_rejected(target: object, rejected_id: str) -> None:
        raise NotFound(f"no rejected delivery {rejected_id} (or it has expired)")

    monkeypatch.setattr(command, "load_rejected", load_rejected)
    result = CliRunner().invoke(cli, ["doctor", "--rejected", "rej_01"])
    # Then a clear message, exit 1, no traceback
    assert result.exit_code == 1
    assert "no rejected delivery rej_01" in result.output and "Traceback" not in result.output


def test_rejected_reads_the_record_through_load_rejected(monkeypatch):
    # Given a log module whose record is a re-serialized Stripe delivery
    request = sender_for("stripe").sign(PRETTY.encode(), DEV_SECRET, now=NOW)
    record = types.SimpleNamespace(
        source="stripe",
        provider="stripe",
        received_at="2025-12-01T12:00:00Z",
        headers=dict(request.headers),
        query={},
        body=COMPACT.encode(),
        body_truncated=False,
        body_redacted=False,
    )
    calls = []

    def load_rejected(target: object, rejected_id: str) -> types.SimpleNamespace:
        calls.append(rejected_id)
        return record

    monkeypatch.setattr(command, "load_rejected", load_rejected)
    # When the doctor is asked about it
    result = CliRunner().invoke(cli, ["doctor", "--rejected", "rej_01", "--json"])
    # Then it loaded that record, verified it as of its reception, and found the re-serialization
    assert calls == ["rej_01"]
    assert json.loads(result.output)["diagnosis"] == "body_reserialized"
    assert result.exit_code == 1


def test_readme_doctor_example_runs_as_written():
    # Given README's command for "the body was re-serialized before verification"
    shown = [c for c in readme_commands() if c.text.startswith(README_EXAMPLE)]
    assert len(shown) == 1, shown
    env = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_SECRET_")}
    # When it runs as written (the local development secret, the default declaration of tests/conftest.py)
    done = subprocess.run(
        shlex.split(shown[0].text), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    # Then it prints the diagnosis README shows, and exits 1
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("The body was re-serialized before verification"), done.stdout
    assert done.stdout.strip() in (ROOT / shown[0].page).read_text()


def test_a_cross_wired_local_source_is_named_with_nothing_exported(tmp_path, monkeypatch):
    # Given the merchant's declaration (two Stripe accounts and Asaas) and no secret exported in the shell
    sources = tmp_path / "merchant.json"
    sources.write_text(
        json.dumps(
            [
                {"name": "stripe-br", "provider": "stripe"},
                {"name": "stripe-us", "provider": "stripe"},
                {"name": "asaas", "provider": "asaas"},
            ]
        )
    )
    monkeypatch.setenv("INBOX_SOURCES_FILE", str(sources))
    monkeypatch.delenv("INBOX_SECRET_STRIPE_BR")
    declared = {spec.name: spec for spec in load_sources()}
    us_secret = dev_signing_secret(declared["stripe-us"])
    br_secret = dev_signing_secret(declared["stripe-br"])
    request = sender_for("stripe").sign(PRETTY.encode(), us_secret, now=NOW)
    path = tmp_path / "body.json"
    path.write_text(PRETTY)
    args = ["doctor", "stripe-br", "--body", str(path), "--at", str(NOW), "--json"]
    for name, value in request.headers.items():
        args += ["--header", f"{name}: {value}"]
    # When the doctor looks at a delivery to stripe-br signed with stripe-us's (local development) secret
    result = CliRunner().invoke(cli, args)
    # Then it is the wrong secret, named as stripe-us's, and no secret is printed
    answer = json.loads(result.output)
    assert result.exit_code == 1
    assert answer["diagnosis"] == "wrong_secret", answer
    assert "'stripe-us'" in answer["detail"]
    assert us_secret not in result.output and br_secret not in result.output
    # And a delivery signed with stripe-br's own development secret verifies: the one the local stack derives
    request = sender_for("stripe").sign(PRETTY.encode(), br_secret, now=NOW)
    valid = [*args[:6], "--json"]
    for name, value in request.headers.items():
        valid += ["--header", f"{name}: {value}"]
    assert json.loads(CliRunner().invoke(cli, valid).output)["diagnosis"] == "valid"


def test_a_refused_send_names_the_refusal_it_caused_or_says_how_to_find_it(monkeypatch):
    from inbox_cli import main, rejected
    from inbox_cli.target import Target

    target = Target("http://127.0.0.1:1", "inbox", "payments", "bodies", local=True)
    posted_at = float(NOW)
    records: list[dict[str, str]] = []
    monkeypatch.setattr(rejected, "list_rejected", lambda *args, **kwargs: records)
    # Given the source's newest record was received as the delivery was posted, Then the hint names it
    records[:] = [{"id": "rej_now", "received_at": "2025-12-01T12:00:00.500000Z"}]
    assert main._refusal_hint(target, "stripe-br", "", posted_at=posted_at) == (
        "why it was refused: inbox doctor --rejected rej_now"
    )
    # Given only an older record (this refusal was not recorded: the minute's cap), Then it says how to find it
    records[:] = [{"id": "rej_old", "received_at": "2025-12-01T11:00:00.000000Z"}]
    older = main._refusal_hint(target, "stripe-br", " --stack Shop", posted_at=posted_at)
    assert older == (
        "why it was refused: inbox --stack Shop rejected list --source stripe-br, then inbox --stack Shop doctor "
        "--rejected ID"
    )

    # Given a log that cannot be read, Then the same, and no error
    def unreadable(*args, **kwargs):
        raise RuntimeError("no table")

    monkeypatch.setattr(rejected, "list_rejected", unreadable)
    assert main._refusal_hint(target, "stripe-br", "", posted_at=posted_at).endswith("doctor --rejected ID")
