"""`inbox chaos`: `inbox simulate` while the local stack misbehaves, then proof that nothing was lost or doubled.

A seeded schedule turns the local stack's faults on and off round by round (`inbox_local/faults.py`, through
`POST /_local/faults`): DynamoDB throttling the ingest (503s the delivering side retries, like a gateway), the
processor dying before its transaction and after it (before the acknowledgement), the gateway's API answering
500, 429 or too slowly, or not knowing a payment yet, and the Pipe pausing. The deliveries are `inbox simulate`'s,
over every simulated provider (those refetched from the gateway simulator and those ordered by event time): late,
reordered, repeated, twice at the same instant. Then every fault is turned off and the system is left to settle;
the gateway's later retries deliver what was never acknowledged; failed events are replayed (`inbox replay`: the
replay workflow); the dead-letter queue is drained of what the replay recovered. And the six invariants of
`invariants.py` are checked.

Same seed, same run: the schedule of faults, the providers and lifecycles, the deliveries (order, copies, delays)
and the keyed fault decisions (which event's write is throttled, which settle crashes, on which occurrence) follow
from it. The gateway simulator's draws are one seeded sequence whose assignment to concurrent requests follows
timing, so its counts vary a little between runs; the verdict must not.

One concern per module: `schedule` (the seeded faults), `local_faults` (the stack's knobs), `deliveries` (what
the sender saw), `run` (the driver), `recovery` (replay, dead-letter queue, outbox), `invariants` (pure checks),
`report`, `cli` (`inbox chaos`), `own_stack` and `__main__` (`python -m inbox_cli.chaos`, what `make chaos` runs:
a local stack of its own on free ports).
"""

from __future__ import annotations

from inbox_cli.chaos.cli import chaos

__all__ = ["chaos"]
