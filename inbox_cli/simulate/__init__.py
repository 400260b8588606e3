"""`inbox simulate`: payments walk realistic lifecycles at their gateways, and their webhooks reach the stack the
way gateways deliver them — late, out of order, more than once, sometimes twice at the same instant. Then every
payment is compared with its gateway's truth.

One concern per module: `lifecycles` (which lifecycles each provider can express, which providers are simulated),
`gateways` (the gateway simulator for the providers we refetch from, an in-process sender for those ordered by
event time, and their truth), `wire` (sample bodies, signing and the POST: the one place that signs), `run` (the
simulation), `report` (its verdict for a terminal).
"""

from __future__ import annotations

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
