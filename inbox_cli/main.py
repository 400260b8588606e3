"""`inbox`: operate a Webhook Inbox — the local stack by default, a deployed one with `--stack NAME`."""

from __future__ import annotations

import importlib
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import TYPE_CHECKING, Any

import click

from inbox_cli.simulate.options import simulated_provider_option
from inbox_cli.target import Target, UnknownSource, resolve
from infra.replay_definition import DEFAULT_MAX_EVENTS, DEFAULT_PAGE_SIZE, DEFAULT_WAIT_SECONDS
from shared import definitions
from shared.definitions import SourceSpec
from shared.providers.registry import provider_names

# Every `inbox ...` is an interpreter of its own (a user's, a test's: the e2e tier runs hundreds), so what only
# some commands need is imported by those commands: boto3 and the stores (`operations`), the signing samples
# (`send`), and the subcommands of modules of their own (LAZY_COMMANDS). tests/unit/test_cli_imports.py holds it.
if TYPE_CHECKING:
    from mypy_boto3_secretsmanager import SecretsManagerClient

    from inbox_cli.simulate import SimulationOptions
    from shared.forwarding import ForwardCheckpoints
    from shared.forwarding_log import ForwardLog


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


# name -> "module:attribute" of a command defined in a module of its own, imported only when that command runs
# (or when `inbox --help` lists them all).
LAZY_COMMANDS = {
    "chaos": "inbox_cli.chaos:chaos",  # inbox_cli/chaos/
    "doctor": "inbox_cli.doctor.command:doctor",  # inbox_cli/doctor/
    "listen": "inbox_cli.listen:listen",  # inbox_cli/listen.py
}


class LazyGroup(click.Group):
    """A click group whose LAZY_COMMANDS are imported when asked for, not when the CLI starts."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module_name, _, attribute = LAZY_COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup)
@click.option("--stack", default=None, help="Name of a deployed stack (default: the local stack of `make run`).")
@click.pass_context
def cli(ctx: click.Context, stack: str | None) -> None:
    """Operate a Webhook Inbox."""
    ctx.obj = stack


def _target(ctx: click.Context) -> Target:
    return resolve(ctx.find_root().obj)


# ------------------------------------------------------------------------------------------------------ send


def _mutual_tls_client(
    target: Target, spec: SourceSpec, client_cert: str | None, client_key: str | None
) -> ssl.SSLContext | None:
    """The TLS client side for a delivery to `spec` (None: a source without mutual TLS, posted to as it is)."""
    if not spec.mutual_tls and client_cert is None:
        return None
    if client_cert is not None:
        context = ssl.create_default_context()
        if target.local:  # the local front door's server certificate is the development CA's
            from inbox_local.mtls import dev_certificates  # noqa: PLC0415

            context.load_verify_locations(cafile=str(dev_certificates().ca))
        context.load_cert_chain(client_cert, client_key)
        return context
    if not target.local:
        raise click.UsageError(
            f"{spec.name} requires mutual TLS: pass --client-cert and --client-key of a certificate the stack's "
            "truststore trusts"
        )
    from inbox_local.mtls import client_context, dev_certificates  # noqa: PLC0415

    try:
        return client_context(dev_certificates())
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from None


def post_webhook(
    url: str,
    request_body: bytes,
    headers: dict[str, str],
    timeout: float = 10,
    *,
    tls: ssl.SSLContext | None = None,
) -> tuple[int, str]:
    """POST a delivery; `tls`: the client side of a mutual-TLS front door (its client certificate)."""
    request = urllib.request.Request(url, data=request_body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls) as response:  # noqa: S310 - our endpoint
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def delivery_key(answer: str) -> str | None:
    """The key a refetch-verified source stored a delivery under, as the ingest's answer names it (`delivery`):
    its notifications have no identity to derive a key from (docs/providers.md, "Refetch-verified providers")."""
    try:
        document = json.loads(answer)
    except ValueError:
        return None
    key = document.get("delivery") if isinstance(document, dict) else None
    return key if isinstance(key, str) else None


def _simulator_post(gateway_url: str, path: str, document: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(  # noqa: S310 - the local simulator
        f"{gateway_url}{path}",
        data=json.dumps(document).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read() or b"{}")
    except OSError as error:
        raise click.ClickException(
            f"the gateway simulator at {gateway_url} is not answering ({type(error).__name__}): is `make run` up?"
        ) from None


def register_with_simulator(
    gateway_url: str,
    source: str,
    *,
    status: str,
    amount: int,
    resource_id: str | None,
    account: str | None = None,
) -> tuple[str | None, str]:
    """Have the local gateway simulator know the payment, in `status`, before its webhook arrives (the processor
    refetches it from there), in the simulator account of `source` (a source is its own gateway account there, with
    its own API key: the processor refetches with that key). Returns the payment's id (None: let the sample choose
    one) and a line for the user. `account` is a Stripe Connect account (acct_...) inside it.

    A payment the simulator already knows (`--resource-id` of an earlier send) is moved to `status`, as the
    gateway would move it; a step the gateway cannot take (back to pending after paid) leaves it as it is, and the
    event is then ignored by the state machine: what the user is testing. A payment the simulator cannot hold (an
    id not in the provider's format, a status the provider has no word for) is reported, and the webhook is sent
    anyway: its refetch will not find the payment, and the event ends failed after its attempts."""
    if resource_id:
        code, answer = _simulator_post(
            gateway_url,
            f"/_sim/payments/{urllib.parse.quote(source)}/{urllib.parse.quote(resource_id, safe='')}/transition",
            {"status": status},
        )
        if code == 200:
            return resource_id, f"moved {source} payment {resource_id} to {status} on the gateway simulator"
        if code == 409:
            return resource_id, (
                f"the gateway simulator keeps {source} payment {resource_id} as it is ({answer.get('error')}): "
                "its refetch decides, so this event may be ignored"
            )
    document: dict[str, Any] = {"source": source, "amount": amount, "status": status}
    if resource_id:
        document["resource_id"] = resource_id
    if account:
        document["account"] = account
    code, answer = _simulator_post(gateway_url, "/_sim/payments", document)
    if code == 200:
        created = str(answer["id"])
        return (
            created,
            f"registered {source} payment {created} ({status}) with the gateway simulator at {gateway_url}",
        )
    return resource_id, (
        f"warning: the gateway simulator cannot hold this {source} payment ({answer.get('error')}); the webhook "
        "is sent anyway, but its refetch will not find the payment and the event will end failed"
    )


@cli.command()
@click.argument("source")
@click.option("--event-id", default=None, help="Event id (default: a new one).")
@click.option("--resource-id", default=None, help="Payment id (default: a new one).")
@click.option("--status", default="paid", show_default=True, help="Canonical status the sample reports.")
@click.option("--amount", default=1990, show_default=True, help="Amount in minor units.")
@click.option("--url", default=None, help="Post here instead of the target stack's API.")
@click.option("--account", default=None, help="Stripe only: from this Connect account (acct_...).")
@click.option("--thin", is_flag=True, help="Stripe only: a thin event (event destination with thin payloads).")
@click.option(
    "--client-cert",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A mutual_tls source: the client certificate (PEM) to present (locally: the stack's development one).",
)
@click.option("--client-key", type=click.Path(exists=True, dir_okay=False), default=None, help="Its private key.")
@click.pass_context
def send(  # noqa: PLR0915 - its imports are local (a light CLI start), each one a statement
    ctx: click.Context,
    source: str,
    event_id: str | None,
    resource_id: str | None,
    status: str,
    amount: int,
    url: str | None,
    account: str | None,
    thin: bool,
    client_cert: str | None,
    client_key: str | None,
) -> None:
    """Post a correctly signed sample webhook to SOURCE (a source of the stack: `inbox sources list`).

    It is signed with that source's secret: INBOX_SECRET_<SOURCE> when set, else locally the source's development
    secret, deployed the `current` value of its secret in the stack. Locally, for a provider the processor
    refetches from, the payment is first registered with the gateway simulator in that status, so the event is
    processed like a real one. A deployed stack refetches from the real gateway, which knows no sample payment:
    pass --resource-id of a real one there.

    A `mutual_tls` source is posted to on the mutual-TLS front door with a client certificate: locally the
    development one `make run` generated (INBOX_MTLS_DIR), deployed the one --client-cert/--client-key name (it
    must chain to the stack's truststore)."""
    from inbox_local.providers.stripe.sender import sender as stripe_sender  # noqa: PLC0415
    from inbox_local.senders import sender_for  # noqa: PLC0415
    from shared.gateway.registry import supported_providers  # noqa: PLC0415 - only send needs it
    from shared.providers.base import PayloadInvalid, parse_events  # noqa: PLC0415
    from shared.providers.registry import get_driver  # noqa: PLC0415
    from shared.providers.stripe.account import is_account_id  # noqa: PLC0415

    target = _target(ctx)
    spec = _source(target, source)
    provider = spec.provider
    driver, sender = get_driver(provider), sender_for(provider)
    refetched = provider in supported_providers()
    connect_or_thin = account is not None or thin
    if connect_or_thin:
        if provider != "stripe":
            raise click.UsageError("--account and --thin are Stripe's (Connect accounts, thin events)")
        if account is not None and not is_account_id(account):
            raise click.UsageError("--account must be a Stripe account id: acct_ and letters or digits")
    if target.local and refetched:
        from inbox_local.config import LocalEndpoints  # noqa: PLC0415

        gateway = LocalEndpoints.from_environ().gateway_url
        resource_id, note = register_with_simulator(
            gateway, spec.name, status=status, amount=amount, resource_id=resource_id, account=account
        )
        click.echo(note)
    now = int(time.time())
    event_id = event_id or f"evt_{uuid.uuid4().hex[:24]}"
    resource_id = resource_id or f"pay_{uuid.uuid4().hex[:20]}"
    try:
        if connect_or_thin:
            body = stripe_sender.sample_body(
                event_id=event_id,
                resource_id=resource_id,
                status=status,
                amount=amount,
                occurred_at=now,
                account=account,
                thin=thin,
            )
        else:
            body = sender.sample_body(
                event_id=event_id, resource_id=resource_id, status=status, amount=amount, occurred_at=now
            )
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    signed = sender.sign(body, target.signing_secret(spec.name), now=now, event_id=event_id)
    try:  # the id the inbox stores it under: some providers derive it from the body (docs/providers*.md)
        stored_id = parse_events(driver, signed)[-1].event_id  # a delivery of several: the one it is about
    except PayloadInvalid:
        stored_id = driver.fallback_event_id(signed)
    query = "?" + "&".join(f"{k}={v}" for k, v in signed.query.items()) if signed.query else ""
    endpoint = (url or target.webhook_url(spec.name)) + query
    headers = {"content-type": "application/json", **signed.headers}
    tls = _mutual_tls_client(target, spec, client_cert, client_key)
    posted_at = time.time()
    code, answer = post_webhook(endpoint, signed.body, headers, tls=tls)
    click.echo(f"POST {endpoint} -> {code} {answer}")
    stack = f" --stack {ctx.find_root().obj}" if not target.local else ""
    if code in _RECORDED_REFUSALS:
        click.echo(_refusal_hint(target, spec.name, stack, posted_at=posted_at), err=True)
    if code >= 300:
        raise SystemExit(1)
    stored_id = delivery_key(answer) or stored_id  # a refetch-verified source stores each delivery on its own
    click.echo(f"sent {spec.name} ({provider}) event {stored_id} about payment {resource_id}; look at it with:")
    click.echo(f"  inbox{stack} events show {spec.name} {stored_id}")
    if not target.local and refetched and not ctx.params.get("resource_id"):
        click.echo(f"  (the stack refetches from {provider}'s real API, which does not know this sample payment)")


# The answers of a delivery the ingest refused and may have recorded in the rejected-delivery log (401: not
# verified; 400: not parsable; 403: a client certificate missing): the doctor can say why.
_RECORDED_REFUSALS = frozenset({400, 401, 403})
# How much earlier than the POST (the two clocks may differ: the stack's and this machine's) a record may say it was
# received and still be this delivery's refusal.
_REFUSAL_CLOCK_SKEW_SECONDS = 5.0


def _refusal_hint(target: Target, source: str, stack: str, *, posted_at: float) -> str:
    """The command that explains a refusal: the doctor on the refusal the ingest recorded for this delivery (the
    source's newest record, received since it was posted; the ingest records before it answers), or how to find it
    when there is none to name (the log not readable, the source's records capped for the minute)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    try:
        from inbox_cli import rejected as log  # noqa: PLC0415

        newest = log.list_rejected(target, source=source, limit=1)
    except Exception:  # a hint only: the refusal itself is what the user came for
        newest = []
    since = datetime.fromtimestamp(posted_at - _REFUSAL_CLOCK_SKEW_SECONDS, tz=UTC)
    if newest and datetime.fromisoformat(str(newest[0]["received_at"]).replace("Z", "+00:00")) >= since:
        return f"why it was refused: inbox{stack} doctor --rejected {newest[0]['id']}"
    return f"why it was refused: inbox{stack} rejected list --source {source}, then inbox{stack} doctor --rejected ID"


def _secretsmanager() -> SecretsManagerClient:
    import boto3  # noqa: PLC0415

    client: SecretsManagerClient = boto3.client("secretsmanager")
    return client


def _source(target: Target, name: str) -> SourceSpec:
    """The target's source `name`, or a usage error listing its sources."""
    try:
        return target.source(name)
    except UnknownSource as error:
        raise click.UsageError(str(error)) from None


# --------------------------------------------------------------------------------------------------- sources


@cli.group()
def sources() -> None:
    """The stack's sources: one endpoint per gateway account (sources.json)."""


@sources.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME sources list`.")
@click.pass_context
def list_sources(ctx: click.Context, as_json: bool, stack: str | None) -> None:
    """Each source's name, provider, URL, whether its secrets are set (never their values), and when it confirms a
    payment from its signed payload (`confirm`).

    Locally: the sources of sources.json (or one per provider), where each secret comes from (INBOX_SECRET_<SOURCE>
    or the development secret; INBOX_API_KEY_<SOURCE> or the gateway simulator). Deployed: the stack's sources, and
    whether each secret holds a value stored after deploy or still the stack's generated placeholder."""
    from inbox_cli.sources import SOURCE_COLUMNS, source_rows  # noqa: PLC0415

    target = resolve(stack) if stack else _target(ctx)
    rows = source_rows(target, None if target.local else _secretsmanager())
    if as_json:
        _echo_json(rows)
    else:
        _table([{**row, "api_key": row["api_key"] or "-"} for row in rows], SOURCE_COLUMNS)


# --------------------------------------------------------------------------------------------------- secrets


@cli.group()
def secrets() -> None:
    """A deployed stack's secrets."""


@secrets.command("set")
@click.argument("source")
@click.option(
    "--kind",
    type=click.Choice(["signing", "api-key"]),
    required=True,
    help="signing: the gateway's webhook signing secret; api-key: the key the processor refetches with.",
)
@click.option(
    "--previous",
    is_flag=True,
    help="signing: keep the value being replaced as `previous`, so that both verify during a rotation.",
)
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME secrets set ...`.")
@click.pass_context
def set_secret(ctx: click.Context, source: str, kind: str, previous: bool, stack: str | None) -> None:
    """Store SOURCE's signing secret or API key in the deployed stack, read from standard input.

    On a terminal it is asked for without echo; otherwise it is read from the pipe
    (`printf %s "$SECRET" | inbox secrets set ...`). The value is never printed. Without --previous the signing
    secret's `previous` is emptied: only the new value verifies."""
    from inbox_cli.sources import SecretsRefused, read_secret_value, secret_to_set, store_secret  # noqa: PLC0415

    target = resolve(stack) if stack else _target(ctx)
    try:
        chosen = secret_to_set(target, source, kind, previous=previous)  # type: ignore[arg-type]
        value = read_secret_value(sys.stdin, prompt=f"{kind} secret of {source}: ")
    except SecretsRefused as error:
        raise click.UsageError(str(error)) from None
    click.echo(store_secret(_secretsmanager(), chosen, value, previous=previous))


# ---------------------------------------------------------------------------------------------------- events


@cli.group()
def events() -> None:
    """Read the inbox."""


@events.command("list")
@click.option("--provider", default=None, help="Only the events of this provider's sources (all of them).")
@click.option("--source", default=None, help="Only the events of this source.")
@click.option("--status", type=click.Choice(["pending", "processed", "ignored", "failed"]), default=None)
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def list_events(
    ctx: click.Context, provider: str | None, source: str | None, status: str | None, limit: int, as_json: bool
) -> None:
    """List events, newest first."""
    from inbox_cli import operations  # noqa: PLC0415

    # Ignored events with the reason each was ignored for (definitions.IgnoredReason)
    columns = operations.IGNORED_EVENT_COLUMNS if status == "ignored" else operations.EVENT_SUMMARY_COLUMNS
    summaries = operations.list_events(
        _target(ctx),
        operations.EventFilter(provider=provider, source=source, status=status),
        limit=limit,
        columns=columns,
    )
    if as_json:
        _echo_json(summaries)
    else:
        _table(summaries, columns)


@events.command("show")
@click.argument("source")
@click.argument("event_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show_event(ctx: click.Context, source: str, event_id: str, as_json: bool) -> None:
    """Show one event of SOURCE, with its raw body."""
    from inbox_cli import operations  # noqa: PLC0415

    try:
        item = operations.show_event(_target(ctx), source, event_id)
    except operations.NotFound as missing:
        click.echo(str(missing), err=True)
        raise SystemExit(1) from None
    if as_json:
        _echo_json(item)
        return
    body = item.pop("body")
    for name in sorted(item):
        click.echo(f"{name:>16}: {_json_default(item[name]) if isinstance(item[name], bytes) else item[name]}")
    click.echo(f"{'body':>16}:")
    click.echo(_json_default(body) if isinstance(body, bytes) else body)


# -------------------------------------------------------------------------------------------------- rejected


@cli.group()
def rejected() -> None:
    """Read the deliveries the ingest refused (kept a few days; secrets only as fingerprints)."""


def _rejected_target(ctx: click.Context, stack: str | None) -> Target:
    return resolve(stack or ctx.find_root().obj)


@rejected.command("list")
@click.option("--source", default=None, help="Only this source's refusals.")
@click.option("--reason", type=click.Choice(definitions.REJECTION_REASONS), default=None, help="Only this reason.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME rejected list`.")
@click.pass_context
def list_rejected(
    ctx: click.Context, source: str | None, reason: str | None, limit: int, as_json: bool, stack: str | None
) -> None:
    """List refused deliveries, newest first; `inbox rejected show ID` (or `inbox doctor --rejected ID`) next."""
    from inbox_cli import operations  # noqa: PLC0415
    from inbox_cli import rejected as log  # noqa: PLC0415

    try:
        rows = log.list_rejected(_rejected_target(ctx, stack), source=source, reason=reason, limit=limit)
    except operations.StackNotReady as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        _echo_json(rows)
    else:
        _table(rows, log.REJECTED_COLUMNS)


@rejected.command("show")
@click.argument("rejected_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME rejected show`.")
@click.pass_context
def show_rejected(ctx: click.Context, rejected_id: str, as_json: bool, stack: str | None) -> None:
    """Show one refused delivery: why, from whom, its headers (secret ones as fingerprints) and its body."""
    from inbox_cli import operations  # noqa: PLC0415
    from inbox_cli import rejected as log  # noqa: PLC0415

    try:
        document = log.show_rejected(_rejected_target(ctx, stack), rejected_id)
    except operations.NotFound as missing:
        click.echo(str(missing), err=True)
        raise SystemExit(1) from None
    except operations.StackNotReady as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        _echo_json(document)
        return
    body, encoding = document.pop("body"), document.pop("body_encoding")
    headers, query = document.pop("headers"), document.pop("query")
    for name in sorted(document):
        click.echo(f"{name:>16}: {document[name]}")
    for title, values in (("headers", headers), ("query", query)):
        click.echo(f"{title:>16}:")
        for name in sorted(values):
            value = values[name]
            shown = f"(secret, fingerprint {value['fingerprint']})" if isinstance(value, dict) else value
            click.echo(f"{'':>18}{name}: {shown}")
    click.echo(f"{'body':>16}: ({encoding})")
    click.echo(body)
    stack_name = stack or ctx.find_root().obj
    click.echo(
        f"\nwhy it was refused: inbox{f' --stack {stack_name}' if stack_name else ''} doctor --rejected {rejected_id}"
    )


# -------------------------------------------------------------------------------------------------- payments


@cli.group()
def payments() -> None:
    """Read the payment projection."""


@payments.command("show")
@click.argument("source")
@click.argument("resource_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show_payment(ctx: click.Context, source: str, resource_id: str, as_json: bool) -> None:
    """Show one payment of SOURCE as the processor last applied it."""
    from inbox_cli import operations  # noqa: PLC0415

    try:
        document = operations.show_payment(_target(ctx), source, resource_id)
    except operations.NotFound as missing:
        click.echo(str(missing), err=True)
        raise SystemExit(1) from None
    if as_json:
        _echo_json(document)
        return
    for name in sorted(document):
        click.echo(f"{name:>16}: {document[name]}")


# ---------------------------------------------------------------------------------------------------- replay


@cli.command()
@click.option("--source", default=None, help="Whose events to replay: one source (`inbox sources list`).")
@click.option(
    "--provider",
    default=None,
    type=click.Choice(provider_names()),
    help="Or: the events of every source of this provider (one replay per source).",
)
@click.option(
    "--status", type=click.Choice(["failed", "pending"]), default="failed", show_default=True, help="Select events."
)
@click.option("--since", default=None, help="Received at or after (ISO-8601; UTC when no offset).")
@click.option("--until", default=None, help="Received at or before (ISO-8601; UTC when no offset).")
@click.option(
    "--id", "event_ids", multiple=True, help="Only this event id (repeatable); --since/--until then do not apply."
)
@click.option("--dry-run", is_flag=True, help="Show the plan (counts by provider, type, status); change nothing.")
@click.option("--page-size", default=DEFAULT_PAGE_SIZE, show_default=True, help="Events read per page.")
@click.option("--wait-seconds", default=DEFAULT_WAIT_SECONDS, show_default=True, help="Pause after a page that wrote.")
@click.option("--max-events", default=DEFAULT_MAX_EVENTS, show_default=True, help="Per replay; run again for more.")
@click.option("--timeout", default=900.0, show_default=True, help="Seconds to wait for the execution's result.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME replay ...`.")
@click.pass_context
def replay(
    ctx: click.Context,
    source: str | None,
    provider: str | None,
    status: str,
    since: str | None,
    until: str | None,
    event_ids: tuple[str, ...],
    dry_run: bool,
    page_size: int,
    wait_seconds: int,
    max_events: int,
    timeout: float,
    as_json: bool,
    stack: str | None,
) -> None:
    """Set failed (or pending) events back to pending, so that they are dispatched and processed again.

    Runs the replay workflow, a Step Functions execution (locally: the same state machine in the embedded AWS),
    and waits for its result. Safe to re-run: an event is only changed while it is still in the selected status.
    With --provider and no --source, each source of that provider is replayed in turn (with --json: a list of
    reports when there is more than one).
    """
    from inbox_cli import operations  # noqa: PLC0415
    from inbox_cli.replay import ReplayFailed, ReplayRequest, normalize_time  # noqa: PLC0415

    for name, value in (("--since", since), ("--until", until)):
        if value is not None:
            try:
                normalize_time(value)
            except ValueError as error:
                raise click.BadParameter(str(error), param_hint=name) from None
    target = resolve(stack) if stack else _target(ctx)
    selected = _replayed_sources(target, source, provider)
    reports = []
    for spec in selected:
        request = ReplayRequest(
            provider=spec.provider,
            source=spec.name,
            status=status,
            since=since,
            until=until,
            event_ids=event_ids,
            dry_run=dry_run,
            page_size=page_size,
            wait_seconds=wait_seconds,
            max_events=max_events,
        )
        try:
            report = operations.replay(target, request, timeout_seconds=timeout)
        except operations.StackNotReady as error:
            raise click.ClickException(str(error)) from None
        except ReplayFailed as error:
            click.echo(f"error: {error}", err=True)
            raise SystemExit(1) from None
        reports.append(report)
        if not as_json:
            click.echo(report.headline())
            _table(report.plan(), ["source", "provider", "event_type", "status", "outcome", "count"])
            for execution_arn in report.executions:  # one replay may continue in new executions (history quota)
                click.echo(f"execution: {execution_arn}")
    if as_json:
        _echo_json(reports[0].to_json() if len(reports) == 1 else [report.to_json() for report in reports])


def _replayed_sources(target: Target, source: str | None, provider: str | None) -> list[SourceSpec]:
    """--source: that source (of --provider, when given too); --provider alone: each of its sources, or its
    default source when the stack declares none of it (events received before a sources.json may remain)."""
    if source is not None:
        spec = _source(target, source)
        if provider is not None and spec.provider != provider:
            raise click.UsageError(f"source {spec.name} is a {spec.provider} source, not {provider}")
        return [spec]
    if provider is None:
        raise click.UsageError("give --source SOURCE (or --provider PROVIDER for all of its sources)")
    return [spec for spec in target.sources if spec.provider == provider] or [SourceSpec(provider, provider)]


# -------------------------------------------------------------------------------------------------- simulate


@cli.command()
@click.option("--payments", "payment_count", default=50, show_default=True, help="How many payments to drive.")
@simulated_provider_option()
@click.option("--seed", default=7, show_default=True, help="Same seed, same schedule.")
@click.option("--duplicates", default=0.3, show_default=True, help="Share of webhooks delivered more than once.")
@click.option("--concurrent-duplicates", default=0.1, show_default=True, help="Share sent twice at the same instant.")
@click.option("--max-delay", default=2, show_default=True, help="How many gateway steps late a webhook may arrive.")
@click.option("--concurrency", default=8, show_default=True, help="Parallel deliveries.")
@click.option("--timeout", default=300.0, show_default=True, help="Seconds to wait for every event to settle.")
@click.option("--lifecycle", "lifecycles", multiple=True, help="Only this lifecycle (repeatable), e.g. 'dispute won'.")
@click.option(
    "--settle-rounds",
    is_flag=True,
    help="Wait until each round's webhooks are processed before the next gateway step (more transitions applied).",
)
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
    settle_rounds: bool,
    as_json: bool,
) -> None:
    """Drive payments of every provider through realistic lifecycles (on the gateway simulator for those the
    processor refetches from) and check every payment's state against its gateway's."""
    from dataclasses import asdict  # noqa: PLC0415

    from inbox_cli.simulate import (  # noqa: PLC0415
        EventTimeSender,
        Gateways,
        Simulation,
        SimulationOptions,
        SimulatorAdmin,
        render_report,
    )
    from inbox_local.config import LocalEndpoints  # noqa: PLC0415
    from shared.inbox.store import InboxStore  # noqa: PLC0415
    from shared.payments.store import ProcessingStore  # noqa: PLC0415

    target = _target(ctx)
    if not target.local:
        raise click.UsageError("simulate drives the local gateway simulator: run it against `make run`")
    options = SimulationOptions(
        payments=payment_count,
        providers=providers,
        seed=seed,
        duplicate_rate=duplicates,
        concurrent_duplicate_rate=concurrent_duplicates,
        max_delay_rounds=max_delay,
        concurrency=concurrency,
        settle_timeout_seconds=timeout,
        lifecycles=lifecycles,
        settle_rounds=settle_rounds,
    )
    options = _simulated_on_declared_sources(target, options)
    simulation = Simulation(
        options,
        api_url=target.api_url,
        gateways=Gateways(SimulatorAdmin(LocalEndpoints.from_environ().gateway_url), EventTimeSender(seed)),
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


def _simulated_on_declared_sources(target: Target, options: SimulationOptions) -> SimulationOptions:
    """The simulation posts to each provider's default source (`/webhooks/<provider>`, keys `<provider>#...`): the
    providers whose default source the stack declares. Asked for one it does not declare, it refuses up front,
    naming what is declared; by default it simulates the declared ones and says which it leaves out."""
    from dataclasses import replace  # noqa: PLC0415

    declared = {spec.name for spec in target.sources}
    chosen = options.chosen_providers
    missing = [provider for provider in chosen if provider not in declared]
    if not missing:
        return options

    def named(provider: str) -> str:
        others = [spec.name for spec in target.sources if spec.provider == provider]
        return f"{provider} (its sources here: {', '.join(others)})" if others else provider

    reason = (
        "inbox simulate drives each provider's default source, named after it (/webhooks/<provider>), and the local "
        f"stack's sources.json does not declare {', '.join(named(provider) for provider in missing)}"
    )
    kept = tuple(provider for provider in chosen if provider in declared)
    if options.providers or not kept:
        raise click.UsageError(
            f"{reason}. Simulate the declared ones (--provider {' --provider '.join(kept)})"
            if kept
            else f"{reason}. Run it on a stack started without a sources.json (one source per provider), or "
            "declare a source named after the provider (`inbox send SOURCE` sends to a named source)"
        )
    click.echo(f"note: {reason}; simulating {', '.join(kept)}", err=True)
    return replace(options, providers=kept)


# ------------------------------------------------------------------------------------------------ operations


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Events by provider and status, the oldest pending event, payments by status."""
    from inbox_cli import operations  # noqa: PLC0415
    from inbox_cli.stats import render_stats  # noqa: PLC0415

    result = operations.stats(_target(ctx))
    if as_json:
        _echo_json(result)
    else:
        click.echo(render_stats(result))


@cli.group()
def retention() -> None:
    """Expiry (TTL) and the archive."""


@retention.command("run")
@click.option("--now", "now_text", default=None, help="Expire as if it were this moment (ISO-8601; default: now).")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until the archive holds them.")
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait for the archive.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def retention_run(ctx: click.Context, now_text: str | None, wait: bool, timeout: float, as_json: bool) -> None:
    """Local stack: expire the items whose `expires_at` passed, as DynamoDB's TTL does (moto never does).

    Each expired item is deleted; its stream record reaches the archiver, which writes it to the archive bucket.
    In AWS, TTL itself deletes expired items: this command refuses to run against a deployed stack."""
    import boto3  # noqa: PLC0415

    from inbox_cli.retention import archived_event_keys, parse_moment  # noqa: PLC0415
    from inbox_local.config import LocalNames  # noqa: PLC0415
    from inbox_local.expiry import expire_items  # noqa: PLC0415

    target = _target(ctx)
    if not target.local:
        raise click.UsageError(
            "in AWS, DynamoDB's TTL deletes expired items itself and the archiver archives them; "
            "a DeleteItem from here would not be a TTL deletion and would not be archived"
        )
    try:
        now = parse_moment(now_text)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--now") from None
    archive_bucket = LocalNames().archive_bucket
    result = expire_items(boto3.client("dynamodb"), target.inbox_table, int(now.timestamp()))
    # The rejected-delivery log expires too (3 days); it is disposable, so nothing of it is archived.
    rejected_expired = (
        expire_items(
            boto3.client("dynamodb"),
            target.rejected_table,
            int(now.timestamp()),
            partition_key=definitions.REJECTED_PARTITION_KEY,
            ttl_attribute=definitions.REJECTED_TTL_ATTRIBUTE,
        )
        if target.rejected_table
        else None
    )
    missing = set(result.deleted)
    deadline = time.monotonic() + timeout
    s3 = boto3.client("s3")
    while wait and missing and time.monotonic() < deadline:
        missing -= archived_event_keys(s3, archive_bucket)
        if missing:
            time.sleep(0.25)
    report = {
        "now": now.isoformat(),
        "deleted": len(result.deleted),
        "kept": result.kept,
        "archive_bucket": archive_bucket,
        "archived": len(result.deleted) - len(missing) if wait else None,
        "not_archived_yet": sorted(missing) if wait else None,
        "rejected_deleted": len(rejected_expired.deleted) if rejected_expired else 0,
    }
    if as_json:
        _echo_json(report)
    else:
        click.echo(f"expired as of {report['now']}: {report['deleted']} deleted, {report['kept']} kept")
        click.echo(f"rejected deliveries expired: {report['rejected_deleted']} deleted")
        if wait:
            click.echo(f"archived in s3://{archive_bucket}/: {report['archived']} of {report['deleted']}")
    if wait and missing:
        click.echo(f"error: {len(missing)} deleted event(s) not in the archive after {timeout:.0f} s", err=True)
        raise SystemExit(1)


@cli.command()
@click.option("--events-per-month", "events", type=click.IntRange(min=0), default=1_000_000, show_default=True)
@click.option("--region", default="us-east-1", show_default=True)
@click.option(
    "--body-kb",
    type=float,
    default=None,
    help="Average webhook body size; the measured scenario's when omitted. Another size prices with the formulas "
    "(the measurement holds for its own size only).",
)
@click.option(
    "--dashboard", is_flag=True, help="Price the CloudWatch dashboard too (deployed with -c inbox_dashboard=true)."
)
@click.option(
    "--tracing", is_flag=True, help="Price X-Ray active tracing of the functions (deployed with -c inbox_tracing=true)."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def cost(events: int, region: str, body_kb: float | None, dashboard: bool, tracing: bool, as_json: bool) -> None:
    """The stack's AWS cost per month and per million webhooks, line by line (a model; see prices.json).
    Per-event figures come from the last `make bench` measurement (item_sizes) when there is one. The fixed cost
    counts the secrets, alarms and per-provider metrics of the declared sources (sources.json, or INBOX_SOURCES_FILE;
    without one, one source per provider)."""
    from dataclasses import replace  # noqa: PLC0415

    from inbox_cli.cost import deployment_assumptions, measured_usage, monthly_cost, render  # noqa: PLC0415
    from infra.sources_file import load_sources  # noqa: PLC0415
    from shared.definitions import SourcesInvalid  # noqa: PLC0415

    try:  # the fixed cost follows the declaration: secrets exist for the declared sources only
        declared = load_sources()
    except SourcesInvalid as error:
        raise click.UsageError(str(error)) from None
    assumptions = deployment_assumptions(declared, dashboard=dashboard, tracing=tracing)
    usage = measured_usage()
    if body_kb is not None and body_kb != assumptions.body_kb:
        assumptions, usage = replace(assumptions, body_kb=body_kb), None
    try:
        report = monthly_cost(events, region, assumptions, usage)
        # the same scenario with forwarding the other way: what the forwarding costs, in the same output
        other = monthly_cost(events, region, replace(assumptions, forwarding=not assumptions.forwarding), usage)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    report["with_forwarding_" + ("off" if assumptions.forwarding else "on")] = {
        "variable_per_million_events": other["variable_per_million_events"],
        "fixed_per_month": other["fixed_per_month"],
    }
    if as_json:
        _echo_json(report)
    else:
        click.echo(render(report))


# ---------------------------------------------------------------------------------------------------- outbox


@cli.group()
def outbox() -> None:
    """Read the transactional outbox: every payment change and failed event the service publishes."""


@outbox.command("list")
@click.option("--source", default=None, help="Only this source's records.")
@click.option("--provider", default=None, help="Only the records of this provider's sources (all of them).")
@click.option(
    "--resource-id", default=None, help="Only this payment's records (with --source or --provider: one Query each)."
)
@click.option("--undelivered", is_flag=True, help="Only what has not reached the endpoint (no 2xx, no checkpoint).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def list_outbox(
    ctx: click.Context,
    source: str | None,
    provider: str | None,
    resource_id: str | None,
    undelivered: bool,
    as_json: bool,
) -> None:
    """Published events, by payment and sequence (kept 7 days)."""
    from inbox_cli.outbox import show, show_undelivered  # noqa: PLC0415
    from inbox_cli.outbox import undelivered as undelivered_records  # noqa: PLC0415

    target = _target(ctx)
    if not target.outbox_table:
        raise SystemExit("this stack has no outbox table (output OutboxTableName)")
    records = _outbox_records(target, target.outbox_table, source, provider, resource_id)
    if undelivered:
        if not target.control_table:
            raise SystemExit("this stack has no control table (output ControlTableName): no forwarding checkpoints")
        if not target.local and not target.forward_secret_name:
            raise SystemExit("this stack forwards nothing (deploy with -c forward_url=https://...): none to deliver")
        records = undelivered_records(records, _checkpoints(target), _forward_log(target))
        if not as_json:
            show_undelivered(records, _table)
            return
    if as_json:
        _echo_json(records)
        return
    show(records, _table)


@outbox.command("attempts")
@click.argument("event_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: a list, oldest first.")
@click.pass_context
def outbox_attempts(ctx: click.Context, event_id: str, as_json: bool) -> None:
    """Every forwarding attempt of one published event (its id, the webhook-id), oldest first: when, to which
    endpoint, the HTTP status (0: no answer, see error), latency, the response headers and body (first 4 KB)."""
    from inbox_cli.outbox import attempt_view, show_attempts  # noqa: PLC0415

    log = _forward_log(_target(ctx))
    if log is None:
        raise SystemExit("this stack has no forwarding log (output ForwardLogTableName): deploy with forwarding")
    attempts = [attempt_view(item) for item in log.attempts(event_id)]
    if as_json:
        _echo_json(attempts)
        return
    show_attempts(attempts, _table)


def _outbox_records(
    target: Target, table: str, source: str | None, provider: str | None, resource_id: str | None
) -> list[dict[str, Any]]:
    """The outbox records `--source`/`--provider`/`--resource-id` select (Target.selected_sources: the one rule)."""
    from inbox_cli.outbox import outbox_records  # noqa: PLC0415

    candidates = target.selected_sources(source=source, provider=provider)
    return outbox_records(
        table,
        source=source,
        provider=provider,
        resource_id=resource_id,
        payment_sources=candidates if resource_id else None,
    )


def _checkpoints(target: Target) -> ForwardCheckpoints:
    from shared import aws  # noqa: PLC0415
    from shared.forwarding import ForwardCheckpoints  # noqa: PLC0415

    assert target.control_table
    return ForwardCheckpoints(aws.dynamodb(), target.control_table)


def _forward_log(target: Target, *, sender: str | None = None) -> ForwardLog | None:
    """The stack's forwarding log (None for a stack deployed before it, or without forwarding)."""
    from shared import aws  # noqa: PLC0415
    from shared.forwarding_log import SENDER_FORWARDER, ForwardLog  # noqa: PLC0415

    if not target.forward_log_table:
        return None
    return ForwardLog(aws.dynamodb(), target.forward_log_table, sender=sender or SENDER_FORWARDER)


@outbox.command("resend")
@click.option("--url", default=None, help="Where to POST (default: INBOX_FORWARD_URL).")
@click.option("--source", default=None, help="Only this source's records.")
@click.option("--provider", default=None, help="Only the records of this provider's sources (all of them).")
@click.option("--resource-id", default=None, help="Only this payment's records.")
@click.option("--since", default=None, help="Only events published at or after (ISO-8601, or ago: 90s, 15m, 1h, 2d).")
@click.option("--until", default=None, help="Only events published before (ISO-8601, or ago: 90s, 15m, 1h, 2d).")
@click.option("--force", is_flag=True, help="Send also what the endpoint acknowledged (same webhook-id).")
@click.pass_context
def resend_outbox(
    ctx: click.Context,
    url: str | None,
    source: str | None,
    provider: str | None,
    resource_id: str | None,
    since: str | None,
    until: str | None,
    force: bool,
) -> None:
    """Forward the events the forwarding has not delivered (e.g. after its dead-letter queue), in order, signed.

    Only what the endpoint has not acknowledged goes (no 2xx recorded, not past the payment's forwarding
    checkpoint), so it never re-sends a delivered event unless --force (by webhook-id a receiver would absorb it
    anyway). --since/--until pick the events published in a period, e.g. an outage of the endpoint. Against a
    deployed stack the signing secret is the stack's forwarding secret; locally INBOX_FORWARD_SECRET. Every
    attempt is recorded in the forwarding log (`inbox outbox attempts`)."""
    from inbox_cli.outbox import period_bound, resend  # noqa: PLC0415
    from shared.forwarding import DeliveryFailed, Forwarder  # noqa: PLC0415
    from shared.forwarding_log import SENDER_RESEND  # noqa: PLC0415

    bounds = {}
    for name, value in (("--since", since), ("--until", until)):
        if value is not None:
            try:
                bounds[name] = period_bound(value)
            except ValueError as error:
                raise click.BadParameter(str(error), param_hint=name) from None
    if "--since" in bounds and "--until" in bounds and bounds["--until"] <= bounds["--since"]:
        raise click.BadParameter("must be later than --since", param_hint="--until")
    target = _target(ctx)
    if not target.outbox_table or not target.control_table:
        raise SystemExit("this stack has no outbox table or control table (outputs OutboxTableName, ControlTableName)")
    url = url or os.environ.get("INBOX_FORWARD_URL", "").strip()
    if not url:
        raise SystemExit("give --url (or set INBOX_FORWARD_URL): where the events go")
    log = _forward_log(target, sender=SENDER_RESEND)
    record = log.record if log is not None else None
    if target.local:
        from inbox_local.forward_secret import local_forwarding  # noqa: PLC0415

        try:
            forwarding = local_forwarding(url=url)
        except ValueError as error:  # no or a malformed INBOX_FORWARD_SECRET: say so, no traceback
            raise SystemExit(str(error)) from None
        assert forwarding is not None  # the URL is set
        forwarder = Forwarder(url=forwarding.url, secrets=forwarding.secrets, record=record)
    elif target.forward_secret_name:
        forwarder = Forwarder.from_secret(url, target.forward_secret_name, record=record)
    else:
        raise SystemExit("this stack has no forwarding secret (deploy with -c forward_url=https://...)")
    records = _outbox_records(target, target.outbox_table, source, provider, resource_id)
    sent: list[dict[str, Any]] = []
    try:
        resend(
            records,
            forwarder,
            _checkpoints(target),
            log=log,
            since=bounds.get("--since"),
            until=bounds.get("--until"),
            force=force,
            on_delivered=sent.append,
        )
    except DeliveryFailed as error:
        raise SystemExit(f"sent {len(sent)}, then the endpoint refused: {error}") from None
    rest = "delivered before" if not force else "outside the period"
    if bounds and not force:
        rest = "delivered before or outside the period"
    click.echo(f"sent {len(sent)} of {len(records)} outbox records (the rest were {rest})")


# -------------------------------------------------------------------------------------------------- receiver


@cli.command()
@click.option("--port", default=8790, show_default=True, type=click.IntRange(0, 65535), help="0: any free port.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    envvar="INBOX_FORWARD_SECRET",
    help="whsec_<base64>, the stack's INBOX_FORWARD_SECRET (default: that variable). Repeat for a rotation.",
)
@click.option("--fail-first", default=0, show_default=True, help="Answer 500 to the first N requests (retries).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per request, then the summary, on stdout.")
def receiver(port: int, host: str, secrets: tuple[str, ...], fail_first: int, as_json: bool) -> None:
    """Receive the forwarded events: verify (Standard Webhooks), dedup by webhook-id, check per-payment order.

    Prints one line per request (never a secret) and, on Ctrl-C, a summary. Exits 1 if an event was rejected or a
    payment's sequence had a gap or went back."""
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415

    from inbox_cli.receiver import ReceiverCore, ReceiverServer, Verdict, render_summary  # noqa: PLC0415

    if not secrets:
        raise click.UsageError("give the forwarding secret: --secret whsec_... (or set INBOX_FORWARD_SECRET)")
    try:
        core = ReceiverCore(secrets)
    except Exception as error:
        reason = f"not a whsec_<base64> secret ({type(error).__name__})"
        raise click.BadParameter(reason, param_hint="--secret") from None

    def show(verdict: Verdict) -> None:
        click.echo(json.dumps(verdict.to_json(), sort_keys=True, default=str) if as_json else verdict.line())

    def failed(remaining: int) -> None:
        if as_json:
            click.echo(json.dumps({"status": 500, "outcome": "failed_on_purpose", "remaining": remaining}))
        else:
            click.echo(f"{time.strftime('%H:%M:%S')} 500 failing on purpose ({remaining} more)")

    try:
        server = ReceiverServer(core, host, port, fail_first=fail_first, on_verdict=show, on_failure=failed)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    click.echo(
        f"Receiving on {server.url} ({len(secrets)} secret(s)). Forward to it:\n"
        f"  INBOX_FORWARD_URL={server.url} INBOX_FORWARD_SECRET=<the same secret> make run\n"
        "Ctrl-C prints the summary.",
        err=as_json,
    )
    stop.wait()
    server.stop()
    summary = core.summary()
    if as_json:
        click.echo(json.dumps({"summary": {**summary, "requests": server.requests}}, sort_keys=True))
    else:
        click.echo("\n" + render_summary(summary, requests=server.requests, failed_on_purpose=server.failed_on_purpose))
    if summary["rejected"] or not summary["in_order"] or summary["mismatched_ids"]:
        raise SystemExit(1)


# --------------------------------------------------------------------------------------------------- console


@cli.command()
@click.option("--port", default=8791, show_default=True, type=click.IntRange(0, 65535), help="0: any free port.")
@click.option("--stack", "stack", default=None, help="Same as `inbox --stack NAME console`.")
@click.pass_context
def console(ctx: click.Context, port: int, stack: str | None) -> None:
    """A web console on http://127.0.0.1:PORT: the flow at a glance, events and their payloads, a payment's
    timeline, failed events, and replays (planned, confirmed, followed). Until Ctrl-C.

    It reads the local stack, or with --stack a deployed one with your own AWS credentials: nothing is deployed,
    and it answers on 127.0.0.1 only. Its replay is `inbox replay`'s, through the same functions."""
    from werkzeug.serving import make_server  # noqa: PLC0415

    from inbox_cli.console.app import create_app  # noqa: PLC0415

    stack = stack or ctx.find_root().obj
    target = resolve(stack)
    try:
        # The app is set once the socket is bound: with --port 0 only then is the port (which it checks the
        # requests' Host against) known.
        server = make_server("127.0.0.1", port, None, threaded=True)  # type: ignore[arg-type]
    except OSError as error:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {error.strerror or error}") from None
    server.app = create_app(target, port=server.server_port, stack_name=stack)
    click.echo(f"Console of the {stack or 'local'} stack on http://127.0.0.1:{server.server_port}/ (Ctrl-C stops it)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


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
