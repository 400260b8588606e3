"""The `--provider` option of `inbox simulate` and `inbox chaos`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _check(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        return value
    # Which providers are simulated is worked out from the drivers and the gateway simulator: only when asked.
    from inbox_cli.simulate.lifecycles import simulated_providers  # noqa: PLC0415

    unknown = [provider for provider in value if provider not in simulated_providers()]
    if unknown:
        raise click.BadParameter(f"{', '.join(unknown)}: not one of {', '.join(simulated_providers())}")
    return value


def simulated_provider_option() -> Callable[[F], F]:
    return click.option(
        "--provider",
        "providers",
        multiple=True,
        callback=_check,
        help="Repeatable. Default: a mix of every simulated provider, refetched or ordered by event time.",
    )
