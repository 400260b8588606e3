"""Builds the CDK app: used by app.py (the CDK CLI's entry point) and by the infrastructure tests, so both
synthesize exactly the same thing, with the same feature flags and the same cdk-nag checks."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from infra.config import SettingsError, stack_name_from_context
from infra.sources_file import load_sources
from infra.stack import WebhookInboxStack
from shared import definitions

CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """The ``context`` block of cdk.json (feature flags). The CLI passes it to the app itself; tests, which
    build the app without the CLI, need it passed explicitly. Values the CLI passes win over these."""
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return context


def declared_sources(environ: Mapping[str, str] | None = None) -> tuple[definitions.SourceSpec, ...]:
    """The sources the stack deploys: sources.json at the repository root, or the file INBOX_SOURCES_FILE names,
    or (no file) one per catalog provider. A bad declaration is a SettingsError listing every bad entry.

    INBOX_SOURCES is left out on purpose: it is how the functions receive the declaration, and one left in the
    deployer's shell (from running a function locally) must not silently decide what is deployed."""
    env = dict(os.environ if environ is None else environ)
    env.pop(definitions.ENV_SOURCES, None)
    try:
        return load_sources(env)
    except definitions.SourcesInvalid as error:
        raise SettingsError(str(error)) from None


def build_app(
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    *,
    sources: tuple[definitions.SourceSpec, ...] | None = None,
) -> tuple[App, WebhookInboxStack]:
    """`sources`: what to deploy (default: `declared_sources()`, what app.py deploys)."""
    app = App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    stack_name = stack_name_from_context(app.node)
    stack = WebhookInboxStack(
        app,
        stack_name,
        sources=declared_sources() if sources is None else sources,
        stack_name=stack_name,
        description="Webhook Inbox: verified, deduplicated payment-gateway webhooks, applied in order and once",
    )
    Tags.of(stack).add("service", definitions.SERVICE_NAME)
    # cdk-nag 3: a validation plugin. Any unacknowledged finding fails the synth, and the cloud assembly's
    # validation-report.json lists every acknowledged one with its reason.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack
