"""Which rate a source's refetches are limited to, and how the registry wires the limiter into its client."""

from __future__ import annotations

import json

import pytest

from shared.definitions import DEFAULT_REFETCH_RATE_PER_SECOND, ENV_CONTROL_TABLE, ENV_SOURCES
from shared.gateway.base import GatewayRejected
from shared.gateway.ratelimit import RateLimiter
from shared.gateway.registry import (
    ENV_REFETCH_BURST_SECONDS,
    ENV_REFETCH_MAX_WAIT_SECONDS,
    build_gateway_client,
    build_rate_limiter,
    source_refetch_rate,
)
from shared.settings import ConfigurationError


def sources(*entries: dict[str, object]) -> dict[str, str]:
    return {ENV_SOURCES: json.dumps(list(entries))}


def test_a_declared_rate_wins_over_the_providers_documented_one():
    env = sources({"name": "stripe", "provider": "stripe", "refetch_rate_per_second": 7})
    assert source_refetch_rate("stripe", "stripe", env) == 7.0


def test_an_undeclared_source_takes_its_providers_documented_rate_or_the_default():
    env = sources({"name": "stripe-br", "provider": "stripe"})
    assert source_refetch_rate("stripe", "stripe", env) == 25.0  # Stripe's per-endpoint limit (docs/providers.md)
    assert source_refetch_rate("mercadopago", "mercadopago", {}) == DEFAULT_REFETCH_RATE_PER_SECOND
    assert source_refetch_rate("pagarme", "pagarme", {}) == 3.0


def test_a_broken_declaration_is_an_operators_problem_not_a_retry():
    with pytest.raises(GatewayRejected, match="sources not readable"):
        source_refetch_rate("stripe", "stripe", {ENV_SOURCES: "[{"})


def test_the_limiters_shape_comes_from_the_environment_and_is_validated():
    limiter = build_rate_limiter(
        "stripe", "stripe", "control", {ENV_REFETCH_BURST_SECONDS: "0.5", ENV_REFETCH_MAX_WAIT_SECONDS: "2"}
    )
    assert (limiter.rate, limiter.burst, limiter.max_wait_seconds) == (25.0, 12, 2.0)
    with pytest.raises(ConfigurationError, match=ENV_REFETCH_MAX_WAIT_SECONDS):
        build_rate_limiter("stripe", "stripe", "control", {ENV_REFETCH_MAX_WAIT_SECONDS: "60"})


def test_the_client_is_limited_only_where_a_control_table_is_configured():
    limited = build_gateway_client("stripe", {ENV_CONTROL_TABLE: "control"})
    plain = build_gateway_client("stripe", {})
    assert isinstance(limited.client._http._throttle, RateLimiter)  # type: ignore[union-attr]
    assert limited.client._http._throttle.source == "stripe"  # type: ignore[union-attr]
    assert plain.client._http._throttle is None  # type: ignore[union-attr]
