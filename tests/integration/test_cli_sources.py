"""`inbox sources list` and `inbox secrets set` (issue 12 §1), and the commands that take a SOURCE.

Deployed: AWS-only, so against moto: a CloudFormation stack NAME with the outputs `cdk deploy` leaves (the secrets'
ARN maps by source, SourceProviders), its secrets in moto's Secrets Manager holding the placeholders the stack
generates. The value `inbox secrets set` stores comes from standard input and never appears in any output.
Locally: the declaration in the file INBOX_SOURCES_FILE names, as `make run` reads it.
"""

from __future__ import annotations

import getpass
import io
import json
import shlex
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner, Result

from inbox_cli import target as target_module
from inbox_cli.main import cli
from inbox_cli.sources import MAX_SECRET_VALUE_BYTES, SecretsRefused, read_secret_value
from inbox_local.dev_secrets import DEV_SECRETS, dev_signing_secret
from shared import definitions
from shared.definitions import SourceSpec
from shared.inbox.store import InboxStore, to_attributes
from shared.payments import outbox as outbox_items
from shared.providers.base import SignatureInvalid, SigningSecrets, WebhookRequest
from shared.providers.registry import get_driver
from tests.integration.operations_support import a_payment, store_event_at
from tests.integration.test_cli_stack import DEPLOYED, STACK_NAME, deployed_stack

API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/"
# The README's commands, as written (tests/readme_registry.py); NAME is the stack, SOURCE a source of it.
SOURCES_LIST = "inbox sources list --json"
SECRETS_SET = "inbox secrets set stripe-br --kind signing --stack NAME"
SECRETS_SET_PREVIOUS = "inbox secrets set stripe-br --kind signing --previous --stack NAME"
SECRETS_SET_API_KEY = "inbox secrets set stripe-br --kind api-key --stack NAME"
DECLARED = (
    SourceSpec("stripe-br", "stripe"),
    SourceSpec("stripe-us", "stripe"),
    SourceSpec("kiwify", "kiwify"),
)
PLACEHOLDER = "GeneratedPlaceholder0123456789abcdefGeneratedXYZ"


def invoke(command: str, *, stdin: str | None = None) -> Result:
    words = shlex.split(command.replace("NAME", STACK_NAME))
    assert words[0] == "inbox"
    return CliRunner().invoke(cli, words[1:], input=stdin)


def secret_string(session: Any, arn: str) -> str:
    value: str = session.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    return value


@pytest.fixture
def stack_with_sources(aws_world: Any) -> Iterator[dict[str, dict[str, str]]]:
    """The deployed stack of DECLARED: its secrets as the stack creates them (a generated placeholder each), and
    its outputs naming them by source. Returns {"signing": {source: ARN}, "api-key": {source: ARN}}."""
    deployed_stack(aws_world.session)
    client = aws_world.session.client("secretsmanager")
    arns: dict[str, dict[str, str]] = {"signing": {}, "api-key": {}}
    for source in DECLARED:
        arns["signing"][source.name] = client.create_secret(
            Name=f"{STACK_NAME}-SigningSecrets{source.name.replace('-', '')}-AbCdEfGhIjKl",
            SecretString=json.dumps({"previous": "", "current": PLACEHOLDER}),
        )["ARN"]
        if source.provider in definitions.REFETCH_PROVIDERS:
            arns["api-key"][source.name] = client.create_secret(
                Name=f"{STACK_NAME}-GatewayApiKeys{source.name.replace('-', '')}-MnOpQrStUvWx",
                SecretString=PLACEHOLDER,
            )["ARN"]
    outputs = {
        definitions.OUTPUT_API_URL: API_URL,
        definitions.OUTPUT_INBOX_TABLE: DEPLOYED.inbox_table,
        definitions.OUTPUT_PAYMENTS_TABLE: DEPLOYED.payments_table,
        definitions.OUTPUT_BODY_BUCKET: DEPLOYED.body_bucket,
        definitions.OUTPUT_SIGNING_SECRETS: json.dumps(arns["signing"]),
        definitions.OUTPUT_API_KEY_SECRETS: json.dumps(arns["api-key"]),
        definitions.OUTPUT_SOURCE_PROVIDERS: json.dumps({s.name: s.provider for s in DECLARED}),
        definitions.OUTPUT_OUTBOX_TABLE: DEPLOYED.outbox_table,
    }
    cloudformation = aws_world.session.client("cloudformation")
    cloudformation.delete_stack(StackName=STACK_NAME)
    cloudformation.create_stack(
        StackName=STACK_NAME,
        TemplateBody=json.dumps(
            {
                "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {key: {"Value": value} for key, value in outputs.items()},
            }
        ),
    )
    yield arns


def deployed_rows() -> dict[str, dict[str, Any]]:
    result = invoke(f"inbox --stack {STACK_NAME} sources list --json")
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.output)}


# ------------------------------------------------------------------------------------------ sources list
def test_sources_list_of_a_deployed_stack_shows_each_url_and_that_the_secrets_are_placeholders(
    stack_with_sources: dict[str, dict[str, str]],
) -> None:
    # When the sources of the freshly deployed stack are listed
    rows = deployed_rows()
    # Then each source has its URL under the stack's ApiUrl, and its secrets are still the generated placeholders
    assert list(rows) == [source.name for source in DECLARED]
    assert rows["stripe-br"] == {
        "name": "stripe-br",
        "provider": "stripe",
        "url": "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/stripe-br",
        "signing_secret": "placeholder",
        "api_key": "placeholder",
        "secrets_set": False,
        "confirm": "when_behind (30 s)",  # Stripe may confirm from its signed payload: the default for it
    }
    # And a provider without a refetch API has no API key at all, and never confirms from a payload
    assert rows["kiwify"]["confirm"] == "never"
    assert rows["kiwify"]["api_key"] is None
    # And no secret value is in the output
    assert PLACEHOLDER not in invoke(f"inbox --stack {STACK_NAME} sources list").output


def test_secrets_set_reads_the_value_from_stdin_and_never_prints_it(
    stack_with_sources: dict[str, dict[str, str]], aws_world: Any
) -> None:
    # When the Brazilian account's signing secret is piped in
    result = invoke(SECRETS_SET, stdin="whsec_brazil_secret_value\n")
    # Then it is stored as the current value, without its newline, and printed nowhere
    assert result.exit_code == 0, result.output
    assert "whsec_brazil_secret_value" not in result.output
    stored = json.loads(secret_string(aws_world.session, stack_with_sources["signing"]["stripe-br"]))
    assert stored == {"current": "whsec_brazil_secret_value", "previous": ""}
    # And `sources list` now says it is set (the other source's is still a placeholder)
    rows = deployed_rows()
    assert rows["stripe-br"]["signing_secret"] == "set"
    assert rows["stripe-us"]["signing_secret"] == "placeholder"
    assert rows["stripe-br"]["secrets_set"] is False  # its API key is still the placeholder
    # When its API key is set too, Then the source is ready, and the key is stored as the plain string
    result = invoke(SECRETS_SET_API_KEY, stdin="sk_live_brazil")
    assert result.exit_code == 0 and "sk_live_brazil" not in result.output, result.output
    assert secret_string(aws_world.session, stack_with_sources["api-key"]["stripe-br"]) == "sk_live_brazil"
    assert deployed_rows()["stripe-br"]["secrets_set"] is True


def test_previous_keeps_the_replaced_value_during_a_rotation(
    stack_with_sources: dict[str, dict[str, str]], aws_world: Any
) -> None:
    arn = stack_with_sources["signing"]["stripe-br"]
    # Given the placeholder: --previous keeps nothing (a random value verifies nothing real)
    assert invoke(SECRETS_SET_PREVIOUS, stdin="whsec_old").exit_code == 0
    assert json.loads(secret_string(aws_world.session, arn)) == {"current": "whsec_old", "previous": ""}
    # When the gateway rolls its secret and the new one is set with --previous
    result = invoke(SECRETS_SET_PREVIOUS, stdin="whsec_new")
    # Then both verify: the new one is current, the old one previous; neither is printed
    assert result.exit_code == 0, result.output
    assert "whsec_old" not in result.output and "whsec_new" not in result.output
    assert json.loads(secret_string(aws_world.session, arn)) == {"current": "whsec_new", "previous": "whsec_old"}
    # And a set without --previous ends the rotation: only the new value verifies
    assert invoke(SECRETS_SET, stdin="whsec_new").exit_code == 0
    assert json.loads(secret_string(aws_world.session, arn)) == {"current": "whsec_new", "previous": ""}


@pytest.mark.parametrize(
    ("command", "stdin", "message"),
    [
        ("inbox secrets set stripe-mx --kind signing --stack NAME", "x", "no source 'stripe-mx'"),
        ("inbox secrets set kiwify --kind api-key --stack NAME", "x", "kiwify has no refetch API"),
        ("inbox secrets set stripe-br --kind api-key --previous --stack NAME", "x", "--previous is for signing"),
        (SECRETS_SET, "\n", "no value on standard input"),
        (SECRETS_SET, "x" * (MAX_SECRET_VALUE_BYTES + 1), f"longer than {MAX_SECRET_VALUE_BYTES} bytes"),
    ],
)
def test_secrets_set_refuses_what_it_cannot_store_and_writes_nothing(
    stack_with_sources: dict[str, dict[str, str]], aws_world: Any, command: str, stdin: str, message: str
) -> None:
    before = {
        arn: secret_string(aws_world.session, arn) for kind in stack_with_sources.values() for arn in kind.values()
    }
    result = invoke(command, stdin=stdin)
    assert result.exit_code == 2, result.output  # a usage error
    assert message in result.output
    after = {
        arn: secret_string(aws_world.session, arn) for kind in stack_with_sources.values() for arn in kind.values()
    }
    assert after == before


def test_secrets_set_refuses_the_local_stack(local_sources: Path) -> None:
    result = invoke("inbox secrets set stripe --kind signing", stdin="x")
    assert result.exit_code == 2
    assert "INBOX_SECRET_<SOURCE>" in result.output


def test_on_a_terminal_the_value_is_asked_for_without_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given standard input is a terminal
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    asked: list[str] = []

    def no_echo_prompt(prompt: str) -> str:
        asked.append(prompt)
        return " typed \n"

    monkeypatch.setattr(getpass, "getpass", no_echo_prompt)
    # When the value is read, Then getpass (no echo) asked for it, and the typed value is returned trimmed
    assert read_secret_value(Terminal(), prompt="signing secret of stripe-br: ") == "typed"
    assert asked == ["signing secret of stripe-br: "]
    with pytest.raises(SecretsRefused):
        read_secret_value(io.StringIO(""), prompt="")


# ------------------------------------------------------------------------------------------------ local
@pytest.fixture
def local_sources(aws_world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DECLARED as the local sources.json. These commands reach no AWS API locally; the local target's endpoint
    variables (which it sets in the process) are kept out so that moto keeps serving the other tests."""
    monkeypatch.setattr(target_module, "aws_environment", lambda endpoints: {})
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([source.document() for source in DECLARED]))
    monkeypatch.setenv(definitions.ENV_SOURCES_FILE, str(path))
    monkeypatch.delenv(definitions.ENV_SOURCES, raising=False)
    monkeypatch.setenv("INBOX_PORT", "18787")
    for source in DECLARED:
        monkeypatch.delenv(f"INBOX_SECRET_{source.env_suffix}", raising=False)
        monkeypatch.delenv(f"INBOX_API_KEY_{source.env_suffix}", raising=False)
    return path


def test_sources_list_locally_shows_the_declared_sources_urls_and_where_their_secrets_come_from(
    local_sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the Brazilian account's secret in the environment, the others not
    monkeypatch.setenv("INBOX_SECRET_STRIPE_BR", "whsec_from_the_environment")
    result = invoke(SOURCES_LIST)
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    # Then each source's local URL, and which variable (or the development secret) signs it; no value printed
    assert rows["stripe-br"]["url"] == "http://127.0.0.1:18787/webhooks/stripe-br"
    assert rows["stripe-br"]["signing_secret"] == "INBOX_SECRET_STRIPE_BR"
    assert rows["stripe-us"]["signing_secret"] == "dev secret"
    assert rows["stripe-us"]["api_key"] == "gateway simulator"
    assert rows["kiwify"]["api_key"] is None
    assert "whsec_from_the_environment" not in result.output
    # And the table form lists them too
    table = invoke("inbox sources list").output
    assert "stripe-us" in table and "http://127.0.0.1:18787/webhooks/kiwify" in table


class _Capture(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Capture.received.append((self.path, dict(self.headers.items()), body))
        self.send_response(202)
        self.end_headers()
        self.wfile.write(b'{"status":"accepted"}')

    def log_message(self, *args: Any) -> None:
        pass


def test_send_signs_with_the_sources_own_secret_and_posts_to_its_url(local_sources: Path) -> None:
    # Given two sources of one provider without an API (no simulator involved): shop-a and shop-b of Shopify
    local_sources.write_text(
        json.dumps([{"name": "shop-a", "provider": "shopify"}, {"name": "shop-b", "provider": "shopify"}])
    )
    server = HTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Capture.received.clear()
    try:
        # When `inbox send shop-b` posts (to the capture server, as the local API would receive it)
        result = invoke(f"inbox send shop-b --url http://127.0.0.1:{server.server_port}/webhooks/shop-b")
    finally:
        server.shutdown()
    assert result.exit_code == 0, result.output
    ((path, headers, body),) = _Capture.received
    assert path == "/webhooks/shop-b"
    assert "inbox events show shop-b " in result.output
    # Then it verifies with shop-b's development secret, and not with shop-a's
    driver = get_driver("shopify")
    request = WebhookRequest(body=body, headers={k.lower(): v for k, v in headers.items()})
    now = time.time()
    own = SigningSecrets(dev_signing_secret(SourceSpec("shop-b", "shopify")))
    driver.verify(request, own, now=now, tolerance_seconds=300)
    with pytest.raises(SignatureInvalid):
        other = SigningSecrets(dev_signing_secret(SourceSpec("shop-a", "shopify")))
        driver.verify(request, other, now=now, tolerance_seconds=300)


def test_send_refuses_a_source_the_stack_does_not_have(local_sources: Path) -> None:
    result = invoke("inbox send stripe")  # not declared in this sources.json
    assert result.exit_code == 2
    assert "no source 'stripe'" in result.output and "stripe-br, stripe-us, kiwify" in result.output


def test_the_dev_secret_of_a_default_source_is_its_providers() -> None:
    assert dev_signing_secret(SourceSpec("stripe", "stripe")) == DEV_SECRETS["stripe"]
    assert dev_signing_secret(SourceSpec("stripe-br", "stripe")).endswith("-stripe-br")


# ------------------------------------------------------------------------------------- show by SOURCE
def test_events_show_and_payments_show_take_a_source(stack_with_sources: dict[str, dict[str, str]]) -> None:
    # Given an event of stripe-br in the deployed inbox (its key is the source's, as the ingest writes it)
    pk = store_event_at(DEPLOYED, 10, resource_id="pi_br_1", event_id="evt_br_1")
    item = InboxStore(DEPLOYED.inbox_table).get(pk)
    assert item is not None
    item.update(pk="stripe-br#evt_br_1", source="stripe-br")
    dynamodb = boto3.client("dynamodb")
    dynamodb.delete_item(TableName=DEPLOYED.inbox_table, Key={"pk": {"S": pk}})
    dynamodb.put_item(TableName=DEPLOYED.inbox_table, Item=to_attributes(item))
    # When it is shown by its source, Then it is found; under another source of the same provider it is not
    shown = invoke(f"inbox --stack {STACK_NAME} events show stripe-br evt_br_1 --json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["pk"] == "stripe-br#evt_br_1"
    missing = invoke(f"inbox --stack {STACK_NAME} events show stripe-us evt_br_1")
    assert missing.exit_code == 1 and "no event stripe-us#evt_br_1" in missing.output
    # And a payment is looked up under its source's key
    absent = invoke(f"inbox --stack {STACK_NAME} payments show stripe-br pi_1")
    assert absent.exit_code == 1 and "no payment stripe-br#pi_1" in absent.output
    # And `events list --source` / `--provider` filter by source / by every source of the provider
    listed = json.loads(invoke(f"inbox --stack {STACK_NAME} events list --source stripe-br --json").output)
    assert [(row["source"], row["event_id"]) for row in listed] == [("stripe-br", "evt_br_1")]
    assert json.loads(invoke(f"inbox --stack {STACK_NAME} events list --source stripe-us --json").output) == []
    by_provider = json.loads(invoke(f"inbox --stack {STACK_NAME} events list --provider stripe --json").output)
    assert [row["source"] for row in by_provider] == ["stripe-br"]


def test_a_provider_name_where_its_sources_are_named_says_which_to_ask_for(
    stack_with_sources: dict[str, dict[str, str]],
) -> None:
    # When a single-source read names the provider (its default source, not declared: stripe-br and stripe-us are)
    missing = invoke(f"inbox --stack {STACK_NAME} payments show stripe pi_1")
    # Then it finds nothing under stripe#pi_1, and says which sources to ask for instead
    assert missing.exit_code == 1
    assert "no payment stripe#pi_1 (stripe names its provider's default source;" in missing.output
    assert "stripe sources: stripe-br, stripe-us)" in missing.output


def test_outbox_list_selects_by_source_or_every_source_of_the_provider(
    stack_with_sources: dict[str, dict[str, str]],
) -> None:
    # Given the same payment id paid in both Stripe accounts, each change published in its outbox partition
    dynamodb = boto3.client("dynamodb")
    for source in ("stripe-br", "stripe-us"):
        item = outbox_items.status_changed(
            a_payment(resource_id="pi_twice", source=source),
            occurred_at="2026-11-29T10:00:00Z",
            source_event_id=f"evt_{source}",
            created_at="2026-11-29T10:00:01Z",
        )
        dynamodb.put_item(TableName=DEPLOYED.outbox_table, Item=to_attributes(item))

    def listed(options: str) -> list[tuple[str, str]]:
        result = invoke(f"inbox --stack {STACK_NAME} outbox list {options} --json")
        assert result.exit_code == 0, result.output
        return [(row["source"], row["resource_id"]) for row in json.loads(result.output)]

    # When the outbox is listed by source, by provider, and by payment within each
    # Then --source selects one account, --provider every account of Stripe (one Query per source with an id)
    assert listed("--source stripe-br") == [("stripe-br", "pi_twice")]
    assert listed("--source stripe-br --resource-id pi_twice") == [("stripe-br", "pi_twice")]
    assert listed("--provider stripe --resource-id pi_twice") == [("stripe-br", "pi_twice"), ("stripe-us", "pi_twice")]
    assert listed("--provider stripe") == [("stripe-br", "pi_twice"), ("stripe-us", "pi_twice")]
    assert listed("--source stripe-us --provider asaas") == []
    # And the table names each record's source
    assert "stripe-us" in invoke(f"inbox --stack {STACK_NAME} outbox list --source stripe-us").output


@pytest.mark.parametrize("provider", definitions.PROVIDERS)
def test_every_providers_second_source_has_a_dev_secret_its_driver_accepts(provider: str) -> None:
    # Given a second source of each provider (not named after it), with the dev secret the rule gives it
    from inbox_local.senders import sender_for

    own, other = SourceSpec(f"{provider}-b", provider), SourceSpec(provider, provider)
    secret = dev_signing_secret(own)
    assert secret != dev_signing_secret(other)
    sender, driver, now = sender_for(provider), get_driver(provider), int(time.time())
    # When a sample is signed with it (an encoded key must stay decodable: Standard Webhooks, Adyen)
    body = sender.sample_body(event_id="evt_1", resource_id="pay_1", status="paid", amount=1990, occurred_at=now)
    signed = sender.sign(body, secret, now=now, event_id="evt_1")
    # Then the driver verifies it with that secret
    driver.verify(signed, SigningSecrets(secret), now=now, tolerance_seconds=300)
