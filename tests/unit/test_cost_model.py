"""The cost model: line by line, scaling with volume, driven by the dated price table."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inbox_cli.cost import (
    PRICES,
    REPLAY_SHARE_OF_EVENTS,
    Assumptions,
    assumed_usage,
    deployment_assumptions,
    inline_body_break_even_bytes,
    measured_assumptions,
    measured_usage,
    monthly_cost,
    replay_transitions_per_event,
    xray_traces,
)
from inbox_cli.main import cli
from shared import definitions
from shared.inbox.model import INLINE_BODY_BREAK_EVEN_BYTES


def test_variable_cost_scales_with_volume_and_fixed_cost_does_not():
    small, large = monthly_cost(1_000_000, "us-east-1"), monthly_cost(10_000_000, "us-east-1")
    assert small["fixed_per_month"] == large["fixed_per_month"]
    assert large["total_per_month"] - large["fixed_per_month"] == pytest.approx(
        10 * (small["total_per_month"] - small["fixed_per_month"]), rel=0.01
    )
    assert small["variable_per_million_events"] == pytest.approx(large["variable_per_million_events"], rel=0.01)


def test_every_line_is_priced_and_the_total_is_their_sum():
    report = monthly_cost(2_000_000, "us-east-1")
    assert all(value >= 0 for value in report["lines"].values())
    assert report["total_per_month"] == pytest.approx(sum(report["lines"].values()), abs=0.01)
    assert {"API Gateway HTTP API", "EventBridge Pipes", "SQS FIFO (send, receive, delete)"} <= set(report["lines"])


def test_bigger_bodies_cost_more_write_units():
    two, eight = (
        monthly_cost(10**6, "us-east-1", Assumptions(body_kb=2)),
        monthly_cost(10**6, "us-east-1", Assumptions(body_kb=8)),
    )
    assert eight["write_units_per_event"]["ingest"] > two["write_units_per_event"]["ingest"]


def test_an_unknown_region_is_a_clear_error():
    result = CliRunner().invoke(cli, ["cost", "--region", "mars-1"])
    assert result.exit_code != 0
    assert "no price table" in result.output


def test_the_command_prints_the_lines():
    result = CliRunner().invoke(cli, ["cost", "--events-per-month", "1000000"])
    assert result.exit_code == 0, result.output
    assert "per million webhooks" in result.output
    assert "DynamoDB writes" in result.output


def test_downstream_is_priced_and_forwarding_off_costs_less():
    # Given the same volume with and without the forwarding Lambda and its Pipe
    with_forwarding = monthly_cost(1_000_000, "us-east-1", Assumptions(forwarding=True))
    without = monthly_cost(1_000_000, "us-east-1", Assumptions(forwarding=False))
    # Then the outbox, the bus and the downstream Lambdas are lines of their own, and forwarding adds cost
    assert {"Outbox writes (in the transaction)", "EventBridge bus events + archive"} <= set(with_forwarding["lines"])
    assert with_forwarding["lines"]["Lambda publisher + forwarder"] > without["lines"]["Lambda publisher + forwarder"]
    assert with_forwarding["lines"]["Outbox stream reads + Pipes"] > without["lines"]["Outbox stream reads + Pipes"]
    # And publishing scales with the share of events that change a payment
    busier = monthly_cost(1_000_000, "us-east-1", Assumptions(transitions_per_event=1.2))
    assert busier["lines"]["EventBridge bus events + archive"] == pytest.approx(
        2 * with_forwarding["lines"]["EventBridge bus events + archive"], rel=0.02
    )


# ------------------------------------------------------------------------------------ measured, not assumed

MEASURED_ITEM_SIZES = {
    "measured_at": "2026-12-01T12:00:00+00:00",
    "scenario": {
        "provider": "stripe",
        "body_bytes": 1863,
        "events": 100,
        "deliveries_per_event": 1.9,
        "transitions_per_event": 0.5,
        "forwarding": False,
    },
    "per_event": {
        "write_units_ingest": 5.0,
        "write_units_per_duplicate_delivery": 3.0,
        "write_units_processing": 9.0,
        "write_units_outbox": 1.0,
        "write_units_forwarding_checkpoints": 0.5,
        "read_units_processing": 2.5,
        "pipe_events": 1.0,
        "processor_invocations": 0.5,
        "sqs_requests": 1.5,
        "log_bytes_ingest_per_delivery": 700.0,
        "log_bytes_processor": 700.0,
        "transitions": 0.5,
    },
    "item_bytes_median": {"inbox item after processor Update": 2600, "inbox/events-by-resource entry": 300},
}


def _results(tmp_path, item_sizes=MEASURED_ITEM_SIZES):
    path = tmp_path / "latest.json"
    path.write_text(json.dumps({"measured_at": "x", **({"item_sizes": item_sizes} if item_sizes else {})}))
    return path


def test_measured_figures_are_read_per_event_and_per_transition(tmp_path):
    # Given a measurement of 0.5 transitions per event, 1 outbox write unit per event
    usage = measured_usage(_results(tmp_path))
    # Then the per-event figures are the measurement's, and the outbox's are per transition
    assert usage is not None
    assert usage.write_units_processing == 9.0
    assert usage.write_units_outbox_per_transition == 2.0
    assert usage.write_units_forwarding_per_transition == 1.0
    assert usage.source.startswith("measured (latest.json, item_sizes, 2026-12-01T12:00:00+00:00: 100 stripe events")
    # And the scenario's body size and transitions become the assumptions priced with them
    assumptions = measured_assumptions(_results(tmp_path))
    assert assumptions.body_kb == 1.82
    assert assumptions.transitions_per_event == 0.5


def test_without_a_measurement_the_model_says_it_assumed(tmp_path):
    assert measured_usage(_results(tmp_path, item_sizes=None)) is None
    assert measured_usage(tmp_path / "absent.json") is None
    report = monthly_cost(1_000_000, "us-east-1")
    assert report["per_event_figures"].startswith("assumed")


def test_the_priced_lines_follow_the_measured_figures(tmp_path):
    # Given the measurement, and the same with twice the processor's write units
    usage = measured_usage(_results(tmp_path))
    assert usage is not None
    doubled = replace(usage, write_units_processing=2 * usage.write_units_processing)
    base = monthly_cost(1_000_000, "us-east-1", Assumptions(), usage)
    more = monthly_cost(1_000_000, "us-east-1", Assumptions(), doubled)
    # Then that line doubles and nothing else moves
    line = "DynamoDB writes (processing, transactions)"
    assert more["lines"][line] == pytest.approx(2 * base["lines"][line])
    assert {k: v for k, v in more["lines"].items() if k != line} == {
        k: v for k, v in base["lines"].items() if k != line
    }
    assert base["per_event_figures"] == usage.source


def test_duplicate_deliveries_cost_their_failed_conditional_puts():
    once = monthly_cost(1_000_000, "us-east-1", Assumptions(deliveries_per_event=1.0))
    twice = monthly_cost(1_000_000, "us-east-1", Assumptions(deliveries_per_event=2.0))
    usage = assumed_usage(Assumptions())
    extra = twice["lines"]["DynamoDB writes (ingest)"] - once["lines"]["DynamoDB writes (ingest)"]
    assert extra == pytest.approx(1_000_000 * usage.write_units_per_duplicate / 1e6 * 0.625, rel=0.01)


def test_forwarding_off_drops_the_forwarders_checkpoints():
    on = monthly_cost(1_000_000, "us-east-1", Assumptions(forwarding=True))
    off = monthly_cost(1_000_000, "us-east-1", Assumptions(forwarding=False))
    assert on["lines"]["Forwarding checkpoints (control table)"] > 0
    assert off["lines"]["Forwarding checkpoints (control table)"] == 0


# The measurement and the fallback formulas may differ by this much before one of them is out of date: the formulas
# round item sizes to whole kilobytes and take batch sizes as averages.
AGREEMENT = 0.10


def test_the_assumptions_agree_with_the_last_committed_measurement():
    # Given the measurement committed in bench/results/latest.json (make bench, section item_sizes)
    measured = measured_usage()
    assert measured is not None, "bench/results/latest.json has no item_sizes section: run `python -m bench item_sizes`"
    # When the fallback formulas are evaluated for the measured scenario (its body size and transitions)
    assumed = assumed_usage(measured_assumptions())
    # Then every per-event figure agrees within AGREEMENT: otherwise the code's writes changed and either the
    # measurement is stale (re-run it) or the formulas are (update Assumptions / assumed_usage)
    disagreements = {
        name: (getattr(assumed, name), value)
        for name, value in asdict(measured).items()
        if name not in ("source",) and abs(getattr(assumed, name) - value) > AGREEMENT * max(abs(value), 1e-9)
    }
    assert not disagreements, f"(assumed, measured) per event: {disagreements}"


def test_the_command_states_the_scenario_and_where_the_figures_come_from():
    result = CliRunner().invoke(cli, ["cost", "--events-per-month", "1000000"])
    assert result.exit_code == 0, result.output
    assert "scenario:" in result.output
    assert "deliveries per event" in result.output
    assert "transitions per event" in result.output
    assert "per-event figures: measured" in result.output
    assert "with forwarding off: $" in result.output  # the other half of the scenario, priced alike
    as_json = json.loads(CliRunner().invoke(cli, ["cost", "--json"]).output)
    assert {"variable_per_million_events", "fixed_per_month", "scenario", "per_event_figures"} <= set(as_json)


def test_another_body_size_prices_with_the_formulas_and_says_so():
    result = CliRunner().invoke(cli, ["cost", "--body-kb", "8"])
    assert result.exit_code == 0, result.output
    assert "per-event figures: assumed" in result.output


# ------------------------------------------------------------------------------------------ declared sources
def _cost_json(monkeypatch, tmp_path, declaration):
    """`inbox cost --json` for a deployment of `declaration` (INBOX_SOURCES_FILE), or the default one (None)."""
    monkeypatch.delenv("INBOX_SOURCES", raising=False)
    if declaration is not None:  # None: the run's own default declaration (tests/conftest.py)
        path = tmp_path / "sources.json"
        path.write_text(json.dumps(declaration))
        monkeypatch.setenv("INBOX_SOURCES_FILE", str(path))
    result = CliRunner().invoke(cli, ["cost", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(
    ("declaration", "signing", "api_key"),
    [
        ([{"name": "stripe-br", "provider": "stripe"}], 1, 1),  # a gateway with a refetch API: a key too
        ([{"name": "shop", "provider": "kiwify"}], 1, 0),  # ordered by event time: no key
    ],
)
def test_a_one_source_deployment_pays_for_its_own_secrets_only(monkeypatch, tmp_path, declaration, signing, api_key):
    # Given sources.json declaring one source
    report = _cost_json(monkeypatch, tmp_path, declaration)
    secrets = report["scenario"]["secrets"]
    # Then the fixed cost counts its one or two secrets (and the forwarding secret with forwarding on), not 22
    forwarding = 1 if report["scenario"]["forwarding"] else 0
    assert secrets == {
        "signing": signing,
        "api_key": api_key,
        "forwarding": forwarding,
        "fingerprint_key": 1,  # the rejected-delivery log's (infra/constructs/rejected_log.py)
        "total": signing + api_key + forwarding + 1,
    }
    price = json.loads(PRICES.read_text())["regions"]["us-east-1"]["secrets_manager_per_secret_month"]
    assert report["lines"]["Secrets Manager (fixed)"] == pytest.approx(secrets["total"] * price)
    # And the scenario line of the text output states them
    text = CliRunner().invoke(cli, ["cost"]).output
    assert f"1 source(s) declared: {secrets['total']} secrets ({signing} signing, {api_key} API key" in text


def test_the_default_declaration_pays_one_secret_per_provider_and_api(monkeypatch, tmp_path):
    report = _cost_json(monkeypatch, tmp_path, None)
    secrets = report["scenario"]["secrets"]
    assert (secrets["signing"], secrets["api_key"]) == (len(definitions.PROVIDERS), len(definitions.REFETCH_PROVIDERS))
    assert report["scenario"]["sources"] == len(definitions.PROVIDERS)


def test_the_secret_count_follows_forwarding():
    on, off = Assumptions(forwarding=True), Assumptions(forwarding=False)
    assert on.secrets == off.secrets + 1


def test_a_bad_sources_file_is_a_usage_error_naming_the_entry(monkeypatch, tmp_path):
    path = tmp_path / "sources.json"
    path.write_text(json.dumps([{"name": "Stripe", "provider": "stripe"}]))
    monkeypatch.delenv("INBOX_SOURCES", raising=False)
    monkeypatch.setenv("INBOX_SOURCES_FILE", str(path))
    result = CliRunner().invoke(cli, ["cost"])
    assert result.exit_code == 2
    assert "entry 1 ('Stripe')" in result.output


def test_the_forwarding_log_costs_a_write_per_attempt_and_its_storage_only_with_forwarding():
    # Given the same month with forwarding on, off, and with an endpoint that needs two attempts per event
    line = "Forwarding log (one item per attempt)"
    on = monthly_cost(1_000_000, "us-east-1", Assumptions())
    off = monthly_cost(1_000_000, "us-east-1", Assumptions(forwarding=False))
    retried = monthly_cost(1_000_000, "us-east-1", Assumptions(forward_attempts_per_transition=2.0))
    # Then it is priced only with forwarding, and doubles with the attempts
    assert on["lines"][line] > 0 and off["lines"][line] == 0
    assert retried["lines"][line] == pytest.approx(2 * on["lines"][line], rel=0.01)


def test_the_refetch_rate_limit_costs_its_writes_per_batch_never_more_than_one_per_request(tmp_path):
    # Given batches of 3 events taking 1.5 limiter writes each, events that ask the gateway once, once in a while,
    # and never (ordered by event time)
    batched = Assumptions(events_per_processor_batch=3.0, rate_limit_writes_per_batch=1.5)
    once = monthly_cost(1_000_000, "us-east-1", replace(batched, gateway_requests_per_event=1.0))
    rarely = monthly_cost(1_000_000, "us-east-1", replace(batched, gateway_requests_per_event=0.1))
    never = monthly_cost(1_000_000, "us-east-1", replace(batched, gateway_requests_per_event=0.0))
    # Then the limiter's line is its writes per batch spread over the batch's events (0.5 write units per event),
    # at most one per request, and nothing without requests
    price = json.loads(PRICES.read_text())["regions"]["us-east-1"]["dynamodb_per_million_write_request_units"]
    assert once["write_units_per_event"]["rate_limit"] == pytest.approx(0.5)
    assert once["lines"]["Refetch rate limit (control table)"] == pytest.approx(0.5 * price, rel=1e-3)
    assert rarely["write_units_per_event"]["rate_limit"] == pytest.approx(0.1)
    assert never["lines"]["Refetch rate limit (control table)"] == 0
    # And a measurement that has the figure is used; one from before the rate limit falls back to the formula
    per_event: dict[str, Any] = {**MEASURED_ITEM_SIZES["per_event"], "write_units_rate_limit": 1.2}  # type: ignore[dict-item]
    with_figure = measured_usage(_results(tmp_path, {**MEASURED_ITEM_SIZES, "per_event": per_event}))
    before_it = measured_usage(_results(tmp_path))
    assert with_figure is not None and with_figure.write_units_rate_limit == 1.2
    assert before_it is not None and before_it.write_units_rate_limit == Assumptions().gateway_requests_per_event


# ---------------------------------------------------------------------------------------------- the fixed side
def _price(key: str) -> float:
    value: float = json.loads(PRICES.read_text())["regions"]["us-east-1"][key]
    return value


def test_a_one_source_deployment_with_the_default_settings_costs_what_its_alarms_metrics_and_secrets_cost():
    # Given one Stripe source (a refetch API: signing secret + API key), no forwarding, no dashboard (the defaults)
    one = replace(
        Assumptions(), sources=1, sources_with_api=1, providers=("stripe",), forwarding=False, dashboard=False
    )
    report = monthly_cost(1_000_000, "us-east-1", one)
    monitoring = report["scenario"]["monitoring"]
    # Then the fixed lines are what the template and the code hold: 20 alarms on 24 alarm metrics (tests/infra pins
    # them; Stripe confirms from the payload, so its corrections and refused verifications have an alarm each), 2
    # custom metrics sent every hour (EventsSettled of stripe, the oldest pending age), no dashboard, and 3 secrets
    # (signing, API key, fingerprint key)
    assert monitoring == {
        "alarms": 20,
        "alarm_metrics": 24,
        "custom_metrics_steady": 2,
        "custom_metrics_on_trouble": 25,
        "dashboard": False,
    }
    lines = report["lines"]
    assert lines["CloudWatch alarms (fixed)"] == pytest.approx(24 * _price("cloudwatch_alarm_metric_per_month"))
    assert lines["CloudWatch custom metrics (fixed)"] == pytest.approx(2 * _price("cloudwatch_custom_metric_per_month"))
    assert lines["CloudWatch dashboard (fixed)"] == 0
    assert lines["Secrets Manager (fixed)"] == pytest.approx(3 * _price("secrets_manager_per_secret_month"))
    assert report["fixed_per_month"] == pytest.approx(4.20)
    # And with forwarding too (its secret, Lambda, Pipe and dead-letter queue): $5.00, within $5 since the ingest's
    # failures page through api-5xx and a throttled sweeper through oldest-pending (docs/replay-and-monitoring.md
    # prices each line)
    forwarding = monthly_cost(1_000_000, "us-east-1", replace(one, forwarding=True))
    assert forwarding["scenario"]["monitoring"]["alarm_metrics"] == 24 + 4
    assert forwarding["fixed_per_month"] == pytest.approx(5.00)


def test_the_dashboard_is_an_option_priced_on_its_own_line():
    off = monthly_cost(1_000_000, "us-east-1", Assumptions(dashboard=False))
    on = monthly_cost(1_000_000, "us-east-1", Assumptions(dashboard=True))
    assert on["lines"]["CloudWatch dashboard (fixed)"] == _price("cloudwatch_dashboard_per_month")
    assert on["fixed_per_month"] - off["fixed_per_month"] == pytest.approx(_price("cloudwatch_dashboard_per_month"))
    assert on["scenario"]["monitoring"]["dashboard"] is True


def test_the_fixed_cost_is_the_sum_of_the_fixed_lines_and_does_not_move_with_volume():
    report = monthly_cost(3_000_000, "us-east-1", Assumptions(dashboard=True))
    assert report["fixed_per_month"] == pytest.approx(
        sum(value for name, value in report["lines"].items() if name.endswith("(fixed)")), abs=0.01
    )


def test_per_provider_alarms_and_metrics_grow_with_the_declared_providers_only():
    # Given the same deployment with one provider, then sixteen
    one = monthly_cost(1_000_000, "us-east-1", replace(Assumptions(), providers=("stripe",)))
    many = monthly_cost(1_000_000, "us-east-1", replace(Assumptions(), providers=tuple(definitions.PROVIDERS)))
    extra = len(definitions.PROVIDERS) - 1
    # Then each more provider (its default source) adds one ignored-ratio alarm (two metrics), one ignored-no-payment
    # alarm (one metric), one custom metric sent every hour, and its source's counted ignored reasons (sent only
    # when one happens), nothing else
    one_m, many_m = one["scenario"]["monitoring"], many["scenario"]["monitoring"]
    assert many_m["alarms"] - one_m["alarms"] == 2 * extra
    assert many_m["alarm_metrics"] - one_m["alarm_metrics"] == 3 * extra
    assert many_m["custom_metrics_steady"] - one_m["custom_metrics_steady"] == extra
    assert many_m["custom_metrics_on_trouble"] - one_m["custom_metrics_on_trouble"] == extra * len(
        definitions.COUNTED_IGNORED_REASONS
    )


def test_the_command_states_the_fixed_breakdown_and_prices_the_dashboard_when_asked(monkeypatch, tmp_path):
    # Given sources.json declaring one Stripe source
    report = _cost_json(monkeypatch, tmp_path, [{"name": "stripe-br", "provider": "stripe"}])
    assert report["scenario"]["monitoring"]["alarms"] > 0
    # Then the text output states alarms, metrics and the dashboard setting, and --dashboard prices it
    text = CliRunner().invoke(cli, ["cost"]).output
    assert "monitoring: " in text and " alarm metrics, " in text and "dashboard off (inbox_dashboard)" in text
    with_dashboard = json.loads(CliRunner().invoke(cli, ["cost", "--json", "--dashboard"]).output)
    assert with_dashboard["lines"]["CloudWatch dashboard (fixed)"] == _price("cloudwatch_dashboard_per_month")


# ------------------------------------------------------------------------------ inline bodies, replay workflow
def test_the_inline_threshold_is_at_most_the_s3_break_even_and_within_a_kilobyte_of_it():
    # Given the prices and the scenario: what a KB of inline body costs in write units and storage, and what an S3
    # body costs in a PUT per delivery and a GET at expiry
    break_even = inline_body_break_even_bytes()
    # Then the ingest keeps inline only what is cheaper inline, and sends to S3 little that is not cheaper there
    assert break_even - 1024 < INLINE_BODY_BREAK_EVEN_BYTES <= break_even


def test_the_replay_line_prices_the_definitions_transitions():
    # Given the replay workflow's transitions (per event, per page, per execution: the definition's states)
    report = monthly_cost(1_000_000, "us-east-1")
    prices = json.loads(PRICES.read_text())["regions"]["us-east-1"]
    # Then the line is the replayed events times those transitions at the price of one
    expected = (1_000_000 * REPLAY_SHARE_OF_EVENTS * replay_transitions_per_event() / 1000) * prices[
        "step_functions_per_1000_state_transitions"
    ]
    assert report["lines"]["Step Functions (replay, ~1% of events)"] == pytest.approx(expected, abs=1e-4)
    # No state per event: a page of the default 25 enters 7, shared by its events, and the executions' frames
    assert 0.2 < replay_transitions_per_event() < 0.5


def test_xray_is_off_by_default_and_priced_as_lambdas_sampling_when_on():
    # Given the default settings, then with -c inbox_tracing=true
    off = monthly_cost(1_000_000, "us-east-1", Assumptions())
    on = monthly_cost(1_000_000, "us-east-1", Assumptions(tracing=True))
    # Then tracing costs nothing when off, and when on it is a variable line of its own
    assert off["lines"]["X-Ray traces"] == 0.0
    assert on["lines"]["X-Ray traces"] > 0
    assert on["variable_per_million_events"] > off["variable_per_million_events"]
    assert on["fixed_per_month"] == off["fixed_per_month"]
    # And Lambda's sampling (1 request per second, 5 % of the rest) records nearly every invocation of a function
    # invoked less than once a second, and about 5 % of a busy one's: at a million webhooks a month (0.48
    # deliveries a second) most of the ingest's invocations are traced, not 5 %
    month = 30 * 24 * 3600
    assert xray_traces(month / 100) == pytest.approx(month / 100, rel=0.01)
    assert xray_traces(1_250_000) / 1_250_000 > 0.75
    assert xray_traces(1000 * month) / (1000 * month) == pytest.approx(0.05, abs=0.002)
    assert on["lines"]["X-Ray traces"] > 0.75 * 1_250_000 / 1e6 * _price("xray_per_million_traces_recorded")


def test_the_command_prices_tracing_only_when_asked():
    # Given the default command, then with --tracing (the stack deployed with -c inbox_tracing=true)
    default = json.loads(CliRunner().invoke(cli, ["cost", "--json"]).output)
    traced = json.loads(CliRunner().invoke(cli, ["cost", "--json", "--tracing"]).output)
    # Then the scenario says which, and only the traced one pays for X-Ray
    assert (default["scenario"]["tracing"], traced["scenario"]["tracing"]) == (False, True)
    assert default["lines"]["X-Ray traces"] == 0.0 < traced["lines"]["X-Ray traces"]


def test_the_readmes_first_deploy_figures_are_the_models():
    # Given README's deploy checklist: what a deploy without sources.json costs, with and without forwarding
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    readme = re.sub(r"<!-- bench [^>]* -->", "", readme)  # the figures as read, without their render markers
    stated = re.search(
        r"all (\d+) \((\d+) secrets and \$([\d.]+) a month fixed, (\d+) and \$([\d.]+) with forwarding\), where one\s+"
        r"Stripe account costs (\d+) secrets and \$(\d+\.\d\d)",
        readme,
    )
    assert stated, "README's deploy checklist no longer states the default declaration's fixed cost"
    count, secrets_off, fixed_off, secrets_on, fixed_on, one_secrets, one_fixed = stated.groups()

    def priced(sources, forwarding):
        assumptions = deployment_assumptions(sources, forwarding=forwarding, dashboard=False, tracing=False)
        return assumptions.secrets, monthly_cost(1_000_000, "us-east-1", assumptions, measured_usage())

    # Then each figure is what `inbox cost` computes for that deployment
    default = definitions.default_sources()
    assert int(count) == len(default)
    for secrets, fixed, forwarding in ((secrets_off, fixed_off, False), (secrets_on, fixed_on, True)):
        counted, report = priced(default, forwarding)
        assert (int(secrets), float(fixed)) == (counted, report["fixed_per_month"]), forwarding
    counted, report = priced((definitions.SourceSpec("stripe-br", "stripe"),), False)
    assert (int(one_secrets), float(one_fixed)) == (counted, report["fixed_per_month"])
