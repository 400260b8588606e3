"""The cost model: line by line, scaling with volume, driven by the dated price table."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from inbox_cli.cost import Assumptions, monthly_cost
from inbox_cli.main import cli


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
