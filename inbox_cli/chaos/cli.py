"""`inbox chaos`: the command, against a running local stack (`make run`)."""

from __future__ import annotations

import json

import click

from inbox_cli.chaos.report import render_chaos
from inbox_cli.chaos.run import ChaosOptions, ChaosRun
from inbox_cli.simulate.options import simulated_provider_option
from inbox_cli.target import resolve


@click.command()
@click.option("--seed", default=1, show_default=True, help="Same seed, same faults and deliveries.")
@click.option("--payments", "payment_count", default=40, show_default=True, help="How many payments to drive.")
@simulated_provider_option()
@click.option("--concurrency", default=8, show_default=True, help="Parallel deliveries.")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait, each time, for events to settle.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_context
def chaos(
    ctx: click.Context,
    seed: int,
    payment_count: int,
    providers: tuple[str, ...],
    concurrency: int,
    timeout: float,
    as_json: bool,
) -> None:
    """Simulate payments while the local stack misbehaves (seeded faults), then check that nothing was lost,
    nothing applied twice, every payment matches its gateway, and the dead-letter queue is empty after a replay.

    Exits non-zero when any invariant fails. Local stack only (`make run`, or `make chaos` for a stack of its own).
    """
    from inbox_local.config import LocalEndpoints  # noqa: PLC0415

    target = resolve(ctx.find_root().obj)
    if not target.local:
        raise click.UsageError("chaos injects faults into the local stack: run it against `make run`")
    options = ChaosOptions(
        seed=seed,
        payments=payment_count,
        providers=providers,
        concurrency=concurrency,
        settle_timeout_seconds=timeout,
    )
    report = ChaosRun(options, target, LocalEndpoints.from_environ().gateway_url).run()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, sort_keys=True, default=str))
    else:
        click.echo(render_chaos(report))
    if not report.ok:
        raise SystemExit(1)
