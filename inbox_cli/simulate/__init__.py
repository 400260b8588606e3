"""`inbox simulate`: payments walk realistic lifecycles at their gateways, and their webhooks reach the stack the
way gateways deliver them — late, out of order, more than once, sometimes twice at the same instant. Then every
payment is compared with its gateway's truth.

One concern per module: `lifecycles` (which lifecycles each provider can express, which providers are simulated),
`gateways` (the gateway simulator for the providers we refetch from, an in-process sender for those ordered by
event time, and their truth), `wire` (sample bodies, signing and the POST: the one place that signs), `run` (the
simulation), `report` (its verdict for a terminal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported when first used (PEP 562), not with the package: `inbox_cli.simulate.options` is part of every `inbox`
# start (main.py's `--provider` option), which would otherwise import the gateway simulator and boto3 too.
_EXPORTS = {
    "Delivery": "run",
    "EventTimeSender": "gateways",
    "Gateways": "gateways",
    "Simulation": "run",
    "SimulationHooks": "run",
    "SimulationOptions": "run",
    "SimulationReport": "run",
    "SimulatorAdmin": "gateways",
    "Truth": "gateways",
    "lifecycles_for": "lifecycles",
    "mismatches": "gateways",
    "refetched": "lifecycles",
    "render_report": "report",
    "simulated_providers": "lifecycles",
    "spread": "run",
}

if TYPE_CHECKING:
    from inbox_cli.simulate.gateways import EventTimeSender, Gateways, SimulatorAdmin, Truth, mismatches
    from inbox_cli.simulate.lifecycles import lifecycles_for, refetched, simulated_providers
    from inbox_cli.simulate.report import render_report
    from inbox_cli.simulate.run import (
        Delivery,
        Simulation,
        SimulationHooks,
        SimulationOptions,
        SimulationReport,
        spread,
    )


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Delivery",
    "EventTimeSender",
    "Gateways",
    "Simulation",
    "SimulationHooks",
    "SimulationOptions",
    "SimulationReport",
    "SimulatorAdmin",
    "Truth",
    "lifecycles_for",
    "mismatches",
    "refetched",
    "render_report",
    "simulated_providers",
    "spread",
]
