"""`inbox`: operate a Webhook Inbox — the local stack by default, a deployed one with `--stack NAME`."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import click

from inbox_cli.target import Target, resolve
from shared.inbox.model import event_key
from shared.inbox.store import InboxStore
from shared.payments.store import ProcessingStore
from shared.providers import get_driver, provider_names


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": __import__("base64").b64encode(value).decode()}
    return str(value)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        click.echo("(none)")
        return
    cells = [["" if row.get(c) is None else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)))
    for line in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())


@click.group()
@click.option("--stack", default=None, help="Name of a deployed stack (default: the local stack of `make run`).")
@click.pass_context
def cli(ctx: click.Context, stack: str | None) -> None:
    """Operate a Webhook Inbox."""
    ctx.obj = stack


def _target(ctx: click.Context) -> Target:
    return resolve(ctx.find_root().obj)


# ------------------------------------------------------------------------------------------------------ send


def post_webhook(url: str, request_body: bytes, headers: dict[str, str], timeout: float = 10) -> tuple[int, str]:
    request = urllib.request.Request(url, data=request_body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - our own endpoint
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


@cli.command()
@click.argument("provider", type=click.Choice(provider_names()))
@click.option("--event-id", default=None, help="Event id (default: a new one).")
@click.option("--resource-id", default=None, help="Payment id (default: a new one).")
@click.option("--status", default="paid", show_default=True, help="Canonical status the sample reports.")
@click.option("--amount", default=1990, show_default=True, help="Amount in minor units.")
@click.option("--url", default=None, help="Post here instead of the target stack's API.")
@click.pass_context
def send(
    ctx: click.Context,
    provider: str,
    event_id: str | None,
    resource_id: str | None,
    status: str,
    amount: int,
    url: str | None,
) -> None:
    """Post a correctly signed sample webhook of PROVIDER."""
    target = _target(ctx)
    driver = get_driver(provider)
    now = int(time.time())
    event_id = event_id or f"evt_{uuid.uuid4().hex[:24]}"
    body = driver.sample_body(
        event_id=event_id,
        resource_id=resource_id or f"pay_{uuid.uuid4().hex[:20]}",
        status=status,
        amount=amount,
        occurred_at=now,
    )
    signed = driver.sign(body, target.signing_secret(provider), now=now, event_id=event_id)
    query = "?" + "&".join(f"{k}={v}" for k, v in signed.query.items()) if signed.query else ""
    endpoint = (url or f"{target.api_url}/webhooks/{provider}") + query
    headers = {"content-type": "application/json", **signed.headers}
    code, answer = post_webhook(endpoint, signed.body, headers)
    click.echo(f"POST {endpoint} -> {code} {answer}")
    if code >= 300:
        raise SystemExit(1)


# ---------------------------------------------------------------------------------------------------- events


@cli.group()
def events() -> None:
    """Read the inbox."""


_LIST_COLUMNS = ["received_at", "provider", "event_id", "event_type", "resource_id", "status", "attempts"]


@events.command("list")
@click.option("--provider", default=None)
@click.option("--status", type=click.Choice(["pending", "processed", "ignored", "failed"]), default=None)
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def list_events(ctx: click.Context, provider: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """List events, newest first."""
    target = _target(ctx)
    store = InboxStore(target.inbox_table, target.body_bucket)
    items = [
        item
        for item in store.scan()
        if (provider is None or item.get("provider") == provider) and (status is None or item.get("status") == status)
    ]
    items.sort(key=lambda item: item.get("received_at", ""), reverse=True)
    summaries = [{column: item.get(column) for column in _LIST_COLUMNS} for item in items[:limit]]
    if as_json:
        _echo_json(summaries)
    else:
        _table(summaries, _LIST_COLUMNS)


@events.command("show")
@click.argument("provider")
@click.argument("event_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show_event(ctx: click.Context, provider: str, event_id: str, as_json: bool) -> None:
    """Show one event, with its raw body."""
    target = _target(ctx)
    store = InboxStore(target.inbox_table, target.body_bucket)
    item = store.get(event_key(provider, event_id))
    if item is None:
        click.echo(f"no event {provider}#{event_id}", err=True)
        raise SystemExit(1)
    item["body"] = store.read_body(item)
    if as_json:
        _echo_json(item)
        return
    body = item.pop("body")
    for name in sorted(item):
        click.echo(f"{name:>16}: {_json_default(item[name]) if isinstance(item[name], bytes) else item[name]}")
    click.echo(f"{'body':>16}:")
    click.echo(_json_default(body) if isinstance(body, bytes) else body)


# -------------------------------------------------------------------------------------------------- payments


@cli.group()
def payments() -> None:
    """Read the payment projection."""


@payments.command("show")
@click.argument("provider")
@click.argument("resource_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show_payment(ctx: click.Context, provider: str, resource_id: str, as_json: bool) -> None:
    """Show one payment as the processor last applied it."""
    target = _target(ctx)
    stored = ProcessingStore(target.inbox_table, target.payments_table).load_payment(f"{provider}#{resource_id}")
    if stored is None:
        click.echo(f"no payment {provider}#{resource_id}", err=True)
        raise SystemExit(1)
    document = stored.to_item()
    if as_json:
        _echo_json(document)
        return
    for name in sorted(document):
        click.echo(f"{name:>16}: {document[name]}")


# -------------------------------------------------------------------------------------------------- simulate


@cli.command()
@click.option("--payments", "payment_count", default=50, show_default=True, help="How many payments to drive.")
@click.option("--provider", "providers", multiple=True, type=click.Choice(["stripe", "asaas"]), help="Repeatable.")
@click.option("--seed", default=7, show_default=True, help="Same seed, same schedule.")
@click.option("--duplicates", default=0.3, show_default=True, help="Share of webhooks delivered more than once.")
@click.option("--concurrent-duplicates", default=0.1, show_default=True, help="Share sent twice at the same instant.")
@click.option("--max-delay", default=2, show_default=True, help="How many gateway steps late a webhook may arrive.")
@click.option("--concurrency", default=8, show_default=True, help="Parallel deliveries.")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for every event to settle.")
@click.option("--lifecycle", "lifecycles", multiple=True, help="Only this lifecycle (repeatable), e.g. 'dispute won'.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report.")
@click.pass_context
def simulate(
    ctx: click.Context,
    payment_count: int,
    providers: tuple[str, ...],
    seed: int,
    duplicates: float,
    concurrent_duplicates: float,
    max_delay: int,
    concurrency: int,
    timeout: float,
    lifecycles: tuple[str, ...],
    as_json: bool,
) -> None:
    """Drive payments through realistic lifecycles on the gateway simulator and check every payment's state."""
    from dataclasses import asdict  # noqa: PLC0415

    from inbox_cli.simulate import Simulation, SimulationOptions, SimulatorAdmin, render_report  # noqa: PLC0415
    from inbox_local.config import LocalEndpoints  # noqa: PLC0415

    target = _target(ctx)
    if not target.local:
        raise click.UsageError("simulate drives the local gateway simulator: run it against `make run`")
    options = SimulationOptions(
        payments=payment_count,
        providers=providers or ("stripe", "asaas"),
        seed=seed,
        duplicate_rate=duplicates,
        concurrent_duplicate_rate=concurrent_duplicates,
        max_delay_rounds=max_delay,
        concurrency=concurrency,
        settle_timeout_seconds=timeout,
        lifecycles=lifecycles,
    )
    simulation = Simulation(
        options,
        api_url=target.api_url,
        admin=SimulatorAdmin(LocalEndpoints.from_environ().gateway_url),
        inbox=InboxStore(target.inbox_table, target.body_bucket),
        payments=ProcessingStore(target.inbox_table, target.payments_table),
        secret_for=target.signing_secret,
    )
    report = simulation.run()
    if as_json:
        _echo_json({**asdict(report), "ok": report.ok})
    else:
        click.echo(render_report(report))
    if not report.ok:
        raise SystemExit(1)


def main() -> None:
    from botocore.exceptions import EndpointConnectionError  # noqa: PLC0415

    try:
        cli()
    except (urllib.error.URLError, EndpointConnectionError, ConnectionError) as error:
        reason = getattr(error, "reason", error)
        click.echo(
            f"error: cannot reach the stack ({reason}). Is the local stack running (`make run`), "
            "on the same INBOX_PORT?",
            err=True,
        )
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
