"""`inbox rejected list/show`, locally and with `--stack NAME` (against moto), and `load_rejected` for the doctor."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from inbox_cli import rejected
from inbox_cli.main import cli
from inbox_cli.operations import NotFound
from inbox_cli.target import resolve
from inbox_local.config import DEV_FINGERPRINT_KEY
from shared import definitions
from shared.rejections import Refusal, RejectionLog, RejectionLogSettings
from tests.integration.test_cli_stack import DEPLOYED, STACK_NAME, deployed_stack

NOW = 1_780_000_000.0  # 2026-05-28T20:26:40Z


def record(table: str, *, at: float, source: str = "stripe", reason: str = "signature_invalid", **extra: Any) -> None:
    """One refusal written by the ingest's own log, at `at`."""
    log = RejectionLog(
        RejectionLogSettings(
            table=table, fingerprint_key=DEV_FINGERPRINT_KEY, redact_fields=extra.get("redact_fields", "email")
        ),
        clock=lambda: at,
    )
    refusal = Refusal(
        source=source,
        provider=extra.get("provider", source),
        reason=reason,
        detail=extra.get("detail", "no signature matches"),
        headers=extra.get("headers", {"stripe-signature": "t=1,v1=00"}),
        query=extra.get("query", {}),
        body=extra.get("body", b'{"id": "evt_%d"}' % int(at)),
        source_ip="198.51.100.7",
        user_agent="curl/8",
    )
    assert log.note(refusal, None) == "recorded"


def invoke(*words: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(words))
    return result.exit_code, result.output


@pytest.fixture
def frozen_now(monkeypatch):
    """The CLI's clock at NOW + 1 day (records of NOW are still within their 3 days), and the local target left
    pointing at the in-process moto (resolve() would point boto3 at `make run`'s embedded AWS)."""
    monkeypatch.setattr("inbox_cli.target.aws_environment", lambda endpoints: {})
    from datetime import UTC, datetime

    moment = datetime.fromtimestamp(NOW + 86_400, tz=UTC)

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return moment

    monkeypatch.setattr(rejected, "datetime", Frozen)
    return moment


def test_list_is_newest_first_with_id_and_reason_and_filters(aws_world, frozen_now):
    # Given three refusals over two days, of two sources and two reasons
    table = aws_world.names.rejected_table
    record(table, at=NOW - 86_400, source="stripe", reason="signature_missing")
    record(table, at=NOW, source="asaas", reason="signature_invalid", headers={"asaas-access-token": "tok"})
    record(table, at=NOW + 60, source="stripe", reason="signature_invalid")
    # When they are listed
    code, output = invoke("rejected", "list", "--json")
    rows = json.loads(output)
    # Then every row has its id and reason, newest first
    assert code == 0
    assert [(r["source"], r["reason"]) for r in rows] == [
        ("stripe", "signature_invalid"),
        ("asaas", "signature_invalid"),
        ("stripe", "signature_missing"),
    ]
    assert all(r["id"].startswith("rej_") for r in rows)
    # and the filters and the limit apply
    assert [r["source"] for r in json.loads(invoke("rejected", "list", "--source", "asaas", "--json")[1])] == ["asaas"]
    by_reason = json.loads(invoke("rejected", "list", "--reason", "signature_missing", "--json")[1])
    assert [r["reason"] for r in by_reason] == ["signature_missing"]
    assert len(json.loads(invoke("rejected", "list", "--limit", "1", "--json")[1])) == 1
    # and the table form shows the same ids
    code, text = invoke("rejected", "list")
    assert code == 0 and all(r["id"] in text for r in rows) and "REASON" in text


def test_an_expired_record_is_not_listed(aws_world, frozen_now):
    # Given a refusal 3 days before the CLI's now (past its 3 days; TTL has not deleted it yet)
    record(aws_world.names.rejected_table, at=NOW - 2 * 86_400)
    # Then it is neither listed nor shown
    assert json.loads(invoke("rejected", "list", "--json")[1]) == []


def test_show_gives_headers_with_fingerprints_and_the_body(aws_world, frozen_now):
    # Given a refused Asaas delivery with its token and a personal field
    record(
        aws_world.names.rejected_table,
        at=NOW,
        source="asaas",
        headers={"asaas-access-token": "tok_previous", "content-type": "application/json"},
        body=b'{"id": "evt_1", "email": "ana@example.com"}',
    )
    [row] = json.loads(invoke("rejected", "list", "--json")[1])
    # When it is shown
    code, output = invoke("rejected", "show", row["id"], "--json")
    document = json.loads(output)
    # Then the token is only its fingerprint, which the doctor can reproduce from a candidate
    assert code == 0
    assert document["headers"]["asaas-access-token"] == {
        "fingerprint": rejected.fingerprint_of(resolve(None), "tok_previous")
    }
    assert rejected.fingerprint_for(resolve(None))("tok_previous") == rejected.fingerprint_of(
        resolve(None), "tok_previous"
    )
    assert (
        rejected.fingerprint_for(resolve(None))("tok_other") != document["headers"]["asaas-access-token"]["fingerprint"]
    )
    assert document["headers"]["content-type"] == "application/json"
    assert "tok_previous" not in output
    # and the body is text, redacted
    assert document["body_encoding"] == "utf-8"
    assert json.loads(document["body"]) == {"id": "evt_1", "email": "[redacted]"}
    assert document["body_redacted"] is True
    # and the text form says the header is a secret, without it
    code, text = invoke("rejected", "show", row["id"])
    assert code == 0 and "(secret, fingerprint" in text and "tok_previous" not in text
    # and it ends with the command that explains the refusal
    assert text.rstrip().splitlines()[-1] == f"why it was refused: inbox doctor --rejected {row['id']}"


def test_a_binary_body_is_shown_as_base64(aws_world, frozen_now):
    # Given a refused body that is not UTF-8, with no redaction configured
    record(aws_world.names.rejected_table, at=NOW, body=b"\xff\xfe", redact_fields="")
    [row] = json.loads(invoke("rejected", "list", "--json")[1])
    # Then it is shown as base64
    document = json.loads(invoke("rejected", "show", row["id"], "--json")[1])
    assert (document["body"], document["body_encoding"]) == ("//4=", "base64")


def test_a_body_that_could_not_be_redacted_is_shown_as_withheld(aws_world, frozen_now):
    # Given redaction configured and a refused body that is not JSON
    record(aws_world.names.rejected_table, at=NOW, body=b"email=ana@example.com")
    [row] = json.loads(invoke("rejected", "list", "--json")[1])
    # Then nothing of it was kept, and the record says so
    document = json.loads(invoke("rejected", "show", row["id"], "--json")[1])
    assert (document["body"], document["body_withheld"], document["body_size"]) == ("", True, 21)


def test_an_unknown_id_is_a_clear_error(aws_world, frozen_now):
    code, output = invoke("rejected", "show", "rej_0000000000ZZZZZZZZZZZZZZZZ")
    assert code == 1 and "no rejected delivery" in output
    code, output = invoke("rejected", "show", "stripe#evt_1")
    assert code == 1 and "is not a rejection id" in output


def test_load_rejected_gives_the_doctor_the_record(aws_world, frozen_now):
    # Given a recorded refusal
    record(aws_world.names.rejected_table, at=NOW, detail="timestamp outside tolerance")
    [row] = rejected.list_rejected(resolve(None))
    # When the doctor loads it
    delivery = rejected.load_rejected(resolve(None), row["id"])
    # Then it has the schema's fields, the body as bytes
    assert delivery.id == row["id"] and delivery.source == "stripe" and delivery.provider == "stripe"
    assert delivery.headers == {"stripe-signature": "t=1,v1=00"}
    assert delivery.body == b'{"id": "evt_%d"}' % int(NOW)
    assert delivery.detail == "timestamp outside tolerance"
    assert delivery.expires_at == int(NOW) + 3 * 86_400
    with pytest.raises(NotFound):
        rejected.load_rejected(resolve(None), "rej_0000000000ZZZZZZZZZZZZZZZZ")


def test_stack_name_reads_the_stacks_own_log(aws_world, frozen_now):
    # Given a deployed stack (moto) whose outputs name its rejected table, and a local log with another record
    deployed_stack(aws_world.session)
    stack = aws_world.session.client("cloudformation")
    stack.delete_stack(StackName=STACK_NAME)
    outputs = {
        definitions.OUTPUT_API_URL: "https://abc123.execute-api.us-east-1.amazonaws.com/",
        definitions.OUTPUT_INBOX_TABLE: DEPLOYED.inbox_table,
        definitions.OUTPUT_BODY_BUCKET: DEPLOYED.body_bucket,
        definitions.OUTPUT_REJECTED_TABLE: DEPLOYED.rejected_table,
    }
    template = {
        "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    stack.create_stack(StackName=STACK_NAME, TemplateBody=json.dumps(template))
    record(DEPLOYED.rejected_table, at=NOW, source="asaas")
    record(aws_world.names.rejected_table, at=NOW, source="stripe")
    # When listed with --stack (either spelling)
    for words in (
        ("--stack", STACK_NAME, "rejected", "list", "--json"),
        ("rejected", "list", "--stack", STACK_NAME, "--json"),
    ):
        code, output = invoke(*words)
        # Then only the deployed stack's record
        assert code == 0, output
        assert [row["source"] for row in json.loads(output)] == ["asaas"]


def test_a_deployed_stacks_fingerprints_are_keyed_by_its_generated_secret(aws_world, frozen_now):
    # Given a deployed stack whose fingerprint key is a Secrets Manager secret {"current": ...}
    secrets = aws_world.session.client("secretsmanager")
    arn = secrets.create_secret(Name="FingerprintKey", SecretString=json.dumps({"current": "deployed-key"}))["ARN"]
    outputs = {
        definitions.OUTPUT_API_URL: "https://abc123.execute-api.us-east-1.amazonaws.com/",
        definitions.OUTPUT_INBOX_TABLE: DEPLOYED.inbox_table,
        definitions.OUTPUT_BODY_BUCKET: DEPLOYED.body_bucket,
        definitions.OUTPUT_FINGERPRINT_KEY_SECRET: arn,
    }
    template = {
        "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    aws_world.session.client("cloudformation").create_stack(StackName=STACK_NAME, TemplateBody=json.dumps(template))
    # Then the doctor's fingerprints of a candidate are the ingest's under that key, not the local one
    from shared.rejections import fingerprint

    of = rejected.fingerprint_for(resolve(STACK_NAME))
    assert of("tok") == fingerprint(b"deployed-key", "tok") != fingerprint(DEV_FINGERPRINT_KEY.encode(), "tok")


def test_doctor_rejected_diagnoses_a_delivery_the_ingest_recorded(aws_world, frozen_now, monkeypatch):
    # Given the "done when": a Stripe delivery whose framework re-serialized the body before posting it
    from inbox_cli.main import cli as main_cli  # the command group with `doctor` on it
    from inbox_local.dev_secrets import DEV_SECRETS
    from inbox_local.senders import sender_for
    from shared.rejections import MinuteBudget

    signed_at = int(frozen_now.timestamp())
    original = b'{\n  "id": "evt_1",\n  "type": "payment_intent.succeeded"\n}'
    request = sender_for("stripe").sign(original, DEV_SECRETS["stripe"], now=signed_at)
    log = RejectionLog(
        RejectionLogSettings(table=aws_world.names.rejected_table, fingerprint_key=DEV_FINGERPRINT_KEY),
        clock=lambda: float(signed_at),
        budget=MinuteBudget(60),
    )
    reserialized = json.dumps(json.loads(original), separators=(",", ":")).encode()
    assert (
        log.note(
            Refusal(
                "stripe",
                "stripe",
                "signature_invalid",
                "no signature matches",
                request.headers,
                {},
                reserialized,
                "ip",
                "ua",
            ),
            None,
        )
        == "recorded"
    )
    [row] = json.loads(invoke("rejected", "list", "--json")[1])
    # When the developer asks the doctor about it
    result = CliRunner().invoke(main_cli, ["doctor", "--rejected", row["id"], "--json"])
    # Then it says the body was re-serialized
    assert json.loads(result.output)["diagnosis"] == "body_reserialized", result.output
    assert result.exit_code == 1
    # and an unknown id is a clear error
    unknown = CliRunner().invoke(main_cli, ["doctor", "--rejected", "rej_0000000000ZZZZZZZZZZZZZZZZ"])
    assert unknown.exit_code == 1 and "no rejected delivery" in unknown.output
