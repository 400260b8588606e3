"""The local stack and the CLI speak of the sources the declaration names: the `make run` banner suggests commands
for them, and `inbox simulate` (which drives each provider's default source) refuses up front what is not declared,
saying why, rather than ending "verdict NOT OK" with no reason."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from inbox_cli.main import _simulated_on_declared_sources, cli
from inbox_cli.simulate import SimulationOptions
from inbox_cli.target import Target
from inbox_local.runtime import _try_it
from shared import definitions
from shared.definitions import SourceSpec

URL = "http://127.0.0.1:8787"
MERCHANT = (SourceSpec("stripe-br", "stripe"), SourceSpec("stripe-us", "stripe"), SourceSpec("asaas", "asaas"))


def local_target(sources: tuple[SourceSpec, ...]) -> Target:
    return Target(URL, "inbox", "payments", "bodies", local=True, sources=sources)


def test_the_banner_suggests_the_readmes_commands_for_the_default_declaration():
    # Given the default declaration (a source per provider), Then the banner sends to stripe and curls asaas
    shown = _try_it(URL, definitions.default_sources())
    assert "  .venv/bin/inbox send stripe\n" in shown
    assert f"curl -s -X POST {URL}/webhooks/asaas " in shown


def test_the_banner_suggests_commands_for_the_declared_sources():
    # Given the merchant's declaration, where no source is named `stripe`
    shown = _try_it(URL, MERCHANT)
    # Then it sends to a declared Stripe source, never to the undeclared default one
    assert "  .venv/bin/inbox send stripe-br\n" in shown
    assert "inbox send stripe\n" not in shown
    assert f"{URL}/webhooks/asaas " in shown
    # And with no Asaas source it offers no curl to one, and sends to the first declared source
    only_shopify = _try_it(URL, (SourceSpec("shop-a", "shopify"),))
    assert "inbox send shop-a" in only_shopify and "curl" not in only_shopify


def test_simulate_with_the_default_declaration_simulates_what_was_asked():
    options = SimulationOptions(payments=4, providers=("stripe",))
    assert _simulated_on_declared_sources(local_target(definitions.default_sources()), options) is options


def test_simulate_refuses_a_provider_whose_default_source_is_not_declared_naming_its_sources():
    # Given the merchant's declaration, When `inbox simulate --provider stripe`
    options = SimulationOptions(payments=4, providers=("stripe",))
    with pytest.raises(click.UsageError) as refused:
        _simulated_on_declared_sources(local_target(MERCHANT), options)
    # Then it says why, up front: simulate drives /webhooks/stripe, and stripe's sources here are named
    message = refused.value.message
    assert "default source" in message and "stripe (its sources here: stripe-br, stripe-us)" in message


def test_simulate_by_default_leaves_out_the_undeclared_providers_and_says_so(capsys):
    # Given the merchant's declaration, When `inbox simulate` with no --provider
    chosen = _simulated_on_declared_sources(local_target(MERCHANT), SimulationOptions(payments=4))
    # Then it simulates the declared default sources only (asaas), and a note says what it left out
    assert chosen.providers == ("asaas",)
    assert "simulating asaas" in capsys.readouterr().err


def test_simulate_on_the_command_line_refuses_before_sending_anything(tmp_path, monkeypatch):
    # Given the merchant's sources.json for the local stack (nothing listens on this port: nothing may be sent)
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([source.document() for source in MERCHANT]))
    monkeypatch.setenv(definitions.ENV_SOURCES_FILE, str(path))
    monkeypatch.setenv("INBOX_PORT", "1")
    monkeypatch.setattr("inbox_cli.target.aws_environment", lambda endpoints: {})
    # When `inbox simulate --provider stripe` runs
    result = CliRunner().invoke(cli, ["simulate", "--provider", "stripe", "--payments", "2"])
    # Then it is a usage error that says why, not a failed verdict
    assert result.exit_code == 2, result.output
    assert "does not declare stripe" in result.output
