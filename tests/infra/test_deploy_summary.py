"""What `make synth` and `make deploy` print (app.py, inbox_cli/deploy_summary.py): the synthesized template's
sources, secrets and alarms and who is subscribed to them, the fixed cost `inbox cost` computes for that
deployment, and a warning when no one would hear an alarm or no sources.json was declared."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app import summary
from inbox_cli.cost import deployment_assumptions, fixed_monitoring
from inbox_cli.deploy_summary import summarize
from inbox_cli.main import cli
from shared import definitions
from tests.infra.conftest import ONE_SOURCE

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("infra")]


def test_a_one_source_stack_is_summarized_as_inbox_cost_prices_it(one_source, tmp_path, monkeypatch):
    # Given the stack of a one-source merchant (default settings: no forwarding, no alarm address), synthesized
    # When its summary is made from its template
    text = summary(one_source.stack, one_source.template_json)
    # Then its secrets and alarms are the template's, and the cost model counts the same
    resources = one_source.template_json["Resources"].values()
    secrets = sum(1 for resource in resources if resource["Type"] == "AWS::SecretsManager::Secret")
    alarms = sum(1 for resource in resources if resource["Type"] == "AWS::CloudWatch::Alarm")
    priced = deployment_assumptions(ONE_SOURCE, forwarding=False, dashboard=False, tracing=False)
    assert (secrets, alarms) == (priced.secrets, fixed_monitoring(priced)["alarms"])
    assert f"  secrets: {secrets} " in text
    assert f"  alarms: {alarms}, subscribed: nobody" in text
    assert "stripe-br (stripe)" in text
    # And its fixed cost is `inbox cost`'s for that declaration with forwarding off
    declaration = tmp_path / "sources.json"
    declaration.write_text(json.dumps([source.document() for source in ONE_SOURCE]))
    monkeypatch.setenv(definitions.ENV_SOURCES_FILE, str(declaration))
    report = json.loads(CliRunner().invoke(cli, ["cost", "--json"]).output)
    without_forwarding = report if not report["scenario"]["forwarding"] else report["with_forwarding_off"]
    assert f"  fixed cost: ${without_forwarding['fixed_per_month']:.2f} a month" in text
    assert f"${without_forwarding['fixed_per_month']:,.2f}" in CliRunner().invoke(cli, ["cost"]).output
    # And it warns that no one would hear an alarm
    assert "warning: no one would hear an alarm" in text


TEMPLATE = {
    "Resources": {
        "Signing": {"Type": "AWS::SecretsManager::Secret", "Properties": {}},
        "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {}},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
    }
}
SUBSCRIBED = {
    "Resources": {
        **TEMPLATE["Resources"],
        "OnCall": {"Type": "AWS::SNS::Subscription", "Properties": {"Protocol": "email", "Endpoint": "oncall@shop.br"}},
    }
}


def summary_of(template, *, sources_file):
    return summarize(
        template,
        stack_name="WebhookInbox",
        sources=ONE_SOURCE,
        sources_file=sources_file,
        forwarding=False,
        dashboard=False,
        tracing=False,
    )


def test_an_alarm_address_is_shown_as_subscribed_and_silences_the_warning():
    # Given a template whose alarm topic has an e-mail subscription, from a sources.json
    shown = summary_of(SUBSCRIBED, sources_file="sources.json")
    # Then the subscriber is named, and nothing is warned
    assert (shown.secrets, shown.alarms, shown.subscribers) == (1, 1, ("email oncall@shop.br",))
    assert shown.warnings == []
    assert "subscribed: email oncall@shop.br" in shown.render()


def test_without_a_sources_file_it_says_a_source_per_provider_is_deployed():
    # Given no sources.json (the default declaration) and no subscription
    shown = summary_of(TEMPLATE, sources_file=None)
    # Then both warnings: no one hears an alarm, and the declaration should come first
    assert [warning.split(":")[0] for warning in shown.warnings] == [
        "no one would hear an alarm",
        "no sources.json",
    ]
    assert "from no sources.json: one per provider" in shown.render()
