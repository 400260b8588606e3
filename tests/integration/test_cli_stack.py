"""docs/cli.md: `--stack NAME` against a deployed stack — AWS-only, so run against moto: a CloudFormation stack
named NAME whose outputs name tables other than the local stack's, holding events the local names do not, read
through `inbox --stack NAME ...` (the CLI's own command group, in this process, where moto is)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from inbox_cli.main import cli
from inbox_local.config import LocalNames
from inbox_local.resources import provision
from shared import definitions
from tests.integration.operations_support import store_event_at

STACK_NAME = "WebhookInboxProd"
DEPLOYED = LocalNames(
    inbox_table=f"{STACK_NAME}-InboxTable1A2B",
    payments_table=f"{STACK_NAME}-PaymentsTable3C4D",
    control_table=f"{STACK_NAME}-ControlTable5E6F",
    body_bucket=f"{STACK_NAME.lower()}-bodybucket7a8b",
    archive_bucket=f"{STACK_NAME.lower()}-archivebucket9c0d",
    queue=f"{STACK_NAME}-Events.fifo",
    dead_letter_queue=f"{STACK_NAME}-EventsDlq.fifo",
    outbox_table=f"{STACK_NAME}-OutboxTable1E2F",
    rejected_table=f"{STACK_NAME}-RejectedTable3A4B",
    forward_log_table=f"{STACK_NAME}-ForwardLogTable7A8B",
)
# The commands README's Operate table shows, with `--stack NAME` added where the CLI takes it (after `inbox`).
STATS = "inbox --stack NAME stats [--json]"
EVENTS_LIST = "inbox --stack NAME events list [--json]"


def deployed_stack(session: Any) -> None:
    """In moto: the deployed stack's tables and bucket, and a CloudFormation stack NAME with the outputs the CLI
    reads (inbox_cli/target.py), as `cdk deploy` leaves them."""
    provision(session, DEPLOYED)
    outputs = {
        definitions.OUTPUT_API_URL: "https://abc123.execute-api.us-east-1.amazonaws.com/",
        definitions.OUTPUT_INBOX_TABLE: DEPLOYED.inbox_table,
        definitions.OUTPUT_PAYMENTS_TABLE: DEPLOYED.payments_table,
        definitions.OUTPUT_BODY_BUCKET: DEPLOYED.body_bucket,
        definitions.OUTPUT_OUTBOX_TABLE: DEPLOYED.outbox_table,
        definitions.OUTPUT_CONTROL_TABLE: DEPLOYED.control_table,
        definitions.OUTPUT_FORWARD_LOG_TABLE: DEPLOYED.forward_log_table,
    }
    template = {
        "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    session.client("cloudformation").create_stack(StackName=STACK_NAME, TemplateBody=json.dumps(template))


def run(readme_command: str, *, as_json: bool) -> str:
    """`readme_command` as written, NAME filled in, `[--json]` taken or left out."""
    words = shlex.split(readme_command.replace("NAME", STACK_NAME).replace("[--json]", "--json" if as_json else ""))
    assert words[0] == "inbox"
    result = CliRunner().invoke(cli, words[1:])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def deployed(aws_world: Any) -> Any:
    deployed_stack(aws_world.session)
    # Events of the deployed stack's inbox; the local stack's inbox (the default names) holds another one
    store_event_at(DEPLOYED, 10, resource_id="pi_deployed_1")
    store_event_at(DEPLOYED, 20, resource_id="pi_deployed_2")
    store_event_at(aws_world.names, 30, resource_id="pi_local_only")
    return aws_world


def test_stats_with_stack_counts_the_deployed_stacks_events(deployed):
    # When `inbox --stack NAME stats --json` runs
    stats = json.loads(run(STATS, as_json=True))
    # Then it counts the events of the tables the stack's outputs name, not the local stack's
    assert stats["events"]["by_provider"]["stripe"]["pending"] == 2, stats
    # And the table form says the same
    assert "stripe" in run(STATS, as_json=False)


def test_events_list_with_stack_lists_the_deployed_stacks_events(deployed):
    # When `inbox --stack NAME events list --json` runs
    listed = json.loads(run(EVENTS_LIST, as_json=True))
    # Then it lists the deployed inbox's events only
    assert sorted(row["resource_id"] for row in listed) == ["pi_deployed_1", "pi_deployed_2"]
    table = run(EVENTS_LIST, as_json=False)
    assert "pi_deployed_1" in table and "pi_local_only" not in table


def test_an_unknown_stack_name_is_an_error_not_the_local_stack(deployed):
    # When the name is not a deployed stack, Then the CLI fails instead of reading something else
    result = CliRunner().invoke(cli, ["--stack", "NoSuchStack", "events", "list"])
    assert result.exit_code != 0
    assert "pi_local_only" not in result.output


def test_the_stack_is_found_by_cloudformation_in_the_configured_region(deployed):
    # Given the stack, Then CloudFormation (moto) really holds it with those outputs (not a stubbed lookup)
    stack = boto3.client("cloudformation").describe_stacks(StackName=STACK_NAME)["Stacks"][0]
    assert {output["OutputKey"] for output in stack["Outputs"]} >= {definitions.OUTPUT_INBOX_TABLE}


def test_outbox_attempts_with_stack_reads_the_deployed_stacks_forwarding_log(deployed):
    # Given an attempt in the deployed stack's forwarding log and another in the local stack's
    from datetime import UTC, datetime

    from shared.forwarding_log import Answer, ForwardLog

    event = {"id": "tr_deployed", "type": "payment.status_changed", "sequence": 1, "provider": "stripe"}
    now = datetime.now(UTC).timestamp()
    dynamodb = deployed.session.client("dynamodb")
    ForwardLog(dynamodb, DEPLOYED.forward_log_table).record(event, "https://app/h", Answer(503, 7), now)
    ForwardLog(dynamodb, deployed.names.forward_log_table).record(event, "https://local/h", Answer(500, 7), now)
    # When `inbox --stack NAME outbox attempts ID --json` runs
    attempts = json.loads(run("inbox --stack NAME outbox attempts tr_deployed [--json]", as_json=True))
    # Then it lists the deployed stack's attempt only
    assert [(a["status"], a["endpoint"]) for a in attempts] == [(503, "https://app/h")]


def test_outbox_list_undelivered_with_a_stack_that_forwards_nothing_says_so(deployed):
    result = CliRunner().invoke(cli, ["--stack", STACK_NAME, "outbox", "list", "--undelivered"])
    assert result.exit_code == 1 and "forwards nothing" in result.output
