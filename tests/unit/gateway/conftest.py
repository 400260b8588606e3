"""Gateway test fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.gateway import registry
from tests.unit.gateway.fakes import Clock, Sleeps


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(autouse=True)
def _fresh_gateway_clients() -> Iterator[None]:
    registry.reset_gateway_clients()
    yield
    registry.reset_gateway_clients()
