"""`inbox doctor`: why a delivery does not verify (docs/troubleshooting.md).

The source's secrets are found as the ingest finds them: locally `INBOX_SECRET_<SOURCE>` (and `_PREVIOUS`), else
the source's own development secret (inbox_local/dev_secrets.py: a named source's is derived from its
provider's); deployed (`--stack`), the same variables when set (as every CLI command signs with them), else the
source's Secrets Manager secret named by the stack's outputs. The other sources tried are the target's: locally the
declaration `make run` reads, deployed the stack's own (output SourceProviders).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import IO

import click

from inbox_cli.doctor.candidates import SecretCandidate
from inbox_cli.doctor.diagnose import Case, Diagnosis, DoctorError, diagnose
from inbox_cli.doctor.recorded import SourceSetup, doctor_for_rejected
from inbox_cli.operations import NotFound, StackNotReady
from inbox_cli.rejected import RejectedDelivery, fingerprint_for, load_rejected
from inbox_cli.target import Target, resolve
from inbox_local.dev_secrets import dev_signing_secret, signing_secret_variable
from inbox_local.server import LAMBDA_MAX_SYNC_REQUEST_BYTES
from infra.sources_file import load_sources
from shared.definitions import (
    DEFAULT_SIGNATURE_TOLERANCE_SECONDS,
    ENV_SIGNATURE_TOLERANCE,
    PROVIDERS,
    SourcesInvalid,
    SourceSpec,
    find_source,
)
from shared.providers.base import SigningSecrets, WebhookRequest
from shared.secrets import SecretUnavailable, read_secret_pair

# No delivery above Lambda's synchronous invoke payload ever reaches the ingest: the doctor reads no more.
MAX_BODY_BYTES = LAMBDA_MAX_SYNC_REQUEST_BYTES
MAX_HEADERS = 100  # more than any provider sends; bounds the work on what is pasted


def resolve_source(name: str, sources: Sequence[SourceSpec] | None = None) -> SourceSpec:
    """The declared source `name`; a catalog provider's id not declared as a source is its default source."""
    try:
        declared = tuple(sources) if sources is not None else load_sources()
    except SourcesInvalid as error:
        raise click.ClickException(str(error)) from None
    try:
        return find_source(declared, name)
    except KeyError:
        if name in PROVIDERS:
            return SourceSpec(name=name, provider=name)
    known = ", ".join(source.name for source in declared)
    raise click.ClickException(f"no source {name!r}: declared sources are {known}")


def _variable(source: SourceSpec) -> str:
    return signing_secret_variable(source.name)


def configured_secrets(target: Target, source: SourceSpec) -> SigningSecrets:
    """The secrets the ingest verifies `source`'s deliveries with."""
    variable = _variable(source)
    current = os.environ.get(variable)
    if current:
        return SigningSecrets(current, os.environ.get(f"{variable}_PREVIOUS") or None)
    if target.local:  # what the local stack verifies with when no variable is set: the source's own
        return SigningSecrets(dev_signing_secret(source))
    arn = target.signing_secret_arns.get(source.name)
    if arn is None:
        raise DoctorError(f"the stack lists no signing secret for source {source.name!r}: set {variable}")
    try:
        return read_secret_pair(arn, what=f"signing secret of source {source.name!r}")
    except SecretUnavailable as error:
        raise DoctorError(f"{error}: set {variable} or pass --secret") from None


def _alternatives(
    target: Target, source: SourceSpec, sources: Sequence[SourceSpec], given: str | None
) -> list[SecretCandidate]:
    """The other secrets worth trying, by role. A secret that cannot be read is skipped: it explains nothing."""
    found: list[SecretCandidate] = []
    if given is not None:
        try:
            configured = configured_secrets(target, source)
        except DoctorError:
            configured = None
        if configured is not None:
            found.append(SecretCandidate("the source's configured secret", configured.current))
            if configured.previous:
                found.append(SecretCandidate("the source's previous secret", configured.previous))
    test_mode = os.environ.get(f"{_variable(source)}_TEST")
    if test_mode:
        found.append(SecretCandidate(f"the source's test-mode secret ({_variable(source)}_TEST)", test_mode))
    for other in sources:
        if other.name == source.name:
            continue
        try:
            secrets = configured_secrets(target, other)
        except DoctorError:
            continue
        found.append(SecretCandidate(f"the secret of source {other.name!r}", secrets.current))
        if secrets.previous:
            found.append(SecretCandidate(f"the previous secret of source {other.name!r}", secrets.previous))
    return found


def tolerance_for(source: SourceSpec) -> int:
    if source.signature_tolerance_seconds is not None:
        return source.signature_tolerance_seconds
    text = os.environ.get(ENV_SIGNATURE_TOLERANCE, "").strip()
    return int(text) if text.isdigit() else DEFAULT_SIGNATURE_TOLERANCE_SECONDS


def source_setup(target: Target, name: str, *, secret: str | None, provider: str | None = None) -> SourceSetup:
    """What `name`'s deliveries are verified with: its secrets (or --secret), tolerance and the alternatives."""
    sources = target.sources  # the stack's: locally the declaration, deployed its SourceProviders output
    source = resolve_source(name, sources)
    if provider is not None and source.provider != provider:
        source = source._replace(provider=provider)  # a record names the provider it was verified as
    secrets = SigningSecrets(secret) if secret is not None else configured_secrets(target, source)
    by_provider: dict[str, list[str]] = {}
    for declared in sources:
        by_provider.setdefault(declared.provider, []).append(declared.name)
    return SourceSetup(
        source=source.name,
        provider=source.provider,
        secrets=secrets,
        tolerance_seconds=tolerance_for(source),
        alternatives=lambda: _alternatives(target, source, sources, secret),
        secret_label="the secret given with --secret" if secret is not None else "the source's configured secret",
        sources_by_provider=by_provider,
    )


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """'Name: value' options -> {name: value}, names lower-cased; a repeated header joined with ", " as API
    Gateway does."""
    if len(values) > MAX_HEADERS:
        raise click.UsageError(f"at most {MAX_HEADERS} --header options")
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise click.UsageError("--header must be 'Name: value' (got a value without a name and colon)")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {text.strip()}" if key in headers else text.strip()
    return headers


def parse_query(values: Sequence[str]) -> dict[str, str]:
    query: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise click.UsageError("--query must be 'name=value'")
        query[name] = text
    return query


def read_body(stream: IO[bytes]) -> bytes:
    body = stream.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise click.UsageError(
            f"the body is over {MAX_BODY_BYTES} bytes: no such delivery reaches the ingest (Lambda's invoke payload)"
        )
    return body


def diagnose_delivery(setup: SourceSetup, request: WebhookRequest, *, now: float) -> Diagnosis:
    return diagnose(
        Case(
            source=setup.source,
            provider=setup.provider,
            driver=setup.provider_driver(),
            request=request,
            secrets=setup.secrets,
            now=now,
            tolerance_seconds=setup.tolerance_seconds,
            alternatives=setup.alternatives,
            secret_label=setup.secret_label,
            sources_by_provider=setup.sources_by_provider,
        )
    )


def diagnose_recorded(target: Target, record: RejectedDelivery, *, secret: str | None = None) -> Diagnosis:
    """The diagnosis of a recorded rejection (`inbox doctor --rejected ID` and the console's rejected pages): the
    record's source verified as of when it was received, its fingerprinted tokens compared under the deployment's
    fingerprint key."""
    setup = source_setup(target, record.source, secret=secret, provider=record.provider)
    return doctor_for_rejected(record, replace(setup, fingerprint=fingerprint_for(target)))


@click.command("doctor")
@click.argument("source", required=False)
@click.option("--body", "body", type=click.File("rb"), help="The delivery's raw body, as received ('-': stdin).")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'", help="A header as received (repeat).")
@click.option("--query", "queries", multiple=True, metavar="'NAME=VALUE'", help="A query parameter (repeat).")
@click.option("--secret", default=None, help="Verify with this secret instead of the source's configured one.")
@click.option("--at", "at", type=int, default=None, help="Verify as of this epoch second (default: now).")
@click.option("--rejected", "rejected_id", default=None, help="Diagnose a recorded rejection (`inbox rejected list`).")
@click.option("--json", "as_json", is_flag=True, help='Print {"valid", "diagnosis", "detail"}.')
@click.pass_context
def doctor(
    ctx: click.Context,
    source: str | None,
    body: IO[bytes] | None,
    headers: tuple[str, ...],
    queries: tuple[str, ...],
    secret: str | None,
    at: int | None,
    rejected_id: str | None,
    as_json: bool,
) -> None:
    """Say why a delivery does not verify: the usual mistakes, tried as the ingest verifies. Exit 0 when valid."""
    target = resolve(ctx.find_root().obj)
    try:
        if rejected_id is not None:
            if source or body or headers or queries:
                raise click.UsageError("--rejected takes no SOURCE, --body, --header or --query: the record has them")
            try:
                record = load_rejected(target, rejected_id)
            except (NotFound, StackNotReady) as error:
                raise click.ClickException(str(error)) from None
            result = diagnose_recorded(target, record, secret=secret)
        else:
            if not source or body is None:
                raise click.UsageError("give SOURCE and --body FILE (or --rejected ID)")
            request = WebhookRequest(
                body=read_body(body),
                headers=parse_headers(headers),
                query=parse_query(queries),
                path=f"/webhooks/{source}",
            )
            setup = source_setup(target, source, secret=secret)
            result = diagnose_delivery(setup, request, now=time.time() if at is None else float(at))
    except DoctorError as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(json.dumps(result.document(), sort_keys=True))
    else:
        click.echo(result.sentence())
    ctx.exit(0 if result.valid else 1)
